"""Hook timings as Claude Code, Codex CLI and Gemini CLI report them, beside a bare `python -c pass` hook in one run.

    python scripts/bench_host_hooks.py [--runs 5] [--clients claude,codex,gemini] [--keyword-only] [--json OUT]

Each client (the pinned npm versions of tests/e2e, installed into the same cache) runs headless
against its local model stub in a throwaway home. Claude Code: memvault installed by `./install.sh` into
that home, as a user installs it (a regular venv), and each `claude -p` run with a bare `python -c pass`
hook added to the same events through `--settings` (the client runs both for every event); the durations
are the client's `--debug-file` lines. Codex CLI and Gemini CLI alternate between memvault's hooks
(installed with `memvault install --host …`) and the same events running `<python> -c pass`; the
durations are Codex's app-server `hook/completed` notifications (`durationMs`) and Gemini's `--debug`
lines (`Hook execution for <Event>: … total duration: N ms`). The vault is a copy of examples/vault; with
the warm embedding service on (the default) a first, unmeasured run starts it, and the runs measured start
once it is ready and holds the vectors (as after a session's start job).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.e2e import clients, npm  # noqa: E402  (the offline homes, and the cached npm installs)
from tests.e2e.stubs.gemini import GeminiStub  # noqa: E402
from tests.e2e.stubs.openai_responses import ResponsesStub  # noqa: E402

PROMPT = "how do I fix a flaky test that fails only sometimes on CI?"
BARE = [sys.executable, "-c", "pass"]


def memvault(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "memvault", *args], env=env, check=True, capture_output=True, timeout=600)


# ---- Codex CLI: app-server notifications ------------------------------------------------------------


class AppServer:
    """`codex app-server` over stdio (JSON-RPC lines): start a thread, run turns, collect hook/completed."""

    def __init__(self, exe: Path, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen([str(exe), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True, bufsize=1)  # fmt: skip
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.hooks: list[dict[str, Any]] = []
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("method") == "hook/completed":
                params = message.get("params") or {}
                self.hooks.append(params.get("run") or params)
            self.inbox.put(message)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any], wait_for: str | None = None) -> dict[str, Any]:
        self.ids += 1
        self.send({"id": self.ids, "method": method, "params": params})
        answer: dict[str, Any] = {}
        end = time.monotonic() + 120
        while time.monotonic() < end:
            message = self.inbox.get(timeout=max(0.1, end - time.monotonic()))
            if message.get("id") == self.ids and "method" not in message:
                answer = message
                if wait_for is None:
                    return answer
            elif wait_for and message.get("method") == wait_for:
                return answer
            elif "id" in message and "method" in message:  # a question for the client (approval): decline
                self.send({"id": message["id"], "result": {"decision": "decline"}})
        raise TimeoutError(method)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def codex_run(exe: Path, home: Path, project: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    server = AppServer(exe, env, project)
    try:
        server.request("initialize", {"clientInfo": {"name": "bench", "title": "bench", "version": "0"}})
        server.send({"method": "initialized"})
        thread = server.request("thread/start", {"cwd": str(project)})["result"]["thread"]["id"]
        server.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": PROMPT}]},
                       wait_for="turn/completed")  # fmt: skip
        time.sleep(0.5)  # the Stop hook's notification
    finally:
        server.close()
    return [{"event": str(h.get("eventName")), "ms": float(h["durationMs"]), "status": h.get("status")}
            for h in server.hooks if "durationMs" in h]  # fmt: skip


def codex_bare_hooks(codex_home: Path) -> None:
    """The same four events running `python -c pass`, trusted the way memvault's are."""
    from memvault.hosts import codex_toml, spec

    hooks: dict[str, Any] = {}
    trust = []
    path = str(codex_home / "hooks.json")
    for event in spec.HOSTS["codex"].events:
        group: dict[str, Any] = {"matcher": event.matcher} if event.matcher else {}
        group["hooks"] = [{"type": "command", "command": shlex.join(BARE), "timeout": event.timeout_s}]
        hooks[event.name] = [group]
        key = codex_toml.trust_key(path, event.name, 0, 0)
        digest = codex_toml.trust_hash(event.name, group, group["hooks"][0])
        trust.append(f"[hooks.state.{codex_toml.string(key)}]\ntrusted_hash = {codex_toml.string(digest)}\n")
    (codex_home / "hooks.json").write_text(json.dumps({"hooks": hooks}, indent=2))
    config = codex_home / "config.toml"
    config.write_text(config.read_text() + "\n" + "\n".join(trust))


