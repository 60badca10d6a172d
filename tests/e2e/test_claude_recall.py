"""Recall inside the real Claude Code: what reaches the model at session start and with each prompt, what never does."""

from __future__ import annotations

import json

from tests.e2e.claude import Scenario, wait_until
from tests.e2e.stubs.anthropic import messages_text, tool_results

FLAKY = "How do I fix a flaky test that fails only sometimes on CI?"
FLAKY_NOTE = "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md"
ALWAYS_NOTE = "MemoryVault/personal-private/_always-load/dev-flow.md"
ONCALL = "Who is on call for billing this week, and how do I reach them? The flaky test is back, too."
PRIVATE_TEXTS = ("door code 4471-e2e", "555 0100", "555 0103")  # a <private> span; a private: true note
ALWAYS_BLOCK = "<memoryvault-always-load"
RECALL_BLOCK = "<memoryvault-recall"


def test_one_turn_gets_the_always_load_block_once_and_the_recalled_notes(scenario: Scenario, session_id: str) -> None:
    scenario.stub.reply({"text": "Bisect the flaky test as your note says."})
    run = scenario.claude("-p", FLAKY, "--session-id", session_id).check()
    assert run.stdout.strip() == "Bisect the flaky test as your note says."

    [body] = scenario.stub.bodies()
    sent = messages_text(body)
    assert sent.count(ALWAYS_BLOCK) == 1 and ALWAYS_NOTE in sent
    assert sent.count(RECALL_BLOCK) == 1 and FLAKY_NOTE in sent
    assert "SessionStart hook additional context" in sent and "UserPromptSubmit hook additional context" in sent
    for text in PRIVATE_TEXTS:
        assert text not in json.dumps(body), text
    assert "Loaded " not in sent  # the one-line status (systemMessage) is for the user, not the model

    [prompt] = scenario.records(session_id, "UserPromptSubmit")
    # Hybrid when the hook starts quickly; on a loaded machine the budget may be gone first: keywords only.
    assert prompt["mode"] in ("hybrid", "keyword"), prompt
    assert FLAKY_NOTE in [entry["path"] for entry in prompt["injected"]]
    # The warm service ran the prompt hook for the process Claude Code started (hooks.fast), with this
    # test's own vault (MEMVAULT_VAULT, an override the service honours per hook).
    assert prompt.get("served") is True, prompt


def test_continue_does_not_give_the_same_notes_again_and_never_a_private_one(
    scenario: Scenario, session_id: str
) -> None:
    scenario.stub.reply({"text": "First answer."}, {"text": "Second answer."})
    scenario.claude("-p", FLAKY, "--session-id", session_id).check()
    scenario.claude("-p", "--continue", ONCALL).check()

    first, second = scenario.stub.bodies()
    assert FLAKY_NOTE in messages_text(first)
    replayed = messages_text(second)
    assert ONCALL in replayed and "First answer." in replayed  # the same conversation, continued
    # The earlier context is replayed once; nothing is injected twice.
    assert replayed.count(ALWAYS_BLOCK) == 1
    assert replayed.count(FLAKY_NOTE) == messages_text(first).count(FLAKY_NOTE)
    for body in (first, second):
        for text in PRIVATE_TEXTS:
            assert text not in json.dumps(body), text

    starts = scenario.records(session_id, "SessionStart")
    assert [r["source"] for r in starts] == ["startup", "resume"]
    prompts = scenario.records(session_id, "UserPromptSubmit")
    # The second prompt is about the flaky test too: what the first one gave is not given again.
    assert len(prompts) == 2 and FLAKY_NOTE not in [entry["path"] for entry in prompts[1]["injected"]]
    first_given = {entry["path"] for entry in prompts[0]["injected"]}
    assert prompts[1]["deduped"] and set(prompts[1]["deduped"]) <= first_given
    assert "MemoryVault/personal-private/domain/oncall-contacts.md" not in json.dumps(prompts)


def test_prompts_unrelated_to_the_vault_inject_nothing(scenario: Scenario, session_id: str) -> None:
    unrelated = [
        "What is a good recipe for banana bread?",
        "Translate 'good morning, see you tomorrow' into Italian.",
        "How tall is Mount Kilimanjaro?",
    ]
    scenario.claude("-p", unrelated[0], "--session-id", session_id).check()
    for prompt in unrelated[1:]:
        scenario.claude("-p", "--continue", prompt).check()
    prompts = scenario.records(session_id, "UserPromptSubmit")
    assert len(prompts) == len(unrelated)
    assert [r["injected"] for r in prompts] == [[]] * len(unrelated)
    assert RECALL_BLOCK not in messages_text(scenario.stub.bodies()[-1])


def test_the_skill_runs_memvault_recall_and_its_own_entry_is_never_recalled(
    scenario: Scenario, session_id: str
) -> None:
    command = f"{scenario.user.memvault} recall flaky tests --json"  # what the skill tells the model to run
    scenario.stub.reply(
        {"call": "Bash", "args": {"command": command, "description": "recall"}},
        {"text": "Your vault has a workflow for bisecting flaky tests."},
    )
    run = scenario.claude("-p", "/memvault recall flaky tests", "--session-id", session_id).check()
    assert "bisecting flaky tests" in run.stdout

    first, second = scenario.stub.bodies()
    sent = messages_text(first)
    assert "<command-name>/memvault</command-name>" in sent and "recall flaky tests" in sent
    assert "- memvault:" in sent  # the client lists the skill itself
    [result] = tool_results(second)
    assert not result.get("is_error"), result
    assert FLAKY_NOTE in json.dumps(result)  # the real memvault ran and found the note

    # SessionStart's background job indexes the installed skills: memvault's own skill is not among them.
    wait_until(lambda: [r for r in scenario.user.hook_log() if r.get("hook") == "job:start" and "skills" in r
                        and r.get("ts", "") > run_start(scenario, session_id)], 120, "the skills index")  # fmt: skip
    skills = scenario.vault / "MemoryVault" / "personal-skills"
    assert sorted(p.name for p in skills.glob("*.md")) == ["commit-helper.md"]


def run_start(scenario: Scenario, session_id: str) -> str:
    [start] = scenario.records(session_id, "SessionStart")
    return str(start["ts"])
