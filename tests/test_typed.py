"""What the person typed in a user turn: each kind of paste is told apart from the typed words around it.

The pastes are made up but shaped like real ones (a Python traceback, a rustc error, a browser's network
panel, an expanded spec-kit command…); each has rule words in it, so mining it would give a wrong rule.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.reflect.mine import typed as t
from memvault.reflect.transcript import Turn

TYPED_RULE = "from now on always run the linter first"

PASTES = {
    "trace": [
        'Traceback (most recent call last):\n  File "/srv/app/jobs.py", line 41, in run\n    retry(job)\n'
        "RuntimeError: never retry a failed job twice",
        "TypeError: Cannot read properties of undefined (reading 'map')\n"
        "    at ItemList (webpack-internal:///./src/ItemList.jsx:12:21)\n"
        "    at renderWithHooks (node_modules/react-dom/cjs/react-dom.development.js:14985:18)",
        'Exception in thread "main" java.lang.IllegalStateException: always close the pool\n'
        "\tat com.example.Pool.close(Pool.java:42)\n\tat com.example.App.main(App.java:10)\n"
        "Caused by: java.io.IOException: boom\n\t... 3 more",
        "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n"
        "\t/home/dev/proj/main.go:9 +0x1d\nexit status 2",
        "thread 'main' panicked at 'you should never call unwrap on None', src/main.rs:2:5\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    ],
    "output": [
        "error[E0308]: mismatched types\n  --> src/lib.rs:12:5\n   |\n12 |     let x: i32 = \"a\";\n"
        "   |                  ^^^ expected `i32`, found `&str`",
        "app/models.py:14:80: E501 line too long, always wrap at 79 (95 > 79 characters)\n"
        "app/views.py:3:1: F401 'os' imported but unused\nFound 2 errors.",
        "src/api.ts(12,5): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
        "FAILED tests/test_api.py::test_retry - AssertionError: should always retry three times\n"
        "E       assert 2 == 3\n==================== 1 failed, 12 passed in 0.52s ====================",
        "FAIL src/app.test.js\n  ● never render twice\n    expect(received).toBe(expected)\n"
        "Tests:       1 failed, 3 total",
        "--- FAIL: TestRetry (0.00s)\n    retry_test.go:12: should never retry twice\nFAIL\texample.com/jobs\t0.012s",
        "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
        "cp: missing destination file operand after 'notes.md'",
        "fatal: not a git repository (or any of the parent directories): .git",
    ],
    "log": [
        "2024-03-02 10:11:12 ERROR worker: never retry a failed job twice (policy=strict)\n"
        "2024-03-02 10:11:13 INFO worker: always back off 30s",
        "[DEBUG] Qt platform=xcb screens=2\n[WARN] never use the software renderer",
        'time=2024-03-02T10:11:12Z level=error msg="always fail fast" job=42',
        "231 ERR tlog/internal.go:102 invalid api configuration fatal=\"secret is required\"",
        '[plugin:vite:import-analysis] Failed to resolve import "./never.js" from "src/App.jsx". Does the file exist?',
    ],
    "http": [
        "Request URL: https://api.example.com/v1/items\nRequest Method: GET\nStatus Code: 500 Internal Server Error\n"
        "Remote Address: 10.0.0.1:443\nReferrer Policy: strict-origin-when-cross-origin\n"
        "Cache-Control: no-store, never cache\nX-Error: always retry later",
        "HTTP/1.1 403 Forbidden\nContent-Type: application/json\nServer: nginx",
    ],
    "data": [
        '{\n  "rule": "always use tabs",\n  "never": ["eval", "exec"]\n}',
        "name: build\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make lint",
        '<?xml version="1.0"?>\n<config>\n<never-cache>true</never-cache>\n</config>',
    ],
    "shell": [
        "$ npm test\n> app@1.0.0 test\n> jest --always-fail",
        "dev@laptop:~/proj$ git push --force\nTo github.com:example/proj.git\n"
        " + 1a2b3c4...5d6e7f8 main -> main (forced update)",
        "npm run clearUsersDb:prod",
    ],
    "diff": [
        "diff --git a/app.py b/app.py\nindex 1a2b3c4..5d6e7f8 100644\n--- a/app.py\n+++ b/app.py\n"
        "@@ -1,3 +1,3 @@\n-# never log secrets\n+# always log secrets",
    ],
    "code": [
        "```python\ndef retry(job):\n    # never retry twice\n    return job.run()\n```",
        "def retry(job):\n    if job.failed:\n        return None",
    ],
    "quote": ["> I will always run the full test suite before each commit.\n> Never skip it."],
    "url": ["https://example.com/docs/always-use-tabs\nhttps://example.com/a https://example.com/b"],
    "tool": ["<ide_selection>never use var; always use const</ide_selection>"],
}
CASES = [(kind, paste) for kind, pastes in PASTES.items() for paste in pastes]


@pytest.mark.parametrize(("kind", "paste"), CASES)
def test_each_kind_of_paste_is_pasted_and_the_rule_typed_after_it_is_typed(kind: str, paste: str) -> None:
    segs = t.segments(f"{paste}\n\n{TYPED_RULE}")
    assert [s.kind for s in segs if not s.typed] == [kind]
    assert t.typed(f"{paste}\n\n{TYPED_RULE}") == TYPED_RULE
    assert t.typed(paste) == ""
    assert t.pasted(paste).strip() == paste.strip().removeprefix("<ide_selection>").removesuffix("</ide_selection>")


def test_a_rule_typed_right_under_a_paste_without_a_blank_line_is_still_typed() -> None:
    text = "2024-03-02 10:11:13 ERROR Database connection refused\nplease always use the pooled connection"
    assert t.typed(text) == "please always use the pooled connection"
    lead = "I get this when I run it:\n" + PASTES["trace"][0]
    assert t.typed(lead) == "I get this when I run it:"


def test_plain_prose_lists_and_short_notes_are_typed() -> None:
    text = (
        "Conventions for this repo:\n- always use pnpm, never npm\n- tabs for indentation\n"
        "    - nested: keep lines under 100 characters\n\nFYI I'm on fish, not bash.\nno Java, ever"
    )
    assert t.typed(text) == text
    assert t.pasted(text) == ""
    for said in (
        "make it inside the .dots/hosts",
        "git push to origin/main only after review",
        "我们应该避免在代码中使用缩写，保持语义清晰",
        "パッケージ管理はuvを利用し、pydanticで型をチェックしてください。",
    ):
        assert t.typed(said) == said


SPEC_KIT = """---
description: Create or update the feature specification from a natural language feature description.
---

