"""The warm embedding service: one per user, keeps the model loaded and answers query-vector requests locally.

Run as `python -m memvault.hooks.served` (what `client.start()` spawns detached and `memvault serve` runs in
the foreground; it adds the prompt hook's op), or bare as `python -m memvault.recall.service [--model M]
[--idle-minutes N]`.
It listens on a Unix socket in the user's private runtime folder (loopback TCP on Windows, or with
`MEMVAULT_SERVICE_TRANSPORT=tcp`), only once the model is loaded, so a connectable socket means "ready".
Every request carries the random token from the info file. One JSON line in, one JSON line out, per
connection. It exits after `idle_minutes` without an embed request, on `stop`, SIGTERM or Ctrl-C, and
then removes its socket and info file.

Over 400 lines: the server's parts (turns of the one model, the socket and its token, the request ops,
background catch-up, idle exit) share the loaded model and its lock, and are read as one life cycle.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hmac
import json
import os
import secrets
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import filelock

from memvault import paths, wire
from memvault.errors import MemvaultError
from memvault.index import embed, readers
from memvault.store.disk import atomic_write

from .client import INFO_NAME, LOCK_NAME, LOOPBACK, MAX_TEXTS, PROTOCOL, SOCKET_NAME, WIRE_INFO_NAME

MAX_REQUEST = 4 * 1024 * 1024
CONNECTION_TIMEOUT = 5.0  # seconds a client may take to send its request and read the reply
MAX_CONNECTIONS = 16  # handled at once; more are closed unanswered
# Queries are a sentence or two, encoded one request at a time: one torch thread is as fast and, on a busy
# machine, far steadier (measured p95 15 ms with 1 thread against 117 ms with 2 on 2 busy cores).
THREADS = 1
# Reindex batches go faster on every core (16.6 vs 29 ms per paragraph on 2 cores); single queries
# stay on one thread, where a busy machine cannot stretch them from 15 ms to hundreds.
BATCH_THREADS = max(1, min(4, os.cpu_count() or 1))
BATCH_MIN = 8
# numpy's BLAS (OpenBLAS) threads, set before numpy loads: the in-memory scan is one matrix-vector product of
# about a millisecond, which a pool of spinning BLAS threads stretched to 30 ms p50 on 2 busy cores (1.0 with one).
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# A batch (reindex) is encoded a slice at a time, its texts sorted by length so a slice pads little; between
# slices a query or a write's few chunks go first, so they never wait for more than one slice.
SLICE = 16


class Turns:
    """The loaded model, one encode at a time; urgent work (queries, a write's chunks) goes before batch slices."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.busy = False
        self.urgent_waiting = 0

    @contextlib.contextmanager
    def turn(self, urgent: bool) -> Iterator[None]:
        with self.cond:
            self.urgent_waiting += urgent
            try:
                while self.busy or (not urgent and self.urgent_waiting):
                    self.cond.wait()
            finally:
                self.urgent_waiting -= urgent
            self.busy = True
        try:
            yield
        finally:
            with self.cond:
                self.busy = False
                self.cond.notify_all()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def log(message: str) -> None:
    print(f"{_now()} memvault service [{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def use_tcp() -> bool:
    return os.name == "nt" or os.environ.get("MEMVAULT_SERVICE_TRANSPORT", "").strip().lower() == "tcp"


class _TooLarge(Exception):
    pass


def _read_line(conn: socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(64 * 1024)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            chunks.append(chunk[:newline])
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise _TooLarge
    return b"".join(chunks)


Tell = Callable[[dict[str, Any]], None]


class Call:
    """One request to an op the service's caller added: the request, the service's own recall, and `tell`."""

    def __init__(self, server: Server, request: dict[str, Any], tell: Tell) -> None:
        self.request, self.tell, self._server = request, tell, server

    def recall(self, index: str, query: str, options: dict[str, Any]) -> dict[str, Any] | None:
        """`Result.as_dict()` from the service's recall (its model, its in-memory vectors); None when it failed."""
        reply = self._server.recall(index, query, options)
        return dict(reply["result"]) if reply.get("ok") is True else None


Op = Callable[[Call], dict[str, Any]]


class Server:
    """A bound, listening service around a loaded embedder; `run()` answers requests until it is told to exit."""

    def __init__(self, embedder: Any, runtime: Path, idle_minutes: float, ops: Mapping[str, Op] | None = None) -> None:
        self.embedder = embedder
        self.ops = dict(ops or {})  # ops added by the caller (`serve(ops=…)`), beside the built-in ones
        self.idle_minutes = max(float(idle_minutes), 0.0)
        self.idle_seconds = self.idle_minutes * 60
        self.token = secrets.token_hex(16)
        self.socket_file = runtime / SOCKET_NAME
        self.info_file = runtime / INFO_NAME
        self.turns = Turns()
        self.stats_lock = threading.Lock()
        self.vectors: Any = None  # vecmem.VectorCache, created by the first recall request
        self.readers = readers.Readers()  # the recalls' read connections, kept open between them
        self.catching_up: set[str] = set()  # indexes whose pending notes a background thread is embedding
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.requests = 0
        self.last_request_at: str | None = None
        self.last_activity = time.monotonic()
        self.reason = ""
        self.stopping = threading.Event()
        self.wake_r, self.wake_w = socket.socketpair()
        self.socket_inode: int | None = None
        self.listener = self._listen()
        try:
            self.info = self._write_info()
        except BaseException:
            self.info = {}
            self.close()
            raise

    def _listen(self) -> socket.socket:
        old_umask = os.umask(0o077)  # the socket is never reachable by others, not even between bind and chmod
        try:
            if use_tcp():
                self.transport = "tcp"
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                if hasattr(socket, "SO_EXCLUSIVEADDRUSE"):  # Windows: no other process may bind over this port
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_EXCLUSIVEADDRUSE, 1)
                sock.bind((LOOPBACK, 0))
            else:
                self.transport = "unix"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.socket_file)  # left by a crashed instance; we hold the lock, so it is not live
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.bind(str(self.socket_file))
                os.chmod(self.socket_file, 0o600)
                self.socket_inode = os.stat(self.socket_file).st_ino
        finally:
            os.umask(old_umask)
        sock.listen(MAX_CONNECTIONS)
        sock.setblocking(False)
        return sock

    def _write_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"pid": os.getpid(), "transport": self.transport}
        if self.transport == "tcp":
            info.update(address=LOOPBACK, port=self.listener.getsockname()[1])
        else:
            info.update(address=str(self.socket_file))
        info.update(token=self.token, model=self.embedder.name, dim=self.embedder.dim, started_at=_now(),
                    protocol=PROTOCOL)  # fmt: skip
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.info_file)
        atomic_write(self.info_file, json.dumps(info, indent=1).encode("utf-8"), private=True)  # 0600 from birth
        facts = {key: info.get(key) for key in ("pid", "transport", "address", "token", "protocol")}
        atomic_write(self.info_file.with_name(WIRE_INFO_NAME), wire.pack(facts), private=True)  # for `hooks.fast`
        return info

    # --- the loop -------------------------------------------------------------------------------

    def shutdown(self, reason: str) -> None:
        """Make `run()` return soon; safe from request threads and signal handlers."""
        if not self.reason:
            self.reason = reason
        self.stopping.set()
        with contextlib.suppress(OSError):
            self.wake_w.send(b"x")

    def run(self) -> str:
        """Serve until idle, stopped or interrupted; returns why it stopped."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.listener, selectors.EVENT_READ)
            selector.register(self.wake_r, selectors.EVENT_READ)
            while not self.stopping.is_set():
                idle_left = self.last_activity + self.idle_seconds - time.monotonic()
                if idle_left <= 0:
                    self.shutdown("idle")
                    break
                for key, _ in selector.select(timeout=min(idle_left, self.readers.max_idle)):
                    if key.fileobj is self.listener:
                        self._accept()
                self.readers.expire()
        return self.reason

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        if not self.slots.acquire(blocking=False):
            conn.close()
            return
        threading.Thread(target=self._serve_connection, args=(conn,), daemon=True).start()

    def _serve_connection(self, conn: socket.socket) -> None:
        after = None
        try:
            with conn:
                conn.setblocking(True)
                conn.settimeout(CONNECTION_TIMEOUT)
                encode = _line
                try:
                    request = _read_line(conn)
                except _TooLarge:
                    reply: dict[str, Any] = _error(f"request larger than {MAX_REQUEST} bytes")
                else:
                    if wire.is_message(request):  # a hook's short way (`hooks.fast`): answered in kind
                        encode = _wire_line
                    reply, after = self.handle(request, lambda line: conn.sendall(encode(line)))
                conn.sendall(encode(reply))
        except OSError:
            pass  # the client went away or was too slow; nothing to answer
        except Exception as exc:  # a bad request must never take the service down
            log(f"request failed: {type(exc).__name__}: {exc}")
        finally:
            self.slots.release()
            if after:
                self.shutdown(after)

    # --- requests -------------------------------------------------------------------------------

    def handle(self, raw: bytes, tell: Tell | None = None) -> tuple[dict[str, Any], str | None]:
        """The reply to one request line, and the exit reason when the request asks the service to stop.

        `tell` sends a line before the reply (an added op may use it to say how long the reply will take).
        """
        try:
            request = wire.request(raw) if wire.is_message(raw) else json.loads(raw)
        except ValueError:
            return _error("malformed request: not JSON"), None
        if not isinstance(request, dict):
            return _error("malformed request: not a JSON object"), None
        token = request.get("token")
        given = token.encode("utf-8", "surrogatepass") if isinstance(token, str) else b""
        if not hmac.compare_digest(given, self.token.encode("ascii")):
            return _error("bad token"), None
        op = request.get("op")
        if op == "embed":
            return self._embed(request.get("texts"), query=request.get("query") is True), None
        if op == "recall":
            return self._recall(request), None
        if op == "status":
            return {"ok": True, **self.status()}, None
        if op == "catch_up":
            return self._catch_up(request), None
        if op == "vectors_changed":
            return self._vectors_changed(request), None
        if op == "stop":
            return {"ok": True}, "stop request"
        if isinstance(op, str) and op in self.ops:
            try:
                return self.ops[op](Call(self, request, tell or (lambda line: None))), None
            except Exception as exc:  # reported to the client, the service keeps serving
                log(f"{op} failed: {type(exc).__name__}: {exc}")
                return _error(f"{op} failed: {type(exc).__name__}"), None
        return _error(f"unknown op {op!r}"), None

    def _embed(self, texts: Any, *, query: bool = False) -> dict[str, Any]:
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            return _error("texts must be a list of strings")
        if len(texts) > MAX_TEXTS:
            return _error(f"at most {MAX_TEXTS} texts per request")
        try:
            vectors = self.encode_query(texts) if query else self.encode(texts)
        except Exception as exc:  # reported to the client, the service keeps serving
            log(f"encode failed: {type(exc).__name__}: {exc}")
            return _error(f"encode failed: {type(exc).__name__}")
        self._served()
        encoded = [base64.b64encode(vector).decode("ascii") for vector in vectors]
        return {"ok": True, "model": self.embedder.name, "dim": self.embedder.dim, "vectors": encoded}

    def _recall(self, request: dict[str, Any]) -> dict[str, Any]:
        """Hybrid recall run here, beside the loaded model: a hook sends its prompt and gets the hits back.

        The hook then needs neither the index layer's imports nor a second round trip for the vector. An index
        whose first build has not finished answers nothing but the reason: the hook scans the files instead.
        """
        index, query, options = request.get("index"), request.get("query"), request.get("options")
        if not (isinstance(index, str) and index.endswith(".sqlite3") and isinstance(query, str)):
            return _error("recall needs index (an .sqlite3 file) and query")
        return self.recall(index, query, options if isinstance(options, dict) else {})

    def recall(self, index: str, query: str, options: dict[str, Any]) -> dict[str, Any]:
        """The recall op's reply: `{"ok": true, "result": Result.as_dict()}`, or an error."""
        from . import search as rc

        try:
            from . import vecmem

            wanted = rc.options_from(options)
            self.vectors = self.vectors or vecmem.VectorCache()
            source = self.vectors.source_for(Path(index), self.readers)  # None until its in-memory copy is fresh
            result = rc.recall_file(
                Path(index), query, wanted, self._query_vector, source, built_only=True, readers=self.readers
            )
        except Exception as exc:  # reported to the client, the service keeps serving
            log(f"recall failed: {type(exc).__name__}: {exc}")
            return _error(f"recall failed: {type(exc).__name__}: {exc}")
        self._served()
        return {"ok": True, "result": result.as_dict()}

    def _catch_up(self, request: dict[str, Any]) -> dict[str, Any]:
        """Embed an index's pending notes in the background (a write that could not wait for its vectors)."""
        index, lock = request.get("index"), request.get("lock")
        if not (isinstance(index, str) and index.endswith(".sqlite3") and isinstance(lock, str)
                and lock.endswith(".lock")):  # fmt: skip
            return _error("catch_up needs index (an .sqlite3 file) and lock (a .lock file)")
        with self.stats_lock:
            running = index in self.catching_up
            self.catching_up.add(index)
        if not running:
            threading.Thread(target=self._embed_pending, args=(index, lock), daemon=True).start()
        self._served()
        return {"ok": True, "started": not running}

    def _vectors_changed(self, request: dict[str, Any]) -> dict[str, Any]:
        """A writer changed an index's vectors: its in-memory copy reloads now, not when the next prompt finds it
        stale (that prompt would scan with sqlite-vec, 15–20 ms more at 20,000 notes)."""
        index = request.get("index")
        if not (isinstance(index, str) and index.endswith(".sqlite3")):
            return _error("vectors_changed needs index (an .sqlite3 file)")
        self._refresh_copy(index)
        self._served()
        return {"ok": True}

    def _refresh_copy(self, index: str) -> None:
        """Start reloading the copy of `index`'s vectors if one is held and stale (one not held is left alone). The
        copy is named by the path a hook sent, which may spell the same file another way."""
        for held in self.vectors.loaded() if self.vectors is not None else []:
            with contextlib.suppress(OSError):
                if held == index or os.path.samefile(held, index):
                    self.vectors.source_for(Path(held), self.readers)

    def _embed_pending(self, index_file: str, lock_file: str) -> None:
        from memvault.index import core as ix
        from memvault.index import sync

        lock = filelock.FileLock(lock_file, mode=0o600)  # the reindex's lock: user-only if this creates it
        try:
            lock.acquire(timeout=0)
        except (filelock.Timeout, OSError):  # a reindex of that vault runs: it embeds the pending notes
            with self.stats_lock:
                self.catching_up.discard(index_file)
            return
        try:
            index = ix.open_index(Path(index_file))
            try:
                done = sync.embed_pending(index, _Vectors(self), batch_notes=8)
            finally:
                index.close()
            log(f"caught up: {done} note(s) embedded in {index_file}")
            self._refresh_copy(index_file)
        except Exception as exc:  # the index is derived: the next reindex catches up instead
            log(f"catch-up failed: {type(exc).__name__}: {exc}")
        finally:
            lock.release()
            with self.stats_lock:
                self.catching_up.discard(index_file)

    def encode(self, texts: list[str]) -> list[bytes]:
        """Vectors for `texts`: a few at once, ahead of any batch; a batch by length-sorted slices."""
        if len(texts) < BATCH_MIN:
            with self.turns.turn(urgent=True):
                return list(self.embedder.encode(texts, threads=THREADS))
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[bytes] = [b""] * len(texts)
        for start in range(0, len(order), SLICE):
            part = order[start : start + SLICE]
            with self.turns.turn(urgent=False):
                encoded = self.embedder.encode([texts[i] for i in part], batch_size=SLICE, threads=BATCH_THREADS)
            for i, vector in zip(part, encoded, strict=True):
                vectors[i] = vector
        return vectors

    def encode_query(self, texts: list[str]) -> list[bytes]:
        """Query vectors (through the default model's query adapter): a few at once, ahead of any batch."""
        encode = getattr(self.embedder, "encode_query", self.embedder.encode)  # a stand-in may have no query form
        with self.turns.turn(urgent=True):
            return list(encode(texts, threads=THREADS))

    def _query_vector(self, text: str, timeout: float) -> tuple[str, bytes]:
        return self.embedder.name, self.encode_query([text])[0]

    def _served(self) -> None:
        with self.stats_lock:
            self.requests += 1
            self.last_request_at = _now()
            self.last_activity = time.monotonic()

    def status(self) -> dict[str, Any]:
        info = {key: value for key, value in self.info.items() if key != "token"}
        with self.stats_lock:
            info.update(last_request_at=self.last_request_at, requests=self.requests)
        info["idle_minutes"] = self.idle_minutes
        info["in_memory"] = self.vectors.loaded() if self.vectors is not None else []  # indexes' vectors held
        return info

    # --- exit -----------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop listening; remove the socket and info file if they are still this instance's."""
        for sock in (self.listener, self.wake_r, self.wake_w):
            sock.close()
        self.readers.close()
        if self.socket_inode is not None:
            with contextlib.suppress(OSError):
                if os.stat(self.socket_file).st_ino == self.socket_inode:
                    os.unlink(self.socket_file)
        with contextlib.suppress(OSError, ValueError):
            current = json.loads(self.info_file.read_text(encoding="utf-8"))
            if current.get("pid") == os.getpid() and current.get("token") == self.token:
                os.unlink(self.info_file)
                os.unlink(self.info_file.with_name(WIRE_INFO_NAME))


