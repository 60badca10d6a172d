"""Titles and bodies a person would write for one typed statement (reflect.mine.titles)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.reflect.likeness import _PROVENANCE
from memvault.reflect.mine.text import TITLE_CHARS
from memvault.reflect.mine.titles import INSERTED, UNCLEAR, body_for, is_pointer_only, title_for
from memvault.reflect.mine.userwords import rule_title


@pytest.mark.parametrize(
    ("sentence", "title"),
    [
        ("so note this for every project – always pin the lockfile hashes", "Always pin the lockfile hashes"),
        ("oh and, from now on, please format SQL in upper case", "Format SQL in upper case"),
        ("Also, going forward: squash fixups before you open the PR", "Squash fixups before you open the PR"),
        ("I want you to run mypy after each edit", "Run mypy after each edit"),
        ("btw please keep the changelog in reverse order", "Keep the changelog in reverse order"),
    ],
)
def test_lead_ins_are_removed(sentence: str, title: str) -> None:
    assert title_for(sentence, "preference") == title


@pytest.mark.parametrize(
    ("sentence", "title"),
    [
        ("don't touch the vendored folder", "Do not touch the vendored folder"),
        ("I prefer spaces around operators", "Prefer spaces around operators"),
        ("you should never rebase a shared branch", "Never rebase a shared branch"),
        ("You must not print the tokens", "Do not print the tokens"),
        ("we always tag releases with a v prefix", "Always tag releases with a v prefix"),
        ("Please make sure you always bump the version", "Always bump the version"),
        ("I don't want you to open issues without my approval", "Do not open issues without the user's approval"),
        ("don't ever amend pushed commits", "Never amend pushed commits"),
        ("let's write docstrings in the numpy style", "Write docstrings in the numpy style"),
        ("lets just pin everything", "Pin everything"),
        ("can you please also sort the imports", "Sort the imports"),
    ],
)
def test_rules_are_imperative(sentence: str, title: str) -> None:
    assert title_for(sentence, "preference") == title


@pytest.mark.parametrize(
    ("sentence", "title"),
    [
        ("I'm on zsh with oh-my-zsh", "The user is on zsh with oh-my-zsh"),
        ("we host the docs on Netlify", "The user hosts the docs on Netlify"),
        ("my laptop runs Arch", "The user's laptop runs Arch"),
        ("I've got two monitors", "The user has got two monitors"),
        ("this repo targets Python 3.9", "The repo targets Python 3.9"),
        ("I don't have docker here", "The user does not have docker here"),
        ("the staging box is called hermes", "The staging box is called hermes"),
    ],
)
def test_facts_are_statements_about_the_user(sentence: str, title: str) -> None:
    assert title_for(sentence, "fact") == title


@pytest.mark.parametrize(
    ("sentence", "title"),
    [
        ("tabs pls", "Use tabs"),
        ("ruff over flake8", "Use ruff over flake8"),
        ("single quotes plz", "Use single quotes"),
        ("no Perl, ever", "Never use Perl"),
        ("no more print debugging, ever again", "Never use print debugging"),
        ("no Perl again", "Never use Perl"),
        ("no trailing whitespace", "No trailing whitespace"),
    ],
)
def test_verbless_rules_and_no_x_ever(sentence: str, title: str) -> None:
    assert title_for(sentence, "preference") == title


@pytest.mark.parametrize(
    ("sentence", "title"),
    [
        ("allways run the formatter first", "Always run the formatter first"),
        ("nevr commit the .env file", "Never commit the .env file"),
        ("alwasy sign the tags", "Always sign the tags"),
        ("dont log request bodies", "Do not log request bodies"),
        ("I perfer short branch names", "Prefer short branch names"),
    ],
)
def test_typos_in_trigger_words_are_read_through(sentence: str, title: str) -> None:
    assert title_for(sentence, "preference") == title


def test_real_words_near_a_trigger_are_not_typos() -> None:
    assert title_for("sever the old webhook", "preference") == "Sever the old webhook"
    assert title_for("I ever only deploy from main", "fact").startswith("The user ever")


@pytest.mark.parametrize("sentence", ["do this always", "remember that", "Always do it like that!", "never again"])
def test_a_pointer_only_fragment_says_so(sentence: str) -> None:
    assert is_pointer_only(sentence)
    title = title_for(sentence, "preference")
    assert title.startswith(UNCLEAR) and sentence.rstrip("!") in title


def test_a_pointer_only_fragment_is_restated_from_its_context() -> None:
    before = "run the linter before pushing"
    assert title_for("do this always", "workflow", context=before) == "Always run the linter before pushing"
    assert title_for("never do that again", "preference", context="force-push to main") == "Never force-push to main"
    assert not is_pointer_only("always run the linter")


def test_emoji_and_trailing_punctuation_go() -> None:
    assert title_for("always squash merge 🚀🚀!!", "preference") == "Always squash merge"
    assert title_for("use black for formatting :)", "preference") == "Use black for formatting"
    assert title_for('"keep functions short."', "preference") == "Keep functions short"


def test_a_client_placeholder_and_a_cjk_sentence_are_not_restated_as_words() -> None:
    # Claude Code writes "[Image #3]" where the user attached an image: not the user's words, never a title's
    assert title_for("[Image #3] I want syntax highlighting in every code view", "preference") == (
        "The user wants syntax highlighting in every code view"
    )
    assert rule_title("[Image #2] always use dark mode for screenshots") == "Always use dark mode for screenshots"
    said = "实际上没有必要接受`chinese`/`english`，可以去除相关逻辑"  # holds its verbs: no "Use" in front
    assert not title_for(said, "preference").startswith("Use")


def test_the_title_is_capped_at_a_word() -> None:
    long = "always write " + " ".join(f"word{i}" for i in range(40))
    title = title_for(long, "preference")
    assert len(title) <= TITLE_CHARS and title.endswith("…")
    assert title[:-1].split()[-1] in long.split()  # cut between words, never inside one


def test_a_long_rule_loses_its_reason_before_it_is_cut() -> None:
    sentence = (
        "never run the database migrations from a laptop against production because the VPN drops "
        "connections halfway through and leaves the schema half applied"
    )
    assert title_for(sentence, "preference") == "Never run the database migrations from a laptop against production"


def test_an_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown statement kind 'rules'"):
        title_for("always use tabs", "rules")


def test_the_body_restates_the_rule_and_keeps_the_quote_and_its_line() -> None:
    said = "ok so from now on, don't push to main directly!"
    body = body_for(said, "preference", 14)
    assert body.splitlines()[0] == "Do not push to main directly."
    assert f"> {said}\n— the user, L14" in body
    assert _PROVENANCE.search(body)  # the provenance line the likeness check strips
    assert "Said" not in body


def test_a_body_with_the_statement_said_again_lists_each_line() -> None:
    body = body_for("tabs pls", "preference", 3, more=[(40, "tabs, I said"), (3, "tabs pls")])
    assert body.startswith("Use tabs.\n\n> tabs pls\n— the user, L3")
    assert "> tabs, I said\n— the user, L40" in body and body.endswith("Said 2 times in this session.")


def test_a_pointer_only_body_has_no_restatement_but_keeps_the_quote() -> None:
    assert body_for("do this always", "preference", 9) == "> do this always\n— the user, L9"


# ---- never a content word the user did not say ---------------------------------------------------

_FRAGMENTS = [
    "so", "oh and", "also", "please", "pls", "from now on", "I want you to", "note this for every project –",
    "always", "allways", "never", "nevr", "don't", "dont", "do not", "I", "I'm", "we", "you should", "my", "me",
    "no", "ever", "this", "that", "it", "prefer", "I prefer", "make sure", "let's", "run", "the", "tests",
    "tabs", "Java", "main", "deploy", "on", "Fly", ",", "!", "🚀", ":)", "–", ":", "because", "more", "again",
]  # fmt: skip
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9)


def _content(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


def _said(word: str, sentence_words: set[str]) -> bool:
    forms = {word, word.removesuffix("s"), word.removesuffix("es"), re.sub(r"ies$", "y", word)}
    return bool(forms & sentence_words)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_FRAGMENTS), _WORD), min_size=1, max_size=14),
    st.sampled_from(["preference", "correction", "workflow", "idea", "fact"]),
)
def test_a_title_holds_no_content_word_the_user_did_not_say(parts: list[str], kind: str) -> None:
    sentence = " ".join(parts)
    title = title_for(sentence, kind)
    said = set(_content(sentence))
    extra = [w for w in _content(title) if w not in INSERTED and not _said(w, said)]
    assert not extra, (sentence, title)
    assert len(title) <= TITLE_CHARS
