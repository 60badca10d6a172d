"""Talk to the warm embedding service: query vectors in milliseconds without loading the model here.

Imported on the hook's prompt path, so only the standard library and `memvault.paths` load at import
time. `embed()` and `status()` never raise: a missing, stale, wedged or foreign service is `None`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memvault import paths
from memvault.errors import MemvaultError

__all__ = [
    "Embedded", "catch_up", "embed", "info_file", "query_vector", "recall", "socket_path", "start", "status", "stop",
    "vectors_changed", "wait_ready",
]  # fmt: skip

SOCKET_NAME = "embed.sock"
INFO_NAME = "service.json"
WIRE_INFO_NAME = "service.wire"  # the same facts a hook's short way needs, readable without json (`memvault.wire`)
LOCK_NAME = "service.lock"
LOG_NAME = "service.log"
# What a request may hold (its ops and recall options): raised when that changes, so a service started by an older
# memvault, which would refuse the new options, is replaced at the next session start (`vault.indexing.ensure_service`).
PROTOCOL = 3
MAX_TEXTS = 256  # per request; longer lists are sent as several requests
MAX_REPLY = 32 * 1024 * 1024
LOOPBACK = "127.0.0.1"
# What runs the service: the recall layer's service with the prompt hook's op added (a module path, not an import).
ENTRY = "memvault.hooks.served"


TYPE_CHECKING = False  # typing.TYPE_CHECKING (mypy reads it so) without importing typing at run time
if TYPE_CHECKING:  # the prompt path imports neither typing nor dataclasses
    import socket
    from typing import Any


class Embedded:
    """Vectors from the service: one float32 little-endian L2-normalised blob per text, as `embed.Embedder`."""

    __slots__ = ("dim", "model", "vectors")

    def __init__(self, model: str, dim: int, vectors: list[bytes]) -> None:
        self.model, self.dim, self.vectors = model, dim, vectors


def socket_path() -> Path:
    return paths.runtime_dir() / SOCKET_NAME


def info_file() -> Path:
    return paths.runtime_dir() / INFO_NAME


def lock_file() -> Path:
    return paths.runtime_dir() / LOCK_NAME


def log_file() -> Path:
    return paths.state_dir() / LOG_NAME


def read_info() -> dict[str, Any] | None:
    """The running service's info file (address, token, pid, …), or None when there is none."""
    try:
        with open(info_file(), encoding="utf-8") as handle:
            info = json.loads(handle.read(64 * 1024))
    except (OSError, ValueError, MemvaultError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("token"), str):
        return None
    return info


