"""The headless-Claude miner: ask `claude -p --output-format json` about a transcript, validate its answer strictly."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import replace

from memvault.reflect.transcript import Turn
from memvault.store.privacy import strip_private

from .text import CATEGORIES, CONFIDENCES, IDEA_KINDS, Candidate, clip, make_key, make_title

LLM_PROMPT_CHARS = 120_000  # transcript text given to the LLM miner (the most recent part when longer)


class MinerError(Exception):
    """The LLM miner failed (missing, timed out, exited non-zero, or answered something invalid)."""


_SCHEMA = """{"candidates": [{"category": "preference" | "fix" | "workflow" | "idea",
  "title": "short title, at most 80 characters",
  "body": "self-contained markdown in the user's own words: quote the user's statement; no tool output, no XML",
  "evidence": ["L12", "L15"],
  "confidence": "high" | "medium" | "low",
  "rule": "short name of why, e.g. explicit-always, correction, error-then-fix, confirmed-workflow, follow-up",
  "idea_kind": "follow-up" | "project" | "research" | null}]}"""

PROMPT = f"""You extract long-term memory from a coding-agent transcript given on standard input.
Each turn starts with its reference (L<number>) and speaker. Find only what a careful person would keep:
- preference: an instruction from the USER meant to last (always / never / I prefer / from now on / remember /
  don't / stop doing), or the user correcting the agent. Never from the assistant. Not task-scoped requests,
  not questions.
- fix: an error and what resolved it, with the resolution confirmed (tests pass, the user says it worked).
- workflow: a multi-step procedure the user confirmed worked.
- idea: deferred work: a follow-up ("we should also … later"), a project idea, something to research.
Confidence: explicit user statements and corrections are high; an error followed by a clear fix is medium;
weak inferences are low. Evidence must cite the L-references of the turns you used. Never copy secrets.
Return an empty list when nothing qualifies: precision matters more than recall.
Answer with JSON only, no prose and no code fence, exactly this shape:
{_SCHEMA}"""


def ask(turns: Sequence[Turn], *, command: str = "claude", timeout: float = 120.0) -> list[Candidate]:
    """Ask headless Claude Code; validate its JSON strictly. Any failure raises MinerError.

    The candidates are as Claude gave them: `miner.mine_llm` redacts and merges them.
    """
    clean = [replace(t, text=strip_private(t.text)) for t in turns]
    document = render(clean)
    if not document:
        return []
    env = dict(os.environ, MEMVAULT_ENABLED="0")  # the child session must not reflect (or recall) itself
    try:
        proc = subprocess.run(
            [command, "-p", PROMPT, "--output-format", "json"],
            input=document,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except FileNotFoundError as exc:
        raise MinerError(f"{command!r} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise MinerError(f"{command} did not answer within {timeout:g} s") from exc
    except OSError as exc:
        raise MinerError(f"could not run {command}: {exc}") from exc
    if proc.returncode != 0:
        raise MinerError(f"{command} exited with {proc.returncode}: {clip(proc.stderr or proc.stdout, 200)}")
    lines = {t.line for t in clean if t.role != "summary" and not t.sidechain}
    return parse_llm(proc.stdout, lines)


def render(turns: Sequence[Turn], limit: int = LLM_PROMPT_CHARS) -> str:
    """The transcript as the LLM miner reads it: main-conversation turns, most recent kept when too long."""
    blocks = []
    for turn in turns:
        if turn.sidechain or turn.role == "summary":
            continue
        text = clip(turn.text, 4000 if turn.role == "user" else 1500)
        blocks.append(f"L{turn.line} [{turn.role}]: {text}")
    out: list[str] = []
    size = 0
    for block in reversed(blocks):
        size += len(block) + 2
        if size > limit and out:
            break
        out.append(block)
    return "\n\n".join(reversed(out))


def parse_llm(stdout: str, lines: set[int]) -> list[Candidate]:
    """Validate `claude -p --output-format json` output; return its candidates or raise MinerError."""
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
    return [_llm_candidate(item, n, lines) for n, item in enumerate(data["candidates"])]


_LLM_KEYS = {"category", "title", "body", "evidence", "confidence", "rule", "idea_kind"}


def _llm_candidate(item: object, n: int, lines: set[int]) -> Candidate:
    where = f"candidate {n}"
    if not isinstance(item, dict):
        raise MinerError(f"{where} is not an object")
    keys = set(item)
    if not keys <= _LLM_KEYS or not keys >= _LLM_KEYS - {"idea_kind"}:
        raise MinerError(f"{where}: keys must be {sorted(_LLM_KEYS)}")
    category, title, body = item["category"], item["title"], item["body"]
    evidence, confidence, rule = item["evidence"], item["confidence"], item["rule"]
    idea_kind = item.get("idea_kind")
    if category not in CATEGORIES:
        raise MinerError(f"{where}: unknown category {category!r}")
    if confidence not in CONFIDENCES:
        raise MinerError(f"{where}: unknown confidence {confidence!r}")
    for name, value, limit in (("title", title, 200), ("body", body, 4000), ("rule", rule, 60)):
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            raise MinerError(f"{where}: {name} must be a non-empty string of at most {limit} characters")
    if not isinstance(evidence, list) or not evidence:
        raise MinerError(f"{where}: evidence must be a non-empty list")
    for ref in evidence:
        if not isinstance(ref, str) or not re.fullmatch(r"L\d+", ref) or int(ref[1:]) not in lines:
            raise MinerError(f"{where}: evidence {ref!r} is not a turn of this transcript")
    if category == "idea":
        if idea_kind not in IDEA_KINDS:
            raise MinerError(f"{where}: an idea needs idea_kind in {IDEA_KINDS}")
    elif idea_kind is not None:
        raise MinerError(f"{where}: idea_kind is only for ideas")
    title = make_title(title)
    return Candidate(
        category,
        title,
        body.strip(),
        tuple(evidence),
        confidence,
        f"llm:{rule.strip()}",
        make_key(category, title),
        idea_kind,
    )
