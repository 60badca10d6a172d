"""/clear and /compact in the real client: SessionStart runs again, and what the context lost is given again."""

from __future__ import annotations

from tests.e2e.claude import Scenario
from tests.e2e.stubs.anthropic import last_user_text, messages_text

FLAKY = "How do I fix a flaky test that fails only sometimes on CI?"
AGAIN = "The flaky test failed on CI again: how do we bisect a flaky test?"
FLAKY_NOTE = "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md"
ALWAYS_BLOCK = "<memoryvault-always-load"
SUMMARY_REQUEST = "Your task is to create a detailed summary of the conversation"


def test_compact_gives_the_always_load_notes_and_recalled_notes_again(scenario: Scenario, session_id: str) -> None:
    scenario.stub.rule({"text": "<summary>The user asked about flaky tests.</summary>"}, last_user=SUMMARY_REQUEST)
    scenario.stub.reply({"text": "First answer."}, {"text": "Answer after compaction."})
    scenario.claude("-p", FLAKY, "--session-id", session_id).check()
    scenario.claude("-p", "--continue", "/compact").check()
    scenario.claude("-p", "--continue", AGAIN).check()

    _, summarise, after = scenario.stub.bodies()
    assert SUMMARY_REQUEST in last_user_text(summarise)
    sent = messages_text(after)
    assert "The user asked about flaky tests." in sent and "First answer." not in sent  # compacted
    assert sent.count(ALWAYS_BLOCK) == 1  # SessionStart(compact) gave the always-load notes again
    assert FLAKY_NOTE in sent  # recalled again: the earlier injection went with the compacted turns

    sources = [r["source"] for r in scenario.records(session_id, "SessionStart")]
    assert sources == ["startup", "resume", "compact", "resume"]
    prompts = scenario.records(session_id, "UserPromptSubmit")
    assert [FLAKY_NOTE in [e["path"] for e in r["injected"]] for r in prompts] == [True, True]


def test_clear_starts_a_new_session_that_gets_its_notes_again(scenario: Scenario, session_id: str) -> None:
    scenario.stub.reply({"text": "First answer."}, {"text": "Answer after clear."})
    scenario.claude("-p", FLAKY, "--session-id", session_id).check()
    scenario.claude("-p", "--continue", "/clear").check()
    scenario.claude("-p", "--continue", AGAIN).check()

    _, after = scenario.stub.bodies()  # /clear itself asks the model nothing
    sent = messages_text(after)
    assert "First answer." not in sent and AGAIN in sent
    assert sent.count(ALWAYS_BLOCK) == 1 and FLAKY_NOTE in sent

    ended = scenario.records(session_id, "SessionEnd")
    assert "clear" in [r["reason"] for r in ended]  # the old session ends (its final reflection is scheduled)
    cleared = [r for r in scenario.user.hook_log() if r.get("hook") == "SessionStart" and r.get("source") == "clear"]
    new_session = cleared[-1]["session"]
    assert new_session != session_id
    [prompt] = scenario.records(new_session, "UserPromptSubmit")
    assert FLAKY_NOTE in [e["path"] for e in prompt["injected"]]
