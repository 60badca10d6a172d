"""The prompt hook's short way: hand the event to the warm service, which runs it beside its model and index.

A prompt hook is a fresh Python process, and before this module it spent more time importing (pathlib,
platformdirs, the hook and socket code, json and with it re) than recalling. This module loads only `_socket`
and `memvault.proctime`/`userfiles`/`wire` beyond what Python starts with: its messages are `memvault.wire`
lines, not JSON. It sends the event to the service's `prompt_hook` op (`hooks.served`), which runs
`events.respond` as the hook would and answers with what to print, the files to write and remove (the
session's injected list, its markers) and the background jobs to start; they are done here, once the
answer has arrived, so a late answer changes nothing, and then the log line is written. Whenever anything
is not as expected (no service, a runtime folder only platformdirs can name, another environment, a late
or odd answer), `hand_over` returns the bytes it read and the full hook (`events.main`) runs as before.
"""

from __future__ import annotations

import _socket  # not `socket`: its Python layer imports enum and selectors, 5 ms on every prompt
import os
import stat
import sys
import time

from memvault import proctime, userfiles, wire

TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

OP = "prompt_hook"
JOBS = "memvault.hooks.jobs"  # as `events.JOBS`: the background jobs the service leaves to this process to start
SOCKET_NAME, WIRE_INFO_NAME = "embed.sock", "service.wire"  # as recall.client names them
MAX_PAYLOAD = 8 * 1024 * 1024  # bytes of the event JSON read from stdin (here and by `events.read_payload`)
MAX_REPLY = 4 * 1024 * 1024
# A bigger event goes the full way: the service reads requests of up to 4 MB, and the wire's hex doubles one.
MAX_HANDED = 1024 * 1024
ACCEPT_S = 0.25  # for the service to take the request and say how long its answer may take
MARGIN_S = 0.05  # on top of that, for the answer to cross the socket
# Where memvault looks for its config, state and vault: the service answers only a hook whose are the same.
ENV_NAMES = ("HOME", "USERPROFILE", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR")
ENV_PREFIXES = ("MEMVAULT_", "AGENT_TOOLKIT_")
NOT_RUNNING = "the service is not running"  # none where it must be: the full hook does not look for it again


def environment() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}


def runtime_folder() -> str | None:
    """`paths.runtime_dir()` as platformdirs names it, told here without importing it; None when this cannot tell
    (Windows, other systems) or the folder is not one only this user can open.

    A wrong guess costs nothing but the short way: the service's info file must name the socket found here.
    """
    if os.name != "posix":  # Windows: the service listens on loopback TCP; the full hook talks to it
        return None
    home = os.environ.get("MEMVAULT_HOME")
    if home:
        folder = os.path.abspath(os.path.join(os.path.expanduser(home), "run"))
    elif sys.platform == "darwin":
        folder = os.path.expanduser("~/Library/Caches/TemporaryItems/memvault")
    elif sys.platform.startswith("linux"):
        xdg = os.environ.get("XDG_RUNTIME_DIR", "").strip()
        base = xdg if os.path.isabs(xdg) and _private(xdg) else f"/run/user/{os.geteuid()}"
        if base != xdg and not _private(base):  # platformdirs' last resort: runtime-<uid> in the temp folder
            temp = next((os.environ[k] for k in ("TMPDIR", "TEMP", "TMP") if os.environ.get(k)), "/tmp")  # noqa: S108
            base = os.path.join(temp, f"runtime-{os.geteuid()}")
        folder = os.path.join(base, "memvault")
    else:
        return None
    if len(os.fsencode(os.path.join(folder, SOCKET_NAME))) > 100:  # paths.runtime_dir() moves it: not here
        return None
    return folder if _private(folder) else None


