"""The prompt hook's physical floor, measured beside the hooks by `bench_hooks.py`: what no prompt hook can go under.

Three parts, each timed in the same run as the bare `python -c pass` it is compared with:

- **the hand-over**: a `python -S` process that reads the event from stdin, sends it over a Unix socket and
  prints the line that comes back (here from a thread that answers at once): a warm hook's own process, with
  nothing of memvault in it;
- **the query's encoding**: the packaged model loaded as the warm service loads it (one thread, the traced
  single-query path), one prompt at a time: the part of the service's recall that no index work can hide;
- **the keyword-only search**: a `python -S` process that imports the SQLite binding memvault uses, opens the
  index read-only, counts the prompt's words and runs the keyword side's FTS5 query: a cold hook with no
  imports, settings, hits, formatting or log of its own.

The warm floor is the first two together; the keyword-only floor is the third.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_latency as bl  # the bare start and the percentiles, as bench_hooks.py takes them

HANDOVER = """
import _socket, sys
raw = sys.stdin.buffer.read()
s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(raw + b"\\n")
answer = b""
while not answer.endswith(b"\\n"):
    answer += s.recv(65536)
s.close()
sys.stdout.write(answer.decode())
"""

KEYWORD = """
import importlib, sys
sys.path.append(sys.argv[1])
sqlite = importlib.import_module(sys.argv[2])
conn = sqlite.connect(sys.argv[3], uri=True, isolation_level=None)
for term in sys.argv[6:]:
    conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (term,)).fetchone()
top = ("SELECT rowid, bm25(chunks_fts, " + sys.argv[4] + ") AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
       "ORDER BY s LIMIT 300")
print(len(conn.execute(top, (sys.argv[5],)).fetchall()))
"""


def _timed(command: list[str], env: dict[str, str], stdin: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, text=True)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"the floor's process failed: {done.stderr[-1000:]}")
    return elapsed


def _paired(command: list[str], env: dict[str, str], runs: int, stdin: list[str]) -> dict[str, float]:
    """p50/p95 of `command` and of its ratio to a bare `python -c pass` run right before each run."""
    times, ratios = [], []
    for i in range(runs):
        bare = bl.bare(env, 1)[0]
        elapsed = _timed(command, env, stdin[i % len(stdin)])
        times.append(elapsed)
        ratios.append(elapsed / bare)
    return {"p50": statistics.median(times), "p95": bl.pct(times, 0.95), "ratio_p50": statistics.median(ratios),
            "ratio_p95": bl.pct(ratios, 0.95)}  # fmt: skip


def handover(env: dict[str, str], runs: int, payloads: list[str]) -> dict[str, float]:
    """A `python -S` process that hands its stdin over a Unix socket and prints the answer."""
    folder = tempfile.mkdtemp(prefix="mv-floor-")
    address = os.path.join(folder, "floor.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(8)

    def answer() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the measurement is over
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(b'{"hookSpecificOutput": {}}\n')

    threading.Thread(target=answer, daemon=True).start()
    try:
        return _paired([sys.executable, "-S", "-c", HANDOVER, address], env, runs, payloads)
    finally:
        server.close()
        os.unlink(address)
        os.rmdir(folder)


def encoding(env: dict[str, str], runs: int, prompts: list[str]) -> dict[str, float]:
    """ms to encode one prompt with the packaged model as the warm service runs it, in a process of its own (a
    model loaded in the benchmark's process would slow every process it starts after)."""
    command = [sys.executable, __file__, "--encoding", str(runs), *prompts]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _encoding_here(prompts: list[str], runs: int) -> dict[str, float]:
    from memvault.index import embed

    embedder = embed.load(threads=1)
    embedder.quicken()
    for prompt in prompts:  # the first calls warm the model's caches, as the service's start does
        embedder.encode_query([prompt])
    times = []
    for i in range(runs):
        started = time.perf_counter()
        embedder.encode_query([prompts[i % len(prompts)]])
        times.append((time.perf_counter() - started) * 1000)
    return {"p50": statistics.median(times), "p95": bl.pct(times, 0.95)}


def keyword_command(index: Path, prompt: str) -> list[str]:
    """The bare process's command line for `prompt`: the SQLite binding memvault uses, the index read-only, the
    prompt's words (each counted) and its OR query, as the keyword side builds them."""
    from memvault.index import chunking, db
    from memvault.recall import search

    module = db.dbapi()
    where = str(Path(module.__file__).resolve().parents[1])  # the folder its top-level package is in
    terms = chunking.query_terms(prompt)
    words = [chunking.fts_query([t]) or "" for t in terms]
    uri = index.resolve().as_uri() + "?mode=ro"
    return [sys.executable, "-S", "-c", KEYWORD, where, module.__name__, uri, search.BM25_WEIGHTS,
            chunking.fts_query(terms) or '""', *words]  # fmt: skip


def keyword(env: dict[str, str], runs: int, index: Path, prompts: list[str]) -> dict[str, float]:
    """A `python -S` process that runs the keyword side's counting and FTS5 query on `index`, and nothing else."""
    timings = [_paired(keyword_command(index, p), env, max(1, runs // len(prompts)), [""]) for p in prompts]
    return {key: statistics.median(t[key] for t in timings) for key in timings[0]}


def measure(env: dict[str, str], runs: int, index: Path, prompts: list[str]) -> dict[str, dict[str, float]]:
    """The three parts, `runs` times each."""
    payloads = [json.dumps({"prompt": p, "hook_event_name": "UserPromptSubmit"}) for p in prompts]
    return {"handover": handover(env, runs, payloads), "encoding": encoding(env, runs * 5, prompts),
            "keyword": keyword(env, runs, index, prompts)}  # fmt: skip


def print_floor(floor: dict[str, dict[str, float]], bare: float) -> None:
    """The floor's parts and the two floors, against the targets (2× and 3× a bare start)."""
    hand, code, kw = floor["handover"], floor["encoding"], floor["keyword"]
    warm = hand["p50"] + code["p50"]
    print("\nthe prompt hook's floor (p50; ratios to a bare `python -c pass` run right before each process):\n")
    print("| part | p50 | ÷ bare |\n|---|---|---|")
    print(f"| hand-over: `python -S` reads stdin, one Unix-socket round trip, prints | {hand['p50']:.1f} ms | "
          f"{hand['ratio_p50']:.2f}× |")  # fmt: skip
    print(f"| the query's encoding, one thread, traced (in the service) | {code['p50']:.1f} ms | |")
    print(f"| **warm floor**: the two, with no index work at all | {warm:.1f} ms | {warm / bare:.2f}× (target 2×) |")
    print(f"| **keyword-only floor**: `python -S`, the SQLite binding, the index opened, the words counted, "
          f"the FTS5 query | {kw['p50']:.1f} ms | {kw['ratio_p50']:.2f}× (target 3×) |")  # fmt: skip


if __name__ == "__main__" and sys.argv[1:2] == ["--encoding"]:
    print(json.dumps(_encoding_here(sys.argv[3:], int(sys.argv[2]))))
