"""The warm embedding service and its client: real model, real subprocesses, real sockets."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock
import pytest

from memvault import paths
from memvault.errors import MemvaultError
from memvault.index import embed
from memvault.recall import client, service

TRANSPORT = "MEMVAULT_SERVICE_TRANSPORT"
HEAVY = ["numpy", "torch", "yaml", "click", "rich", "filelock", "sentence_transformers", "memvault.index.embed"]
HAVE_MODEL = all(importlib.util.find_spec(name) for name in ("sentence_transformers", embed.DEFAULT_PACKAGE))
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="the packaged embedding model is not installed")
needs_unix = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")


def service_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in (TRANSPORT, "MEMVAULT_HOME")}
    return {**env, "MEMVAULT_HOME": str(home)}


def gone(pid: int) -> bool:
    """Whether process `pid` has exited (reaping it when it is our child)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def lock_free() -> bool:
    """Whether no service holds its lock (taken and released at once)."""
    lock = filelock.FileLock(str(client.lock_file()), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        return False
    lock.release()
    return True


def cosine(a: bytes, b: bytes) -> float:
    x, y = (struct.unpack(f"<{len(blob) // 4}f", blob) for blob in (a, b))
    return sum(p * q for p, q in zip(x, y, strict=True)) / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))


def raw_request(info: dict[str, Any], payload: bytes, timeout: float = 5.0) -> dict[str, Any]:
    """Send `payload` as it is to the service named by `info` and parse its one-line reply."""
    tcp = info["transport"] == "tcp"
    sock = socket.socket(socket.AF_INET if tcp else socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    with sock:
        sock.connect((info["address"], info["port"]) if tcp else info["address"])
        sock.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


@dataclass
class Running:
    home: Path
    proc: subprocess.Popen[bytes]
    info: dict[str, Any]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, embed.Embedder]]:
    """One real service subprocess for the module, and the same model loaded here (both load in parallel)."""
    if not HAVE_MODEL:
        pytest.skip("the packaged embedding model is not installed")
    home = tmp_path_factory.mktemp("svc")
    with open(home / "spawned.log", "ab") as log:
        command = [sys.executable, "-m", "memvault.recall.service", "--idle-minutes", "10"]
        proc = subprocess.Popen(command, env=service_env(home), stdout=subprocess.DEVNULL, stderr=log)
    try:
        local = embed.load()
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MEMVAULT_HOME", str(home))
            mp.delenv(TRANSPORT, raising=False)
            assert client.wait_ready(90) is not None, (home / "spawned.log").read_text()
            info = client.read_info()
        assert info is not None
        yield Running(home, proc, info), local
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MEMVAULT_HOME", str(home))
            client.stop()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


@pytest.fixture
def running(shared: tuple[Running, embed.Embedder], memvault_home: Path, monkeypatch: pytest.MonkeyPatch) -> Running:
    """The shared service, with this test's environment pointing at it."""
    monkeypatch.setenv("MEMVAULT_HOME", str(shared[0].home))
    monkeypatch.delenv(TRANSPORT, raising=False)
    return shared[0]


@pytest.fixture
def local_model(shared: tuple[Running, embed.Embedder]) -> embed.Embedder:
    return shared[1]


# --- without a service -------------------------------------------------------------------------


