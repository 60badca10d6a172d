"""Mine transcript turns for what is worth keeping, with a host's own model or the offline rules; say which and why.

`run` picks the miner from `reflection.miner`:
- `auto` (the default): the miner of the host the transcript came from (`host_of`: a Claude Code
  transcript → `claude -p`, a Codex rollout → `codex exec`, a Gemini chat → `gemini -p`) when its
  executable is found and answers `--version`, otherwise the offline miner; `claude`, `codex`,
  `gemini` and `offline` force one (a forced miner that cannot run still falls back to offline, and
  says so). Every host's miner works as the Claude one below (`mine/claude.py`, `mine/codex.py`,
  `mine/gemini.py`), with its own daily cap (`reflection.<host>_calls_per_day`, its own ledger) and
  the shared deadlines and window size (`reflection.claude_timeout_s`, `claude_pass_s`, `claude_window_chars`).
- The Claude miner cuts the transcript into overlapping windows, makes one call per window, and
  merges the windows' candidates (the same key, or the same statement line, once). Calls the model
  answered are counted per machine and day (a call that reached no model costs nothing and is not);
  a session that would go over `reflection.claude_calls_per_day` is mined offline instead. Any
  failure of a call (missing, unreachable API, late, malformed answer) falls back to the offline
  miner for the whole session. The pass never blocks: each call is killed after
  `reflection.claude_timeout_s`, and all of a session's calls (the `--version` probe included) end
  within `reflection.claude_pass_s`.
- A fallback, when Claude was chosen but the offline miner ran, is said in the pass's reason (the
  hook log's `miner_reason`) and remembered with its time (`last_fallback`, for `memvault health`).
- The offline miner is deterministic: `prefs` (the user's lasting instructions and corrections,
  sentence by sentence), `fixes` (error → change → confirmation episodes), `workflows`, `ideas`, and
  the trained statement judge (`mine/judge.py`, its lexical model, which needs no embedding model)
  on every line those rules leave alone (`OFFLINE = "rules+judge"`). The rules alone decide what is
  saved at once (high): on the corpus's unseen dev split no judge threshold reaches the precision a
  save without review needs, and the lexical judge's thresholds route all it finds to the inbox,
  which recall never shows unasked. On that split the judge added 3 of 25 MUST and 8 of 51 NICE
  statements at an inbox precision near 0.6, and left the rules' saves as they were; the figures
  are in wiki/explanation/reflection.md. `mine(..., using="rules")` is the rules alone, and
  `using="judge"` the judge (with sentence vectors when it can have them) in place of `prefs` and
  `workflows`, as measured on their own.
Every candidate, whichever miner made it, then passes the same last step (`_finish`): `<private>`
spans stripped, secrets redacted (a candidate left with little but a redaction is dropped), local
paths and user names replaced by placeholders (`mine.placeholders`), and candidates with the same
key merged. Keys are built from redacted text, so they never hold a secret.

Just over 400 lines: the choice of miner, the per-host call ledger and the shared last step are one
decision read top to bottom (which miner, whether it may call, what any candidate must pass).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memvault import paths
from memvault.reflect.mine import claude, codex, fixes, gemini, ideas, judge, placeholders, prefs, typed, workflows
from memvault.reflect.mine.claude import PROMPT, MinerError, Window
from memvault.reflect.mine.text import (
    CATEGORIES,
    CONFIDENCES,
    IDEA_KINDS,
    KEY_STOP,
    TITLE_CHARS,
    WORD,
    Candidate,
    make_key,
    sentences,
)
from memvault.store import secrets
from memvault.store.privacy import strip_private

from .state import read_json, write_json
from .transcript import Turn

__all__ = [
    "CATEGORIES",
    "CONFIDENCES",
    "IDEA_KINDS",
    "PROMPT",
    "TITLE_CHARS",
    "Candidate",
    "MinerError",
    "MinerRun",
    "Window",
    "calls_today",
    "choose",
    "host_of",
    "last_fallback",
    "make_key",
    "mine",
    "mine_llm",
    "record_fallback",
    "record_success",
    "run",
    "sentences",
    "windows",
]

PROBE_TIMEOUT_S = 15.0  # `claude --version` must answer within this
PROBE_KEEP_S = 6 * 3600  # a successful probe of the same executable is trusted this long
MIN_CALL_S = 2.0  # a call is not started with less of the pass's time left than this
_RANK = {"high": 3, "medium": 2, "low": 1}
OFFLINE = "rules+judge"  # the offline miner: "rules", "judge" or "rules+judge" (see the module docstring)
OFFLINE_MINERS = ("rules", "judge", "rules+judge")
HOSTS = {"claude": "Claude", "codex": "Codex", "gemini": "Gemini"}  # each host's miner, by the name in the config
_ASK = {"claude": claude.ask, "codex": codex.ask, "gemini": gemini.ask}
_APPS = {"claude": "Claude Code", "codex": "Codex CLI", "gemini": "Gemini CLI"}
# Miners built but not used, and why: a host's model is given a transcript only once its real client is shown
# (tests/e2e/test_host_miners.py) to offer that model no tool at all. None is held back now: the Gemini miner
# passed once it ran in a Gemini home of its own (its settings as user settings, which the client honours).
HELD_BACK: dict[str, str] = {}


@dataclass
class MinerRun:
    """Which miner ran on a pass, why, and what the Claude miner spent."""

    miner: str  # "claude" | "codex" | "gemini" | "offline"
    reason: str
    windows: int = 0
    calls: int = 0
    cost_usd: float | None = None
    notes: list[str] = field(default_factory=list)  # candidates the Claude miner's checks refused


def mine(turns: Sequence[Turn], *, project: str | None = None, using: str | None = None) -> list[Candidate]:
    """The deterministic offline miner: pass 1 (preferences, fixes, workflows, the judge), then pass 2 (ideas).

    `using` (default `OFFLINE`): "rules", "judge" (in place of the preference and workflow rules) or
    "rules+judge" (the rules, and the lexical judge on the lines their preferences and workflows leave alone).
    """
    using = using or OFFLINE
    if using not in OFFLINE_MINERS:
        raise ValueError(f"unknown offline miner {using!r}: expected one of {', '.join(OFFLINE_MINERS)}")
    clean = _cleaned(turns)
    if using == "judge":
        found = judge.candidates(clean) + fixes.fixes(clean) + ideas.ideas(clean)
        return _finish(found, clean, project)
    ruled = prefs.preferences(clean) + workflows.workflows(clean)
    if using == "rules+judge":
        taken = {_first_line(c) for c in ruled}
        ruled += [c for c in judge.candidates(clean, use_vectors=False) if _first_line(c) not in taken]
    return _finish(ruled + fixes.fixes(clean) + ideas.ideas(clean), clean, project)


def _cleaned(turns: Sequence[Turn]) -> list[Turn]:
    """What every miner reads: `<private>` spans removed, and the lines of a user turn that repeat the project's
    instructions file (`typed.without_instructions`)."""
    return typed.without_instructions([replace(t, text=strip_private(t.text)) for t in turns])


def windows(turns: Sequence[Turn], settings: Any = None) -> list[Window]:
    """The windows the Claude miner would send for `turns` (with `reflection.claude_window_chars`)."""
    size = getattr(settings, "claude_window_chars", 60_000)
    return claude.windows(_cleaned(turns), size)


def mine_llm(
    turns: Sequence[Turn],
    settings: Any,
    *,
    project: str | None = None,
    run: MinerRun | None = None,
    deadline: float | None = None,
    host: str = "claude",
) -> list[Candidate]:
    """Mine with headless Claude Code, one call per window, and merge the windows' candidates. Raises MinerError.

    `deadline` (time.monotonic()) ends the pass: no call runs past it (default: `claude_pass_s` from now).
    Only calls the model answered are counted against the daily cap.
    """
    clean = _cleaned(turns)
    cut = claude.windows(clean, settings.claude_window_chars)
    run = run or MinerRun(host, "")
    run.windows = len(cut)
    found: list[Candidate] = []
    cwd = paths.ensure_private_dir(paths.state_dir() / f"{host}-miner")
    ask = _ASK[host]
    pass_s = float(settings.claude_pass_s)
    deadline = time.monotonic() + pass_s if deadline is None else deadline
    for window in cut:
        left = deadline - time.monotonic()
        if left < MIN_CALL_S:
            raise MinerError(f"the pass ran out of its {pass_s:g} s (reflection.claude_pass_s) "
                             f"before part {window.number} of {window.of}")  # fmt: skip
        try:
            call = ask(window, clean, executable=getattr(settings, f"{host}_command"),
                       model=getattr(settings, f"{host}_model"), timeout=min(float(settings.claude_timeout_s), left),
                       cwd=str(cwd))  # fmt: skip
        except MinerError as exc:
            if exc.answered:
                count_call(host)
                run.calls += 1
            raise
        count_call(host)
        run.calls += 1
        found += call.candidates
        run.notes += call.dropped
        if call.cost_usd is not None:
            run.cost_usd = round((run.cost_usd or 0.0) + call.cost_usd, 6)
    return _finish(_one_per_statement(found), clean, project)


def run(
    turns: Sequence[Turn],
    settings: Any = None,
    *,
    project: str | None = None,
    probe: bool = True,
    host: str | None = None,
) -> tuple[list[Candidate], MinerRun]:
    """Mine `turns` with the miner `settings.miner` selects (see the module docstring); return it and why.

    `host` ("claude" | "codex" | "gemini"): the client the transcript came from (`host_of`), for `auto`.
    """
    if settings is None:
        from memvault.config import ReflectionSettings

        settings = ReflectionSettings(miner="offline")
    deadline = time.monotonic() + float(getattr(settings, "claude_pass_s", 60))  # the probe's time counts too
    name, reason = choose(settings, probe=probe, host=host)
    if name in HOSTS:
        label = HOSTS[name]
        cut = windows(turns, settings)
        used, cap = calls_today(name), getattr(settings, f"{name}_calls_per_day")
        if used + len(cut) > cap:
            reason = (f"the daily cap of {cap} {label} calls (reflection.{name}_calls_per_day) would be passed: "
                      f"{used} made today, this session needs {len(cut)}")  # fmt: skip
            record_fallback(reason, name)
        else:
            attempt = MinerRun(name, reason)
            try:
                found = mine_llm(turns, settings, project=project, run=attempt, deadline=deadline, host=name)
            except MinerError as exc:
                reason = f"the {label} miner failed ({exc}); the offline miner ran instead"
                record_fallback(f"the {label} miner failed ({exc})", name)
                return mine(turns, project=project), MinerRun("offline", reason, attempt.windows, attempt.calls,
                                                               attempt.cost_usd)  # fmt: skip
            record_success(name)
            return found, attempt
    return mine(turns, project=project), MinerRun("offline", reason)


def choose(settings: Any, *, probe: bool = True, host: str | None = None) -> tuple[str, str]:
    """("claude" | "codex" | "gemini" | "offline", why) for `reflection.miner`, before any call is made.

    `auto` picks the miner of `host`, the client the transcript came from (Claude Code when not given).
    """
    wanted = settings.miner
    if wanted not in ("auto", *HOSTS, "offline"):
        raise ValueError(f"unknown miner {wanted!r}: use 'auto', 'claude', 'codex', 'gemini' or 'offline'")
    if wanted == "offline":
        return "offline", "reflection.miner is offline"
    name = wanted if wanted in HOSTS else (host if host in HOSTS else "claude")
    why = f" (reflection.miner is {wanted})" if wanted != "auto" else ""
    if wanted == "auto" and host in HOSTS:
        why = f" (reflection.miner is auto and the transcript is {_APPS[name]}'s)"
    if name in HELD_BACK:
        return "offline", HELD_BACK[name] + why
    if getattr(settings, f"{name}_calls_per_day") == 0:
        return "offline", f"reflection.{name}_calls_per_day is 0{why}"
    command = getattr(settings, f"{name}_command")
    found = shutil.which(command)
    if found is None:
        forced = " (reflection.miner is claude)" if wanted == "claude" else why
        return "offline", f"{command!r} was not found{forced}"
    if probe:
        problem = _probe(found, name)
        if problem:
            return "offline", problem + why
    model = getattr(settings, f"{name}_model") or "its configured default"
    source = f" and the transcript is {_APPS[name]}'s" if wanted == "auto" and host in HOSTS else ""
    return name, f"reflection.miner is {wanted}{source} and {found} answers (model {model})"


def host_of(transcript: Path) -> str:
    """The client a transcript came from, told by its first line: "claude", "codex" or "gemini"."""
    from . import codex_rollout, gemini_chat, readers

    reader = readers.reader_for(Path(transcript))
    return "codex" if reader is codex_rollout.read else "gemini" if reader is gemini_chat.read else "claude"


def _probe(executable: str, host: str = "claude") -> str | None:
    """None when `executable --version` answers (remembered for a while), else what went wrong."""
    file = _ledger_file(host)
    data = read_json(file) if file.exists() else None
    data = data if isinstance(data, dict) else {}
    try:
        stamp = Path(executable).stat().st_mtime
    except OSError:
        stamp = 0.0
    known = data.get("probe")
    if (
        isinstance(known, dict)
        and known.get("path") == executable
        and known.get("mtime") == stamp
        and time.time() - float(known.get("checked", 0)) < PROBE_KEEP_S
    ):
        return None
    own = host == "gemini"  # Gemini CLI writes its project list in its home even for --version: a home of its own
    try:
        with gemini.private_home(paths.state_dir() / "gemini-miner", sign_in=False) if own else (
                contextlib.nullcontext()) as home:  # fmt: skip
            done = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  env=gemini.child_env(home) if home else claude.child_env(), check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{executable} --version did not answer ({type(exc).__name__})"
    if done.returncode != 0 or not done.stdout.strip():
        return f"{executable} --version failed (exit {done.returncode})"
    data["probe"] = {"path": executable, "mtime": stamp, "checked": time.time(), "version": done.stdout.strip()[:80]}
    write_json(file, data)
    return None


def _ledger_file(host: str = "claude") -> Path:
    return paths.state_dir() / f"{host}-miner.json"  # one per host: each has its own account and its own cap


def calls_today(host: str = "claude") -> int:
    """The host's miner calls made on this machine today (local date)."""
    data = read_json(_ledger_file(host))
    if isinstance(data, dict) and data.get("day") == time.strftime("%Y-%m-%d") and isinstance(data.get("calls"), int):
        return int(data["calls"])
    return 0


