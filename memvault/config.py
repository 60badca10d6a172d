"""The user's configuration: one YAML file, environment overrides, validation naming the bad key.

Sections and keys are frozen dataclasses below; their defaults are the documented defaults
(`wiki/reference/config.md`). Loading never touches the vault.

Just over 400 lines: every section's dataclass is here with its loader and validation, so a key's
default, its type and its check are read in one place.
"""

from __future__ import annotations

import difflib
import os
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import yaml

from memvault import paths
from memvault.errors import ConfigError
from memvault.store import notes


def _opt(
    default: Any,
    *,
    choices: tuple[str, ...] = (),
    low: float | None = None,
    high: float | None = None,
    check: Callable[[str], str | None] | None = None,
) -> Any:
    """A field with its validation rules; `check` returns what is wrong with a string value, or None."""
    return field(default=default, metadata={"choices": choices, "low": low, "high": high, "check": check})


def _one_folder(value: str) -> str | None:
    folder = value.strip("/")
    if not folder or folder in (".", "..") or any(c in folder for c in "/\\:"):
        return f"must be one folder name inside the vault, got {folder!r}"
    return None


def _slug_only(value: str) -> str | None:
    hint = notes.slugify(value)
    return None if hint == value else f"must be a slug like {hint!r}, got {value!r}"


def _commit_template(value: str) -> str | None:
    try:
        value.format(op="save", target="t", reason="r")
    except (KeyError, IndexError, ValueError) as exc:
        return f"may only use {{op}}, {{target}} and {{reason}} ({exc!r})"
    return None


@dataclass(frozen=True)
class MemorySettings:
    enabled: bool = True  # kill switch: false turns every hook into a no-op
    review_mode: str = _opt("interactive", choices=("interactive", "silent"))
    log_level: str = _opt("info", choices=("debug", "info", "warning", "error"))
    # What happens to memvault's own changes: `silent` no change log; `logged` one line each in
    # MemoryVault/_meta/changelog-YYYY-MM.md; `notify` that, and SessionStart sums up what changed since.
    transparency: str = _opt("notify", choices=("silent", "logged", "notify"))


@dataclass(frozen=True)
class VaultSettings:
    root: str | None = None  # the Obsidian vault (MEMVAULT_VAULT overrides)
    folder: str = _opt("MemoryVault", check=_one_folder)  # write scope inside the vault
    default_group: str = _opt("personal-private", check=_slug_only)
    ignore: tuple[str, ...] = ()  # extra ignore globs for the read scope
    max_note_kb: int = _opt(200, low=1, high=10_240)
    secrets: str = _opt("refuse", choices=("refuse", "redact"))
    lock_timeout_s: float = _opt(10.0, low=0.1, high=600)
    protected_folders: tuple[str, ...] = ()  # globs under the MemoryVault folder no automatic process changes


@dataclass(frozen=True)
class RecallSettings:
    k: int = _opt(5, low=1, high=100)
    vector_weight: float = _opt(0.7, low=0, high=1)
    keyword_weight: float = _opt(0.3, low=0, high=1)
    fusion: str = _opt("adaptive", choices=("weighted", "rrf", "adaptive"))  # chosen by scripts/bench_recall.py
    # The relevance floor. min_probability 0 (the default): the hand-set floor, cosine + coverage_weight × keyword
    # coverage ≥ min_relevance (keyword-only: coverage ≥ min_coverage); above 0: the learned relevance judge
    # (scripts/train_relevance.py), P(relevant) ≥ min_probability (its dev-chosen floor is judge.json's `floor`,
    # 0.27). The judge is not the default: on the training data's dev split it kept no more relevant hits than
    # the hand-set floor at the same share of unrelated prompts injecting. min_relevance 0 turns the floor off;
    # keyword-only, a hit must also share min_shared_words of the prompt's words (both floors).
    min_probability: float = _opt(0.0, low=0, high=1)
    min_relevance: float = _opt(0.435, low=0, high=2)
    coverage_weight: float = _opt(0.2, low=0, high=5)
    min_coverage: float = _opt(0.455, low=0, high=1)
    min_shared_words: int = _opt(2, low=1, high=20)
    min_prompt_chars: int = _opt(12, low=0)
    max_context_chars: int = _opt(6000, low=200, high=9000)
    always_load_max: int = _opt(20, low=0, high=200)
    always_load_chars: int = _opt(8000, low=500, high=9500)  # SessionStart context cap (the host files away > 10,000)
    prompt_budget_ms: int = _opt(300, low=10, high=10_000)
    session_start_budget_ms: int = _opt(500, low=10, high=10_000)


