"""The Claude Code hooks: read the event's JSON on stdin, do the event's job, print once, log one line, exit 0.

Imported by the launchers in `memvault/hooks/`. Never imports click, rich, YAML (except to refresh the
settings cache) or the embedding model: UserPromptSubmit must finish within its 300 ms budget.
Slow work (reflection, reindex, starting the embedding service) runs in a detached
`memvault.hooks.jobs` process that the hook does not wait for. The warm service runs the same code for
a prompt hook that handed its event over (`hooks.served`, with `Served` set).

Somewhat over 400 lines: five short event handlers around one entry (`respond`), which the hook
process and the service share; split apart, each would need the same helpers and state.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from pathlib import Path

from memvault import paths, proctime, runtime
from memvault.text import bounded_query, plural

from .fast import MAX_PAYLOAD, NOT_RUNNING

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:  # typing is not imported at run time: every millisecond of a hook's start counts
    from typing import Any, TextIO

    Output = dict[str, Any]

proctime.started()  # where the OS cannot say when the process started, its time is counted from here
# With less than this share of the budget left, the vector half is not attempted: its KNN search (about
# 100 ms on 20k notes) would run past the budget even with the query vector back in time (after a config edit).
VECTOR_MIN_SHARE = 0.6
FALLBACK_MS = 90  # kept back from the service's share of the budget for a keyword-only recall here (imports + FTS)
JOBS, JOB_LOG = "memvault.hooks.jobs", "hookjobs.log"  # the background jobs' module, and their stderr's file
PROMPT_CHARS = 160  # how much of a prompt the log keeps (secrets redacted) for `memvault inspect`
# The recall settings passed to recall as they are: the fusion, and the relevance floor.
RECALL_KEYS = (
    "fusion",
    "vector_weight",
    "keyword_weight",
    "min_probability",
    "min_relevance",
    "coverage_weight",
    "min_coverage",
    "min_shared_words",
)


class Skip(Exception):
    """Nothing to do for this event; the reason goes to the log."""


class NoVault(Skip):
    """No usable vault: logged, and also shown to the user at SessionStart."""


def main(
    event: str,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    *,
    host: str | None = None,
    not_served: str | None = None,
) -> int:
    """Run one hook event; always returns 0 (the host treats anything else as a hook error).

    `host` names the agent when it is not Claude Code (set by `hooks.adapters`); the log line carries it, as it
    carries `not_served`: why the warm service did not run this event for the hook (`hooks.fast`).
    """
    NOT_SERVED.set(not_served)
    stream = stdin or sys.stdin
    if by_hand(stream):
        say_expected(event, "paste it, then press Ctrl-D")
    text = read_text(stream)
    if not text.strip() and not by_hand(stream):
        say_expected(event, "it got none")
    output, record = respond(event, parse_payload(text), host=host)
    if not_served:
        record["not_served"] = not_served
    if output is not None:
        try:
            (stdout or sys.stdout).write(json.dumps(output) + "\n")  # ASCII: safe on any console code page
            (stdout or sys.stdout).flush()
        except (OSError, ValueError) as exc:
            record.update(result="error", reason=f"could not write the output: {exc}")
    log(record)
    return 0


def log(record: dict[str, Any]) -> None:
    """The run's log line, with what the user waited (start-up included); a full disk must not break the session."""
    record.update(proctime.waited())
    with contextlib.suppress(Exception):
        runtime.log_event(record)


def respond(event: str, payload: dict[str, Any], *, host: str | None = None) -> tuple[Output | None, dict[str, Any]]:
    """The event's output (None: print nothing) and its log record, without the duration; never raises."""
    record: dict[str, Any] = {"hook": event, "result": "success", **({"host": host} if host else {})}
    output: Output | None = None
    try:
        record["session"] = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
        output = _run(event, payload, record)
    except Skip as why:
        record.update(result="skipped", reason=str(why))
    except Exception as exc:  # a hook never hurts the session: log it and carry on
        record.update(result="error", reason=f"{type(exc).__name__}: {exc}"[:500])
    return output, record