class _Vectors:
    """The server's model as `sync.Embedder`, through its turns (for catching up an index in the background)."""

    def __init__(self, server: Server) -> None:
        self.server, self.name, self.dim = server, server.embedder.name, server.embedder.dim

    def encode(self, texts: list[str]) -> list[bytes]:
        return self.server.encode(texts)


def _line(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply).encode("utf-8") + b"\n"


def _wire_line(reply: dict[str, Any]) -> bytes:
    try:
        return wire.pack(reply)
    except TypeError as exc:  # an op's reply that has no wire form: said as an error
        return wire.pack(_error(f"this reply has no wire form ({exc})"))


def _error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


def serve(
    model: str = "default", idle_minutes: float = 30, *, embedder: Any = None, ops: Mapping[str, Op] | None = None
) -> int:
    """Run the service in this process until it exits; the exit code (0 also when another one is running).

    `embedder` (an already loaded `embed.Embedder`) skips loading the model, for in-process use. `ops`
    adds request ops by name (`memvault.hooks.served` adds the prompt hook's).
    """
    try:
        runtime = paths.runtime_dir()
    except MemvaultError as exc:
        log(f"cannot start: {exc}")
        return 1
    lock = filelock.FileLock(str(runtime / LOCK_NAME), timeout=0, mode=0o600)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        log("already running (or starting); not starting another")
        return 0
    try:
        return _serve_locked(model, idle_minutes, embedder, runtime, ops)
    finally:
        lock.release()