@dataclass(frozen=True)
class EmbeddingSettings:
    model: str = "default"  # "default" = the packaged all-MiniLM-L6-v2; else any sentence-transformers name/path
    service_idle_minutes: int = _opt(30, low=1)
    warm_service: bool = True  # SessionStart starts the service (~500 MB while up); false: hooks stay keyword-only


@dataclass(frozen=True)
class IndexSettings:
    location: str = _opt("state", choices=("state", "vault"))  # "vault" = MemoryVault/_meta/


@dataclass(frozen=True)
class ReflectionSettings:
    # auto = the miner of the host the transcript came from (Claude Code: `claude -p`, Codex CLI: `codex exec`,
    # Gemini CLI: `gemini -p`) when its executable is found and answers, else offline
    miner: str = _opt("auto", choices=("auto", "claude", "codex", "gemini", "offline"))
    claude_command: str = "claude"  # the Claude Code executable (a name on PATH or a path)
    claude_model: str = "haiku"  # the model the miner's child session uses (--model): small and cheap
    claude_timeout_s: int = _opt(30, low=10, high=3600)  # one call; a late answer falls back to offline
    claude_pass_s: int = _opt(60, low=10, high=3600)  # all of one session's calls; past it the session is mined offline
    claude_calls_per_day: int = _opt(20, low=0, high=10_000)  # per machine; 0 = never call Claude
    claude_window_chars: int = _opt(60_000, low=5_000, high=400_000)  # transcript text per call
    codex_command: str = "codex"  # the Codex CLI executable (the Codex miner: `codex exec`)
    codex_model: str = ""  # "" = the model of the user's Codex config; the claude_* timeouts and window apply
    codex_calls_per_day: int = _opt(20, low=0, high=10_000)  # per machine, its own count; 0 = never call Codex
    gemini_command: str = "gemini"  # the Gemini CLI executable (the Gemini miner: `gemini -p`)
    gemini_model: str = "gemini-2.5-flash"  # small and cheap; "" = the Gemini CLI's own choice
    gemini_calls_per_day: int = _opt(20, low=0, high=10_000)  # per machine, its own count; 0 = never call Gemini
    idle_minutes: int = _opt(30, low=1)
    inbox_warn: int = _opt(50, low=1)
    incubator_warn: int = _opt(20, low=1)
    stale_days: int = _opt(7, low=1)
    review_after_sessions: int = _opt(3, low=1)  # a low-confidence pattern seen in this many sessions goes to review
    duplicate_similarity: float = _opt(0.80, low=0, high=1)  # cosine at or above: the same entry again (skipped)
    supersede_similarity: float = _opt(0.65, low=0, high=1)  # cosine at or above (below duplicate): supersede proposal


@dataclass(frozen=True)
class GcSettings:
    idea_months: int = _opt(6, low=1)
    unrecalled_days: int = _opt(90, low=1)  # health lists entries this old that were never recalled
    marker_days: int = _opt(30, low=1)
    log_days: int = _opt(30, low=1)


@dataclass(frozen=True)
class GitSettings:
    commit: str = _opt("auto", choices=("auto", "never"))  # auto = one commit per mutation when the vault is a repo
    message: str = _opt("memvault: {op} {target}", check=_commit_template)  # subject template; {op}, {target}, {reason}


# Where discovery looks: local kinds (on by default: installed plugins' skills, ~/.claude/skills, the project's
# .claude/skills, the other hosts' skill folders) and https addresses (the web whitelist, read only when
# discovery.web is true, by the user's own agent).
DISCOVERY_SOURCES = (
    "plugins", "user-skills", "project-skills", "host-skills",
    "https://github.com/topics/claude-code", "https://github.com/topics/agent-skills",
    "https://github.com/anthropics/skills", "https://github.com/anthropics/claude-cookbooks",
    "https://github.com/hesreallyhim/awesome-claude-code", "https://www.anthropic.com/engineering",
)  # fmt: skip


@dataclass(frozen=True)
class DiscoverySettings:
    web: bool = False  # yes to the web: the user's own agent reads the web whitelist (and nothing else) for discovery
    sources: tuple[str, ...] = DISCOVERY_SOURCES
    repos: tuple[str, ...] = ()  # local repositories whose skills are read too
    every_days: int = _opt(7, low=1, high=365)  # discovery runs from the background job at most this often
    daily_cap: int = _opt(6, low=0, high=1000)  # web runs (discovery and idea research) per machine and day; 0 = none
    host: str = _opt("auto", choices=("auto", "claude", "codex", "gemini"))  # whose agent reads the web
    budget_s: int = _opt(300, low=10, high=3600)  # one web run's wall clock
    budget_fetches: int = _opt(3, low=1, high=50)  # the web tool calls one run may make
    budget_tokens: int = _opt(5000, low=200, high=100_000)  # the answer kept from one run (about 4 characters each)


