"""What the hooks keep on this machine: cached settings, session markers, injected entries, warnings, the log.

Everything lives in the state dir (never in the synced vault), in folders only the user can open.
Imported on the prompt path: standard library and `memvault.paths` only; the YAML config is read
through `config.py` only when the JSON cache of it is stale.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from memvault import paths, userfiles

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:  # not imported at run time (the prompt path)
    from typing import Any

SESSIONS, LOGS = "sessions", "logs"
SETTINGS_CACHE = "hook-settings.json"
WARNINGS = "warnings.json"
LOG_MAX_BYTES = 5 * 1024 * 1024  # per file; a full day's file is rolled to hooks-YYYYMMDD.N.jsonl
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


# ---- settings ------------------------------------------------------------------------------


def settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The config as a plain dict, from a JSON cache keyed by the config file's stat and the environment.

    `environ`: the environment whose `MEMVAULT_*` overrides apply (the warm service, running a hook for a
    hook process, passes the hook's); the file's place always comes from this process's own.
    Raises `ConfigError` (from config.py) when the config is invalid; the cache is then left alone.
    """
    environ = os.environ if environ is None else environ
    source = paths.config_file()
    try:
        st = source.stat()
        stamp: list[Any] = [str(source), st.st_mtime_ns, st.st_size]
    except OSError:
        stamp = [str(source), None, None]
    env = sorted((k, v) for k, v in environ.items() if k.startswith(("MEMVAULT_", "AGENT_TOOLKIT_")))
    key = {"file": stamp, "env": env}
    cache = paths.state_dir() / SETTINGS_CACHE
    cached = read_json(cache)
    if isinstance(cached, dict) and cached.get("key") == json.loads(json.dumps(key)):
        return dict(cached["settings"])
    from memvault import config as config_mod  # YAML: only when the file or the environment changed

    data = config_mod.as_dict(config_mod.load(env=dict(environ)))
    with contextlib.suppress(OSError):
        write_json(cache, {"key": key, "settings": data})
    return data


# ---- small private files -------------------------------------------------------------------


def read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.loads(handle.read(4 * 1024 * 1024))
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any) -> None:
    """Atomic, user-only write (temp file in the same folder, then rename)."""
    paths.ensure_private_dir(path.parent)
    userfiles.replace(path, json.dumps(data, ensure_ascii=False))


# ---- sessions --------------------------------------------------------------------------------


def session_name(session_id: str) -> str:
    """A file-name-safe form of the host's session id (unchanged when it already is one)."""
    safe = _SAFE.sub("_", session_id)[:80] or "unknown"
    return safe if safe == session_id else f"{safe}-{zlib.crc32(session_id.encode('utf-8')):08x}"


def sessions_dir() -> Path:
    return paths.state_dir() / SESSIONS


def marker(session_id: str, state: str) -> Path:
    """`session-<id>.start` while a session is open; `.reflected` once its final reflection succeeded."""
    return sessions_dir() / f"session-{session_name(session_id)}.{state}"


def write_start_marker(session_id: str, info: dict[str, Any]) -> None:
    """Record (or refresh) an open session; the first start time is kept across resume and compact."""
    path, data = start_marker(session_id, info)
    write_json(path, data)
    with contextlib.suppress(OSError):
        marker(session_id, "reflected").unlink()


