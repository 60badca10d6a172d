"""fusion.py: ordering, deterministic ties, empty sides, and hybrid holding up when one side is noise."""

from __future__ import annotations

import pytest

from memvault.recall import fusion
from memvault.recall.fusion import METHODS, fuse


def keys(ranked: list[tuple[str, float]]) -> list[str]:
    return [key for key, _ in ranked]


# A paraphrase query ("what tidies up my code style?"): the vectors find the note, the keyword
# side only matched a common word in a few unrelated notes, with nearly equal bm25 scores.
PARAPHRASE_VECTOR = {"ruff": 0.62, "pytest": 0.31, "uv": 0.29, "prettier": 0.28, "mypy": 0.27, "just": 0.22,
                     "pathlib": 0.20, "docker": 0.18, "redis": 0.15, "k8s": 0.12}  # fmt: skip
PARAPHRASE_KEYWORD = {"pytest": 4.1, "redis": 4.0, "k8s": 3.9, "just": 3.8}
# A chat-log query ("when did Caroline go to the support group?"): one turn matches the rare
# words but is not among the vector candidates, whose 30 short turns by the same speaker look alike.
CHAT_VECTOR = {f"turn{i}": 0.50 - 0.002 * i for i in range(30)}
CHAT_KEYWORD = {"evidence": 14.2, "turn3": 5.1, "turn8": 4.9, "turn21": 4.8, "turn5": 4.6, "turn12": 4.5}


@pytest.mark.parametrize("method", METHODS)
def test_both_sides_agreeing_give_their_order(method: str) -> None:
    vector = {"a": 0.9, "b": 0.6, "c": 0.3}
    keyword = {"a": 12.0, "b": 7.0, "c": 1.0}
    assert keys(fuse(vector, keyword, method=method)) == ["a", "b", "c"]


@pytest.mark.parametrize("method", METHODS)
def test_scores_come_best_first(method: str) -> None:
    ranked = fuse({"a": 0.2, "b": 0.8, "c": 0.5}, {"c": 3.0, "d": 9.0}, method=method)
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True)
    assert sorted(keys(ranked)) == ["a", "b", "c", "d"]  # every candidate once


@pytest.mark.parametrize("method", METHODS)
def test_empty_sides(method: str) -> None:
    assert fuse({}, {}, method=method) == []
    vector = {"a": 0.3, "b": 0.9, "c": 0.5}
    keyword = {"x": 1.0, "y": 8.0, "z": 3.0}
    assert keys(fuse(vector, {}, method=method)) == ["b", "c", "a"]
    assert keys(fuse({}, keyword, method=method)) == ["y", "z", "x"]
    assert keys(fuse({"only": 0.4}, {}, method=method)) == ["only"]
    assert keys(fuse({}, {"only": 2.0}, method=method)) == ["only"]


@pytest.mark.parametrize("method", METHODS)
def test_ties_break_by_appearance_vector_side_first(method: str) -> None:
    vector = {"v1": 0.5, "v2": 0.5}
    keyword = {"k1": 2.0, "k2": 2.0}
    first = fuse(vector, keyword, method=method, vector_weight=1.0, keyword_weight=1.0)
    assert first == fuse(vector, keyword, method=method, vector_weight=1.0, keyword_weight=1.0)
    order = keys(first)
    assert order.index("v1") < order.index("v2") and order.index("k1") < order.index("k2")
    assert keys(fuse({"b": 0.5, "a": 0.5}, {}, method=method)) == ["b", "a"]
    assert keys(fuse({}, {"b": 1.0, "a": 1.0}, method=method)) == ["b", "a"]


def test_unknown_method_raises() -> None:
    with pytest.raises(ValueError, match="unknown fusion 'bm25'"):
        fuse({"a": 1.0}, {"a": 1.0}, method="bm25")


def test_weighted_is_the_seed_formula() -> None:
    scores = fusion.weighted({"a": 0.8, "b": 0.4}, {"b": 10.0, "c": 5.0}, 0.7, 0.3)
    assert scores == pytest.approx({"a": 0.56, "b": 0.28 + 0.3, "c": 0.15})
    assert fusion.weighted({"a": 0.5}, {}, 0.7, 0.3) == pytest.approx({"a": 0.35})