## User Input

```text
Build a recipe timer. Always show times in minutes.
```

You **MUST** consider the user input before proceeding (if not empty).

## Outline

The text the user typed after `/speckit.specify` in the triggering message **is** the feature description.
Do not ask the user to repeat it unless they provided an empty command.

1. **Generate a concise short name** (2-4 words) for the branch.
2. NEVER hallucinate missing sections. DO NOT create any checklists that are embedded in the spec.
""" + "\n".join(f"{n}. Step {n}: fill in the section from the feature description." for n in range(3, 40))


def test_an_expanded_spec_kit_command_gives_only_its_user_input() -> None:
    assert t.typed(SPEC_KIT) == "Build a recipe timer. Always show times in minutes."
    assert "NEVER hallucinate" in t.pasted(SPEC_KIT)
    empty = SPEC_KIT.replace("Build a recipe timer. Always show times in minutes.", "")
    assert t.typed(empty) == ""


def test_an_instruction_block_with_an_inline_user_input_line() -> None:
    block = (
        "<workflow>\n<critical>Never skip a step. Always ask before writing files.</critical>\n"
        + "\n".join(f'<step n="{n}">Do step {n} of the story workflow exactly as written.</step>' for n in range(40))
        + "\n</workflow>\n\n## Instructions\n\nFollow the workflow above.\n\nUser input: keep stories under 300 words"
    )
    assert t.typed(block) == "keep stories under 300 words"


def test_a_short_command_with_an_instruction_block_is_template_and_what_follows_is_typed() -> None:
    # BMAD's short commands: under the template rule's 1,200 characters, but a `<steps>` block of the command's
    command = (
        "IT IS CRITICAL THAT YOU FOLLOW THESE STEPS - while staying in character as the agent you loaded:\n\n"
        '<steps CRITICAL="TRUE">\n1. Always LOAD the FULL @.bmad/core/tasks/workflow.xml\n'
        "2. READ its entire contents and follow it EXACTLY as written\n</steps>"
    )
    assert len(command) < t.TEMPLATE_CHARS
    assert t.typed(command) == ""
    assert "Always LOAD" in t.pasted(command)
    assert t.typed(f"{command}\n\nand from now on always write the tests first") == (
        "and from now on always write the tests first"
    )
    said = "<task>fix the login bug</task> and never log passwords"  # a tag inside a typed line: no block
    assert t.typed(said) == said


def test_a_short_message_that_names_arguments_is_not_a_template() -> None:
    said = ".codex/prompts/specify.md please drop in .arguments/specify-arg-1.md as the $ARGUMENTS"
    assert t.typed(said) == said


PERSONA = """create a plan to do the below: Role
You are an expert Documentation Specialist. Your goal is to document this codebase for future agents.
Objective
Create a folder named docs/agent and fill it with a structured snapshot of the project.
Instructions
Step 1: Analyze the Codebase
Scan the directory to understand the stack, the structure and the configuration files.
Step 2: Create Directory Structure
Create docs/agent/System, docs/agent/Tasks and docs/agent/SOP, then write an index.
Step 3: Generate Core Documentation Files
Always read docs/agent/README.md first to get context. Never duplicate content across files.
Constraints
""" + "\n".join(f"Keep section {n} short, factual and linked from the index; always date it." for n in range(34))

RECORD = """prompts/constitution.md SOURCE OF TRUTH
Use the following decision record as the canonical content. All rules below are MANDATORY.

