"""The offline miner: fixes, workflows and ideas firing and not, keys, secrets and <private>, real transcripts.

Preference phrasings are in test_prefs.py; the Claude miner in test_claude_miner.py and tests/e2e/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memvault.reflect import miner, transcript
from memvault.reflect.miner import Candidate
from memvault.reflect.transcript import Turn

from .conftest import TRANSCRIPTS

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def convo(*turns: tuple[str, str] | tuple[str, str, bool]) -> list[Turn]:
    """Turns on lines 1, 2, 3 …; a third element marks a sidechain turn."""
    out = []
    for n, t in enumerate(turns, 1):
        side = len(t) > 2 and bool(t[-1])
        out.append(Turn(t[0], t[1], n, f"u{n}", None, side))
    return out


def only(cands: list[Candidate], category: str) -> list[Candidate]:
    return [c for c in cands if c.category == category]


def everything(c: Candidate) -> str:
    return "\n".join([c.title, c.body, c.key, *c.evidence])


# ---------------------------------------------------------------- keys (preference phrasings: test_prefs.py)


def pref_key(text: str) -> str:
    (pref,) = only(miner.mine(convo(("assistant", "ok"), ("user", text))), "preference")
    return pref.key


def test_keys_are_stable_across_sessions_and_keep_negations() -> None:
    assert pref_key("Always use pnpm instead of npm.") == pref_key("always use PNPM instead of npm!")
    assert pref_key("Never use mocks in integration tests.") != pref_key("Always use mocks in integration tests.")
    assert pref_key("Always use pnpm instead of npm.") != pref_key("Always use npm instead of pnpm.")
    assert miner.make_key("fix", "") == "fix:untitled"


def test_keys_keep_numbers() -> None:
    assert pref_key("Always keep the line length at 100.") != pref_key("Always keep the line length at 120.")
    assert "100" in pref_key("Always keep the line length at 100.")
    assert pref_key("Always use Python 3.12 for new services.") != pref_key("Always use Python 3.11 for new services.")
    late = "Always run the whole integration suite against the staging database with a {} second timeout."
    assert pref_key(late.format(300)) != pref_key(late.format(600))  # a number past the first content words counts
    assert pref_key(late.format(300)) == pref_key(late.format(300).upper())
    assert miner.make_key("preference", "line length 100") != miner.make_key("preference", "line length 120")


# ---------------------------------------------------------------- fixes


def call(command: str) -> str:
    return f"Bash: {command}"


def episode(*turns: tuple[str, ...]) -> list[Turn]:
    """Turns with tool calls: ("tool_call", call), ("tool_ok", output, call), ("tool_error", output, call), …"""
    out = []
    for n, t in enumerate(turns, 1):
        role, text = t[0], t[1]
        tool = t[2] if len(t) > 2 else (text if role == "tool_call" else None)
        out.append(Turn(role, text, n, f"u{n}", None, False, tool))
    return out


BUILD = call("node assets/build.js 2>&1")
BUILD_FIXED = call("cd assets && node build.js 2>&1")


def test_error_change_and_confirmation_in_one_episode_is_a_fix() -> None:
    turns = episode(
        ("user", "build the assets"),
        ("tool_call", BUILD),
        ("tool_error", 'Exit code 1\n✘ [ERROR] Could not resolve "js/app.js"\n\n1 error', BUILD),
        ("assistant", "Let me check the build script."),
        ("assistant", "The build script expects to be run from within assets/ because js/app.js is relative."),
        ("tool_call", BUILD_FIXED),
        ("tool_ok", "(no output)", BUILD_FIXED),
        ("assistant", "JS build succeeds. Now let me commit."),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert (fix.rule, fix.confidence) == ("error-change-confirmed", "medium")
    assert fix.evidence == ("L3", "L5", "L6", "L7")
    assert fix.title == 'Fix: Could not resolve "js/app.js"'
    assert "run from within assets/" in fix.body and "cd assets && node build.js" in fix.body
    assert "then succeeded" in fix.body and "Exit code" not in fix.body and "Let me check" not in fix.body


def test_no_fix_without_the_change_or_the_confirmation() -> None:
    error = ("tool_error", "ModuleNotFoundError: No module named 'respx'", call("pytest -q"))
    why = ("assistant", "respx is missing from the dev dependencies; the webhook tests need it.")
    unconfirmed = episode(error, why, ("tool_call", call("uv add --dev respx")), ("assistant", "Added it."))
    assert only(miner.mine(unconfirmed), "fix") == []  # changed, never checked
    unchanged = episode(error, why, ("tool_call", call("pytest -q")), ("tool_ok", "3 passed", call("pytest -q")))
    assert only(miner.mine(unchanged), "fix") == []  # passed on its own (flaky): nothing was fixed
    confirmed = episode(error, why, ("tool_call", call("uv add --dev respx")), ("tool_call", call("pytest -q")),
                        ("tool_ok", "14 passed in 1.9s", call("pytest -q")))  # fmt: skip
    (fix,) = only(miner.mine(confirmed), "fix")
    assert "uv add --dev respx" in fix.body and fix.confidence == "medium"


def test_the_explanation_must_come_from_the_episode_and_speak_of_its_error() -> None:
    turns = episode(
        ("tool_error", "Error: EADDRINUSE port 4000", call("mix phx.server")),
        ("assistant", "The release notes need to be updated because the version changed."),  # about something else
        ("tool_call", call("kill %1")),
        ("tool_ok", "Running on port 4000", call("mix phx.server")),
    )
    assert only(miner.mine(turns), "fix") == []
    said = ("assistant", "Port 4000 is taken because another server still runs: EADDRINUSE.")
    (fix,) = only(miner.mine([*turns[:1], Turn(*said, 2, "u2", None, False), *turns[2:]]), "fix")
    assert "another server still runs" in fix.body


def test_the_same_error_again_means_the_change_did_not_fix_it() -> None:
    test = call("mix test")
    turns = episode(
        ("tool_error", "** (RuntimeError) no :secret_key_base configuration found", test),
        ("assistant", "The test config is missing the secret_key_base for the Endpoint."),
        ("tool_call", "Edit config/dev.exs"),
        ("tool_error", "** (RuntimeError) no :secret_key_base configuration found", test),
        ("tool_call", "Edit config/test.exs"),
        ("tool_ok", "12 tests, 0 failures", test),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert "config/test.exs" in fix.body and "config/dev.exs" not in fix.body


def test_getting_past_the_error_to_another_one_is_weaker_evidence() -> None:
    test = call("mix test")
    turns = episode(
        ("tool_error", "** (RuntimeError) Phoenix LiveView requires lazy_html as a test dependency", test),
        ("assistant", "Need the `lazy_html` dependency."),
        ("tool_call", "Edit mix.exs"),
        ("tool_error", "** (ArgumentError) expected selector .badge to return a single element", test),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert fix.confidence == "low" and "got past this error" in fix.body


def test_tool_mechanics_and_routine_states_are_not_fixes() -> None:
    for error in ("<tool_use_error>String to replace not found in file.</tool_use_error>",
                  "File content (33635 tokens) exceeds maximum allowed tokens (25000).",
                  "fatal: The current branch feature has no upstream branch."):  # fmt: skip
        turns = episode(
            ("tool_error", error, call("git push")),
            ("assistant", "The string is different because the formatter ran; the branch has no upstream."),
            ("tool_call", call("git push -u origin feature")),
            ("tool_ok", "done", call("git push -u origin feature")),
        )
        assert only(miner.mine(turns), "fix") == [], error


def test_a_failing_assertion_made_to_pass_by_editing_the_test_is_not_a_fix() -> None:
    test = call("pytest tests/test_api.py")
    turns = episode(
        ("tool_error", "AssertionError: assert 'is-subagent' in html", test),
        ("assistant", "The assertion fails because load_messages drops agent_id; is-subagent is never set."),
        ("tool_call", "Edit tests/test_api.py"),
        ("tool_ok", "5 passed", test),
    )
    assert only(miner.mine(turns), "fix") == []


def test_the_user_can_confirm_a_problem_they_reported() -> None:
    turns = episode(
        ("user", "mix phx.server fails with a port error"),
        ("assistant", "Port 4000 is taken because another server is running; it needs to be stopped first."),
        ("tool_call", call("kill 4242")),
        ("user", "that worked, thanks"),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert (fix.rule, fix.confidence, fix.evidence) == ("reported-change-confirmed", "medium", ("L1", "L2", "L3", "L4"))
    still = episode(*[(t.role, t.text) for t in turns[:3]], ("user", "no, it still fails"))
    assert only(miner.mine(still), "fix") == []


def test_fix_keys_ignore_line_numbers_and_paths() -> None:
    def fix_key(error: str) -> str:
        turns = episode(
            ("tool_error", error, call("mypy src")),
            ("assistant", "load moved to core because module 'util' was renamed."),
            ("tool_call", "Edit src/app/main.py"),
            ("tool_ok", "Success: no issues found", call("mypy src")),
        )
        (fix,) = only(miner.mine(turns), "fix")
        return fix.key

    one = fix_key("src/app/main.py:12: error: Module 'util' has no attribute 'load'")
    assert one == fix_key("lib/other/main.py:340: error: Module 'util' has no attribute 'load'")


def test_sidechain_errors_are_not_explained_by_the_main_conversation() -> None:
    turns = [
        Turn("tool_error", "Error: EACCES permission denied /var/run/x", 1, "a", None, True, call("serve")),
        Turn(
            "assistant",
            "The socket must be in the runtime dir because /var/run is root-only: EACCES.",
            2,
            "b",
            None,
            False,
        ),
        Turn("tool_call", call("mkdir -p run"), 3, "c", None, False, call("mkdir -p run")),
        Turn("tool_ok", "listening", 4, "d", None, False, call("serve")),
    ]
    assert only(miner.mine(turns), "fix") == []


# ---------------------------------------------------------------- workflows


def test_confirmed_multi_step_answer_is_a_workflow() -> None:
    turns = convo(
        ("user", "Release version 2.1 to PyPI"),
        ("assistant", "Bumping the version in pyproject.toml."),
        ("assistant", "Built the wheel with python -m build and uploaded it with twine."),
        ("user", "Perfect, thanks!"),
    )
    (wf,) = only(miner.mine(turns), "workflow")
    assert (wf.rule, wf.confidence, wf.evidence) == ("confirmed-workflow", "medium", ("L1", "L3", "L4"))
    assert "Release version 2.1 to PyPI" in wf.body and "twine" in wf.body and "Perfect, thanks!" in wf.body


@pytest.mark.parametrize("reply", ["Great, but the upload still fails.", "thanks", "Perfect?", "great question"])
def test_not_a_confirmation(reply: str) -> None:
    turns = convo(("user", "Release it"), ("assistant", "Step one."), ("assistant", "Step two."), ("user", reply))
    assert only(miner.mine(turns), "workflow") == []


def test_a_one_step_answer_is_not_a_workflow() -> None:
    turns = convo(("user", "what is 2+2"), ("assistant", "4"), ("user", "Perfect"))
    assert only(miner.mine(turns), "workflow") == []


# ---------------------------------------------------------------- ideas


@pytest.mark.parametrize(
    ("said", "kind", "rule"),
    [
        ("TODO: add retries to the uploader", "follow-up", "follow-up"),
        ("We should handle the Windows paths later.", "follow-up", "follow-up"),
        ("We should also rename the module.", "follow-up", "we-should-also"),
        ("It would be cool to build a CLI that syncs the notes to a phone.", "project", "project-idea"),
        ("We should investigate whether WAL mode helps the writer.", "research", "research"),
        ("Caching the embeddings is worth looking into.", "research", "research"),
    ],
)
def test_user_ideas(said: str, kind: str, rule: str) -> None:
    (idea,) = only(miner.mine(convo(("assistant", "ok"), ("user", said))), "idea")
    assert (idea.idea_kind, idea.rule, idea.evidence) == (kind, rule, ("L2",))
    assert said.rstrip(".") in idea.body


@pytest.mark.parametrize(
    "said", ["Look into why the build fails.", "Should we look into caching?", "Investigate the crash in the parser."]
)
def test_immediate_requests_and_questions_are_not_ideas(said: str) -> None:
    assert only(miner.mine(convo(("assistant", "ok"), ("user", said))), "idea") == []


def test_agent_parks_a_found_bug_once_however_often_it_mentions_it() -> None:
    turns = convo(
        ("user", "add the tests"),
        (
            "assistant",
            "The agent_id is dropped by load_session_messages. This is an existing issue, not something I "
            "should fix in a test task.",
        ),
        ("assistant", "Now let me file a bead for the discovered bug."),
        ("assistant", "Filed. Let me also create a follow-up issue for the agent_id bug."),
        ("user", "ok"),
        ("assistant", "This is out of scope for this change as well."),
    )
    ideas = only(miner.mine(turns), "idea")
    assert [(i.rule, i.confidence, i.evidence) for i in ideas] == [
        ("agent-follow-up", "low", ("L2", "L3", "L4")),
        ("agent-follow-up", "low", ("L6",)),
    ]
    assert "load_session_messages" in ideas[0].body


# ---------------------------------------------------------------- privacy, secrets, noise


def test_secrets_never_reach_a_candidate() -> None:
    push = call("git push")
    turns = episode(
        ("assistant", "ok"),
        ("user", f"Always use the deploy token {GITHUB_TOKEN} for the registry pushes in CI."),
        ("tool_error", f"fatal: Authentication failed for https://x:{GITHUB_TOKEN}@github.com/a/b", push),
        ("assistant", "The Authentication failed because the token was rotated; it needs to be the new one."),
        ("tool_call", call("git remote set-url origin https://github.com/a/b")),
        ("tool_ok", "Everything up-to-date", push),
        ("user", f"Remember: the registry token is {GITHUB_TOKEN}"),
    )
    cands = miner.mine(turns)
    assert {c.category for c in cands} == {"preference", "fix"}
    for c in cands:
        assert GITHUB_TOKEN not in everything(c) and "a1B2c3D4" not in everything(c)
    pref = only(cands, "preference")
    assert len(pref) == 1 and "[REDACTED:github_token]" in pref[0].body  # "the token is <token>" was dropped


def test_keys_are_built_from_redacted_text() -> None:
    aws = "AKIA" + "QWERTYUIOPASDFGH"
    password = "s3cretPassw0rd"
    psql = call("psql -c 'select 1'")
    turns = episode(
        ("assistant", "I used the default credentials for the deploy user."),
        ("user", f"No, use the access key {aws} for the deploy user and rotate it monthly."),  # a correction
        ("tool_error", f"psql: error: connection to postgres://app:{password}@db.internal:5432/app failed", psql),
        ("assistant", "The database connection failed because the security group blocks it outside the VPN."),
        ("tool_call", call("vpn up")),
        ("tool_ok", " ?column? \n 1", psql),
        ("user", f"Always export GH_TOKEN={GITHUB_TOKEN} before running the release script in CI."),
    )
    cands = miner.mine(turns)
    assert {c.rule for c in cands} == {"correction", "error-change-confirmed", "always-never"}
    for c in cands:
        for secret in (aws, password, GITHUB_TOKEN, GITHUB_TOKEN[4:20]):
            assert secret.lower() not in everything(c).lower(), (c.rule, c.key)
    # a key depends on the words around a secret, not on the secret: a rotated token gives the same key
    other = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    said = "Always export GH_TOKEN={} before running the release script in CI."
    assert miner.make_key("preference", said.format(GITHUB_TOKEN)) == miner.make_key("preference", said.format(other))
    assert "redacted" not in miner.make_key("preference", said.format(GITHUB_TOKEN))
    assert miner.make_key("idea", f"use <private>{aws}</private> later") == miner.make_key("idea", "use later")


def test_private_spans_never_reach_a_candidate() -> None:
    turns = convo(
        ("assistant", "ok"),
        ("user", "Always deploy with <private>codename Bluebird</private> the blue-green script."),
        ("user", "From now on <private>ask Dana"),  # an unclosed span runs to the end: nothing left to keep
    )
    cands = miner.mine(turns)
    assert all("Bluebird" not in everything(c) and "Dana" not in everything(c) for c in cands)
    assert [c.rule for c in cands] == ["always-never"]


def test_bodies_carry_no_wrapper_xml() -> None:
    build = call("vite build")
    turns = episode(
        ("tool_error", "<tool_use_error>Error: Cannot find module 'vite'</tool_use_error>", build),
        ("assistant", "Cannot find module 'vite' because node_modules was not installed."),
        ("tool_call", call("npm install")),
        ("tool_ok", "built in 2.1s", build),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert "<tool_use_error>" not in fix.body and "Cannot find module 'vite'" in fix.body


def test_empty_and_deterministic() -> None:
    assert miner.mine([]) == []
    turns = transcript.read(TRANSCRIPTS / "charming-with-claude/0a0eb7b7-excerpt.jsonl", tools=True).turns
    assert miner.mine(turns) == miner.mine(list(turns))


# ---------------------------------------------------------------- real transcripts


@pytest.mark.parametrize(
    "path", sorted(TRANSCRIPTS.rglob("*.jsonl")), ids=lambda p: p.relative_to(TRANSCRIPTS).as_posix()
)
def test_real_transcripts_give_well_formed_candidates(path: Path) -> None:
    turns = transcript.read(path, tools=True).turns
    lines = {t.line for t in turns}
    side_lines = {t.line for t in turns if t.sidechain}
    for c in miner.mine(turns):
        assert c.category in miner.CATEGORIES and c.confidence in miner.CONFIDENCES
        assert c.evidence and all(e.startswith("L") and int(e[1:]) in lines for e in c.evidence)
        assert c.key.startswith(f"{c.category}:") and c.key == c.key.lower()
        assert (c.idea_kind in miner.IDEA_KINDS) if c.category == "idea" else c.idea_kind is None
        assert 0 < len(c.title) <= miner.TITLE_CHARS and c.body.strip()
        assert "<system-reminder>" not in c.body and "<command-" not in c.body
        if c.category == "preference":
            assert not {int(e[1:]) for e in c.evidence} & side_lines


def test_real_session_fixes() -> None:
    turns = transcript.read(TRANSCRIPTS / "spotter" / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", tools=True).turns
    fixes = {c.evidence[0]: c for c in only(miner.mine(turns), "fix")}
    esbuild = fixes["L791"]
    assert esbuild.confidence == "medium" and "assets/" in esbuild.body and "succeeded" in esbuild.body
    assert "L69" not in fixes  # "file too large to read" is how the agent used a tool, not a fix
    assert not only(miner.mine(turns), "preference")  # this user only gave task instructions


# ---- pasted text is context, not the user's words (issue 28, item 2) ---------------------------------------


TRACE = (
    'Traceback (most recent call last):\n  File "/srv/app/main.py", line 3, in <module>\n'
    "    import yaml\nModuleNotFoundError: No module named 'yaml'"
)


def test_an_error_the_user_pasted_is_a_reported_problem() -> None:
    turns = episode(
        ("user", TRACE),
        ("assistant", "The yaml package is missing because it is not in the requirements; it needs to be installed."),
        ("tool_call", call("pip install pyyaml")),
        ("user", "that worked, thanks"),
    )
    (fix,) = only(miner.mine(turns), "fix")
    assert fix.rule == "reported-change-confirmed"
    assert "ModuleNotFoundError: No module named 'yaml'" in fix.title + fix.body


def test_a_template_or_paste_gives_no_idea() -> None:
    template = "## User Input\n\n```text\n\n```\n\nYou **MUST** consider the user input.\n\n## Outline\n\n" + "\n".join(
        f"{n}. Follow-up: TODO markers / unresolved decisions in section {n} should be listed later." for n in range(30)
    )
    turns = convo(("user", "plan it"), ("assistant", "Ready."), ("user", template))
    assert only(miner.mine(turns), "idea") == []


def test_the_claude_miners_quote_must_not_fall_inside_a_paste() -> None:
    from memvault.reflect.mine import claude
    from memvault.reflect.mine.claude import Window

    turns = convo(
        ("user", "2024-03-02 10:11:12 ERROR never retry a failed job twice\nplease always log the job id"),
        ("assistant", "Noted."),
    )
    item = {"category": "preference", "title": "t", "evidence": ["L1"], "confidence": "high", "rule": "r"}
    quotes = ["never retry a failed job twice", "always log the job id"]
    answer = {"candidates": [dict(item, quote=said) for said in quotes]}
    stdout = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": json.dumps(answer)})
    call_ = claude.parse(stdout, Window(1, 1, "", frozenset([1, 2])), turns)
    assert [c.body.splitlines()[0] for c in call_.candidates] == ["> always log the job id"]
    assert len(call_.dropped) == 1 and "not the user's words" in call_.dropped[0]