def count_call(host: str = "claude") -> None:
    """Count one miner call against the host's cap today (one the model answered: a call that reached none is free)."""
    file = _ledger_file(host)
    data = read_json(file)
    data = data if isinstance(data, dict) else {}
    today = time.strftime("%Y-%m-%d")
    calls = int(data["calls"]) if data.get("day") == today and isinstance(data.get("calls"), int) else 0
    data.update(day=today, calls=calls + 1)
    write_json(file, data)


def record_fallback(reason: str, host: str = "claude") -> None:
    """Remember that the host's miner was to mine but the offline miner ran, when and why (`health` says it)."""
    _update_ledger("fallback", {"time": time.time(), "reason": reason}, host)


def record_success(host: str = "claude") -> None:
    """Remember when the host's miner last mined a session (a fallback of that miner before it is history)."""
    _update_ledger("answered", time.time(), host)


def last_fallback() -> tuple[float, str] | None:
    """(epoch seconds, why) of the most recent fallback on this machine of a miner that has not mined since."""
    found: list[tuple[float, str]] = []
    for host in HOSTS:
        data = read_json(_ledger_file(host))
        data = data if isinstance(data, dict) else {}
        fell, answered = data.get("fallback"), data.get("answered")
        if not isinstance(fell, dict) or not isinstance(fell.get("time"), (int, float)):
            continue
        if isinstance(answered, (int, float)) and answered >= fell["time"]:
            continue
        found.append((float(fell["time"]), str(fell.get("reason") or "")))
    return max(found) if found else None