def start_marker(session_id: str, info: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """The start marker's file and what `write_start_marker` writes there (its `.reflected` marker goes)."""
    path = marker(session_id, "start")
    previous = read_json(path)
    started = previous.get("started") if isinstance(previous, dict) else None
    return path, {**info, "session_id": session_id, "started": started or now_iso(), "seen": now_iso()}


def mark_reflected(session_id: str) -> None:
    """`.start` → `.reflected` (written fresh when the start marker is gone, e.g. a session without SessionStart)."""
    start, done = marker(session_id, "start"), marker(session_id, "reflected")
    info = read_json(start)
    data = info if isinstance(info, dict) else {"session_id": session_id}
    write_json(done, {**data, "reflected": now_iso()})
    with contextlib.suppress(OSError):
        start.unlink()


def mark_quarantined(session_id: str) -> None:
    """`.start` → `.quarantined`: reflection failed again and again; the sweeps stop retrying it."""
    start = marker(session_id, "start")
    info = read_json(start)
    data = info if isinstance(info, dict) else {"session_id": session_id}
    write_json(marker(session_id, "quarantined"), {**data, "quarantined": now_iso()})
    with contextlib.suppress(OSError):
        start.unlink()


def markers(state: str) -> list[Path]:
    folder = sessions_dir()
    return sorted(folder.glob(f"session-*.{state}")) if folder.is_dir() else []


def injected_file(session_id: str) -> Path:
    return sessions_dir() / f"{session_name(session_id)}.injected.json"


def injected(session_id: str) -> dict[str, list[str]]:
    """What this session has already been given: {"always": [...], "recalled": [...]} (vault-relative paths)."""
    data = read_json(injected_file(session_id))
    if not isinstance(data, dict):
        return {"always": [], "recalled": []}
    return {k: [p for p in data.get(k, []) if isinstance(p, str)] for k in ("always", "recalled")}


def save_injected(session_id: str, data: dict[str, list[str]]) -> None:
    write_json(injected_file(session_id), data)


# ---- warnings shown at SessionStart and by `health` ------------------------------------------


def warnings() -> dict[str, str]:
    data = read_json(paths.state_dir() / WARNINGS)
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def set_warning(key: str, text: str | None) -> None:
    current = warnings()
    if current.get(key) == text or (text is None and key not in current):
        return
    if text is None:
        current.pop(key, None)
    else:
        current[key] = text
    write_json(paths.state_dir() / WARNINGS, current)


# ---- the hook log: one JSON line per hook run ------------------------------------------------


def now_iso() -> str:
    """Local time with milliseconds and offset, `2026-11-21T14:03:07.412+01:00` (no datetime import: hooks)."""
    now = time.time()
    local = time.localtime(now)
    offset = time.strftime("%z", local)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", local)
    return f"{stamp}.{int(now % 1 * 1000):03d}{offset[:3]}:{offset[3:]}"


def log_dir() -> Path:
    return paths.state_dir() / LOGS


def log_event(record: dict[str, Any], *, max_bytes: int = LOG_MAX_BYTES) -> None:
    """Append one line to today's log; a single write of a whole line, so concurrent hooks never interleave."""
    userfiles.append_line(log_file(max_bytes), json.dumps({"ts": now_iso(), **record}, ensure_ascii=False, default=str))


def log_file(max_bytes: int = LOG_MAX_BYTES) -> Path:
    """Today's log file, its folder made; a file past `max_bytes` is first moved aside (`hooks-<day>.<n>.jsonl`)."""
    folder = paths.ensure_private_dir(log_dir())
    path = folder / f"hooks-{time.strftime('%Y%m%d')}.jsonl"
    with contextlib.suppress(OSError):
        if path.stat().st_size >= max_bytes:
            n = 1
            while path.with_name(f"{path.stem}.{n}.jsonl").exists():
                n += 1
            os.replace(path, path.with_name(f"{path.stem}.{n}.jsonl"))
    return path


def read_log() -> Iterator[dict[str, Any]]:
    """Every record still kept, oldest first; lines that are not JSON objects are skipped."""
    folder = log_dir()
    if not folder.is_dir():
        return
    files = sorted(folder.glob("hooks-*.jsonl"), key=lambda p: (p.name.split(".")[0], _roll_number(p)))
    for path in files:
        with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict):
                        yield record


def _roll_number(path: Path) -> int:
    """hooks-20261121.2.jsonl was rolled after .1 and before the live hooks-20261121.jsonl."""
    parts = path.name.split(".")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 10**9


def prune(*, log_days: int, marker_days: int, now: float | None = None) -> dict[str, int]:
    """Delete old log files, `.reflected` / `.quarantined` markers and finished sessions' reflection locks; the counts.

    A lock is kept while its session is open (its `.start` marker exists): the session may still be reflected.
    """
    now = time.time() if now is None else now
    removed = {"logs": 0, "markers": 0, "locks": 0}
    folder = log_dir()
    candidates = [("logs", p, log_days) for p in folder.glob("hooks-*.jsonl")] if folder.is_dir() else []
    candidates += [("markers", p, marker_days) for p in markers("reflected") + markers("quarantined")]
    sessions = sessions_dir()
    locks = sorted(sessions.glob("*.lock")) if sessions.is_dir() else []
    candidates += [("locks", p, marker_days) for p in locks if not (sessions / f"session-{p.stem}.start").exists()]
    for what, path, days in candidates:
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > days * 86400:
                path.unlink()
                removed[what] += 1
                if what == "markers":
                    (sessions_dir() / f"{path.name[len('session-') :].rsplit('.', 1)[0]}.injected.json").unlink(
                        missing_ok=True
                    )
    return removed
