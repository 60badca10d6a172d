"""The warm service as the hooks run it: the recall layer's service plus the prompt hook's own op.

`python -m memvault.hooks.served [--model M] [--idle-minutes N]` is what `client.start()` and `memvault
serve` run. The `prompt_hook` op answers `hooks.fast`: it runs the event exactly as `events.main`
would in the hook process (the hook's settings overrides, same recall, same output), with the
service's own recall instead of a socket round trip, and hands back what the hook process prints,
the files it writes and removes, and the background jobs it starts. The hook process does those only
once the answer has reached it in time, so a late answer changes nothing and the full hook can still run.
Claude Code's prompt, session start, stop, session end and idle notification come this way, and the other
hosts' events that map onto them (Codex CLI's and Gemini CLI's session start, prompt, end of turn, session end).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from memvault import config, paths, procs, runtime
from memvault.recall import service

from . import adapters, events, fast

OP = "prompt_hook"
PROMPT = "UserPromptSubmit"
# The core events the service runs for a hook process (`hooks._launch.FAST_EVENTS`, and the other hosts' events
# that map onto them: `_launch.FAST_HOST_EVENTS`)
EVENTS = (PROMPT, "SessionStart", "Stop", "SessionEnd", "Notification")
OTHER_BUDGET_MS = 1000.0  # how long a hook process waits for any event but the prompt (which has its own budget)
MAX_AGE_S = 60.0  # a hook process older than this is not one the service should answer for


def prompt_hook(call: service.Call) -> dict[str, Any]:
    """Run a hook event for the hook process that sent it; the reply carries `stdout`, the files to write and remove,
    the jobs to start and the log line (in `memvault.wire`'s terms for a hook that asked that way)."""
    entered = time.monotonic()
    request = call.request
    event, text, started = request.get("event"), request.get("payload"), request.get("started")
    host = request.get("host")  # Codex CLI or Gemini CLI; none for Claude Code
    if not (isinstance(event, str) and isinstance(text, str) and isinstance(started, (int, float))):
        return {"ok": False, "error": "prompt_hook needs event, payload and started"}
    core = adapters.core_event(host, event) if isinstance(host, str) else event
    if core not in EVENTS:
        return {"ok": False, "error": f"prompt_hook does not run {event!r}"}
    environ = request.get("env")
    if not (isinstance(environ, dict) and all(isinstance(v, str) for v in environ.values())):
        return {"ok": False, "error": "prompt_hook needs env"}
    if _places(environ) != _places(fast.environment()):  # another config file or state folder: the hook runs itself
        return {"ok": False, "error": "the hook's config or state folder is not the service's"}
    age = time.monotonic() - started
    if not 0 <= age < MAX_AGE_S:  # the two processes share the monotonic clock; anything else is not a hook's start
        return {"ok": False, "error": "started is not this machine's recent monotonic time"}
    settings = runtime.settings(environ)  # the hook's overrides applied; a bad config raises: the hook reports it
    budget = settings["recall"]["prompt_budget_ms"] if core == PROMPT else OTHER_BUDGET_MS
    call.tell({"ok": True, "wait_ms": max(0.0, budget - age * 1000)})  # how long the hook process should wait
    served = events.Served(float(started), call.recall, settings)
    token = events.SERVED.set(served)
    payload = events.parse_payload(text)
    try:
        if isinstance(host, str):  # Codex CLI or Gemini CLI: their adapter, as the hook process would run it
            output, record = adapters.respond(host, event, payload)
        else:
            output, record = events.respond(event, payload)
    finally:
        events.SERVED.reset(token)
    job_log = paths.state_dir() / events.JOB_LOG
    if served.jobs:
        procs.prepare_log(job_log)  # made (or rotated) here: the hook process only appends to it
    record["served"] = True
    # the hook process's start to this op's (interpreter, imports, the socket, the queue), and this op's own time
    record["service_ms"] = {"reached": round((entered - float(started)) * 1000, 1),
                            "ran": round((time.monotonic() - entered) * 1000, 1)}  # fmt: skip
    reply = {
        "ok": True,
        "stdout": json.dumps(output) + "\n" if output is not None else "",
        "writes": served.writes,
        "removes": served.removes,
        "jobs": served.jobs,
        "job_log": str(job_log),
        "log": str(runtime.log_file()),
        "record": {"ts": runtime.now_iso(), **record},
    }
    return _flat(reply) if request.get("wire") is True else reply


def _flat(reply: dict[str, Any]) -> dict[str, Any]:
    """The reply in `memvault.wire`'s terms, for a hook that reads no JSON: the writes as one list (path, text, path,
    …), each job's arguments joined by NUL (an argument cannot hold one), the log record as its JSON line."""
    return {
        **{key: reply[key] for key in ("ok", "stdout", "removes", "job_log", "log")},
        "writes": [part for pair in reply["writes"] for part in pair],
        "jobs": ["\0".join(args) for args in reply["jobs"]],
        "logline": json.dumps(reply["record"], ensure_ascii=False),
    }


def _places(environ: dict[str, str]) -> dict[str, str]:
    """The variables that say where the config and state live: those must be the service's own. The others
    (`MEMVAULT_VAULT`, `MEMVAULT_ENABLED`, … : `config.ENV_OVERRIDES`) only override settings, read per hook."""
    return {k: v for k, v in environ.items() if k not in config.ENV_OVERRIDES}


OPS: dict[str, service.Op] = {OP: prompt_hook}


def main(argv: list[str] | None = None) -> int:
    return service.main(argv, ops=OPS)


if __name__ == "__main__":
    sys.exit(main())