def test_client_import_loads_nothing_heavy(tmp_path: Path) -> None:
    probe = (
        "import json, sys, memvault.recall.client as c; r = c.embed(['x']); s = c.status();"
        f"print(json.dumps([[m for m in {HEAVY!r} if m in sys.modules], r, s]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=service_env(tmp_path), capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [[], None, None]


def test_nothing_running_means_none_fast() -> None:
    started = time.monotonic()
    assert client.embed(["where are the deploy notes"]) is None
    assert client.status() is None
    assert client.stop(timeout=1) is False
    assert time.monotonic() - started < 1.0
    if hasattr(socket, "AF_UNIX"):  # an info file naming a socket nobody listens on: refused at once
        info = {"pid": 999999, "transport": "unix", "address": str(client.socket_path()), "token": "0" * 32}
        client.info_file().write_text(json.dumps(info))
        started = time.monotonic()
        assert client.embed(["x"]) is None and client.status() is None
        assert time.monotonic() - started < 0.5


@pytest.mark.skipif(os.name != "posix", reason="POSIX ownership and socket-path rules")
def test_runtime_dir_is_private_short_and_refuses_foreign_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = paths.runtime_dir()
    assert stat.S_IMODE(os.stat(run).st_mode) == 0o700 and len(os.fsencode(run / "embed.sock")) <= 100
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    monkeypatch.setenv("MEMVAULT_HOME", str(deep))
    short = paths.runtime_dir()  # the AF_UNIX limit: a per-user folder in the temp dir instead
    assert short.parent == Path(tempfile.gettempdir()) and short.name.startswith(f"memvault-{os.getuid()}-")
    assert short == paths.runtime_dir() and stat.S_IMODE(os.stat(short).st_mode) == 0o700
    short.rmdir()
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "linked"))
    (tmp_path / "linked").mkdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "linked" / "run").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(MemvaultError, match="refusing"):
        paths.runtime_dir()
    if os.getuid() == 0:  # only root can hand a folder to another user
        monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "foreign"))
        (tmp_path / "foreign" / "run").mkdir(parents=True)
        os.chown(tmp_path / "foreign" / "run", 4242, 4242)
        with pytest.raises(MemvaultError, match="refusing"):
            paths.runtime_dir()


@needs_unix
def test_a_server_that_never_replies_costs_about_the_timeout() -> None:
    path = client.socket_path()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)  # connections complete in the backlog; nothing ever answers
    token = "f" * 32
    fake = {"pid": os.getpid(), "transport": "unix", "address": str(path), "token": token}
    client.info_file().write_text(json.dumps(fake))
    try:
        started = time.monotonic()
        assert client.embed(["what broke the build"], timeout=0.3) is None
        elapsed = time.monotonic() - started
        listener.settimeout(1)
        conn, _ = listener.accept()
        with conn:
            sent = conn.recv(65536)
    finally:
        listener.close()
    assert 0.28 <= elapsed < 0.6
    # The request went out: the time was spent waiting for the reply.
    assert json.loads(sent) == {"op": "embed", "texts": ["what broke the build"], "token": token}


# --- the shared service ------------------------------------------------------------------------


@needs_model
def test_embed_matches_the_model_loaded_in_process(running: Running, local_model: embed.Embedder) -> None:
    texts = ["how do I rotate the API keys", "steps for rotating API credentials", "a recipe for banana bread"]
    result = client.embed(texts, timeout=5)
    assert result is not None
    assert result.model == local_model.name == embed.DEFAULT_NAME
    assert result.dim == 384
    assert [len(v) for v in result.vectors] == [1536] * 3
    for remote, here in zip(result.vectors, local_model.encode(texts), strict=True):
        assert cosine(remote, here) > 0.999
    assert cosine(result.vectors[0], result.vectors[1]) > cosine(result.vectors[0], result.vectors[2]) + 0.3
    # Once warm, the default 250 ms budget holds (three tries: a busy test machine may stall one).
    warm = [client.embed([f"query number {i}"]) for i in range(3)]
    assert any(w is not None and len(w.vectors) == 1 for w in warm)


@needs_model
@needs_unix
def test_socket_info_file_and_folder_are_private(running: Running) -> None:
    folder = client.socket_path().parent
    assert stat.S_ISSOCK(os.stat(client.socket_path()).st_mode)
    assert stat.S_IMODE(os.stat(client.socket_path()).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(client.info_file()).st_mode) == 0o600
    info = running.info
    assert info["pid"] == running.proc.pid and info["transport"] == "unix"
    assert info["address"] == str(client.socket_path()) and len(info["token"]) == 32


@needs_model
def test_a_wrong_or_missing_token_is_refused(running: Running) -> None:
    for token in ("0" * 32, running.info["token"][:-1], None, 7):
        for op in ("embed", "status", "stop"):
            payload = {"op": op, "token": token, "texts": ["secret?"]}
            reply = raw_request(running.info, json.dumps(payload).encode() + b"\n")
            assert reply == {"ok": False, "error": "bad token"}
    assert client.status() is not None  # still serving after "stop" with bad tokens


