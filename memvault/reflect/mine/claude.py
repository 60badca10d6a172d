"""The headless-Claude miner: one `claude -p` call per window of a transcript, its JSON answer checked strictly.

The child session is a plain language-model call, nothing more: no tools (`--tools ""`), no hooks
(`disableAllHooks`, and MEMVAULT_ENABLED=0 for memvault's own), no MCP servers, no slash commands or
skills, nothing saved to a transcript (`--no-session-persistence`, so it is never reflected itself),
one turn, the model the config names, run from an empty folder (no project CLAUDE.md), killed with
its process group when it does not answer in time. It gives up fast when the API cannot be reached:
one retry (`CLAUDE_CODE_MAX_RETRIES`, not the client's patient backoff of about three minutes) and
FIRST_BYTE_S for the API to start answering (`API_TIMEOUT_MS`), set in the `--settings` it is given
(flag settings win over the user's own `env`) and in its environment. What it is sent: the instructions below as the
system prompt, and one window of the transcript on standard input (`command` and `window_input`;
`memvault reflect --dry-run --show-prompt` prints both).

Its answer must be JSON of the shape in PROMPT. A malformed answer fails the whole call (MinerError,
and the caller falls back to the offline miner); a candidate whose quote is not in the turns it
cites is dropped (the model may not put words in the user's mouth).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memvault.reflect.transcript import CONTEXT_ROLES, TOOL_ROLES, Turn

from .headless import MinerError, run_child
from .text import CATEGORIES, CONFIDENCES, IDEA_KINDS, Candidate, clip, make_key, make_title, quote
from .typed import echoes, typed

USER_CHARS, ASSISTANT_CHARS, TOOL_CHARS = 4000, 1500, 300  # what one turn may take of a window
OVERLAP_SHARE = 8  # a window repeats the last 1/8 of the one before, so a statement on the edge is seen whole


RETRIES = 1  # the client's retries of a failed request (a refused connection, a 5xx): one quick one
FIRST_BYTE_S = 10  # how long the client waits for the API to start answering a request (the stream then flows)
CHILD_ENV = {"CLAUDE_CODE_MAX_RETRIES": str(RETRIES), "API_TIMEOUT_MS": str(FIRST_BYTE_S * 1000)}
_PATIENT = ("CLAUDE_CODE_RETRY_WATCHDOG",)  # the client's keep-retrying mode (and its settings) is never inherited


_SCHEMA = """{"candidates": [{"category": "preference" | "fix" | "workflow" | "idea",
  "title": "the rule itself, at most 80 characters, e.g. 'Logging uses printf-style formatting, never f-strings'",
  "quote": "the user's own words, copied exactly from the transcript (a preference or idea must have one)",
  "body": "a fix: the error, the change that fixed it, how it was confirmed; a workflow: its steps; else a note or ''",
  "evidence": ["L12", "L15"],
  "confidence": "high" | "medium" | "low",
  "rule": "why, in a few words: explicit-always, correction, error-change-confirmed, confirmed-workflow, follow-up, …",
  "idea_kind": "follow-up" | "project" | "research" | null}]}"""

PROMPT = f"""You extract long-term memory for a coding agent from one part of a coding-session transcript, given on
standard input. Each turn starts with its reference (L<number>) and speaker: [user], [assistant], [tool] (a call),
[tool error], [tool ok]. Keep only what a careful person would want the agent to know in every later session:
- preference: a lasting instruction or correction from the USER, in any phrasing: always / never / "X should never
  …" / "I don't want you to …" / "make sure you never …" / "I only want …" / "from now on" / "I prefer", a dislike,
  a fact about their setup ("I use X"), or a correction right after the agent acted ("no, that's the wrong fix, …").
  Never from the assistant, tool output, pasted logs or code. Not task-scoped requests ("now fix this"), questions,
  hedges, or one-off directions. The quote must be the user's exact words.
