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


SECOND = "For the Zephyrq billing consumer the lasting fix: max.poll.records down to 200 and a second partition."


def two_part_note() -> str:
    """A note whose best chunk asks and whose second-best chunk, further on, answers (out of any excerpt's reach)."""
    fill = [f"{FILLER[i % 4]} Entry {i}." for i in range(40)]
    return "# Ops log\n\n" + "\n\n".join([*fill[:9], MATCH, *fill[9:26], SECOND, *fill[26:]]) + "\n"


def test_spread_gives_a_strong_note_its_second_best_chunk_and_a_weak_note_its_snippet() -> None:
    notes = [[Piece(i, f"strong {i} " + "s" * 290) for i in range(6)], [Piece(0, "weak " + "w" * 295)]]
    text = {p.seq: p.text for p in notes[0]}
    scored = [{1: 1.2, 4: 0.9, 0: 0.2}, {0: 0.1}]
    shown = passages.spread(notes, scored, 820, [100, 100], ["strong"], neighbours=False)
    assert shown == [text[1] + passages.GAP + text[4], ""], shown  # the weak note keeps its snippet's reserve
    scored = [{1: 1.2, 4: 0.9}, {0: 0.1}]
    filled = passages.spread(notes, scored, 1400, [100, 100], ["strong"])
    assert filled[1] == notes[1][0].text
    # what is left widens the windows in the order taken, each side by at most the window's size, the following first
    first, second = filled[0].split(passages.GAP)
    assert first.startswith("… ") and first.endswith("\n\n" + text[1] + "\n\n" + text[2]), first
    assert second == text[4], second
    assert sum(map(len, filled)) <= 1400
    question, reply = "the zephyrq question " + "q" * 200, "the answer " + "a" * 180
    answer = [Piece(0, "intro " * 40 + "\n\n" + question), Piece(1, reply + "\n\nmore"), Piece(2, "tail " * 30)]
    window = passages.spread([answer], [{0: 1.0}], 1000, [0], ["zephyrq"], neighbours=False)[0]
    assert window == question + "\n\n" + reply, window  # its chunk's size, centred on the paragraph that matches


def test_the_hook_shows_the_answer_in_a_notes_second_best_chunk(vault_dir: Path, memvault_home: Path) -> None:
    """The defect: each hit showed one window around its best chunk, so an answer further on in a strong note was
    never shown, however little the weaker hits needed."""
    body = two_part_note()
    seqs = {name: next(c.seq for c in chunking.chunks(body) if text[:60] in " ".join(c.text.split()))
            for name, text in (("match", MATCH), ("answer", SECOND))}  # fmt: skip
    assert seqs["answer"] >= seqs["match"] + 2, seqs  # the set-up: no excerpt of the best chunk reaches it
    (vault_dir / "Notes").mkdir(exist_ok=True)
    (vault_dir / "Notes" / "Ops log.md").write_text(body, encoding="utf-8")
    for i, word in enumerate(("billing", "topic", "consumer", "month-end")):
        (vault_dir / "Notes" / f"Other {i}.md").write_text(f"# Other {i}\n\nThe {word} list is kept here.\n")
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n")
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    result = vault.recall("zephyrq consumer lagged billing topic month-end invoicing", floor=False)
    assert result.hits[0].path == "Notes/Ops log.md" and len(result.hits) == 5, [h.path for h in result.hits]
    context, kept = inject.recall_context([h.as_dict() for h in result.hits], vault.config.recall.max_context_chars)
    assert len(kept) == 5 and len(context) <= vault.config.recall.max_context_chars
    assert "max.poll.records down to 200" in context, context
