"""The interactive Claude Code UI under tmux: the status lines the user sees, and idle_prompt starting the sweep."""

from __future__ import annotations

import shutil

import pytest

from tests.e2e.claude import Scenario, wait_until
from tests.e2e.stubs.anthropic import messages_text
from tests.e2e.terminal import Terminal

FLAKY = "How do I fix a flaky test that fails only sometimes on CI?"
FLAKY_NOTE = "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md"
IDLE_MS = 3000  # the client's idle notification after an answer (default 60 s; only ~/.claude.json sets it)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="the interactive test needs tmux")


def test_the_user_sees_what_was_loaded_and_idle_prompt_runs_the_sweep(scenario: Scenario, session_id: str) -> None:
    user = scenario.user
    user.seed_claude_json(scenario.project, messageIdleNotifThresholdMs=IDLE_MS)
    debug = user.root / "debug" / f"interactive-{session_id}.txt"
    argv = [str(user.client.binary), "--debug-file", str(debug), "--session-id", session_id]
    terminal = Terminal(argv, scenario.project, user.env(scenario.stub, **scenario.env()))
    try:

        def logged(hook: str, **fields: str) -> list[dict[str, object]]:
            found = scenario.records(session_id, hook)
            return [r for r in found if all(r.get(k) == v for k, v in fields.items())]

        def showing(text: str) -> str | None:
            screen = terminal.screen()
            return screen if text in screen else None

        wait_until(lambda: logged("SessionStart", source="startup"), 60, "SessionStart")
        wait_until(lambda: showing("❯"), 30, "the prompt box")
        scenario.stub.reply({"text": "Bisect it, as your workflow note says."})
        terminal.submit(FLAKY, lambda: logged("UserPromptSubmit"))
        wait_until(lambda: logged("Stop"), 60, "the answer")
        screen = wait_until(lambda: showing("UserPromptSubmit says"), 30, "the status line")
        # The one-line status (systemMessage) is shown to the user, never sent to the model.
        assert "SessionStart:startup says: Loaded 1 MemoryVault always-load entry" in screen
        assert "UserPromptSubmit says: Loaded" in screen and "Bisecting flaky tests" in screen
        assert "Bisect it, as your workflow note says." in screen

        [idle] = wait_until(lambda: logged("Notification"), IDLE_MS / 1000 + 60, "the idle_prompt notification")
        assert idle["result"] == "success" and idle["scheduled"] == "idle sweep"

        terminal.submit("/exit", lambda: logged("SessionEnd"))
        wait_until(lambda: logged("SessionEnd"), 60, "SessionEnd")
    finally:
        terminal.close()
    [body] = scenario.stub.bodies()
    sent = messages_text(body)
    assert sent.count("<memoryvault-always-load") == 1 and FLAKY_NOTE in sent and "Loaded " not in sent
    assert [r["reason"] for r in scenario.records(session_id, "SessionEnd")] == ["prompt_input_exit"]
