"""The shipped query adapter: loaded with the default model, applied to queries only, better on dev, reproducible."""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest

from memvault.index import adapter, embed
from memvault.recall import client, service

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import recall_data  # noqa: E402
import train_adapter  # noqa: E402

needs_model = pytest.mark.skipif(not embed.available(), reason="sentence-transformers is not installed")


def vectors(blobs: list[bytes]) -> np.ndarray:
    return np.stack([np.frombuffer(blob, dtype="<f4") for blob in blobs])


def test_the_shipped_map_is_a_package_file_of_the_model_s_size() -> None:
    matrix = adapter.load(384)
    assert adapter.MAP_FILE.stat().st_size < 600_000
    assert matrix.dtype == np.float32 and not np.allclose(matrix, np.eye(384))
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"memvault.index" = ["query_map.npy"]' in pyproject  # shipped in the wheel, no download


def test_a_map_that_does_not_fit_is_a_clear_error(tmp_path: Path) -> None:
    np.save(tmp_path / "small.npy", np.eye(8, dtype=np.float32))
    with pytest.raises(adapter.AdapterError, match=r"shape \(8, 8\), not \(384, 384\)") as caught:
        adapter.load(384, tmp_path / "small.npy")
    assert caught.value.code == "query_adapter_invalid"
    (tmp_path / "junk.npy").write_bytes(b"not a matrix")
    with pytest.raises(adapter.AdapterError, match="cannot read"):
        adapter.load(384, tmp_path / "junk.npy")


def test_the_switch_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(adapter.ENV, raising=False)
    assert adapter.enabled()
    for off in ("off", "0", "OFF ", "false"):
        monkeypatch.setenv(adapter.ENV, off)
        assert not adapter.enabled()


@needs_model
def test_the_default_model_maps_queries_and_leaves_notes_as_they_were(embedder: embed.Embedder) -> None:
    texts = ["write a long summary of the meeting", "install the dependencies"]
    assert embedder.name == embed.DEFAULT_NAME and embedder.query_map is not None
    notes = vectors(embedder.encode(texts))
    raw = embedder.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert np.allclose(notes, raw, atol=1e-6)  # documents: the stock vectors, so no re-embedding
    queries = vectors(embedder.encode_query(texts))
    expected = notes @ adapter.load(384).T
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(queries, expected, atol=1e-5)  # normalise(M q), as documented
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    assert (np.sum(queries * notes, axis=1) < 0.99).all()  # the map moves the query


@needs_model
def test_a_dev_paraphrase_ranks_better_adapted_than_stock(embedder: embed.Embedder) -> None:
    """Hand-picked dev-split paraphrases (never trained on), ranked among every dev passage of the data."""
    dev = recall_data.examples("dev")
    pool = sorted({ex.passage for ex in dev})
    passages = vectors(embedder.encode(pool))
    picked = {ex.id: ex for ex in dev if ex.id in ("uv-docs-178", "team-notes-40")}
    assert set(picked) == {"uv-docs-178", "team-notes-40"}  # still in dev, still in the data
    for ex in picked.values():
        assert ex.split == "dev" and ex.kind == "paraphrase" and ex.label == 1
        target = passages[pool.index(ex.passage)]

        def rank(query: np.ndarray, target: np.ndarray = target) -> int:
            return int((passages @ query > target @ query).sum()) + 1

        stock = rank(vectors(embedder.encode([ex.prompt]))[0])
        adapted = rank(vectors(embedder.encode_query([ex.prompt]))[0])
        assert adapted < stock and adapted <= 3, (ex.id, stock, adapted)


def small_training(embedder: embed.Embedder, **extra: object) -> tuple:
    """The first 40 train examples, their stock vectors, and a few quick training steps' settings (plus `extra`)."""
    data = train_adapter.data(recall_data.examples("train")[:40])
    prompts, passages = vectors(embedder.encode(data.prompts)), vectors(embedder.encode(data.passages))
    settings = Namespace(seed=7, threads=1, rank=0, steps=5, lr=1e-3, temperature=0.05, hard=2.0, pair=1.0,
                         decay=1e-3, symmetric=False, **extra)  # fmt: skip
    return data, prompts, passages, settings


