"""Reflection of what Claude Code itself wrote: a stated preference and a fix, in the vault after the session."""

from __future__ import annotations

import json
from pathlib import Path

from memvault.store import notes
from tests.e2e.claude import Scenario, wait_until
from tests.e2e.stubs.anthropic import messages_text, tool_results

PREFERENCE = "From now on, always use httpx instead of requests for HTTP calls in this repo."
LATER = "Which library should the new HTTP calls in this repo use?"


def written(scenario: Scenario, session: str) -> list[str]:
    """What the session's reflection wrote (vault-relative paths), once both passes are done.

    Stop and SessionEnd each start one; when they overlap, the incremental one gives way to the final one
    (logged as skipped), so two records, at least one a success, mean the final pass has run.
    """
    jobs = scenario.records(session, "job:reflect")
    done = [r for r in jobs if r.get("result") == "success"]
    return [path for r in done for path in r.get("written") or []] if len(jobs) >= 2 and done else []


def note_meta(vault: Path, rel: str) -> dict[str, object]:
    return dict(notes.parse((vault / rel).read_text(encoding="utf-8")).meta)


def test_a_stated_preference_is_saved_after_the_session_and_recalled_in_the_next(
    scenario: Scenario, session_id: str
) -> None:
    scenario.stub.reply({"text": "Noted: httpx from now on."}, {"text": "Use httpx, as you asked."})
    scenario.claude("-p", PREFERENCE, "--session-id", session_id).check()

    # Stop and SessionEnd start reflection in the background; the final pass marks the session reflected.
    [path] = wait_until(lambda: written(scenario, session_id), 180, "the session's reflection")
    assert path.startswith("MemoryVault/personal-private/preference/")
    meta = note_meta(scenario.vault, path)
    assert meta["kind"] == "preference" and meta["route"] == "saved" and meta["confidence"] == "high"
    assert meta["source"] == session_id and meta["evidence"]  # provenance: which session, which turns
    assert "httpx instead of requests" in (scenario.vault / path).read_text(encoding="utf-8")

    later = scenario.claude("-p", LATER).check()
    assert later.stdout.strip() == "Use httpx, as you asked."
    sent = messages_text(scenario.stub.bodies()[-1])
    assert "<memoryvault-recall" in sent and path in sent


def test_a_fix_found_through_real_bash_calls_is_captured_for_review(scenario: Scenario, session_id: str) -> None:
    failing = 'python3 -c "import invoice_states"'
    change = 'mkdir -p src && printf \'STATES = ("draft", "open", "paid")\\n\' > src/invoice_states.py'
    rerun = "PYTHONPATH=src python3 -c \"import invoice_states; print('import ok')\""

    def bash(command: str, description: str) -> dict[str, object]:
        return {"call": "Bash", "args": {"command": command, "description": description}}

    scenario.stub.reply(
        bash(failing, "try the import"),
        {
            "text": "The import fails because invoice_states is missing: the module has to live in src/.",
            **bash(change, "add the module"),
        },
        {"text": "Now the same import with PYTHONPATH=src.", **bash(rerun, "import again")},
        {"text": "The import works now with PYTHONPATH=src."},
    )
    prompt = "The billing job crashes on import invoice_states. Please fix it."
    scenario.claude("-p", prompt, "--session-id", session_id, "--allowedTools", "Bash").check()

    results = tool_results(scenario.stub.bodies()[-1])
    assert [bool(r.get("is_error")) for r in results] == [True, False, False]
    assert "ModuleNotFoundError" in json.dumps(results[0]) and "import ok" in json.dumps(results[2])
    assert (scenario.project / "src" / "invoice_states.py").is_file()  # the commands really ran

    paths = wait_until(lambda: written(scenario, session_id), 180, "the session's reflection")
    fixes = [p for p in paths if note_meta(scenario.vault, p).get("kind") == "fix"]
    assert fixes, paths
    [fix] = fixes
    meta = note_meta(scenario.vault, fix)
    assert fix.startswith("MemoryVault/personal-private/_review/") and meta["route"] == "review"
    assert meta["source"] == session_id and meta["evidence"]
    text = (scenario.vault / fix).read_text(encoding="utf-8")
    assert "invoice_states" in text and "PYTHONPATH=src" in text


def test_a_fact_no_rule_names_goes_to_the_inbox_and_is_not_recalled_unasked(
    scenario: Scenario, session_id: str
) -> None:
    # No trigger phrase: the offline miner's rules find nothing here, its statement judge finds a fact about the
    # user's setup. What only the judge finds goes to the inbox, for a person to keep or drop, and stays out of
    # every prompt until then.
    scenario.stub.reply({"text": "Here is a deploy script for fly.io."}, {"text": "On fly.io, I believe."})
    prompt = "Write the deploy script. We deploy everything on fly.io."
    scenario.claude("-p", prompt, "--session-id", session_id).check()

    [path] = wait_until(lambda: written(scenario, session_id), 180, "the session's reflection")
    meta = note_meta(scenario.vault, path)
    assert path.startswith("MemoryVault/") and path.endswith("/_inbox/the-user-deploys-everything-on-flyio.md"), path
    assert meta["route"] == "inbox" and meta["confidence"] == "low" and meta["source"] == session_id
    text = (scenario.vault / path).read_text(encoding="utf-8")
    assert "The user deploys everything on fly.io" in text and "judge:fact" in text

    scenario.claude("-p", "Where do we deploy everything?").check()
    assert path not in messages_text(scenario.stub.bodies()[-1])  # the inbox is never recalled unasked