class Served:
    """Set while the warm service runs an event for a hook process (`hooks.served`).

    It carries the hook process's start (its budget counts from there), the service's own recall, the
    settings as the hook would read them (its `MEMVAULT_*` overrides applied), and what the hook process
    does once the answer has reached it: the files it writes (`writes`: path, text) and removes (`removes`),
    and the background jobs it starts (`jobs`: `hooks.jobs` arguments), so an answer that comes too late
    has changed nothing.
    """

    __slots__ = ("jobs", "recall", "removes", "settings", "started", "writes")

    def __init__(
        self,
        started: float,
        recall: Callable[[str, str, dict[str, Any]], dict[str, Any] | None],
        settings: dict[str, Any],
    ) -> None:
        self.started, self.recall, self.settings = started, recall, settings
        self.writes: list[tuple[str, str]] = []
        self.removes: list[str] = []
        self.jobs: list[list[str]] = []


SERVED: ContextVar[Served | None] = ContextVar("memvault_served", default=None)
# Why the warm service did not run this event for this hook process (`hooks.fast`), set by `main`.
NOT_SERVED: ContextVar[str | None] = ContextVar("memvault_not_served", default=None)


def read_payload(stream: TextIO) -> dict[str, Any]:
    """The event JSON; empty, broken or non-object input gives {} (the hook then does what it can)."""
    return parse_payload(read_text(stream))


def read_text(stream: TextIO) -> str:
    """The event's text, "" when it cannot be read.

    Read as bytes where possible: bytes that are not UTF-8 become U+FFFD instead of failing the read
    (or, through surrogate escapes, failing the log line later).
    """
    try:
        raw = getattr(stream, "buffer", None)
        return raw.read(MAX_PAYLOAD).decode("utf-8", "replace") if raw is not None else stream.read(MAX_PAYLOAD)
    except (ValueError, OSError, UnicodeDecodeError, AttributeError):
        return ""


def by_hand(stream: TextIO | None) -> bool:
    """Whether a person runs the hook at a terminal (a host always pipes the event in)."""
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


