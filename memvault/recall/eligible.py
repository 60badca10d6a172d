"""What a prompt and a note need to be eligible for an agent's context: the rules the hook, the CLI and MCP share.

A prompt too short or a slash command is not recalled for. Some notes are not ordinary entries and need a stated
reason beyond the relevance floor (wiki/explanation/recall.md, "Notes that need a reason"):

- the idea ledger (`Ideas.md` at the vault root) and daily notes (named like a date, or in the folder
  `.obsidian/daily-notes.json` names) collect many unrelated things, so a loose match in meaning or a few
  everyday words is what any prompt finds in them: they are given only on a strong keyword match (an exact
  identifier of the prompt, or most of its distinctive words);
- a skill entry is already listed to the model by the host: it is given only when the prompt is about that
  skill (close in meaning; keyword-only, the prompt names it).

Runs on the prompt path: standard library only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

LEDGER = "Ideas.md"  # the idea ledger at the vault root (`memvault.ideas.ledger.LEDGER`; a test keeps them equal)
DAILY_SETTINGS = ".obsidian/daily-notes.json"  # Obsidian's Daily notes plugin: {"folder": …, "format": …}
IDEA_LEDGER, DAILY_NOTE, SKILL_ENTRY = "the idea ledger", "a daily note", "a skill entry"
# A ledger or a daily note passes only with an exact identifier of the prompt, or with at least this IDF-weighted
# share of the prompt's content words (and the floor's least number of shared words) in one chunk.
STRONG_COVERAGE = 0.7
# A skill entry's best chunk must be at least this close in meaning (all-MiniLM-L6-v2 cosine; a prompt asking for
# what a skill does scored 0.48-0.56 against its entry, unrelated prompts below 0.25).
SKILL_MIN_SIMILARITY = 0.45
# A file name that is a date: 2026-11-02, 2026.11.02, 2026_11_02, 20261102 (Obsidian's default is YYYY-MM-DD).
_DATE_NAME = re.compile(r"(?:19|20)\d\d([-._]?)(?:0[1-9]|1[0-2])\1(?:0[1-9]|[12]\d|3[01])")


def skip_reason(prompt: str, min_chars: int) -> str | None:
    """Why the prompt hook does not recall for this prompt at all (None: it does)."""
    prompt = prompt.strip()
    if len(prompt) < min_chars:
        return f"prompt shorter than recall.min_prompt_chars ({min_chars})"
    if prompt.startswith("/"):
        return "slash command"
    return None


def daily_folder(root: Path) -> str:
    """The vault's daily-notes folder as Obsidian's settings name it ("" when none is set or it cannot be read)."""
    try:
        data = json.loads((root / DAILY_SETTINGS).read_text(encoding="utf-8")[:64 * 1024])
    except (OSError, ValueError):
        return ""
    folder = data.get("folder") if isinstance(data, dict) else None
    return folder.strip().strip("/") if isinstance(folder, str) else ""


def special(path: str, kind: str | None, daily: str = "") -> str:
    """Which kind of note needing a reason `path` is (IDEA_LEDGER, DAILY_NOTE, SKILL_ENTRY), or ""."""
    if path == LEDGER:
        return IDEA_LEDGER
    if kind == "skill":
        return SKILL_ENTRY
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    if _DATE_NAME.fullmatch(stem) or (daily and path.startswith(daily + "/")):
        return DAILY_NOTE
    return ""


def names(prompt: str, title: str) -> bool:
    """Whether the prompt names `title` as a whole word (a skill's name: `commit-helper`)."""
    name = title.strip().lower()
    return bool(name) and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", prompt.lower()) is not None