def warm(env: dict[str, str], keyword_only: bool) -> None:
    """After a client's unmeasured first run: wait until the warm service it started is ready and holds the
    vectors, as after a session's start job (a client run takes a second or two; the model takes longer to load,
    and the runs measured meanwhile would be the hooks of a service still loading)."""
    if not keyword_only:
        memvault("serve", "--background", env=env)
        time.sleep(5)


def bench_codex(runs: int, work: Path, base_env: dict[str, str], keyword_only: bool) -> dict[str, list[float]]:
    exe = npm.install(npm.CODEX)
    results: dict[str, list[float]] = {}
    with ResponsesStub(default="ok") as stub:
        for label in ("memvault", "bare"):
            home = work / f"codex-{label}"
            codex_home = home / ".codex"
            codex_home.mkdir(parents=True)
            (home / "project").mkdir()
            (codex_home / "config.toml").write_text(clients.codex_config(stub.base_url))
            env = {**base_env, "HOME": str(home), "CODEX_HOME": str(codex_home), "STUB_API_KEY": "x"}
            if label == "memvault":
                memvault("install", "--host", "codex", "--trust-hooks", env=env)
                codex_run(exe, home, home / "project", env)  # unmeasured: starts the warm service
                warm(env, keyword_only)
            else:
                codex_bare_hooks(codex_home)
        for _ in range(runs):
            for label in ("memvault", "bare"):
                home = work / f"codex-{label}"
                env = {**base_env, "HOME": str(home), "CODEX_HOME": str(home / ".codex"), "STUB_API_KEY": "x"}
                for hook in codex_run(exe, home, home / "project", env):
                    results.setdefault(f"{label}:{hook['event']}", []).append(hook["ms"])
    return results


# ---- Gemini CLI: --debug lines ----------------------------------------------------------------------

GEMINI_LINE = re.compile(r"Hook execution for (\w+): .*?total duration: (\d+)ms")


def gemini_settings(home: Path, command_for: dict[str, str] | None) -> None:
    settings = clients.gemini_settings()
    if command_for is not None:
        settings["hooks"] = {e: [{"hooks": [{"type": "command", "name": f"bare-{e}", "command": c, "timeout": 5000}]}]
                             for e, c in command_for.items()}  # fmt: skip
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(settings, indent=2))