@dataclass(frozen=True)
class IdeasSettings:
    research: str = _opt("local", choices=("local", "web"))  # web: a new idea is also researched by the user's agent


def _no_password(value: str) -> str | None:
    if re.search(r"(^|\s)password\s*=|[?&]password=|://[^/@\s]*:[^/@\s]*@", value, re.IGNORECASE):
        return "must not hold a password: put it in the libpq password file (PGPASSFILE) or a service file"
    return None


def _mirror(value: str) -> str | None:
    if value in ("all", "none") or re.fullmatch(r"recent [1-9][0-9]{0,6}", value):
        return None
    return f"must be all, none or 'recent N' (N entries, the newest first), got {value!r}"


@dataclass(frozen=True)
class TeamSettings:
    # Team memory (`memvault team`, wiki/explanation/team-memory.md). The connection comes from libpq's own places:
    # `service` names a block of the libpq service file (~/.pg_service.conf or PGSERVICEFILE); `conninfo` is a
    # connection string without a password. The password: the libpq password file (~/.pgpass or PGPASSFILE).
    service: str | None = None
    conninfo: str | None = _opt(None, check=_no_password)
    teams: tuple[str, ...] = ()  # the teams whose entries are pulled and searched (org entries always)
    mirror: str = _opt("all", check=_mirror)  # what is mirrored into MemoryVault/team: all, recent N, none
    publish_queue: bool = True  # a publish while the server is down waits in a local queue (false: it fails)


@dataclass(frozen=True)
class Config:
    memory: MemorySettings = MemorySettings()
    vault: VaultSettings = VaultSettings()
    recall: RecallSettings = RecallSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    index: IndexSettings = IndexSettings()
    reflection: ReflectionSettings = ReflectionSettings()
    gc: GcSettings = GcSettings()
    git: GitSettings = GitSettings()
    discovery: DiscoverySettings = DiscoverySettings()
    ideas: IdeasSettings = IdeasSettings()
    team: TeamSettings = TeamSettings()
    source: str | None = None  # the file this was read from, if any

    @property
    def vault_root(self) -> Path | None:
        return Path(self.vault.root).expanduser() if self.vault.root else None


SECTIONS = tuple(f.name for f in fields(Config) if f.name != "source")

# Environment variable → dotted key. Environment beats the file.
ENV_OVERRIDES = {
    "MEMVAULT_VAULT": "vault.root",
    "MEMVAULT_ENABLED": "memory.enabled",
    "MEMVAULT_REVIEW_MODE": "memory.review_mode",
    "MEMVAULT_LOG_LEVEL": "memory.log_level",
    "MEMVAULT_TRANSPARENCY": "memory.transparency",
    "MEMVAULT_MINER": "reflection.miner",
    "AGENT_TOOLKIT_EMBEDDING_MODEL": "embedding.model",  # the seed's name, honoured
    "MEMVAULT_EMBEDDING_MODEL": "embedding.model",  # later in the dict: wins over the seed's name
}


def load(path: Path | None = None, env: dict[str, str] | None = None) -> Config:
    """Read the config file (missing is fine: defaults), apply env overrides, validate."""
    env = dict(os.environ) if env is None else env
    path = path or paths.config_file()
    raw: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read config {path}: {' '.join(str(exc).split())}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config {path}: the top level must be a mapping of sections")
        raw = loaded or {}
    config = from_dict(raw, origin=str(path))
    for var, dotted in ENV_OVERRIDES.items():
        if env.get(var):
            config = with_value(config, dotted, env[var], origin=f"${var}")
    return replace(config, source=str(path) if path.exists() else None)


def from_dict(raw: dict[str, Any], origin: str = "config") -> Config:
    sections = {}
    for name, value in raw.items():
        if name not in SECTIONS:
            raise ConfigError(f"{origin}: unknown section '{name}'{_suggest(str(name), SECTIONS)}")
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{origin}: '{name}' must be a mapping of keys")
        sections[name] = _section(name, value, origin)
    return Config(**sections)


def with_value(config: Config, dotted: str, value: Any, origin: str = "config") -> Config:
    """A copy of `config` with one dotted key set (strings from the environment are coerced)."""
    section_name, _, key = dotted.partition(".")
    section = getattr(config, section_name)
    merged = {f.name: getattr(section, f.name) for f in fields(section)}
    merged[key] = value
    return replace(config, **{section_name: _section(section_name, merged, origin)})