PROJECT FACTS
- PRIMARY_HOST: a managed platform (deploy on push)
- DATABASE: Postgres

PRINCIPLES & MANDATES (from the record)
1) Overview
- Priorities: fast iteration, minimal lock-in
2) Core Stack (FINAL, REQUIRED)
- Never expose secrets client-side. Always validate input on the server.
3) Quality Gates
4) Governance
""" + "\n".join(f"- Gate {n}: never merge without a green pipeline and a reviewed change log entry." for n in range(40))


def test_a_pasted_document_without_markdown_is_pasted_and_its_short_lead_in_typed() -> None:
    # A persona prompt and a decision record, each thousands of characters with six or more bare section titles
    # ("Role", "Step 2: …", "PROJECT FACTS", "2) Core Stack (FINAL, REQUIRED)"): their "Always …" lines are not
    # the person's rules. What the person typed before the first title is kept.
    assert t.typed(PERSONA) == "create a plan to do the below: Role\nYou are an expert Documentation Specialist. " + \
        "Your goal is to document this codebase for future agents."  # fmt: skip
    assert "Always read docs/agent/README.md" in t.pasted(PERSONA)
    assert {s.kind for s in t.segments(RECORD) if not s.typed} == {"document"}
    assert t.typed(RECORD).startswith("prompts/constitution.md SOURCE OF TRUTH")
    assert "Never expose secrets" in t.pasted(RECORD)
    long_opening = "Here is a comprehensive list of every hook a slicer should offer. " * 6 + "\n" + RECORD
    assert t.typed(long_opening) == ""  # an opening too long for a lead-in is the document's own


def test_long_typed_messages_with_a_few_short_lines_stay_typed() -> None:
    rules = "\n".join(f"- always run check {n} before you push, and never skip it on a release" for n in range(45))
    text = f"Conventions\nTesting\nRelease\nDeploy\nHi there, here are my rules for this repo:\n{rules}"
    assert len(text) > t.DOCUMENT_CHARS
    assert t.typed(text) == text  # four title-like lines: under the document's six
    assert t.typed(PERSONA[: t.DOCUMENT_CHARS - 1]) == PERSONA[: t.DOCUMENT_CHARS - 1].strip()  # too short


def test_the_assistants_words_said_back_are_an_echo() -> None:
    agent = "I refactored the loader. From now on I will always run the full test suite before each commit."
    text = "From now on I will always run the full test suite before each commit.\nwhy did that take so long?"
    assert [s.kind for s in t.segments(text, agent)] == ["echo", "typed"]
    assert t.typed(text, agent) == "why did that take so long?"
    assert t.typed(text) == text  # without the assistant's words nothing says it was theirs
    assert t.typed("always run the suite", agent) == "always run the suite"  # a few shared words are not an echo


def test_echoes_are_what_the_assistant_said_since_the_users_last_turn() -> None:
    turns = [
        Turn("user", "a", 1, None, None, False),
        Turn("assistant", "first", 2, None, None, False),
        Turn("assistant", "side", 3, None, None, True),
        Turn("tool_ok", "ok", 4, None, None, False),
        Turn("assistant", "second", 5, None, None, False),
        Turn("user", "b", 6, None, None, False),
    ]
    assert t.echoes(turns) == {0: "", 5: "first\nsecond"}


def test_command_args_stay_typed_and_other_wrapper_tags_are_tool_output() -> None:
    text = "<command-name>/review</command-name>\n<command-args>never touch the generated files</command-args>"
    assert t.typed(text) == "never touch the generated files"
    stdout = "<local-command-stdout>Error: always pass --force</local-command-stdout>\nok, keep going"
    assert t.typed(stdout) == "ok, keep going"


_LINE = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n<"), max_size=80)


@given(st.lists(_LINE, max_size=12))
def test_segments_never_invent_or_lose_a_line(lines: list[str]) -> None:
    text = "\n".join(lines)
    segs = t.segments(text)
    got = [ln for s in segs for ln in s.text.split("\n") if ln.strip()]
    assert sorted(got) == sorted(ln for ln in lines if ln.strip())  # wrapper tags, cut from their lines: above


@pytest.mark.adversarial
def test_huge_lines_are_read_in_linear_time() -> None:
    import time

    lines = ["at " + "a" * 200_000, "at " + "a " * 100_000 + "x", "http://a " * 50_000 + "x", "return" + " " * 200_000]
    start = time.perf_counter()
    for line in lines:
        t.segments(f"{line}\n\n{TYPED_RULE}", "word " * 10_000)
    assert time.perf_counter() - start < 2.0
