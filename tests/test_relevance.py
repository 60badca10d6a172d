"""The relevance floor and ranking by size, on real SQLite + sqlite-vec and the real packaged model.

Unrelated prompts recall nothing and say why; related ones keep their note, with and without the
query vector; an exact identifier always passes; a note of hundreds of chunks does not win by size.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from memvault import config, open_vault
from memvault.index import chunking, sync
from memvault.index import core as ix
from memvault.recall import judge, relevance, search
from memvault.vault import indexing

from .conftest import EXAMPLE_VAULT

SETTINGS = config.Config().recall
FLOOR = search.Options(
    k=5, budget_ms=30_000, min_relevance=SETTINGS.min_relevance, coverage_weight=SETTINGS.coverage_weight,
    min_coverage=SETTINGS.min_coverage, min_shared_words=SETTINGS.min_shared_words,
    min_probability=SETTINGS.min_probability,
)  # fmt: skip
NO_FLOOR = search.Options(k=5, budget_ms=30_000)
# The default floor is the hand-set one (recall.min_probability 0); the learned judge at judge.json's floor beside it.
_SHIPPED = judge.load()
JUDGED = FLOOR._replace(min_probability=_SHIPPED.floor if _SHIPPED else 0.5)
FLOORS = [pytest.param(FLOOR, id="hand floor (default)"), pytest.param(JUDGED, id="judge")]
UNRELATED = [  # from the held-out part of scripts/data/unrelated_prompts.json, and the issue's own example
    "What is the capital of France?",
    "can you recommend a good podcast about ancient history",
    "how long should I boil an egg for a runny yolk",
]
RELATED = {
    "how do I fix a flaky test that fails only sometimes on CI?": "bisecting-flaky-tests.md",
    "which tool should format my python code": "preference/python-formatter.md",
    "how should we roll out a database migration": "db-migration-rollout.md",
}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, embedder) -> ix.Index:
    """The example vault, indexed and embedded with the real model."""
    root = tmp_path_factory.mktemp("floor") / "vault"
    shutil.copytree(EXAMPLE_VAULT, root)
    vault = open_vault(root)
    index, _ = indexing.open_index(vault.root, vault.config)
    sync.sync(index, indexing.layout(vault.root, vault.config))
    sync.embed_pending(index, embedder)
    return index


def vector(embedder):
    return lambda text, timeout: (embedder.name, embedder.encode_query([text])[0])  # as the warm service makes it


def test_the_config_and_the_recall_defaults_carry_the_same_calibrated_floor() -> None:
    assert (SETTINGS.min_relevance, SETTINGS.coverage_weight, SETTINGS.min_coverage, SETTINGS.min_shared_words) == (
        relevance.MIN_RELEVANCE, relevance.COVERAGE_WEIGHT, relevance.MIN_COVERAGE, relevance.MIN_SHARED_WORDS,
    )  # fmt: skip
    assert SETTINGS.min_probability == relevance.MIN_PROBABILITY == search.Options().min_probability
    assert search.Options().min_relevance == 0  # the API's recall has no floor unless asked


@pytest.mark.parametrize("floor", FLOORS)
@pytest.mark.parametrize("prompt", UNRELATED)
def test_an_unrelated_prompt_recalls_nothing_and_says_why(
    example: ix.Index, embedder, prompt: str, floor: search.Options
) -> None:
    unfloored = search.recall(example, prompt, NO_FLOOR, vector(embedder))
    assert len(unfloored.hits) == 5  # fusion alone always finds "the best" five
    result = search.recall(example, prompt, floor, vector(embedder))
    assert result.hits == [] and len(result.dropped) == 5
    assert (result.reason or "").startswith(search.FLOOR_REASON)
    said, need = ("P(relevant)", floor.min_probability) if floor is JUDGED else ("cosine", floor.min_relevance)
    assert all(said in h.why and h.probability < need for h in result.dropped)


# The learned judge drops this one (P 0.26 < its floor 0.27); the hand-set floor passes it (0.40 + 0.2 × 0.72 ≥ 0.435).
JUST_UNDER = "which tool should format my python code"
XFAIL_JUDGE = pytest.mark.xfail(strict=True, reason="the judge's P 0.26 < its floor 0.27")


@pytest.mark.parametrize(
    ("prompt", "expected", "floor"),
    [pytest.param(p, e, f, id=f"{p}-{name}", marks=[XFAIL_JUDGE] if (p, f) == (JUST_UNDER, JUDGED) else [])
     for p, e in sorted(RELATED.items()) for name, f in (("hand floor (default)", FLOOR), ("judge", JUDGED))],
)  # fmt: skip
def test_a_related_prompt_still_gets_its_note(
    example: ix.Index, embedder, prompt: str, expected: str, floor: search.Options
) -> None:
    result = search.recall(example, prompt, floor, vector(embedder))
    assert result.hits and result.hits[0].path.endswith(expected), result.as_dict()
    best = result.hits[0]
    assert best.cosine is not None and best.coverage > 0
    need = floor.min_probability if floor is JUDGED else floor.min_relevance
    assert relevance.relevance(search.signals_of(best), floor.floor) >= need
    assert best.why.startswith("P(relevant)" if floor is JUDGED else "cosine") and "≥" in best.why


def test_min_probability_zero_is_the_hand_set_floor_and_above_it_the_judge(example: ix.Index, embedder) -> None:
    # Two floors ship: the hand-set one (recall.min_probability 0) and the learned judge (> 0, its floor from
    # judge.json); recall.min_relevance 0 turns either off.
    shipped = judge.load()
    assert shipped is not None
    hand = FLOOR._replace(min_probability=0.0)
    learned = FLOOR._replace(min_probability=shipped.floor)
    assert hand.floor.on and learned.floor.on and not hand._replace(min_relevance=0).floor.on
    for options, said in ((hand, "cosine "), (learned, "P(relevant) ")):
        for embed in (vector(embedder), None):
            result = search.recall(example, "What is the capital of France?", options, embed)
            assert result.hits == [] and all(said in h.why for h in result.dropped), result.as_dict()
    related = search.recall(example, "how should we roll out a database migration", hand, vector(embedder))
    best = related.hits[0]
    assert best.path.endswith("db-migration-rollout.md") and best.why.startswith("cosine ") and "≥" in best.why


def test_keyword_only_recall_has_its_own_floor(example: ix.Index) -> None:
    for prompt in UNRELATED:
        assert search.recall(example, prompt, FLOOR, None).hits == []
    result = search.recall(example, "how should we roll out a database migration", FLOOR, None)
    assert result.mode == "keyword" and result.hits[0].path.endswith("db-migration-rollout.md")
    assert result.hits[0].cosine is None and "keyword-only" in result.hits[0].why


def test_keyword_only_one_shared_word_is_not_enough(example: ix.Index) -> None:
    # "run" is in several notes of the example vault, and it is all this prompt says: before the
    # shared-words rule every note containing it passed (coverage 1.0).
    result = search.recall(example, "you run it then", FLOOR, None)
    assert result.hits == [] and result.dropped, result.as_dict()
    assert all(h.coverage == 1.0 and h.shared_words == 1 for h in result.dropped)
    assert f"1 of the prompt's words < {SETTINGS.min_shared_words}" in (result.reason or "")
    assert search.recall(example, "you run it then", NO_FLOOR, None).hits  # the rule is the floor's


def test_a_dunder_name_is_not_an_exact_identifier(example: ix.Index, embedder) -> None:
    # `__name__` is indexed as the word "name": it used to pass the floor as an identifier in any note with a name.
    prompt = 'what does if __name__ == "__main__" do'
    for embed in (vector(embedder), None):
        result = search.recall(example, prompt, FLOOR, embed)
        assert result.hits == [] and not any(h.identifier for h in result.dropped), result.as_dict()


def test_an_exact_identifier_always_passes(example: ix.Index, embedder) -> None:
    result = search.recall(example, "seeing ERR_OSSL_EVP_UNSUPPORTED again", FLOOR, vector(embedder))
    assert result.hits[0].path.endswith("node-openssl-legacy-provider.md")
    assert result.hits[0].identifier and result.hits[0].why.startswith("names an exact identifier")


# ---- a huge list note against small focused notes ---------------------------------------------------------

PLUGINS = {
    "Calendar": "shows a calendar in the sidebar; click a day to open or create that day's daily note",
    "Dataview": "queries your notes like a database and renders tables and lists from frontmatter fields",
    "Templater": "inserts templates with scripts, dynamic dates and prompts when a note is created",
    "Kanban": "keeps markdown-backed kanban boards for tasks and projects",
    "Excalidraw": "draws hand-drawn diagrams and sketches embedded in notes",
    "Periodic Notes": "creates daily, weekly and monthly notes with their own templates and folders",
    "Natural Language Dates": "turns @today or @next friday into a link to that date's note",
    "Day Planner": "draws a timeline of the day from a task list with times",
    "Tasks": "tracks tasks across the vault with due dates, recurrence and queries",
    "Obsidian Git": "backs the vault up to a git repository on a schedule",
    "Outliner": "moves, folds and zooms into list items like an outliner",
    "Omnisearch": "searches full text with typo tolerance, PDFs and images included",
}
CHATTER = [
    "Thanks to everyone who shared their setups in the forum this week.",
    "Several people asked about mobile performance and startup time.",
    "The community showcase had a record number of submissions.",
    "The plugin review queue is long, so be patient with new releases.",
]


def list_vault(root: Path) -> None:
    """A hub-like vault: a newsletter archive of 150 weekly roundups (hundreds of chunks, every plugin listed
    again and again), two short roundups, a person note, and one small note per plugin."""
    rng = random.Random(16)  # noqa: S311 (reproducible test data)
    weeks = []
    for week in range(150):
        lines = [f"## Week {week + 1}", "", rng.choice(CHATTER), ""]
        for name in rng.sample(sorted(PLUGINS), 6):
            lines.append(f"- **{name}** plugin {rng.randint(0, 3)}.{rng.randint(0, 20)}: {PLUGINS[name]}.")
        weeks.append("\n".join(lines))
    notes = {
        "Newsletters/Roundup archive.md": "# Roundup archive\n\n" + "\n\n".join(weeks),
        "Newsletters/Roundup May.md": "# Roundup May\n\n" + "\n\n".join(weeks[:3]),
        "People/Liam.md": "# Liam\n\nWrote the Calendar and Periodic Notes plugins; we talked about plugin upkeep.\n",
        "Date and calendar plugins.md": "# Date and calendar plugins\n\n- [[calendar]]\n- [[periodic notes]]\n"
        "- [[natural language dates]]\n- [[day planner]]\n",
    }
    for name, text in PLUGINS.items():
        notes[f"Plugins/{name.lower()}.md"] = f"---\ntags: [plugin]\n---\n# {name}\n\n{name} {text}.\n"
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_a_note_of_hundreds_of_chunks_does_not_win_by_size(tmp_path: Path, embedder) -> None:
    root = tmp_path / "hub"
    list_vault(root)
    vault = open_vault(root)
    index, _ = indexing.open_index(vault.root, vault.config)
    sync.sync(index, indexing.layout(vault.root, vault.config))
    sync.embed_pending(index, embedder)
    size = index.conn.execute(
        "SELECT count(*) FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.path LIKE '%archive.md'"
    ).fetchone()[0]
    assert size >= 100
    for prompt in ("calendar plugin", "which plugin shows a calendar of my daily notes"):
        ranked = [h.path for h in search.recall(index, prompt, NO_FLOOR, vector(embedder)).hits]
        assert {"Plugins/calendar.md", "Date and calendar plugins.md"} <= set(ranked[:3]), ranked
        assert "Newsletters/Roundup archive.md" not in ranked[: ranked.index("Plugins/calendar.md")], ranked
    index.close()


# ---- which chunk of a hit is shown ------------------------------------------------------------------------

SHOP = """# Shop handbook

