"""Hook time as Claude Code itself reports it (its debug log), beside a bare `python -c pass` hook in the same runs.

Not a timed test: it checks that every hook ran and finished with status 0, and prints the numbers
(p50 and max per hook) in the test run's summary; the benchmarks under scripts/ hold the targets.
"""

from __future__ import annotations

import json
import statistics

import pytest

from tests.e2e.claude import Scenario, hook_runs
from tests.e2e.conftest import TIMINGS

PROMPTS = [
    "How do I fix a flaky test that fails only sometimes on CI?",
    "What are the states of a billing invoice?",
    "The docker buildx cache is not reused between builds; why?",
    "psycopg raises SSL SYSCALL error: EOF detected on idle connections.",
    "Which formatter do we use for Python?",
    "How do we roll out a database migration safely?",
    "What goes into the release checklist?",
    "mypy complains about pydantic models; how did we fix that?",
]
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")


def test_hook_durations_as_the_client_reports_them(
    scenario: Scenario, session_id: str, request: pytest.FixtureRequest
) -> None:
    bare = {"type": "command", "command": str(scenario.user.venv / "bin" / "python"), "args": ["-c", "pass"]}
    extra = json.dumps({"hooks": {event: [{"hooks": [bare]}] for event in EVENTS}})  # merged with the user's hooks
    runs = [scenario.claude("-p", PROMPTS[0], "--session-id", session_id, "--settings", extra).check()]
    runs += [scenario.claude("-p", "--continue", prompt, "--settings", extra).check() for prompt in PROMPTS[1:]]

    reported = hook_runs(run.debug_log for run in runs)
    ours = [r for r in reported if "memvault/hooks/" in r.command]
    baseline = [r for r in reported if r.command.endswith("-c pass")]
    for event in EVENTS:
        assert len([r for r in ours if r.event == event]) == len(PROMPTS), (event, ours)
        assert len([r for r in baseline if r.event == event]) == len(PROMPTS), (event, baseline)
    assert all(r.exit_code == 0 for r in reported), [r for r in reported if r.exit_code != 0]

    logged = [r for r in scenario.records(session_id) if r.get("hook") in EVENTS]
    lines = [f"{'hook':<18}{'memvault p50 / max':>22}{'bare python p50 / max':>26}{'memvault log p50':>20}"]
    for event in EVENTS:
        ms = [r.ms for r in ours if r.event == event]
        base = [r.ms for r in baseline if r.event == event]
        own = [float(r["duration_ms"]) for r in logged if r["hook"] == event]
        lines.append(f"{event:<18}{summary(ms):>22}{summary(base):>26}{statistics.median(own):>17.0f} ms")
    lines.append(f"({len(PROMPTS)} `claude -p` runs; the client's numbers are from its --debug-file log)")
    request.config.stash.setdefault(TIMINGS, []).extend(lines)
    (scenario.root / "hook-timings.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def summary(values: list[int]) -> str:
    return f"{statistics.median(values):.0f} / {max(values)} ms"