def _update_ledger(key: str, value: Any, host: str = "claude") -> None:
    file = _ledger_file(host)
    data = read_json(file)
    data = data if isinstance(data, dict) else {}
    data[key] = value
    write_json(file, data)


def _one_per_statement(found: Sequence[Candidate]) -> list[Candidate]:
    """Overlapping windows see some statements twice: one candidate per category and statement line."""
    best: dict[tuple[str, str], Candidate] = {}
    for cand in found:
        slot = (cand.category, cand.evidence[0] if cand.evidence else cand.key)
        kept = best.get(slot)
        if kept is None or _RANK[cand.confidence] > _RANK[kept.confidence]:
            best[slot] = cand
    return list(best.values())


def _finish(found: Sequence[Candidate], turns: Sequence[Turn], project: str | None) -> list[Candidate]:
    """Redact secrets, replace local paths and user names, drop what is left empty, merge candidates by key."""
    names = placeholders.names_in([project or "", *(t.text for t in turns), *(t.tool or "" for t in turns)])
    out: dict[str, Candidate] = {}
    for cand in found:
        safe = _safe(cand)
        if safe is None:
            continue
        safe = replace(
            safe,
            title=placeholders.replace_local(safe.title, project=project, names=names),
            body=placeholders.replace_local(safe.body, project=project, names=names),
            key=placeholders.key_without(safe.key, names),
        )
        if safe.key in out:
            kept = out[safe.key]
            out[safe.key] = replace(kept, evidence=tuple(dict.fromkeys(kept.evidence + safe.evidence)))
        else:
            out[safe.key] = safe
    return sorted(out.values(), key=lambda c: (_first_line(c), CATEGORIES.index(c.category)))


_REDACTED = re.compile(r"\[REDACTED:[a-z_]+\]")


def _safe(cand: Candidate) -> Candidate | None:
    title, title_hits = secrets.redact(strip_private(cand.title))
    body, body_hits = secrets.redact(strip_private(cand.body))
    if not body_hits and not title_hits:
        return cand
    marked = [line for line in body.splitlines() if _REDACTED.search(line)]
    if marked and all(_content_words(_REDACTED.sub(" ", line)) < 3 for line in marked):
        return None  # the statement was little more than the secret: nothing worth keeping
    return replace(cand, title=title, body=body)  # the key is clean already: make_key builds it from redacted text


def _content_words(text: str) -> int:
    return sum(1 for w in WORD.findall(text.lower()) if w not in KEY_STOP and len(w) > 1)


def _first_line(cand: Candidate) -> int:
    """The first line a candidate quotes (its evidence's first reference), or 0."""
    try:
        return int(cand.evidence[0][1:])
    except (IndexError, ValueError):
        return 0