@needs_model
def test_training_gives_the_same_weights_with_the_same_seed(embedder: embed.Embedder) -> None:
    data, prompts, passages, settings = small_training(embedder)
    first = train_adapter.train_linear(data, prompts, passages, settings)
    second = train_adapter.train_linear(data, prompts, passages, settings)
    assert np.array_equal(first, second)
    assert not np.allclose(first, np.eye(384))
    low_rank = Namespace(**{**vars(settings), "rank": 4})
    assert np.array_equal(train_adapter.train_linear(data, prompts, passages, low_rank),
                          train_adapter.train_linear(data, prompts, passages, low_rank))  # fmt: skip
    other_seed = Namespace(**{**vars(low_rank), "seed": 8})
    assert not np.array_equal(train_adapter.train_linear(data, prompts, passages, low_rank),
                              train_adapter.train_linear(data, prompts, passages, other_seed))  # fmt: skip


@needs_model
def test_a_user_s_own_model_and_the_switch_get_no_map(embedder: embed.Embedder, monkeypatch) -> None:
    folder = str(embed._resolve(embed.DEFAULT))  # the same weights, named as a user's own model folder
    own = embed.load(folder)
    assert own.name == folder and own.query_map is None
    text = ["install the dependencies"]
    assert own.encode_query(text) == own.encode(text)
    monkeypatch.setenv(adapter.ENV, "off")
    stock = embed.load()
    assert stock.name == embedder.name and stock.query_map is None  # same index model id: no re-embedding
    assert stock.encode_query(text) == stock.encode(text) == embedder.encode(text)


@needs_model
def test_the_service_maps_query_vectors_and_not_note_vectors(embedder: embed.Embedder, memvault_home: Path) -> None:
    import threading

    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(service.serve(idle_minutes=1, embedder=embedder)))
    thread.start()
    try:
        assert client.wait_ready(20) is not None
        text = "fetch a couple of runtime releases onto this laptop"
        found = client.query_vector(text, timeout=5)
        assert found is not None and found[0] == embedder.name
        assert np.allclose(vectors([found[1]]), vectors(embedder.encode_query([text])), atol=1e-6)
        notes = client.embed([text], timeout=5)
        assert notes is not None
        assert np.allclose(vectors(notes.vectors), vectors(embedder.encode([text])), atol=1e-6)
    finally:
        client.stop()
        thread.join(20)
    assert codes == [0]


def test_kept_at_is_the_share_of_positives_over_the_threshold_that_lets_5_percent_of_negatives_through() -> None:
    negatives = np.array([0.9, 0.6, *np.linspace(0.1, 0.3, 18)])  # 20: one may pass at 5 %
    positives = np.array([0.95, 0.7, 0.61, 0.6, 0.2])
    t, kept = train_adapter.kept_at(negatives, positives, 0.05)
    assert 0.6 < t < 0.6001  # just above the second-best negative: only 0.9 passes
    assert kept == 3 / 5
    assert train_adapter.kept_at(negatives, positives, 0.10)[1] == 4 / 5  # two may pass: 0.6 and above


def test_the_floor_figures_read_the_best_wrong_passage_of_each_prompt() -> None:
    # prompts 0 (relevant: passage 0) and 1 (no relevant passage); unit vectors in 2-d for exact cosines
    d = train_adapter.Data(["p0", "p1"], ["a", "b"], {"train": [], "dev": [(0, 0, 1), (0, 1, 0), (1, 1, 0)],
                                                       "test": []})  # fmt: skip
    queries = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    docs = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    f = train_adapter.floor_figures(d, "dev", queries, docs)
    assert f["neg mean"] == pytest.approx((0.0 + 0.8) / 2)  # p0's best wrong is b (0.0); p1's best is b (0.8)
    assert f["pos mean"] == pytest.approx(1.0) and f["kept@0.435"] == 1.0
    assert f["wrong@0.435"] == 0.5 and f["unrelated@0.435"] == 1.0


def test_the_off_topic_file_keeps_clear_of_the_evaluation_prompts() -> None:
    import json

    rows = [ex for ex in recall_data.examples() if ex.file == "off-topic.jsonl"]
    assert len(rows) >= 150 and all(ex.label == 0 and ex.kind == "unrelated" for ex in rows)
    splits: dict[str, set[str]] = {}
    for ex in rows:
        splits.setdefault(ex.prompt, set()).add(ex.split)
    assert all(len(s) == 1 for s in splits.values())  # a prompt never straddles two splits
    evaluation = json.loads((SCRIPTS / "data" / "unrelated_prompts.json").read_text(encoding="utf-8"))["prompts"]
    norm = {" ".join(p["text"].lower().split()).rstrip("?.!") for p in evaluation}
    assert not {" ".join(prompt.lower().split()).rstrip("?.!") for prompt in splits} & norm