- fix: an error, the change that fixed it, and its confirmation (the command then passed, or the user said it
  worked), all in the same episode. Otherwise nothing.
- workflow: a multi-step procedure the user confirmed worked.
- idea: deferred work the user names: a follow-up, a project idea, something to research.
Titles state the rule itself, with no conversational lead-in ("Also, from now on, …" becomes the rule), in the third
person ("The user …", not "I …"). Confidence: high only for an explicit lasting instruction or correction; medium for
a confirmed fix, a stated fact or a softer preference; low for weak inferences. Evidence cites the L-references used.
Never copy secrets, personal names or home-folder paths. Precision matters more than recall: return an empty list
when nothing qualifies. Answer with JSON only, no prose and no code fence, exactly this shape:
{_SCHEMA}"""

ASK = "Extract the long-term memory from this transcript part."


@dataclass(frozen=True)
class Window:
    """One call's worth of a transcript: the rendered turns, the first and last lines, the lines it holds."""

    number: int
    of: int
    text: str
    lines: frozenset[int] = field(default_factory=frozenset)

    @property
    def span(self) -> str:
        ordered = sorted(self.lines)
        return f"L{ordered[0]}–L{ordered[-1]}" if ordered else "empty"


def blocks(turns: Sequence[Turn]) -> list[tuple[int, str]]:
    """(line, rendered turn) for the main conversation: user and assistant text, tool calls and results, short."""
    out = []
    for turn in turns:
        if turn.sidechain or turn.role in CONTEXT_ROLES:
            continue
        if turn.role == "user":
            text, label = clip(turn.text, USER_CHARS), "user"
        elif turn.role == "assistant":
            text, label = clip(turn.text, ASSISTANT_CHARS), "assistant"
        elif turn.role in TOOL_ROLES:
            label = {"tool_call": "tool", "tool_ok": "tool ok", "tool_error": "tool error"}[turn.role]
            head = f"{turn.tool}: " if turn.tool and turn.role != "tool_call" else ""
            text = clip(head + turn.text, TOOL_CHARS)
        else:
            continue
        out.append((turn.line, f"L{turn.line} [{label}]: {text}"))
    return out


def windows(turns: Sequence[Turn], window_chars: int) -> list[Window]:
    """The transcript cut into windows of at most `window_chars`, each repeating the end of the one before."""
    rendered = blocks(turns)
    if not rendered:
        return []
    cuts: list[tuple[int, int]] = []  # [start, end) indexes into rendered
    start = 0
    while start < len(rendered):
        end, size = start, 0
        while end < len(rendered) and (end == start or size + len(rendered[end][1]) + 2 <= window_chars):
            size += len(rendered[end][1]) + 2
            end += 1
        cuts.append((start, end))
        if end >= len(rendered):
            break
        back, kept = end, 0
        while back - 1 > start + 1 and kept + len(rendered[back - 1][1]) <= window_chars // OVERLAP_SHARE:
            back -= 1
            kept += len(rendered[back][1])
        start = back if back > start else end
    return [
        Window(n, len(cuts), "\n\n".join(b for _, b in rendered[a:e]), frozenset(line for line, _ in rendered[a:e]))
        for n, (a, e) in enumerate(cuts, 1)
    ]


def window_input(window: Window) -> str:
    """What the child reads on standard input for one window."""
    if window.of == 1:
        return f"Transcript ({window.span}):\n\n{window.text}\n"
    return (
        f"Transcript, part {window.number} of {window.of} ({window.span}); the parts overlap a little and are "
        f"read one at a time.\n\n{window.text}\n"
    )