def _private(folder: str) -> bool:
    """A real folder (not a symlink) of this user's that no one else may open."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def hand_over(event: str, host: str | None = None) -> tuple[bytes, str] | None:
    """Run `event` (of `host`, for Codex CLI and Gemini CLI) through the warm service: None when it was (the
    output is printed), else the stdin bytes read and why the full hook has to run (for its log line)."""
    raw = sys.stdin.buffer.read(MAX_PAYLOAD)
    try:
        reply = _ask(event, host, raw)
        if isinstance(reply, str):
            return raw, reply
        answered_ms = round((time.monotonic() - proctime.started()[0]) * 1000, 1)  # the rest is writing and printing
        # All of the answer read before anything is done: a malformed part hands the event to the full hook whole.
        stdout, log, logline = (wire.text(reply[key]) for key in ("stdout", "log", "logline"))
        writes, removes = wire.items(reply.get("writes", "0:")), wire.items(reply.get("removes", "0:"))
        jobs = [job.split("\0") for job in wire.items(reply.get("jobs", "0:"))]
        job_log = wire.text(reply["job_log"]) if jobs else ""
        if len(writes) % 2:
            raise ValueError("the service's writes are not path, text pairs")
        for path, text in zip(writes[0::2], writes[1::2], strict=True):  # before printing: one failing, the full hook
            userfiles.replace(path, text)
        for path in removes:
            try:  # noqa: SIM105 - contextlib costs this process 5 ms of imports
                os.unlink(path)
            except FileNotFoundError:
                pass
        for args in jobs:
            start_job(args, job_log)
    except TimeoutError:  # the socket's own timeout or a deadline here
        return raw, "the service did not answer in time"
    except Exception as exc:  # anything unexpected: the full hook runs, as it would without the service
        return raw, f"{type(exc).__name__}: {exc}"[:200]
    if stdout:
        sys.stdout.write(stdout)
        sys.stdout.flush()
    try:  # noqa: SIM105 - contextlib costs this process 5 ms of imports
        userfiles.append_line(log, _completed(logline, answered_ms))
    except (OSError, ValueError):
        pass  # a full disk must not break the session
    return None


def _completed(logline: str, answered_ms: float) -> str:
    """The service's log record (a JSON object) with this process's own times added at its end."""
    if not logline.endswith("}"):
        raise ValueError("the service's log record is not a JSON object")
    added = {"answered_ms": answered_ms, **proctime.waited()}
    fields = ", ".join(f'"{key}": ' + (f'"{value}"' if isinstance(value, str) else repr(value)) for key, value in
                       added.items())  # fmt: skip
    return f"{logline[:-1]}, {fields}}}" if logline != "{}" else f"{{{fields}}}"


def _ask(event: str, host: str | None, raw: bytes) -> dict[str, str] | str:
    """The service's answer (`memvault.wire` fields), or why there is none."""
    if len(raw) > MAX_HANDED:
        return f"the event is over {MAX_HANDED // 1024 // 1024} MB"
    folder = runtime_folder()
    if folder is None:
        return "no private runtime folder found without platformdirs"
    try:
        with open(os.path.join(folder, WIRE_INFO_NAME), "rb") as handle:
            info = wire.unpack(handle.read(64 * 1024))
    except FileNotFoundError:
        # Said for certain where this folder is `paths.runtime_dir()`'s: MEMVAULT_HOME's, or Linux's (tested equal)
        certain = os.environ.get("MEMVAULT_HOME") or sys.platform.startswith("linux")
        return NOT_RUNNING if certain else "no service found here"
    except (OSError, ValueError):
        return "the service's info file cannot be read"
    address = os.path.join(folder, SOCKET_NAME)
    if not (wire.text(info.get("transport", "")) == "unix" and wire.text(info.get("address", "")) == address):
        return "the service does not listen on a Unix socket"
    request = wire.pack({
        "op": OP, "token": wire.text(info.get("token", "")), "event": event, "payload": raw,
        "env": [f"{k}={v}" for k, v in environment().items()], "started": proctime.started()[0], "host": host,
    })  # fmt: skip
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(ACCEPT_S)
        sock.connect(address)
        sock.sendall(request)
        lines = _Lines(sock)
        first = wire.unpack(lines.next(time.monotonic() + ACCEPT_S))
        if wire.text(first.get("ok", "")) != "1" or "wait_ms" not in first:
            return _refused(first)
        reply = wire.unpack(lines.next(time.monotonic() + float(wire.text(first["wait_ms"])) / 1000 + MARGIN_S))
    finally:
        sock.close()
    if wire.text(reply.get("ok", "")) != "1":
        return _refused(reply)
    if not all(key in reply for key in ("stdout", "log", "logline")):
        return "the service's answer is malformed"
    return reply


def start_job(args: list[str], log: str) -> None:
    """`python -m memvault.hooks.jobs ARGS` in its own session, detached, as `procs.spawn` starts it for the full hook:
    this interpreter, this environment (with memvault's folder on PYTHONPATH), stdin and stdout closed, stderr
    appended to `log` (the service made it), the log's folder as working directory. With os.fork: `subprocess`
    costs this process 10 ms of imports. POSIX only, as this module's short way is."""
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", JOBS, *args]
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() != 0:
        return
    try:  # the child: nothing here may return into the hook's code
        os.setsid()
        os.chdir(os.path.dirname(log))
        null = os.open(os.devnull, os.O_RDWR)
        err = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err, 2)
        os.execve(command[0], command, env)  # noqa: S606 - this interpreter, a fixed module, memvault's own arguments
    finally:
        os._exit(127)


def _refused(reply: dict[str, str]) -> str:
    error = reply.get("error")
    return f"the service said: {wire.text(error)}"[:200] if error else "the service's answer is malformed"


class _Lines:
    """Newline-ended lines from a socket, each by its own deadline (a `time.monotonic()` value)."""

    def __init__(self, sock: Any) -> None:
        self.sock, self.buffer = sock, b""

    def next(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or len(self.buffer) > MAX_REPLY:
                raise TimeoutError
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(256 * 1024)
            if not chunk:
                raise ConnectionError("the service closed the connection")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line