@needs_model
def test_bad_requests_get_errors_and_never_wedge_the_service(running: Running) -> None:
    token = running.info["token"]
    bad = [
        b"not json\n",
        b"[1, 2]\n",
        json.dumps({"op": "embed", "token": token, "texts": "a string"}).encode() + b"\n",
        json.dumps({"op": "embed", "token": token, "texts": [1, 2]}).encode() + b"\n",
        json.dumps({"op": "embed", "token": token, "texts": ["x"] * 257}).encode() + b"\n",
        json.dumps({"op": "fly", "token": token}).encode() + b"\n",
        b"x" * (service.MAX_REQUEST + 1),  # too large: refused once the cap is passed, without a newline
    ]
    for payload in bad:
        reply = raw_request(running.info, payload)
        assert reply["ok"] is False and reply["error"], payload[:40]
    silent = socket.socket(socket.AF_UNIX if running.info["transport"] == "unix" else socket.AF_INET)
    silent.connect(running.info["address"])  # connects and never sends
    try:
        # Handled on its own thread: a server stuck on the silent client would hold this one for 5 s.
        assert client.embed(["still answering?"], timeout=3) is not None
    finally:
        silent.close()


@needs_model
def test_a_write_of_the_vectors_has_the_service_reload_its_copy_before_the_next_prompt(
    running: Running, tmp_path: Path
) -> None:
    # A note saved (and embedded through the service) changes the index's vectors: the writer tells the service,
    # whose in-memory copy reloads at once. Before, the next prompt found the copy stale and scanned with sqlite-vec.
    from memvault import open_vault
    from memvault.vault import indexing

    root = tmp_path / "vault"
    (root / "MemoryVault/work/domain").mkdir(parents=True)
    (root / "MemoryVault/work/domain/car.md").write_text("# Car\n\nEngine oil every 10,000 km.\n", encoding="utf-8")
    vault = open_vault(root)
    assert indexing.reindex(vault.root, vault.config, vectors="service").embedded == 1
    index = str(vault.index_file)

    def vectors_read() -> str:
        result = client.recall(index, "when does the car need oil", {"k": 3, "budget_ms": 5000}, timeout=10)
        assert result is not None and result["mode"] == "hybrid", result
        return str(result["vectors"])

    assert vectors_read() == "index"  # the first recall of an index starts its copy
    deadline = time.monotonic() + 10
    while vectors_read() != "memory":
        assert time.monotonic() < deadline, "the copy never loaded"
        time.sleep(0.05)
    vault.save("fix", "clutch", "# Clutch\n\nA slipping clutch needs new friction plates.\n")
    assert indexing.reindex(vault.root, vault.config, vectors="none").pending == 0  # embedded by the save itself
    time.sleep(2.0)  # a copy of two notes reloads in milliseconds (the margin is for a loaded machine)
    assert vectors_read() == "memory"


@needs_model
def test_status_counts_embed_requests(running: Running) -> None:
    before = client.status()
    assert before is not None
    assert before["pid"] == running.proc.pid
    assert before["model"] == embed.DEFAULT_NAME and before["dim"] == 384
    assert before["transport"] == "unix" and before["idle_minutes"] == 10
    assert before["started_at"] and "token" not in before
    assert client.embed(["count me"], timeout=2) is not None
    after = client.status()
    assert after is not None
    assert after["requests"] == before["requests"] + 1
    assert after["last_request_at"] is not None