@needs_model
def test_the_floor_term_trains_reproducibly_and_changes_the_map(embedder: embed.Embedder) -> None:
    data, prompts, passages, settings = small_training(embedder, floor=3.0, mine=1, floor_at=0.4, floor_width=0.05)
    first = train_adapter.train_linear(data, prompts, passages, settings)
    assert np.array_equal(first, train_adapter.train_linear(data, prompts, passages, settings))
    without = train_adapter.train_linear(data, prompts, passages, Namespace(**{**vars(settings), "floor": 0.0}))
    assert not np.allclose(first, without)
    margin = Namespace(**{**vars(settings), "floor_margin": 0.05})  # the margin form of the term
    as_margin = train_adapter.train_linear(data, prompts, passages, margin)
    assert np.array_equal(as_margin, train_adapter.train_linear(data, prompts, passages, margin))
    assert not np.allclose(as_margin, first) and not np.allclose(as_margin, without)


@needs_model
def test_a_low_rank_delta_starts_as_the_stock_model_and_trains_only_its_factors() -> None:
    """`train_adapter.py finetune --lora R`: each linear layer of the 6 transformer layers gets factors b·a; with b
    at 0 the vectors are the stock model's, a training step moves them, and only the factors are trained/saved."""
    import torch

    model = embed.load(threads=1).model  # a copy of its own: the session's `embedder` is not changed
    text = ["install the dependencies for the backend"]
    before = model.encode(text, normalize_embeddings=True)
    train_adapter.add_lora(model, 4, train_adapter.SEED)
    assert np.allclose(model.encode(text, normalize_embeddings=True), before, atol=1e-6)
    trained = [w for w in model.parameters() if w.requires_grad]
    assert len(trained) == 2 * 6 * len(train_adapter.LORA_TARGETS)
    optimiser = torch.optim.AdamW(trained, lr=1e-2)
    features = model.tokenize(text)
    model.train()
    loss = -model(features)["sentence_embedding"][0, 0]
    loss.backward()
    optimiser.step()
    model.eval()
    assert not np.allclose(model.encode(text, normalize_embeddings=True), before, atol=1e-4)
    factors = train_adapter.lora_factors(model)
    assert len(factors) == len(trained)
    query = factors["encoder.layer.0.attention.self.query.a"]
    assert query.shape == (4, 384) and factors["encoder.layer.0.intermediate.dense.b"].shape == (1536, 4)


def test_the_cross_encoder_measure_reads_auc_and_the_share_kept_over_the_wrong_pairs_95th_percentile() -> None:
    import train_cross_encoder

    def pair(label: int, kind: str) -> recall_data.Example:
        return recall_data.Example("x", "", "", "p", "q", "", label, kind, "", "")

    wrong = [pair(0, "unrelated")] * 10 + [pair(0, "near_miss")] * 10
    right = [pair(1, "paraphrase"), pair(1, "paraphrase"), pair(1, "question"), pair(1, "indirect")]
    # unrelated pairs score 0.0-0.09, near misses 0.5-0.95; the right ones 0.99, 0.6, 0.3, 0.05
    score = np.array([i / 100 for i in range(10)] + [0.5 + i / 20 for i in range(10)] + [0.99, 0.6, 0.3, 0.05])
    out = train_cross_encoder.separation(score, wrong + right)
    # AUC: 0.99 beats all 20; 0.6 beats 10 + 3; 0.3 beats 10; 0.05 beats 5 (0.00-0.04) and ties none
    assert out["auc"] == round((20 + 13 + 10 + 5) / 80, 4)
    assert out["kept@5%"] == 1 / 4  # the wrong pairs' 95th percentile is near 0.93: only 0.99 is over it
    assert out["kept@5% unrelated"] == 3 / 4  # the unrelated pairs' is near 0.085: 0.05 is not over it
    assert out["kept@5% unrelated, by kind"] == {"indirect": 0.0, "paraphrase": 1.0, "question": 1.0}