def _connect(info: dict[str, Any], deadline: float) -> socket.socket | None:
    import socket  # here: a keyword-only prompt hook (no service running) never needs it, 3–5 ms of imports

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    transport, address = info.get("transport"), info.get("address")
    if transport == "unix" and isinstance(address, str) and hasattr(socket, "AF_UNIX"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target: Any = address
    elif transport == "tcp" and address == LOOPBACK and isinstance(info.get("port"), int):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        target = (LOOPBACK, info["port"])
    else:
        return None  # never talk to anything but the user's own socket or loopback
    try:
        sock.settimeout(remaining)
        sock.connect(target)
    except (OSError, ValueError, OverflowError):
        sock.close()
        return None
    return sock


def _request(info: dict[str, Any], request: dict[str, Any], deadline: float) -> dict[str, Any] | None:
    """One request and its reply, all within `deadline` (a `time.monotonic()` value); None on any failure."""
    sock = _connect(info, deadline)
    if sock is None:
        return None
    try:
        with sock:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(json.dumps({**request, "token": info["token"]}).encode("utf-8") + b"\n")
            chunks: list[bytes] = []
            size = 0
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                sock.settimeout(remaining)
                chunk = sock.recv(256 * 1024)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY:
                    return None
                if chunk.endswith(b"\n"):
                    break
        reply = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    if not isinstance(reply, dict) or reply.get("ok") is not True:
        return None
    return reply


def _decode(reply: dict[str, Any], count: int) -> Embedded | None:
    model, dim, blobs = reply.get("model"), reply.get("dim"), reply.get("vectors")
    if not isinstance(model, str) or not isinstance(dim, int) or dim <= 0 or not isinstance(blobs, list):
        return None
    if len(blobs) != count or not all(isinstance(blob, str) for blob in blobs):
        return None
    import base64  # here: the prompt hook's keyword-only way asks the service nothing

    try:
        vectors = [base64.b64decode(blob, validate=True) for blob in blobs]
    except ValueError:
        return None
    if any(len(vector) != dim * 4 for vector in vectors):
        return None
    return Embedded(model, dim, vectors)


def embed(texts: list[str], *, timeout: float = 0.25, query: bool = False) -> Embedded | None:
    """Vectors for `texts` from the running service, or None (never an exception) within `timeout` seconds.

    `query`: the texts are queries (the service applies the default model's query adapter)."""
    deadline = time.monotonic() + timeout
    info = read_info()
    if info is None:
        return None
    batches = [texts[i : i + MAX_TEXTS] for i in range(0, len(texts), MAX_TEXTS)] or [[]]
    result: Embedded | None = None
    for batch in batches:
        reply = _request(info, {"op": "embed", "texts": list(batch), **({"query": True} if query else {})}, deadline)
        part = _decode(reply, len(batch)) if reply is not None else None
        if part is None:
            return None
        if result is None:
            result = part
        elif (part.model, part.dim) != (result.model, result.dim):
            return None
        else:
            result.vectors.extend(part.vectors)
    return result


def query_vector(text: str, timeout: float) -> tuple[str, bytes] | None:
    """(model, vector) for one query, or None: the shape `recall.recall()` takes as its embedder.

    recall() compares the model with the index's, so vector spaces never mix.
    """
    reply = embed([text], timeout=timeout, query=True)
    return (reply.model, reply.vectors[0]) if reply is not None and reply.vectors else None


def recall(index: str, query: str, options: dict[str, Any], *, timeout: float) -> dict[str, Any] | None:
    """Hybrid recall run by the service, next to its loaded model (`recall.Result.as_dict()`), or None in time."""
    deadline = time.monotonic() + timeout
    info = read_info()
    if info is None:
        return None
    reply = _request(info, {"op": "recall", "index": index, "query": query, "options": options}, deadline)
    result = reply.get("result") if reply is not None else None
    return result if isinstance(result, dict) and isinstance(result.get("hits"), list) else None


def catch_up(index: str, lock: str, *, timeout: float = 0.25) -> bool:
    """Ask the service to embed the index's pending notes in the background; whether it took the job."""
    deadline = time.monotonic() + timeout
    info = read_info()
    if info is None:
        return False
    return _request(info, {"op": "catch_up", "index": index, "lock": lock}, deadline) is not None


def vectors_changed(index: str, *, timeout: float = 0.25) -> bool:
    """Tell the service an index's vectors changed (its in-memory copy reloads now); whether it was told."""
    deadline = time.monotonic() + timeout
    info = read_info()
    if info is None:
        return False
    return _request(info, {"op": "vectors_changed", "index": index}, deadline) is not None


def status(*, timeout: float = 1.0) -> dict[str, Any] | None:
    """The service's pid, model, dim, transport, started_at, last_request_at, requests, idle_minutes and in_memory
    (the index files whose vectors it holds in memory); or None."""
    deadline = time.monotonic() + timeout
    info = read_info()
    if info is None:
        return None
    reply = _request(info, {"op": "status"}, deadline)
    if reply is None:
        return None
    reply.pop("ok", None)
    return reply


def _lock_free() -> bool:
    """Whether no service holds (or is starting under) the service lock; the check takes it for an instant."""
    import filelock

    try:
        lock = filelock.FileLock(str(lock_file()), timeout=0, mode=0o600)
        lock.acquire(timeout=0)
    except (filelock.Timeout, OSError, MemvaultError):
        return False
    lock.release()
    return True


def stop(*, timeout: float = 5.0) -> bool:
    """Ask the service to exit and wait until it has released its lock; whether one was running."""
    deadline = time.monotonic() + timeout
    info = read_info()
    if info is None or _request(info, {"op": "stop"}, deadline) is None:
        return False
    while time.monotonic() < deadline and not _lock_free():
        time.sleep(0.05)
    return True


def start(model: str = "default", idle_minutes: float = 30) -> bool:
    """Start the service detached and return at once (the model loads in the background).

    False, without starting anything, when a service is already running or starting.
    """
    from memvault import procs

    if not _lock_free():
        return False
    log = log_file()
    procs.spawn([sys.executable, "-m", ENTRY, "--model", model, "--idle-minutes", str(idle_minutes)], log)
    return True


def wait_ready(timeout: float) -> dict[str, Any] | None:
    """Poll `status()` until the service answers (its model is loaded) or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        info = status(timeout=max(0.05, min(1.0, deadline - time.monotonic())))
        if info is not None or time.monotonic() >= deadline:
            return info
        time.sleep(0.05)