def as_dict(config: Config) -> dict[str, Any]:
    """Plain nested dict (for `--json` and for writing the file)."""
    out: dict[str, Any] = {}
    for name in SECTIONS:
        section = getattr(config, name)
        out[name] = {f.name: _plain(getattr(section, f.name)) for f in fields(section)}
    return out


def write_vault_root(vault_root: Path, path: Path | None = None) -> Path:
    """Record the vault in the config file, keeping every other key (and creating the file if new)."""
    path = path or paths.config_file()
    raw = path.read_text(encoding="utf-8") if path.exists() else ""
    data = yaml.safe_load(raw) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: the top level must be a mapping of sections")
    section = {**(data.get("vault") or {}), "root": str(vault_root)}
    from_dict({**data, "vault": section}, origin=str(path))  # never write a file we would refuse to read
    # Only the `vault:` block is rewritten; the user's comments and other sections stay as they are.
    text = notes.with_meta(notes.Note(body="", meta=data, frontmatter=raw), {"vault": section}).frontmatter or ""
    from memvault.store import disk  # file locking and atomic writes: not needed to read the config (hooks do that)

    created = not path.exists()
    if not path.parent.exists():
        paths.ensure_private_dir(path.parent)  # a folder made here is user-only (an existing one is left as it is)
    disk.atomic_write(path, text.encode("utf-8"), private=created)  # a new file is user-only; an old one keeps its mode
    return path


def write_keys(values: dict[str, dict[str, Any]], path: Path | None = None) -> Path:
    """Set keys in the config file (section → key → value), keeping every other key; the file is checked first."""
    path = path or paths.config_file()
    raw = path.read_text(encoding="utf-8") if path.exists() else ""
    data = yaml.safe_load(raw) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: the top level must be a mapping of sections")
    sections = {name: {**(data.get(name) or {}), **keys} for name, keys in values.items()}
    from_dict({**data, **sections}, origin=str(path))  # never write a file we would refuse to read
    text = notes.with_meta(notes.Note(body="", meta=data, frontmatter=raw), sections).frontmatter or ""
    from memvault.store import disk

    created = not path.exists()
    if not path.parent.exists():
        paths.ensure_private_dir(path.parent)
    disk.atomic_write(path, text.encode("utf-8"), private=created)
    return path


def _section(name: str, values: dict[str, Any], origin: str) -> Any:
    cls = type(getattr(Config(), name))
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    kwargs = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{origin}: unknown key '{name}.{key}'{_suggest(f'{name}.{key}', _all_keys())}")
        kwargs[key] = _coerce(f"{name}.{key}", value, hints[key], known[key].metadata, origin)
    return cls(**kwargs)


def _coerce(dotted: str, value: Any, hint: Any, meta: Any, origin: str) -> Any:
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{origin}: '{dotted}' must be {expected}, got {value!r}")

    optional = get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)
    if optional:
        if value is None or value == "":
            return None
        hint = next(a for a in get_args(hint) if a is not type(None))
    if hint is bool:
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.strip().lower() in ("1", "true", "yes", "on")
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if hint in (int, float):
        try:
            number = hint(value) if isinstance(value, str) else value
        except ValueError:
            raise bad("a number") from None
        if (
            isinstance(number, bool)
            or not isinstance(number, (int, float))
            or (hint is int and not isinstance(number, int))
        ):
            raise bad("an integer" if hint is int else "a number")
        low, high = meta.get("low"), meta.get("high")
        if (low is not None and number < low) or (high is not None and number > high):
            raise bad(f"between {low} and {high}" if high is not None else f"at least {low}")
        return hint(number)
    if hint is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise bad("a string")
        value = str(value)
        choices = meta.get("choices") or ()
        if choices and value not in choices:
            raise bad("one of " + ", ".join(choices))
        problem = meta["check"](value) if meta.get("check") else None
        if problem:
            raise ConfigError(f"{origin}: '{dotted}' {problem}")
        return value
    if get_origin(hint) is tuple:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise bad("a list of strings")
        return tuple(items)
    raise bad(f"of type {hint}")  # pragma: no cover - every field type is handled above


def _all_keys() -> list[str]:
    config = Config()
    return [f"{s}.{f.name}" for s in SECTIONS for f in fields(getattr(config, s))]


def _suggest(word: str, options: Any) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value if not is_dataclass(value) else as_dict(value)  # type: ignore[arg-type]