def command(executable: str, model: str) -> list[str]:
    """The child's command line (the system prompt included)."""
    return [
        executable, "-p", ASK,
        "--output-format", "json",
        "--model", model,
        "--tools", "",
        "--system-prompt", PROMPT,
        "--settings", json.dumps({"disableAllHooks": True, "env": CHILD_ENV}),
        "--strict-mcp-config",
        "--disable-slash-commands",
        "--no-session-persistence",
        "--max-turns", "1",
    ]  # fmt: skip


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: memvault's hooks off, not marked as inside a Claude Code session, quick to give up."""
    env = dict(os.environ if base is None else base)
    env["MEMVAULT_ENABLED"] = "0"
    for name in ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID"):
        env.pop(name, None)
    for name in [n for n in env if n.startswith(_PATIENT)]:
        del env[name]
    return {**env, **CHILD_ENV}


@dataclass
class Call:
    """One call's outcome: its candidates and what Claude Code reported it cost."""

    candidates: list[Candidate]
    cost_usd: float | None = None
    dropped: list[str] = field(default_factory=list)  # candidates refused (quote not found, …)


def ask(window: Window, turns: Sequence[Turn], *, executable: str, model: str, timeout: float, cwd: str) -> Call:
    """Run one call for `window`, killed after `timeout` seconds; validate its answer. Failures raise MinerError."""
    code, stdout, stderr = run_child(command(executable, model), window_input(window), env=child_env(), cwd=cwd,
                                     timeout=timeout)  # fmt: skip
    if code != 0:
        try:
            envelope = json.loads(stdout)  # `-p --output-format json` still reports what went wrong
        except ValueError:
            envelope = None
        envelope = envelope if isinstance(envelope, dict) else {}
        said = envelope.get("result")
        said = said if isinstance(said, str) and said else (stderr or stdout)
        raise MinerError(f"{executable} exited with {code}: {clip(said, 200)}", answered=_spent(envelope))
    try:
        return parse(stdout, window, turns)
    except MinerError as exc:
        exc.answered = True  # the client exited 0: the model answered, if not as asked
        raise


def _spent(envelope: dict[str, object]) -> bool:
    """Whether a failed call's report says the model produced something (and so it cost)."""
    cost, usage = envelope.get("total_cost_usd"), envelope.get("usage")
    output = usage.get("output_tokens") if isinstance(usage, dict) else None
    return any(isinstance(n, (int, float)) and n > 0 for n in (cost, output))


def parse(stdout: str, window: Window, turns: Sequence[Turn]) -> Call:
    """Validate `claude -p --output-format json` output for `window`; its candidates, or MinerError."""
    try:
        envelope = json.loads(stdout)
    except ValueError as exc:
        raise MinerError("the output is not JSON") from exc
    if not isinstance(envelope, dict):
        raise MinerError("the output is not a JSON object")
    if envelope.get("is_error") is True or envelope.get("subtype", "success") != "success":
        raise MinerError(f"claude reported an error: {clip(str(envelope.get('result', '')), 200)}")
    result = envelope.get("result")
    if not isinstance(result, str):
        raise MinerError("the envelope has no 'result' text")
    cost = envelope.get("total_cost_usd")
    return parse_answer(result, window, turns, float(cost) if isinstance(cost, (int, float)) else None)


