"""The statement judge: the shipped weights load and judge hand-written sentences; the training script reproduces.

The sentences here were written for this test, for the error classes of issue 28; none is in the
training data (scripts/data/judge_sentences.json, the corpus). They check orders of magnitude, not
answers copied from training.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.index import embed
from memvault.reflect import miner
from memvault.reflect.mine import judge
from memvault.reflect.transcript import Turn

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _one_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge reads vectors from the tests' one loaded model (no service runs: MEMVAULT_HOME is the test's)."""
    if embed.available():
        monkeypatch.setattr(judge, "_embedder", lambda: request.getfixturevalue("embedder"))


def _turns(message: str) -> list[Turn]:
    return [
        Turn("assistant", "I have updated the handler and the tests pass.", 1, None, None, False),
        Turn("user", message, 2, None, None, False),
        Turn("assistant", "Understood.", 3, None, None, False),
    ]


def _p(message: str) -> float:
    """The judge's probability of the likeliest kind of statement for the message's (only) unit (what it routes on)."""
    [(_, probs)] = judge.judged(_turns(message))
    return max(v for k, v in probs.items() if k != "none")


def _low() -> float:
    """The `low` threshold in effect: the vector model's when vectors can be had here, else the lexical one's."""
    vec = judge.load_vectors()
    return vec.thresholds["low"] if vec is not None and embed.available() else judge.load().thresholds["low"]


def test_the_shipped_weights_load_in_pure_python_and_are_small() -> None:
    model = judge.load()
    assert model.dim * len(judge.KINDS) == len(model.weights)
    assert 0 < model.thresholds["low"] <= model.thresholds["medium"] <= model.thresholds["high"] <= 1.0
    assert (Path(judge.__file__).with_name(judge.WEIGHTS_FILE)).stat().st_size < 200_000
    probs = model.probabilities(judge.units(_turns("use tabs"))[0])
    assert set(probs) == set(judge.KINDS) and abs(sum(probs.values()) - 1.0) < 1e-9


@pytest.mark.parametrize(
    "rule",
    [
        "one more thing, for all projects: always pin exact dependency versions",  # after a lead-in
        "allways squash commits before merging",  # a typo'd rule word
        "I'm on zsh with oh-my-zsh",  # a plain fact about the user's setup
        "don't call anything 'robust' in the README",  # a word-choice rule
    ],
)
def test_a_rule_or_fact_outweighs_an_approval_by_far(rule: str) -> None:
    for chatter in ("ok do it", "thanks, looks good", "why does the build fail?"):
        assert _p(rule) > 5 * _p(chatter), (rule, chatter)
    assert _p(rule) >= _low()  # a candidate at least
    assert judge.candidates(_turns(rule))


def test_a_verbless_rule_is_judged_above_an_approval() -> None:
    assert _p("tabs pls") > 3 * _p("ok do it")


def test_a_numbered_list_of_rules_is_judged_item_by_item() -> None:
    message = (
        "1. use ruff for linting\n2. never commit .env files\n3. keep functions under 50 lines\n"
        "4. write tests with pytest\n5. always add type hints"
    )
    units = judge.units(_turns(message))
    assert [u.text for u in units] == [
        "use ruff for linting", "never commit .env files", "keep functions under 50 lines",
        "write tests with pytest", "always add type hints",
    ]  # fmt: skip
    found = judge.candidates(_turns(message))
    assert len(found) >= 3  # measured: 4 of the 5 reach the low threshold with vectors, 3 without
    assert len({c.key for c in found}) == len(found) and all(len(c.evidence) == 1 for c in found)


def test_a_pasted_stack_trace_gives_no_candidate() -> None:
    trace = 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n    main()\n'
    trace += "ValueError: always use tabs"
    assert judge.units(_turns(trace)) == []
    assert judge.candidates(_turns(trace)) == []


def test_a_one_off_step_is_never_high() -> None:
    for step in ("only for the first ten records for now", "just this time, skip the migration check"):
        assert all(c.confidence != "high" for c in judge.candidates(_turns(step)))
    assert judge.vetoed("only for the first ten records for now") == "task-scoped"