def bench_gemini(runs: int, work: Path, base_env: dict[str, str], keyword_only: bool) -> dict[str, list[float]]:
    exe = npm.install(npm.GEMINI_CLI)
    results: dict[str, list[float]] = {}
    with GeminiStub(default="ok") as stub:
        envs = {}
        for label in ("memvault", "bare"):
            home = work / f"gemini-{label}"
            (home / "project").mkdir(parents=True)
            envs[label] = {**base_env, "HOME": str(home), "GEMINI_CLI_HOME": str(home), "GEMINI_API_KEY": "x",
                           "GOOGLE_GEMINI_BASE_URL": stub.base_url, "GEMINI_CLI_TRUST_WORKSPACE": "true"}  # fmt: skip
            if label == "memvault":
                gemini_settings(home, None)
                memvault("install", "--host", "gemini", env=envs[label])
            else:
                gemini_settings(home, {e: shlex.join(BARE) for e in ("SessionStart", "BeforeAgent", "AfterAgent",
                                                                     "SessionEnd")})  # fmt: skip
        cmd = [str(exe), "--debug", "-m", clients.GEMINI_MODEL, "-p", PROMPT]
        subprocess.run(
            cmd,
            cwd=work / "gemini-memvault" / "project",
            env=envs["memvault"],
            capture_output=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip  (unmeasured warm-up)
        warm(envs["memvault"], keyword_only)
        for _ in range(runs):
            for label in ("memvault", "bare"):
                done = subprocess.run(cmd, cwd=work / f"gemini-{label}" / "project", env=envs[label], text=True,
                                      capture_output=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
                for event, ms in GEMINI_LINE.findall(done.stdout + done.stderr):
                    results.setdefault(f"{label}:{event}", []).append(float(ms))
    return results


# ---- Claude Code: its --debug-file lines -----------------------------------------------------------------

CLAUDE_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")


def bench_claude(runs: int, work: Path, keyword_only: bool) -> dict[str, list[float]]:
    from tests.e2e.claude import Client, Scenario, User, hook_runs, indexed_vault
    from tests.e2e.stubs.anthropic import AnthropicStub

    root = work / "claude-user"
    (root / "Obsidian").mkdir(parents=True)
    user = User(root, Client(npm.require(npm.CLAUDE_CODE)))
    installed = user.install_memvault("--vault", str(root / "Obsidian"), "--no-demo")
    if installed.returncode != 0:
        raise SystemExit(f"install.sh failed: {installed.stderr[-2000:]}")
    if keyword_only:  # the service never started by the hooks
        import yaml

        config_file = user.home / ".config" / "memvault" / "config.yaml"
        config = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
        config.setdefault("embedding", {})["warm_service"] = False
        config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    template = indexed_vault(user, root / "template-vault")
    bare = {"type": "command", "command": str(user.venv / "bin" / "python"), "args": ["-c", "pass"]}
    extra = json.dumps({"hooks": {event: [{"hooks": [bare]}] for event in CLAUDE_EVENTS}})  # beside memvault's
    results: dict[str, list[float]] = {}
    try:
        with AnthropicStub(log_path=work / "claude-requests.jsonl", default="ok") as stub:
            scenario = Scenario(user, work / "claude-scenario", stub, template)
            scenario.claude("-p", PROMPT, "--settings", extra).check()  # unmeasured: starts the warm service
            if not keyword_only:
                user.run_memvault("serve", "--background")
                time.sleep(5)  # its vectors loaded, as after a session's start job
            done = [scenario.claude("-p", PROMPT, "--settings", extra).check() for _ in range(runs)]
        for hook in hook_runs(run.debug_log for run in done):
            label = "memvault" if "memvault/hooks/" in hook.command else "bare" if hook.command.endswith("-c pass") \
                else None  # fmt: skip
            if label:
                results.setdefault(f"{label}:{hook.event}", []).append(float(hook.ms))
    finally:
        user.run_memvault("serve", "--stop")
    return results


def summary(results: dict[str, list[float]]) -> list[dict[str, Any]]:
    rows = []
    events = sorted({k.split(":", 1)[1] for k in results}, key=lambda e: min(
        i for i, k in enumerate(results) if k.endswith(":" + e)))  # fmt: skip
    for event in events:
        ours, bare = results.get(f"memvault:{event}", []), results.get(f"bare:{event}", [])
        if not ours:
            continue
        row = {"event": event, "n": len(ours), "p50_ms": statistics.median(ours), "max_ms": max(ours)}
        if bare:
            row.update(bare_p50_ms=statistics.median(bare), bare_max_ms=max(bare),
                       ratio_p50=round(statistics.median(ours) / max(1.0, statistics.median(bare)), 2))  # fmt: skip
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keyword-only", action="store_true", help="no warm embedding service (keyword recall)")
    parser.add_argument("--clients", default="claude,codex,gemini")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memvault-bench-hosts-", dir=os.environ.get("MEMVAULT_BENCH_DIR")))
    mv_home = work / "memvault-home"
    shutil.copytree(REPO / "examples" / "vault", work / "vault")
    mv_home.mkdir()
    warm = "false" if args.keyword_only else "true"
    (mv_home / "config.yaml").write_text(f"vault:\n  root: {work / 'vault'}\nembedding:\n  warm_service: {warm}\n")
    base_env = clients.environment(work, mv_home)
    memvault("reindex", env=base_env)
    report: dict[str, Any] = {"runs": args.runs, "warm_service": not args.keyword_only}
    try:
        for name in args.clients.split(","):
            # Each client has its own throwaway HOME; its unmeasured first run starts the service in it, as a
            # user's first session would (a service started under another HOME would not run its prompt hooks).
            subprocess.run([sys.executable, "-m", "memvault", "serve", "--stop"], env=base_env, capture_output=True)
            if name == "claude":
                report[name] = summary(bench_claude(args.runs, work, args.keyword_only))
            else:
                bench = bench_codex if name == "codex" else bench_gemini
                report[name] = summary(bench(args.runs, work, base_env, args.keyword_only))
    finally:
        subprocess.run([sys.executable, "-m", "memvault", "serve", "--stop"], env=base_env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    for name in args.clients.split(","):
        print(f"{name}: hook durations reported by the client (ms), memvault vs `python -c pass`, {args.runs} runs")
        for row in report[name]:
            print(f"  {row['event']:<18} p50 {row['p50_ms']:7.0f}  max {row['max_ms']:7.0f}   bare p50 "
                  f"{row.get('bare_p50_ms', float('nan')):6.0f}  max {row.get('bare_max_ms', float('nan')):6.0f}   "
                  f"×{row.get('ratio_p50', float('nan'))}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
