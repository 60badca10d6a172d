"""What a recalled note shows an agent (issue 29, item 4): its best chunk, then the text next to it, within a budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import open_vault
from memvault.hooks import inject
from memvault.index import chunking
from memvault.recall import passages
from memvault.recall.passages import Piece

from .conftest import configure

FILLER = [
    "The espresso machine on the third floor descales itself every Tuesday morning before standup starts.",
    "Quarterly offsite planning moved to the lake house; bring boots because the trail gets muddy in spring.",
    "Parking permits renew in March and the garage gate code changes with them, ask facilities for it.",
    "The plant in the corner needs water twice a week and more light than the window gives in winter.",
]
MATCH = "What did we do last time the Zephyrq consumer lagged on the billing topic during month-end invoicing?"
ANSWER = "Yup: we raised max.poll.records to 500 and moved retries to a dead-letter queue, lag gone in an hour."


def long_note() -> str:
    """A note whose matching paragraph ends one chunk and whose answer starts the next (a reply, as in LoCoMo)."""
    before = [f"{FILLER[i % 4]} Item {i}." for i in range(8)]
    after = [f"{FILLER[(i + 2) % 4]} Later item {i}." for i in range(12)]
    return "# Ops log\n\n" + "\n\n".join([*before, MATCH, ANSWER, *after]) + "\n"


def test_neighbours_fill_takes_the_next_chunk_then_the_previous_within_the_budget() -> None:
    pieces = [Piece(i, f"chunk {i} " + "x" * 290) for i in range(6)]  # 300 characters each
    shown = passages.choose(pieces, 2, 1000, "neighbours")
    assert [seq for seq, _ in shown] == [1, 2, 3], shown  # 2, then 3 (next), then 1; 4 does not fit whole
    assert passages.choose(pieces, 2, 1000, "next")[0][0] == 2 and [s for s, _ in passages.choose(
        pieces, 2, 1000, "next")] == [2, 3, 4]  # fmt: skip
    assert passages.choose(pieces, 2, 1000, "chunk") == [(2, pieces[2].text)]
    scored = [p._replace(score=1.0 if p.seq == 5 else 0.0) for p in pieces]
    assert [s for s, _ in passages.choose(scored, 2, 700, "best")] == [2, 5]
    assert passages.render(passages.choose(scored, 2, 700, "best")) == pieces[2].text + passages.GAP + pieces[5].text
    assert passages.render([(1, "a"), (2, "b")]) == "a\n\nb"
    with pytest.raises(ValueError, match="unknown passage fill"):
        passages.choose(pieces, 2, 1000, "everything")


def test_excerpt_centres_on_the_paragraph_naming_the_prompt_and_reads_on_into_the_next_chunk() -> None:
    pieces = [Piece(0, "alpha one\n\nbeta two"), Piece(1, "gamma three\n\nzephyrq lag question"),
              Piece(2, "the answer: raise max.poll.records\n\ndelta four"), Piece(3, "epsilon five")]  # fmt: skip
    shown = passages.render(passages.choose(pieces, 1, 200, "excerpt", ["zephyrq", "lagging"]))
    assert shown == "gamma three\n\nzephyrq lag question\n\nthe answer: raise max.poll.records\n\ndelta four", shown
    everything = passages.render(passages.choose(pieces, 1, 10_000, "excerpt", ["zephyrq"]))
    assert everything == "\n\n".join(["alpha one", "beta two", "gamma three", "zephyrq lag question",
                                       "the answer: raise max.poll.records", "delta four", "epsilon five"])  # fmt: skip
    unnamed = passages.render(passages.choose(pieces, 1, 34, "excerpt", ["nothing"]))
    assert unnamed == "gamma three\n\nzephyrq lag question"  # no paragraph named: the chunk itself


def test_a_passage_never_passes_its_budget_and_a_cut_is_marked() -> None:
    long = ". ".join(f"Sentence number {i} says something" for i in range(60))
    pieces = [Piece(0, long[:900]), Piece(1, long[900:1800]), Piece(2, long[1800:])]
    for fill in passages.FILLS:
        for budget in (220, 500, 1010, 1500, 2600):
            text = passages.render(passages.choose(pieces, 1, budget, fill, ["sentence", "41"]))
            assert len(text) <= budget + 2 * len("\n\n"), (fill, budget, len(text))
    cut = passages.render(passages.choose(pieces, 1, 1150, "neighbours"))
    assert cut.endswith(" …") or cut.startswith("… "), cut[-40:]
    assert passages.per_hit(6000, 5) * 5 + 5 * passages.HIT_OVERHEAD + passages.CONTEXT_OVERHEAD <= 6000
    assert passages.per_hit(200, 100) == passages.MIN_PASSAGE


def test_the_hook_shows_the_answer_that_sits_in_the_chunk_after_the_match(vault_dir: Path, memvault_home: Path) -> None:
    """The defect: a hit showed a one-line snippet of its best chunk, so the reply right after it was never seen."""
    body = long_note()
    chunks = chunking.chunks(body)
    where = {name: next(c.seq for c in chunks if text[:60] in " ".join(c.text.split())) for name, text in
             (("match", MATCH), ("answer", ANSWER))}  # fmt: skip
    assert where["answer"] == where["match"] + 1, where  # the set-up: the answer is the next chunk's first words
    (vault_dir / "Notes").mkdir(exist_ok=True)
    (vault_dir / "Notes" / "Ops log.md").write_text(body, encoding="utf-8")
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n")
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    result = vault.recall("zephyrq consumer lagged billing topic month-end invoicing", floor=True)
    hit = next(h for h in result.hits if h.path == "Notes/Ops log.md")
    assert hit.chunk == where["match"]
    context, kept = inject.recall_context([h.as_dict() for h in result.hits], vault.config.recall.max_context_chars)
    assert hit.path in [h["path"] for h in kept]
    assert "max.poll.records to 500" in context, context
    assert len(context) <= vault.config.recall.max_context_chars


def test_the_context_cuts_the_last_passage_to_fit_and_drops_what_cannot(vault_dir: Path) -> None:
    hits = [{"path": f"Notes/n{i}.md", "title": f"Note {i}", "heading": "", "passage": "word " * 400}
            for i in range(5)]  # fmt: skip
    context, kept = inject.recall_context(hits, 3000)
    assert len(context) <= 3000 and 1 <= len(kept) < 5
    assert context.count("## Note") == len(kept)
    assert "…" in context.split("## Note")[-1]  # the last one given is cut, and says so
    leak = "token ghp_" + "a" * 36 + " <private>x</private>"
    secret = [{"path": "Notes/s.md", "title": "S", "heading": "", "passage": leak}]
    text, _ = inject.recall_context(secret, 3000)
    assert "ghp_" + "a" * 36 not in text and "<private>" not in text
    assert inject.recall_context([{"path": "a.md", "title": "A", "snippet": "only a snippet"}], 3000)[0].count(
        "only a snippet") == 1  # fmt: skip