## Shipping

Orders leave the warehouse within two days. Every order gets a tracking number by email, and an order
that has not arrived after ten days can be traced through the courier's page.

## Returns

A customer who sends a damaged item back gets a refund to the original card within five business days.
Keep the receipt; without it the refund is store credit.

## Opening hours

The shop opens at nine and closes at six, and on Saturdays at noon.
"""


def test_a_hit_shows_the_chunk_that_matches_by_meaning_and_words(tmp_path: Path, embedder) -> None:
    root = tmp_path / "shop"
    (root / "Shop handbook.md").parent.mkdir(parents=True)
    (root / "Shop handbook.md").write_text(SHOP, encoding="utf-8")
    vault = open_vault(root)
    index, _ = indexing.open_index(vault.root, vault.config)
    sync.sync(index, indexing.layout(vault.root, vault.config))
    sync.embed_pending(index, embedder)
    prompt = "my order arrived broken, how do I get my money back"
    keyword_only = search.recall(index, prompt, NO_FLOOR, None).hits[0]
    assert keyword_only.heading.endswith("Shipping")  # the words alone point at "order"
    with_meaning = search.recall(index, prompt, NO_FLOOR, vector(embedder)).hits[0]
    assert with_meaning.heading.endswith("Returns"), with_meaning
    assert "refund" in with_meaning.snippet


def test_matching_chunks_is_the_terms_list_cut_to_the_chunks_asked_for(tmp_path: Path, monkeypatch) -> None:
    """The floor's and coord's "which of these chunks hold the word", by either plan (FTS5's seek per id, or the
    word's list read whole in SQLite), is the word's list cut to the ids asked for, in batches of any size."""
    root = tmp_path / "hub"
    list_vault(root)
    vault = open_vault(root)
    index, _ = indexing.open_index(vault.root, vault.config)
    sync.sync(index, indexing.layout(vault.root, vault.config))
    ids = [row[0] for row in index.conn.execute("SELECT id FROM chunks ORDER BY id")]
    asked = ids[::3]
    for word in ("calendar", "plugin", "liam", "nosuchword"):
        match = chunking.fts_query([word]) or ""
        every = {r[0] for r in index.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (match,))}
        for count in (None, len(every), 10**9):  # FTS5's seeks (count unknown or long list), the list read whole
            assert relevance.matching_chunks(index, match, asked, count) == every & set(asked)
            monkeypatch.setattr(relevance, "MAX_PARAMETERS", 7)  # many statements of a few ids each
            assert relevance.matching_chunks(index, match, asked, count) == every & set(asked)
            monkeypatch.undo()
    assert relevance.matching_chunks(index, chunking.fts_query(["plugin"]) or "", []) == set()
    assert len({r[0] for r in index.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'plugin'")}) > 50
    index.close()