@needs_model
def test_a_second_instance_exits_and_the_first_keeps_serving(running: Running) -> None:
    assert client.start() is False  # the lock is held: nothing is spawned
    started = time.monotonic()
    second = subprocess.run(
        [sys.executable, "-m", "memvault.recall.service", "--idle-minutes", "1"],
        env=service_env(running.home),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 0
    assert "already running" in second.stderr
    assert time.monotonic() - started < 5  # it gave up before loading the model
    status = client.status()
    assert status is not None and status["pid"] == running.proc.pid
    assert client.embed(["still me"], timeout=2) is not None


# --- in-process instances around the already loaded model ---------------------------------------


@needs_model
def test_tcp_transport_binds_loopback_only_and_stops(
    local_model: embed.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRANSPORT, "tcp")
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(service.serve(idle_minutes=1, embedder=local_model)))
    thread.start()
    try:
        status = client.wait_ready(10)
        assert status is not None
        assert status["transport"] == "tcp" and status["address"] == "127.0.0.1" and status["pid"] == os.getpid()
        if os.path.exists("/proc/net/tcp"):
            port = f"{status['port']:04X}"
            tables = [Path("/proc/net", name).read_text().splitlines()[1:] for name in ("tcp", "tcp6")]
            rows = [line.split() for table in tables for line in table]
            listening = {row[1].split(":")[0] for row in rows if row[1].endswith(":" + port) and row[3] == "0A"}
            assert listening == {"0100007F"}  # 127.0.0.1, and no other address
        assert not client.socket_path().exists()
        result = client.embed(["over loopback"], timeout=2)
        assert result is not None
        assert cosine(result.vectors[0], local_model.encode(["over loopback"])[0]) > 0.999
        info = client.read_info()
        assert info is not None
        assert raw_request(info, b'{"op": "status", "token": "nope"}\n') == {"ok": False, "error": "bad token"}
        assert client.stop() is True
        thread.join(10)
        assert codes == [0]
        assert not client.info_file().exists()
        assert lock_free()
    finally:
        if thread.is_alive():
            client.stop()
            thread.join(10)


@needs_model
@needs_unix
def test_sigterm_stops_the_service_cleanly(local_model: embed.Embedder) -> None:
    # serve() runs on this (main) thread, where it handles SIGTERM; a helper thread sends it once ready.
    seen: dict[str, Any] = {}
    before = signal.getsignal(signal.SIGTERM)

    def terminate_when_ready() -> None:
        seen["status"] = client.wait_ready(10)
        seen["files"] = (client.socket_path().exists(), client.info_file().exists())
        if seen["status"] is not None:
            os.kill(os.getpid(), signal.SIGTERM)

    helper = threading.Thread(target=terminate_when_ready)
    helper.start()
    code = service.serve(idle_minutes=0.5, embedder=local_model)
    helper.join(10)
    assert code == 0
    assert seen["status"] is not None and seen["status"]["pid"] == os.getpid()
    assert seen["files"] == (True, True)
    assert not client.socket_path().exists()
    assert not client.info_file().exists()
    assert lock_free()
    assert signal.getsignal(signal.SIGTERM) == before  # the handler was put back


# --- last: ends the shared service -------------------------------------------------------------


@pytest.mark.slow
@needs_model
@needs_unix
def test_a_killed_instance_is_replaced_and_an_idle_one_exits_cleanly(running: Running) -> None:
    # A SIGKILLed instance leaves its socket and info file behind.
    os.kill(running.proc.pid, signal.SIGKILL)
    running.proc.wait(10)
    assert client.socket_path().exists() and client.info_file().exists()
    started = time.monotonic()
    assert client.embed(["anyone there?"]) is None
    assert time.monotonic() - started < 0.5

    later_pid = None
    try:
        assert client.start(idle_minutes=0.03) is True  # the kernel dropped the dead instance's lock
        status = client.wait_ready(90)
        assert status is not None, client.log_file().read_text()
        later_pid = status["pid"]
        assert later_pid != running.proc.pid and status["idle_minutes"] == 0.03
        result = client.embed(["the stale socket was replaced"], timeout=2)
        assert result is not None and result.dim == 384

        # No requests for 0.03 min (1.8 s): it exits and cleans up after itself.
        deadline = time.monotonic() + 20
        while not gone(later_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(later_pid)
        assert not client.socket_path().exists()
        assert not client.info_file().exists()
        assert client.status() is None
        assert "stopped (idle) after 1 requests" in client.log_file().read_text()
    finally:
        if later_pid is not None and not gone(later_pid):
            os.kill(later_pid, signal.SIGKILL)


def test_the_service_runs_numpys_blas_on_one_thread() -> None:
    """The in-memory vector scan is one small matrix-vector product: a pool of BLAS threads only adds spinning.
    The variables must be set before numpy loads (the BLAS library reads them then), so by the service's main."""
    code = (
        "import os, sys\n"
        "from memvault.recall import service\n"
        "service.serve = lambda *a, **k: print(os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules) or 0\n"
        "sys.exit(service.main([]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in service.BLAS_THREADS}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "False"]