def parse_answer(result: str, window: Window, turns: Sequence[Turn], cost_usd: float | None = None) -> Call:
    """Validate the model's answer text (JSON of the shape in PROMPT) for `window`: its candidates, or MinerError.

    Every host's miner checks its answer here: a candidate whose quote is not the user's words is dropped.
    """
    text = result.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n(.*)\n```", text, re.DOTALL)
    if fenced:  # the one liberty taken: a model often wraps JSON in a code fence
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MinerError("the result is not JSON") from exc
    if not isinstance(data, dict) or set(data) != {"candidates"} or not isinstance(data["candidates"], list):
        raise MinerError('the result must be {"candidates": [...]}')
    by_line = {t.line: t for t in turns if t.line in window.lines and not t.sidechain}
    said = echoes(turns)
    typed_by_line = {t.line: typed(t.text, said.get(i, "")) for i, t in enumerate(turns) if t.line in by_line}
    call = Call([], cost_usd)
    for n, item in enumerate(data["candidates"]):
        cand, why = _candidate(item, n, by_line, typed_by_line)
        if cand is not None:
            call.candidates.append(cand)
        else:
            call.dropped.append(why)
    return call


_KEYS = {"category", "title", "quote", "body", "evidence", "confidence", "rule", "idea_kind"}
_REQUIRED = {"category", "title", "evidence", "confidence", "rule"}


def _candidate(
    item: object, n: int, by_line: dict[int, Turn], typed_by_line: dict[int, str]
) -> tuple[Candidate | None, str]:
    """A candidate from one answer item; MinerError when malformed, (None, why) when its words are not the user's.

    The user's words are what they typed in a cited turn (`typed_by_line`): a quote from what they pasted
    (a log, a template, the assistant's words said back) is not theirs.
    """
    where = f"candidate {n}"
    if not isinstance(item, dict):
        raise MinerError(f"{where} is not an object")
    keys = set(item)
    if not keys <= _KEYS or not keys >= _REQUIRED:
        raise MinerError(f"{where}: keys must be {sorted(_REQUIRED)}, and may be {sorted(_KEYS - _REQUIRED)}")
    category, confidence, evidence = item["category"], item["confidence"], item["evidence"]
    if category not in CATEGORIES:
        raise MinerError(f"{where}: unknown category {category!r}")
    if confidence not in CONFIDENCES:
        raise MinerError(f"{where}: unknown confidence {confidence!r}")
    said, body = item.get("quote") or "", item.get("body") or ""
    for name, value, limit in (("title", item["title"], 200), ("rule", item["rule"], 60)):
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            raise MinerError(f"{where}: {name} must be a non-empty string of at most {limit} characters")
    for name, value, limit in (("quote", said, 1000), ("body", body, 4000)):
        if not isinstance(value, str) or len(value) > limit:
            raise MinerError(f"{where}: {name} must be a string of at most {limit} characters")
    if not isinstance(evidence, list) or not evidence:
        raise MinerError(f"{where}: evidence must be a non-empty list")
    for ref in evidence:
        if not isinstance(ref, str) or not re.fullmatch(r"L\d+", ref) or int(ref[1:]) not in by_line:
            raise MinerError(f"{where}: evidence {ref!r} is not a turn of this part of the transcript")
    idea_kind = item.get("idea_kind")
    if category == "idea":
        if idea_kind not in IDEA_KINDS:
            raise MinerError(f"{where}: an idea needs idea_kind in {IDEA_KINDS}")
    elif idea_kind is not None:
        raise MinerError(f"{where}: idea_kind is only for ideas")
    cited = [by_line[int(ref[1:])] for ref in evidence]
    if category in ("preference", "idea"):
        said_by_user = [
            t for t in cited if t.role == "user" and said.strip() and _contains(typed_by_line.get(t.line, ""), said)
        ]
        if not said_by_user:
            return None, f"{where}: its quote is not the user's words in {', '.join(evidence)}"
        line = said_by_user[0].line
        text = f"{quote(said.strip())}\n— the user, L{line}" + (f"\n\n{body.strip()}" if body.strip() else "")
    else:
        if not body.strip():
            return None, f"{where}: a {category} needs a body"
        text = body.strip() + (f"\n\n{quote(said.strip())}" if said.strip() else "")
    title = make_title(item["title"])
    refs = tuple(sorted(dict.fromkeys(evidence), key=lambda r: int(r[1:])))
    return (
        Candidate(category, title, text, refs, confidence, f"llm:{item['rule'].strip()}", make_key(category, title),
                  idea_kind),
        "",
    )  # fmt: skip


def _contains(text: str, said: str) -> bool:
    """Whether `said` is in `text`, case, spacing, quotes and markdown emphasis aside."""

    def norm(s: str) -> str:
        s = s.lower().replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
        return " ".join(re.sub(r"[*_`]", "", s).split()).strip(" .\"'")

    return bool(norm(said)) and norm(said) in norm(text)