def say_expected(event: str, then: str) -> None:
    """One line on standard error for a person running a hook by hand: what it reads. The exit status stays 0."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"memvault {event} hook: it expects the host's event JSON on standard input; {then}\n")
        sys.stderr.flush()


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a \uD800–\uDFFF escape in JSON text


def parse_payload(text: str) -> dict[str, Any]:
    """The event JSON as read by `read_payload` (and by the warm service); {} for anything but a JSON object.

    A lone surrogate escape (JSON allows `"\\ud83d"`) becomes U+FFFD, as bytes that are not UTF-8 do when
    read: no file name, process argument or UTF-8 file can carry it.
    """
    try:
        data = json.loads(text or "{}")
        if _SURROGATE_ESCAPE.search(text):  # rare: one more round only then (a pair decodes to one character)
            clean = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            data = json.loads(clean)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _run(event: str, payload: dict[str, Any], record: dict[str, Any]) -> Output | None:
    handler = HANDLERS.get(event)
    if handler is None:
        raise Skip(f"unknown hook event {event!r}")
    served = SERVED.get()
    try:
        settings = served.settings if served else runtime.settings()
    except Exception as exc:
        if event == "SessionStart":  # the one place the user sees it without reading the log
            record.update(result="error", reason=str(exc))
            return {"systemMessage": f"MemoryVault is off for this session: {exc}"}
        raise
    if not settings["memory"]["enabled"]:
        raise Skip("memory.enabled is false (kill switch)")
    try:
        return handler(payload, settings, record)
    except NoVault as why:
        if event != "SessionStart":
            raise
        record.update(result="skipped", reason=str(why))  # said once per session, where the user sees it
        return {"systemMessage": f"MemoryVault is off for this session: {why}"}


def _text(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _vault(settings: dict[str, Any]) -> tuple[Path, str]:
    root = settings["vault"]["root"]
    if not root:
        raise NoVault("no vault configured (run `memvault init PATH`)")
    path = Path(root).expanduser()
    if not path.is_dir():
        raise NoVault(f"vault folder {path} is missing (sync drive not mounted?)")
    return path.resolve(), settings["vault"]["folder"].strip("/")


def _index_file(root: Path, folder: str, settings: dict[str, Any]) -> Path:
    return paths.index_file(root, folder, settings["index"]["location"])


def _session(payload: dict[str, Any]) -> str:
    return _text(payload, "session_id") or "unknown"


# ---- SessionStart ---------------------------------------------------------------------------


def session_start(payload: dict[str, Any], settings: dict[str, Any], record: dict[str, Any]) -> Output | None:
    from . import inject

    root, folder = _vault(settings)
    session, source = _session(payload), _text(payload, "source") or "startup"
    record.update(source=source, vault=str(root))
    info = {"transcript_path": _text(payload, "transcript_path"), "cwd": _text(payload, "cwd"), "source": source}
    if SERVED.get() is None:
        runtime.write_start_marker(session, {**info, "vault": str(root)})
    else:  # the same marker, written (and the `.reflected` one removed) by the hook process
        _write_json(*runtime.start_marker(session, {**info, "vault": str(root)}))
        _remove(runtime.marker(session, "reflected"))
    recall = settings["recall"]
    entries = inject.always_load(root, folder, _index_file(root, folder, settings), recall["always_load_max"])
    context, shown = inject.always_load_context(entries, recall["always_load_chars"])
    # After /clear or compaction the earlier injections are gone from the context: recall may repeat them.
    kept = runtime.injected(session)["recalled"] if source == "resume" else []
    _save_injected(session, {"always": shown, "recalled": kept})
    record.update(injected=[{"path": p} for p in shown], always_load=len(entries))
    cwd = info["cwd"]
    _background("start", *([f"--project={cwd}"] if cwd and Path(cwd).is_absolute() else []))
    notes = [f"Loaded {plural(len(shown), 'MemoryVault always-load entry')}"] if shown else []
    counts = inject.pending_counts(root, folder)
    if counts["review"]:
        notes.append(f"{counts['review']} awaiting review (memvault review)")
    if counts["inbox"]:
        notes.append(f"{counts['inbox']} in the inbox (memvault inbox)")
    if source in ("startup", "resume"):
        # .get: a settings cache written by an older release has no such key
        notes += _since_last_session(root, folder, settings["memory"].get("transparency", "notify"))
    notes += runtime.warnings().values()
    out: Output = {}
    if context:
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart", "additionalContext": context}
    if notes:
        out["systemMessage"] = "; ".join(notes)
    return out or None


def _since_last_session(root: Path, folder: str, transparency: str) -> list[str]:
    """'Since your last session: 3 entries saved, …' from the vault's change log (`memory.transparency: notify`).

    The place reached in the log is kept per vault on this machine; the first session only sets it.
    """
    if transparency == "silent":
        return []
    from memvault.store import changelog

    mark_file = paths.vault_state_dir(root) / "changelog-seen.json"
    mark = runtime.read_json(mark_file)
    counts, reached, page = changelog.since(root / folder, mark if isinstance(mark, dict) else None)
    if reached != mark:
        _write_json(mark_file, reached)
    said = changelog.summary(counts)
    if transparency != "notify" or not said or not page:
        return []
    return [f"Since your last session: {said} (see {folder}/{changelog.FOLDER}/{page})"]


# ---- UserPromptSubmit -----------------------------------------------------------------------


def user_prompt_submit(payload: dict[str, Any], settings: dict[str, Any], record: dict[str, Any]) -> Output | None:
    from memvault.recall import eligible

    from . import inject

    prompt = _text(payload, "prompt").strip()
    record.update(prompt=_excerpt(prompt), prompt_chars=len(prompt))
    recall = settings["recall"]
    skipped = eligible.skip_reason(prompt, recall["min_prompt_chars"])  # as `memvault recall --explain` says
    if skipped:
        raise Skip(skipped)
    root, folder = _vault(settings)
    record["vault"] = str(root)  # recall analytics count injections per vault
    session = _session(payload)
    seen = runtime.injected(session)
    already = set(seen["always"]) | set(seen["recalled"])
    query = bounded_query(prompt)  # however big the prompt, recall's work stays within the budget
    record["query_chars"] = len(query)
    # The hits are judged in recall, as for the CLI and MCP (the floor, and the reason a ledger, a daily note or a
    # skill entry needs); here only what this session was given already is left out.
    result = _recall(root, folder, query, settings, extra=min(len(already), 20), given=already)  # room to drop it
    hits = [h for h in result["hits"] if h["path"] not in already]
    context, kept = inject.recall_context(hits[: recall["k"]], recall["max_context_chars"])
    record.update(
        mode=result["mode"],
        vec_hits=result["vec_hits"],
        kw_hits=result["kw_hits"],
        recall_ms=result.get("ms"),
        recall_stages=result.get("stages") or {},  # where recall_ms went (`search.Stages`)
        vectors=result.get("vectors") or "",  # the vector side from the service's copy (memory) or sqlite-vec (index)
        deduped=[h["path"] for h in result["hits"] if h["path"] in already],
        injected=[_logged(h) for h in kept],
        dropped=[_logged(h) for h in result.get("dropped", [])],  # below the relevance floor
        reason=result["reason"],
        result="partial" if result["partial"] else "success",
    )
    if not kept:
        return None
    _save_injected(session, {**seen, "recalled": seen["recalled"] + [h["path"] for h in kept]})
    names = inject.titles([h["title"] for h in kept], redacted=all(h.get("clean") is True for h in kept))
    return {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": context},
        "systemMessage": f"Loaded {plural(len(kept), 'relevant entry')}: {names}",
    }


def _save_injected(session: str, data: dict[str, list[str]]) -> None:
    _write_json(runtime.injected_file(session), data)


def _write_json(path: Path, data: Any) -> None:
    """`runtime.write_json`, or, for the warm service, left to the hook process once it has the answer."""
    served = SERVED.get()
    if served is None:
        runtime.write_json(path, data)
    else:
        paths.ensure_private_dir(path.parent)
        served.writes.append((str(path), json.dumps(data, ensure_ascii=False)))


def _remove(path: Path) -> None:
    """Remove a state file (gone already is fine), or leave it to the hook process as `_write_json` does."""
    served = SERVED.get()
    if served is not None:
        served.removes.append(str(path))
        return
    with contextlib.suppress(OSError):
        path.unlink()


def _logged(hit: Mapping[str, Any]) -> dict[str, Any]:
    """What the log keeps of a hit: enough for `memvault inspect` to say why it was, or was not, injected."""
    return {
        "path": hit["path"], "title": hit["title"], "score": hit["score"], "vec": hit["vec_score"],
        "kw": hit["kw_score"], "cosine": hit.get("cosine"), "coverage": hit.get("coverage"), "why": hit.get("why"),
    }  # fmt: skip


def _recall(
    root: Path, folder: str, prompt: str, settings: dict[str, Any], extra: int, given: set[str] | None = None
) -> dict[str, Any]:
    """`recall.Result.as_dict()` for the prompt, within what is left of the hook's budget.

    The warm service runs the whole recall beside its loaded model, so this process imports no
    index code. Without the service, or when it does not answer in time, the index is queried
    here, keyword-only (the vector could only have come from the service).
    """
    from memvault.recall import client

    recall = settings["recall"]
    served = SERVED.get()
    # `hooks.fast` found no service where `paths.runtime_dir()` puts it: not looked for again (naming that folder
    # here would import platformdirs, 15 ms)
    not_running = NOT_SERVED.get() == NOT_RUNNING
    started = served.started if served else proctime.started()[0]
    budget_ms = recall["prompt_budget_ms"] - (time.monotonic() - started) * 1000  # from the hook process's start
    from memvault.recall import eligible, passages

    options: dict[str, Any] = {
        "k": recall["k"] + extra,
        **{key: recall[key] for key in RECALL_KEYS},
        "daily_folder": eligible.daily_folder(root),
        "passage_chars": passages.per_hit(recall["max_context_chars"], recall["k"]),  # as the CLI and MCP show
        # the passages are chosen for the k hits the hook shows: past what this session was given (`search.Options`)
        "shown": recall["k"],
        "given": sorted(given or ()),
    }
    index_file = _index_file(root, folder, settings)
    if budget_ms < VECTOR_MIN_SHARE * recall["prompt_budget_ms"]:
        reason = "the budget was spent before recall (keyword-only)"
    else:
        wait_ms = budget_ms - FALLBACK_MS  # what a keyword-only fallback here would need, kept in reserve
        asked = {**options, "budget_ms": wait_ms - 20}
        if not index_file.exists():
            answer = None
        elif served is not None:  # in the service: its own recall, no socket
            answer = served.recall(str(index_file), prompt, asked)
        elif not_running:
            answer = None
        else:
            answer = client.recall(str(index_file), prompt, asked, timeout=wait_ms / 1000)
        if answer is None:
            # only on the way to the fallback: say why it is keyword-only
            late = not not_running and client.read_info() is not None
            reason = f"the embedding service {'did not answer in time' if late else 'is not running'} (keyword-only)"
        elif _unbuilt(answer.get("reason")):
            reason = "the index was still being built when the service searched it (keyword-only)"
        else:
            return answer
    from memvault.recall import search as rc

    local = rc.options_from({**options, "budget_ms": max(20.0, budget_ms)})
    result = rc.recall_file(index_file, prompt, local, None, built_only=True) if index_file.exists() else None
    if result is None or _unbuilt(result.reason):
        # before the first reindex has finished (the session start's may be running): the seed's file scan,
        # keyword-only, within the budget
        from memvault.recall import scan
        from memvault.store import disk

        result = scan.scan(root, folder, disk.ignore_patterns(root, tuple(settings["vault"]["ignore"])), prompt, local)
    data = result.as_dict()
    if result.mode != "none" and not (result.reason or "").startswith(("no index", "no vectors")):  # those stay
        floor = next((part for part in (result.reason or "").split("; ") if part.startswith(rc.FLOOR_REASON)), None)
        data.update(partial=True, reason=f"{reason}; {floor}" if floor else reason)
    return data


def _unbuilt(reason: object) -> bool:
    """Whether a recall's reason says the index has not finished its first build (`search.recall_file`)."""
    if not isinstance(reason, str) or not reason:
        return False
    from memvault.recall import search

    return reason.startswith(search.UNBUILT_REASON)


