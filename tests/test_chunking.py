"""Pure index text helpers: chunks, wikilinks and their resolution, query terms, snippets."""

from __future__ import annotations

from memvault.index import chunking
from memvault.index.chunking import Chunk


def test_chunks_follow_headings_and_skip_headings_inside_code() -> None:
    body = "intro line\n\n# Title\n\ntext A\n\n## Setup\n\n```sh\n# not a heading\n```\n\n### Linux\n\napt install\n"
    parts = chunking.chunks(body)
    headings = [(c.seq, c.heading) for c in parts]
    assert headings == [(0, ""), (1, "Title"), (2, "Title › Setup"), (3, "Title › Setup › Linux")]
    assert "# not a heading" in parts[2].text
    assert parts[3].text == "apt install"


def test_long_sections_are_split_below_the_limit_at_paragraphs_then_sentences() -> None:
    sentence = "This sentence has exactly some words in it. "
    body = "# Long\n\n" + (sentence * 40) + "\n\n" + "short para\n\n" + "x" * 2500
    parts = chunking.chunks(body, max_chars=300)
    assert all(len(c.text) <= 300 for c in parts)
    assert all(c.heading == "Long" for c in parts)
    joined = "".join(c.text for c in parts).replace(" ", "").replace("\n", "")
    assert joined == body.replace("# Long", "").replace(" ", "").replace("\n", "")  # nothing lost


def test_empty_body_gives_one_empty_chunk() -> None:
    assert chunking.chunks("") == [Chunk(0, "", "")]


def test_embed_text_puts_title_and_tags_on_the_first_chunk_without_repeating_the_h1() -> None:
    first = chunking.embed_text("Ruff", ["python", "lint"], Chunk(0, "Ruff", "Use ruff."))
    assert first == "Ruff\n#python #lint\nUse ruff."
    later = chunking.embed_text("Ruff", ["python"], Chunk(1, "Ruff › Config", "line-length 100"))
    assert later == "Ruff › Config\nline-length 100"
    other = chunking.embed_text("Notes", [], Chunk(1, "Setup", "x"))
    assert other == "Notes › Setup\nx"


def test_wikilinks_forms_and_code_is_ignored() -> None:
    text = (
        "See [[Alpha]], [[Beta|the beta]], [[Gamma#Part]], ![[img.png]], [[Alpha]] again.\n"
        "`[[NotThis]]`\n```\n[[NorThis]]\n```\n[[folder/Delta]]"
    )
    assert chunking.wikilinks(text) == ["Alpha", "Beta", "Gamma", "img.png", "folder/Delta"]


def test_resolve_link_like_obsidian() -> None:
    paths = ["A/Note.md", "B/Note.md", "B/deep/Other.md", "Top.md", "C/Note.md"]
    by_path = {p[:-3].lower(): p for p in paths}
    by_name: dict[str, list[str]] = {}
    for p in paths:
        by_name.setdefault(p[:-3].rsplit("/", 1)[-1].lower(), []).append(p)
    resolve = chunking.resolve_link
    assert resolve("Note", "B/x.md", by_path, by_name) == "B/Note.md"  # the source's own folder first
    assert resolve("Note", "Z/x.md", by_path, by_name) == "A/Note.md"  # then shortest, alphabetical
    assert resolve("note", "Z/x.md", by_path, by_name) == "A/Note.md"  # case-insensitive
    assert resolve("deep/Other", "Top.md", by_path, by_name) == "B/deep/Other.md"  # path tail
    assert resolve("C/Note.md", "Top.md", by_path, by_name) == "C/Note.md"
    assert resolve("Missing", "Top.md", by_path, by_name) is None
    assert resolve("  ", "Top.md", by_path, by_name) is None


def test_query_terms_drop_stop_words_keep_identifiers_and_cjk() -> None:
    terms = chunking.query_terms("How do I fix the ERR_SSL_EOF error in psycopg?")
    assert terms == ["fix", "err_ssl_eof", "error", "psycopg"]
    assert chunking.query_terms("the and of") == []
    assert chunking.query_terms("日本語 メモ") == ["日本語", "メモ"]
    assert chunking.query_terms("a b 2023 x") == ["2023"]


def test_fts_query_quotes_terms_so_syntax_in_prompts_is_harmless() -> None:
    assert chunking.fts_query([]) is None
    assert chunking.fts_query(["near", 'say"hi']) == '"near" OR "say""hi"'


def test_snippet_windows_around_the_first_term() -> None:
    text = "word " * 100 + "needle here " + "tail " * 100
    snip = chunking.snippet(text, ["needle"], limit=80)
    assert "needle" in snip and snip.startswith("… ") and snip.endswith(" …") and len(snip) <= 84
    assert chunking.snippet("short text", ["x"]) == "short text"


def test_identifiers_are_codes_and_names_not_words() -> None:
    query = "why KX-4471 and ERR_OSSL_EVP, getUserById in config.yaml, not pre-commit or 2023 or well"
    assert chunking.identifiers(query) == ['"kx 4471"', '"err ossl evp"', '"getuserbyid"', '"config yaml"']
    assert chunking.identifiers("a test that fails only sometimes") == []
    # Unrelated prompts that passed the relevance floor as "exact identifiers" against a vault of notes:
    # the index reads `__name__` as the word `name`, and `e.g.` as the letters e and g.
    assert chunking.identifiers('what does if __name__ == "__main__" do; difference between i.e. and e.g.') == []
    found = chunking.identifiers("__init__ of os.path and snake_case, TLS_1_3")
    assert found == ['"os path"', '"snake case"', '"tls 1 3"']