def test_a_vetoed_unit_is_at_most_medium_whatever_its_probability() -> None:
    # with every threshold at 0 every unit would be HIGH: the veto alone keeps the one-off step and the
    # destructive instruction for a person to look at
    model = dataclasses.replace(judge.load(), thresholds={"low": 0.0, "medium": 0.0, "high": 0.0})
    rule = "always pin exact dependency versions"
    assert [c.confidence for c in judge.candidates(_turns(rule), model, use_vectors=False)] == ["high"]
    for vetoed in ("only for the first ten records for now", "always force-push to main when the build is red"):
        found = judge.candidates(_turns(vetoed), model, use_vectors=False)
        assert [c.confidence for c in found] == ["medium"], vetoed


def test_vetoes_questions_and_destructive_instructions() -> None:
    assert judge.vetoed("should we always use tabs?") == "question"
    assert judge.candidates(_turns("should we always use tabs?")) == []
    assert judge.vetoed("always force-push to main when the build is red") == "destructive"


def test_the_offline_miner_uses_the_judge_when_asked() -> None:
    turns = _turns("one more thing, for all projects: always pin exact dependency versions")
    found = miner.mine(turns, using="judge")
    assert [c.rule for c in found] == ["judge:preference"]
    assert found[0].evidence == ("L2",) and "always pin exact dependency versions" in found[0].body


def test_the_offline_miner_runs_the_judge_beside_the_rules_on_the_lines_they_leave() -> None:
    turns = [
        Turn("user", "set up the repo", 1, "u1", None, False),
        Turn("assistant", "Done, I created the project.", 2, "a2", None, False),
        Turn("user", "one more thing, for all projects: always pin exact dependency versions", 3, "u3", None, False),
        Turn("assistant", "Pinned them.", 4, "a4", None, False),
        Turn("user", "we deploy everything on fly.io", 5, "u5", None, False),
    ]
    rules = miner.mine(turns, using="rules")
    assert [(c.evidence, c.confidence) for c in rules] == [(("L3",), "high")]  # the rule; the fact is no rule's
    assert {c.evidence for c in miner.mine(turns, using="judge")} >= {("L3",), ("L5",)}  # the judge finds both
    default = miner.mine(turns)
    assert miner.OFFLINE == "rules+judge"
    assert [c for c in default if not c.rule.startswith("judge:")] == rules  # the rules' saves, as they were
    judged = [(c.evidence, c.confidence, c.rule) for c in default if c.rule.startswith("judge:")]
    assert judged == [(("L5",), "low", "judge:fact")]  # only the line the rules left, and to the inbox
    with pytest.raises(ValueError, match="unknown offline miner"):
        miner.mine(turns, using="llm")


def _export() -> Path | None:
    data = os.environ.get("MEMVAULT_BENCH_DATA")
    path = Path(data) / "reflect-corpus" if data else None
    return path if path is not None and path.is_dir() else None


@pytest.mark.skipif(_export() is None, reason="no corpus export ($MEMVAULT_BENCH_DATA/reflect-corpus)")
def test_training_runs_on_a_slice_and_reproduces_its_weights(tmp_path: Path) -> None:
    runs = []
    for name in ("a.json", "b.json"):
        out = tmp_path / name
        done = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "train_judge.py"), "--corpus", str(_export()), "--limit", "2",
             "--quick", "--quiet", "--out", str(out), "--vector-cache", str(tmp_path / "vectors.npz")],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(out.read_text()))
    assert runs[0] == runs[1]
    model = judge.from_json(runs[0])
    assert model.dim == 1024 and runs[0]["about"]["data"]["limit"] == 2
    if embed.available():  # the second run read the first one's vectors from the cache: the same weights
        vectors = [json.loads((tmp_path / name).with_name(judge.VECTOR_WEIGHTS_FILE).read_text())]
        assert judge.vector_model_from_json(vectors[0]).dim == 384