def _excerpt(prompt: str) -> str:
    """The start of the prompt for the log: `<private>` spans removed, secrets redacted (the scanner loads only
    when one may be there)."""
    from memvault.store import privacy, secretcues

    text = " ".join(privacy.strip_private(prompt[: PROMPT_CHARS * 4]).split())
    if secretcues.may_hold(text):
        from memvault.store import secrets

        text, _ = secrets.redact(text)
    return text[:PROMPT_CHARS]


# ---- Stop, SessionEnd, Notification(idle_prompt): schedule, never wait ------------------------


def stop(payload: dict[str, Any], settings: dict[str, Any], record: dict[str, Any]) -> Output | None:
    if payload.get("stop_hook_active") is True:
        raise Skip("stop_hook_active: Claude is already continuing because of a Stop hook")
    _schedule_reflection(payload, settings, final=False)
    record["scheduled"] = "reflect"
    return None  # anything printed here would make the conversation continue


def session_end(payload: dict[str, Any], settings: dict[str, Any], record: dict[str, Any]) -> Output | None:
    record["reason"] = _text(payload, "reason") or None
    _schedule_reflection(payload, settings, final=True)
    record["scheduled"] = "reflect --final"
    return None


def idle(payload: dict[str, Any], settings: dict[str, Any], record: dict[str, Any]) -> Output | None:
    kind = _text(payload, "notification_type")
    if kind and kind != "idle_prompt":
        raise Skip(f"notification {kind!r} is not idle_prompt")
    _vault(settings)
    args = ["idle"]
    if _text(payload, "session_id") and _text(payload, "transcript_path"):
        args += [f"--session={_session(payload)}", f"--transcript={_text(payload, 'transcript_path')}"]
    _background(*args)
    record["scheduled"] = "idle sweep"
    return None


def _schedule_reflection(payload: dict[str, Any], settings: dict[str, Any], *, final: bool) -> None:
    _vault(settings)
    if paths.stop_file().exists():
        raise Skip("the STOP file halts reflection")
    transcript = _text(payload, "transcript_path")
    if not transcript:
        raise Skip("no transcript_path in the event")
    # `--opt=value`: a session id or path starting with "-" must not be read as an option
    args = ["reflect", f"--session={_session(payload)}", f"--transcript={transcript}"]
    _background(*args, *(["--final"] if final else []))


def _background(*args: str) -> None:
    served = SERVED.get()
    if served is not None:  # the hook process starts it, once it has the answer (`hooks.fast.start_job`)
        served.jobs.append(list(args))
        return
    from memvault import procs

    package_parent = str(Path(__file__).resolve().parents[2])  # the plugin route runs without an install
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p)}
    procs.spawn([sys.executable, "-m", JOBS, *args], paths.state_dir() / JOB_LOG, env=env)


HANDLERS: dict[str, Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Output | None]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "SessionEnd": session_end,
    "Notification": idle,
}