def _serve_locked(model: str, idle_minutes: float, embedder: Any, runtime: Path, ops: Mapping[str, Op] | None) -> int:
    started = time.monotonic()
    if embedder is None:
        try:
            embedder = embed.load(model, threads=THREADS)
        except MemvaultError as exc:
            log(f"cannot start: {exc}")
            return 1
    # Before listening: the first real request must not pay torch's first-call set-up or recall's imports.
    from . import search, vecmem  # noqa: F401

    embedder.encode(["warm up"], threads=THREADS)
    quick = getattr(embedder, "quicken", None)  # a stand-in embedder has none
    quick_ready = bool(quick and quick())
    try:
        server = Server(embedder, runtime, idle_minutes, ops)
    except OSError as exc:
        log(f"cannot listen: {exc}")
        return 1
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if signum is not None:
                previous[signum] = signal.signal(signum, lambda *_: server.shutdown("signal"))
    where = server.info["address"] + (f":{server.info['port']}" if server.transport == "tcp" else "")
    log(
        f"started: model {embedder.name} (dim {embedder.dim}), {server.transport} {where}, "
        f"ready in {time.monotonic() - started:.1f}s, idle exit after {server.idle_minutes:g} min, "
        f"queries {'traced' if quick_ready else 'through encode'}"
    )
    reason = "interrupted"
    try:
        reason = server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        log(f"stopped ({reason}) after {server.requests} requests")
    return 0


def main(argv: list[str] | None = None, *, ops: Mapping[str, Op] | None = None) -> int:
    """The service's command line; `ops` as for `serve()`."""
    parser = argparse.ArgumentParser(prog="memvault serve", description="The warm embedding service.")
    parser.add_argument("--model", default=embed.DEFAULT, help="embedding model spec (default: the packaged one)")
    parser.add_argument("--idle-minutes", type=float, default=30.0, help="exit after this long without requests")
    args = parser.parse_args(argv)
    if "numpy" not in sys.modules:  # read by the BLAS library when numpy loads, never after
        os.environ.update(BLAS_THREADS)
    try:
        return serve(args.model, args.idle_minutes, ops=ops)
    except KeyboardInterrupt:  # while the model was loading
        return 130


if __name__ == "__main__":
    sys.exit(main())