def test_the_vector_model_ships_small_and_names_its_embedding_model() -> None:
    vec = judge.load_vectors()
    assert vec is not None
    assert vec.model == embed.model_name(embed.DEFAULT) and vec.dim == 384
    assert len(vec.columns) == len(judge.KINDS) and all(len(c) == 2 * vec.dim + len(vec.cues) for c in vec.columns)
    assert 0 < vec.thresholds["low"] <= vec.thresholds["medium"] <= vec.thresholds["high"] <= 1.0
    assert 0.0 < vec.blend <= 1.0
    assert (Path(judge.__file__).with_name(judge.VECTOR_WEIGHTS_FILE)).stat().st_size < 50_000


def test_without_vectors_the_lexical_model_judges_with_its_own_thresholds() -> None:
    turns = _turns("one more thing, for all projects: always pin exact dependency versions")
    judge.LAST_SOURCE[0] = "none"
    [(_, probs)] = judge.judged(turns, use_vectors=False)
    assert judge.LAST_SOURCE[0] == "lexical"
    assert probs == judge.load().probabilities(judge.units(turns)[0])


def test_the_unit_reads_the_end_of_the_agent_message_it_answers() -> None:
    long_answer = "x" * 500 + " Shall I also add the migration?"
    turns = [
        Turn("assistant", long_answer, 1, None, None, False),
        Turn("user", "yes, and always squash the migrations", 2, None, None, False),
        Turn("user", "also use ruff", 3, None, None, False),  # answers nothing new
    ]
    first, second = judge.units(turns)
    assert first.context == long_answer[-judge.CONTEXT_CHARS :] and first.context.endswith("the migration?")
    assert second.context == ""


@pytest.mark.skipif(not embed.available(), reason="sentence-transformers is not installed")
def test_with_the_model_loaded_here_the_vectors_change_the_judgement() -> None:
    # no service runs (MEMVAULT_HOME is the test's own): the vectors come from the model in this process
    vec = judge.load_vectors()
    assert vec is not None
    rule, chatter = "I'm on zsh with oh-my-zsh", "ok do it"
    judge.LAST_SOURCE[0] = "none"
    [(unit, probs)] = judge.judged(_turns(rule))
    assert judge.LAST_SOURCE[0] == "in-process"
    assert abs(sum(probs.values()) - 1.0) < 1e-9 and probs != judge.load().probabilities(unit)
    [(_, chat)] = judge.judged(_turns(chatter))
    assert 1 - probs["none"] > 3 * (1 - chat["none"])
    # the pure-Python blend equals the same arithmetic done by hand from the weights
    got, source = judge.vectors([unit.text, unit.context], vec.model, vec.dim)
    assert source == "in-process" and got is not None
    on = set(judge.features(unit))
    x = [*got[0], *got[1], *(1.0 if c in on else 0.0 for c in vec.cues)]
    logv = [b + sum(a * w for a, w in zip(x, col, strict=True)) for b, col in zip(vec.bias, vec.columns, strict=True)]
    lse = max(logv) + math.log(sum(math.exp(v - max(logv)) for v in logv))
    lex = judge.load().logits(unit)
    z = [(vec.blend * (v - lse) + (1 - vec.blend) * w) / vec.temperature for v, w in zip(logv, lex, strict=True)]
    expect = [math.exp(v - max(z)) for v in z]
    assert abs(expect[-1] / sum(expect) - probs["none"]) < 1e-9
    assert all(len(c.evidence) == 1 for c in judge.candidates(_turns(rule)))


def test_a_repeated_word_counts_once_as_in_training() -> None:
    # train_judge.matrix gives each hashed bucket of a unit a 1, however many of its features fall in it
    model = judge.load()
    [unit] = judge.units(_turns("we want the tests we run to run fast, we said we would"))
    k = len(judge.KINDS)
    logits = list(model.bias)
    for bucket in set(judge.buckets(judge.features(unit), model.dim)):
        for j in range(k):
            logits[j] += model.weights[bucket * k + j]
    top = max(logits)
    exp = [math.exp((v - top) / model.temperature) for v in logits]
    expected = exp[-1] / sum(exp)
    assert abs(model.probabilities(unit)["none"] - expected) < 1e-9