def test_rrf_uses_ranks_and_weights() -> None:
    scores = fusion.rrf({"a": 0.9, "b": 0.1}, {"b": 3.0}, 1.0, 2.0)
    assert scores == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 2 / 61})


def test_adaptive_follows_the_vectors_when_keywords_are_noise() -> None:
    assert keys(fuse(PARAPHRASE_VECTOR, PARAPHRASE_KEYWORD, method="adaptive"))[0] == "ruff"
    # the fixed 0.7/0.3 blend lets a noise keyword hit jump over the right note
    assert keys(fuse(PARAPHRASE_VECTOR, PARAPHRASE_KEYWORD, method="weighted"))[0] != "ruff"


def test_adaptive_follows_the_keywords_when_vectors_are_flat() -> None:
    ranked = keys(fuse(CHAT_VECTOR, CHAT_KEYWORD, method="adaptive"))
    assert ranked[0] == "evidence"
    assert keys(fuse(CHAT_VECTOR, CHAT_KEYWORD, method="weighted"))[0] != "evidence"


@pytest.mark.parametrize(("vector", "keyword"), [(PARAPHRASE_VECTOR, PARAPHRASE_KEYWORD), (CHAT_VECTOR, CHAT_KEYWORD)])
def test_adaptive_top3_holds_the_better_sides_top_hit(vector: dict[str, float], keyword: dict[str, float]) -> None:
    fused = keys(fuse(vector, keyword, method="adaptive"))[:3]
    best_vector = max(vector, key=lambda k: vector[k])
    best_keyword = max(keyword, key=lambda k: keyword[k])
    assert best_vector in fused or best_keyword in fused
    assert fused[0] in (best_vector, best_keyword)


def test_adaptive_ignores_each_sides_scale_and_offset() -> None:
    base = keys(fuse(PARAPHRASE_VECTOR, PARAPHRASE_KEYWORD, method="adaptive"))
    scaled_keyword = {k: 25 * v for k, v in PARAPHRASE_KEYWORD.items()}  # bm25 values grow with the corpus
    shifted_vector = {k: v - 0.2 for k, v in PARAPHRASE_VECTOR.items()}
    assert keys(fuse(PARAPHRASE_VECTOR, scaled_keyword, method="adaptive")) == base
    assert keys(fuse(shifted_vector, PARAPHRASE_KEYWORD, method="adaptive")) == base


@pytest.mark.parametrize("weakest", [1.0, 5.0])
def test_adaptive_never_penalises_a_keyword_match(weakest: float) -> None:
    vector = {"same1": 0.40, "same2": 0.40, "top": 0.70, "low": 0.10}
    keyword = {"top": 9.0, "low": 6.0, "same2": weakest}
    scores = fusion.adaptive(vector, keyword)
    assert scores["same2"] > scores["same1"]
    ranked = keys(fuse(vector, keyword, method="adaptive"))
    assert ranked.index("same2") < ranked.index("same1")


def test_adaptive_single_or_equal_candidates_carry_no_weight() -> None:
    vector = {"a": 0.6, "b": 0.4, "c": 0.2}
    assert keys(fuse(vector, {"c": 7.0}, method="adaptive")) == ["a", "b", "c"]
    assert keys(fuse(vector, {"c": 3.0, "b": 3.0}, method="adaptive")) == ["a", "b", "c"]
    lone = fusion.adaptive({"a": 0.5}, {"b": 2.0})  # no spread on either side: a tie, vector side first
    assert lone["a"] == lone["b"] and keys(fuse({"a": 0.5}, {"b": 2.0}, method="adaptive")) == ["a", "b"]


def test_adaptive_keeps_below_average_candidates_in_order() -> None:
    keyword = {f"n{i}": 10.0 - i for i in range(10)}
    assert keys(fuse({}, keyword, method="adaptive")) == list(keyword)
    reversed_input = dict(reversed(list(keyword.items())))
    assert keys(fuse({}, reversed_input, method="adaptive")) == list(keyword)