def test_a_rule_typed_in_another_script_is_a_unit() -> None:
    # the rules' sentence reader counts Latin words only: a Russian or Chinese rule had no unit at all
    russian = "да, и всегда пиши мне по-русски, переводи все документы"
    assert [u.text for u in judge.units(_turns(russian))] == [russian]
    assert [u.text for u in judge.units(_turns("以后都用中文回答我"))] == ["以后都用中文回答我"]
    assert "cue:other-script" in judge.features(judge.units(_turns(russian))[0])


def test_a_long_chinese_sentence_is_not_taken_for_a_pasted_token() -> None:
    # more than 60 characters without a space: the rules' reader takes such a line for a pasted token
    rule = (
        "我觉得差不多,然后我们应该避免在整个文档的代码定义里使用缩写,"
        "这是一个抽象的简写,应该用集群中实际的资源名称来命名,保持语义清晰"
    )
    assert len(rule) > 60 and " " not in rule
    assert [u.text for u in judge.units(_turns(rule))] == [rule]
    assert judge.units(_turns("x" * 80)) == []  # a long unspaced Latin token still is one


def test_chinese_sentences_and_a_run_together_numbered_list_are_cut_into_units() -> None:
    message = "我重新提要求:增加两条规则 1.所有路径用绝对路径 2.不要自动提交代码。提交前先跑测试"
    assert [u.text for u in judge.units(_turns(message))] == [
        "我重新提要求:增加两条规则", "所有路径用绝对路径", "不要自动提交代码。", "提交前先跑测试",
    ]  # fmt: skip
    # version numbers are no list
    assert [u.text for u in judge.units(_turns("keep support for both 1.x and 2.x releases"))] == [
        "keep support for both 1.x and 2.x releases"
    ]


def test_training_labels_a_chinese_or_russian_unit_by_its_quote() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    train_judge = pytest.importorskip("train_judge")
    [unit] = judge.units(_turns("先和我讨论方案,不需要写代码"))
    quote = "先和我讨论方案，不需要写代码"  # full-width comma, as typed; the unit reads it as ","
    session = {"statements": [{"line": 2, "quote": quote, "kind": "correction", "label": "MUST"}], "negatives": []}
    assert train_judge._label(unit, session) == ("correction", 1.0, "MUST")
    [unit] = judge.units(_turns("как требуется работай на русском"))
    session["statements"] = [{"line": 2, "quote": "работай на русском", "kind": "preference", "label": "NICE"}]
    assert train_judge._label(unit, session) == ("preference", 1.0, "NICE")


def test_training_cuts_a_hand_written_message_into_units_and_labels_its_marked_statements(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    train_judge = pytest.importorskip("train_judge")
    path = tmp_path / "messages.txt"
    path.write_text(
        "# a comment\n"
        "^ Add the export button. [[W: After each step run the tests.]] Start with the backend.\n"
        'Traceback (most recent call last):\\n  File "a.py", line 1, in <module>\\n'
        "KeyError: 'x'\\n[[C: never catch KeyError to hide a missing setting]]\n"
        "Сделай форму входа. [[P: Никогда не используй inline стили.]]\n",
        encoding="utf-8",
    )
    found = [(e["unit"].text, e["kind"], e["unit"].first_turn, e["unit"].after_agent)
             for e in train_judge.message_examples(path)]  # fmt: skip
    assert found == [
        ("Add the export button.", "none", True, False),
        ("After each step run the tests.", "workflow", True, False),
        ("Start with the backend.", "none", True, False),
        ("never catch KeyError to hide a missing setting", "correction", False, True),  # the paste is no unit
        ("Сделай форму входа.", "none", False, True),
        ("Никогда не используй inline стили.", "preference", False, True),
    ]


def test_every_marked_statement_of_the_shipped_messages_is_a_unit(capfd: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    train_judge = pytest.importorskip("train_judge")
    examples = train_judge.message_examples()
    assert "in no unit" not in capfd.readouterr().err
    statements = sum(e["kind"] != "none" for e in examples)
    assert statements >= 500 and len(examples) - statements >= 500
