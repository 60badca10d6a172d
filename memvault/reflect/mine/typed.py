"""What the person typed in a user turn: the turn's text split into typed and pasted segments.

A user turn often carries text the person did not write: an expanded slash-command template (spec-kit,
BMAD, a custom prompt), code, a stack trace, compiler, linter or test-runner output, log lines, an
HTTP dump, a JSON/YAML/XML blob, a shell session, a diff, the assistant's own words quoted back, tool
output in wrapper tags, a list of URLs. `segments` splits the text into runs of lines, each either
"typed" or the kind of paste it is; the miners read rules only from the typed runs and may use the
pasted ones as context (an error the user pasted is evidence of a problem, never a preference).

Pure: text in, segments out; no I/O. The rules work line by line, in this order: wrapper tags and
fenced blocks, then a template's "User input" block, then each line by its own shape (a strong pattern
decides alone), then its neighbours (a line without sentence structure next to a paste, an indented
line under one, or a line between two pastes of one paragraph, belongs to that paste), then a command's
instruction block (`<steps>…</steps>`, with the line introducing it), then a pasted document's titles
(from its first title on, it is all pasted).

Over 400 lines: the paste kinds are one table of patterns read top to bottom, and the whole-turn
rules (templates, documents, tags, echoes, the instructions file) each need the line shapes beside them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memvault.reflect.transcript import Turn

TYPED = "typed"
ECHO_WORDS = 6  # a line of at least this many words found verbatim in the assistant's last words is quoted back
TEMPLATE_CHARS = 1200  # an expanded command template is at least this long
DOCUMENT_CHARS, DOCUMENT_HEADINGS = 2400, 6  # a pasted document: this long, with this many bare headings
STRUCTURED_CHARS, STRUCTURED_HEADINGS = 1200, 2  # typed text this long with this many markdown headings: a document
LEAD_IN_CHARS = 300  # what a person types before a document they paste ("do the below:") is at most this long
SHAPE_CHARS = 400  # a line's shape is read from this much of it (a pasted line can be megabytes long)
ECHO_CHARS = 20_000  # the assistant's last words an echo is looked for in (a long run of turns: its end)


@dataclass(frozen=True)
class Segment:
    kind: str  # "typed", or what was pasted: template, document, code, quote, echo, trace, output, log, http, data,
    # shell, diff, url, tool, text (a long line without sentence structure)
    text: str

    @property
    def typed(self) -> bool:
        return self.kind == TYPED


# ---- templates: an expanded slash command, of which only the "User input" is the person's ----------------

_TEMPLATE_MARKS = (
    re.compile(r"^#{1,4}\s*user input\b", re.I | re.M),
    re.compile(r"\$ARGUMENTS\b"),
    re.compile(r"you \**must\** consider the user input", re.I),
    re.compile(
        r"^#{1,4}\s*(?:outline|goal|execution steps|execution flow|operating constraints|key rules|behavior rules"
        r"|phases|instructions|workflow|activation|persona|critical rules)\s*$",
        re.I | re.M,
    ),
    re.compile(r"^\s*<(?:workflow|task|agent|activation|step|critical|instructions|persona)\b[^>]*>", re.I | re.M),
    re.compile(r"^---\s*\n(?:[\w-]+:.*\n)*?description:", re.I),
    re.compile(r"^follow this execution flow\b|^given that feature description, do this\b", re.I | re.M),
)
_HEADING = re.compile(r"^#{1,6}\s+\S", re.M)
_INPUT_HEAD = re.compile(r"^(?:#{1,4}\s*user input\s*:?\s*$|\**user input\**\s*:\s*)", re.I)
_INPUT_END = re.compile(r"^(?:#{1,6}\s|you \**must\**|---\s*$|<\w)", re.I)
_FENCE = re.compile(r"^\s*(```|~~~)")


def _is_template(text: str) -> bool:
    if len(text) < TEMPLATE_CHARS:
        return False
    marks = sum(1 for m in _TEMPLATE_MARKS if m.search(text))
    return marks >= 2 or (marks == 1 and len(_HEADING.findall(text)) >= 4)


def _template(lines: list[str]) -> list[tuple[str, str]]:
    """(kind, line) for an expanded template: the lines of its "User input" block typed, the rest template."""
    out = [("template", ln) for ln in lines]
    start = next((i for i, ln in enumerate(lines) if _INPUT_HEAD.match(ln.strip())), None)
    if start is None:
        return out
    head = lines[start].strip()
    inline = re.sub(r"^\**user input\**\s*:\s*", "", head, flags=re.I) if ":" in head and "#" not in head else ""
    if inline and "$ARGUMENTS" not in inline:
        out[start] = (TYPED, inline)
    i = start + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and _FENCE.match(lines[i]):
        fence = _FENCE.match(lines[i]).group(1)  # type: ignore[union-attr]
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            out[j] = (TYPED, lines[j])
            j += 1
        return out
    while i < len(lines) and not _INPUT_END.match(lines[i].strip()):
        if "$ARGUMENTS" not in lines[i]:
            out[i] = (TYPED, lines[i])
        i += 1
    return out


# A command's instruction block, shorter than a template: `<steps CRITICAL="TRUE">1. Always LOAD …</steps>` (BMAD's
# short commands); the line that introduces it ("IT IS CRITICAL THAT YOU FOLLOW THESE STEPS …:") is the command's.
_INSTRUCTION_BLOCK = re.compile(
    r"^[ \t]*<(steps|step|workflow|critical|instructions|persona|activation|task|agent)\b[^>\n]*>"
    r".*?^[ \t]*</\1>[ \t]*$",
    re.I | re.M | re.S,
)


def _instruction_blocks(text: str, lines: list[str], kinds: list[str | None]) -> None:
    """Mark each instruction block's lines (`lines` is `text` split at newlines), and a line ending in ":" right
    above it, as template (in place)."""
    for m in _INSTRUCTION_BLOCK.finditer(text):
        first, last = text.count("\n", 0, m.start()), text.count("\n", 0, m.end())
        kinds[first : last + 1] = ["template"] * (last + 1 - first)
        above = first - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        if above >= 0 and lines[above].rstrip().endswith(":"):
            kinds[above] = "template"


# ---- documents: a prompt, a spec or a decision record pasted without markdown -----------------------------

_SMALL = r"(?:&|and|or|of|the|for|to|a|an|in|on|with|from|by|vs\.?)"
_TITLE_WORD = r"(?:[A-Z0-9][\w/&'.,()-]*|\([^)]{1,30}\))"
_BARE_HEADING = re.compile(  # "Role", "Step 2: Create Directory Structure", "2) Core Stack (FINAL)", "🧭 M-Codes"
    r"^(?:[^\x00-\x7f\w]{1,2}\s*)?(?:(?:\d{1,2}[.)]|[A-Z][.)]|Step \d+:)\s+)?"  # an emoji, a number, "Step 2:"
    rf"{_TITLE_WORD}(?:\s+(?:{_TITLE_WORD}|{_SMALL})){{0,6}}:?$"
)
_CAPS_HEADING = re.compile(r"^[A-Z][A-Z0-9 &/()'.,:-]{3,60}$")  # "PROJECT FACTS", "PRINCIPLES & MANDATES"


def _bare_heading(line: str) -> bool:
    """A short title line without markdown: Title Case or capitals, no sentence punctuation at its end."""
    s = line.strip()
    if not s or len(s) > 60 or s[-1] in ".;!?,":
        return False
    return bool(_BARE_HEADING.match(s)) or (bool(_CAPS_HEADING.match(s)) and sum(c.isalpha() for c in s) >= 4)


def _document_start(text: str, lines: list[str]) -> int | None:
    """Where a pasted document begins (its first bare heading), or None when `text` is not one.

    A person types a request, or a few rules; a document with six or more section titles and thousands of
    characters (a persona prompt, a decision record, a generated list) was pasted, even without markdown.
    What precedes its first title stays the person's when it is short (a lead-in: "create an exec plan to do
    the below:"); a longer opening is the document's own (0).
    """
    if len(text) < DOCUMENT_CHARS:
        return None
    heads = [i for i, ln in enumerate(lines) if _bare_heading(ln)]
    if len(heads) < DOCUMENT_HEADINGS:
        return None
    return heads[0] if len("\n".join(lines[: heads[0]]).strip()) <= LEAD_IN_CHARS else 0


# ---- one line by its shape --------------------------------------------------------------------------------


def _any(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives))


_STRONG: tuple[tuple[str, re.Pattern[str]], ...] = (  # (kind, pattern): a line matching one is that paste
    ("trace", _any(  # Python, JavaScript, Java
        r"^Traceback \(most recent call last\)", r"^\s*File \"[^\"]+\", line \d+", r"^During handling of the above",
        r"^The above exception was the direct cause",
        r"^\s*(?:[\w$]+\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::|$)",
        r"^Exception in thread ", r"^Caused by: ", r"^\s*\.\.\. \d+ more\s*$", r"^\s*at [\w$.<>]+\([\w$. -]*:\d+\)",
        r"^\s*at (?:async )?[\w$.<>\[\] ]*\(?\S*:\d+:\d+\)?\s*$", r"^(?:Uncaught )?\w*Error: ", r"^node:internal",
    )),
    ("trace", _any(  # Go, Rust
        r"^panic: ", r"^goroutine \d+ \[", r"^\s+/\S+\.go:\d+", r"^exit status \d+\s*$", r"^thread '.*' panicked at",
        r"^note: run with `RUST_BACKTRACE", r"^stack backtrace:", r"^\s*\d+: (?:0x[0-9a-f]+ - )?[\w:<>$]+::",
    )),
    ("output", _any(  # compilers and linters: file:line:col, rustc's gutter, tsc, eslint
        r"^\s*[\w./\\@~-]+\.\w{1,6}[:(]\d+(?:[:,]\d+)?\)?:\s*\S", r"^\s*-->\s*\S+:\d+(?::\d+)?\s*$",
        r"^error(?:\[E\d+\])?: ", r"^warning(?:\[\w+\])?: ", r"^\s*= (?:note|help): ", r"^\s*\d+\s+\|\s",
        r"^\s+\|\s*[\^-]", r"error TS\d+:", r"^\s*\d+:\d+\s+(?:error|warning)\s",
    )),
    ("output", _any(  # test runners, package managers, build tools
        r"^(?:FAILED|PASSED|ERROR|SKIPPED|XFAIL|XPASS) \S", r"^={3,}.*={3,}$", r"^_{3,} .* _{3,}$",
        r"^-{3,} (?:Captured|FAIL)", r"^E {2,}\S", r"^--- (?:FAIL|PASS): ", r"^(?:FAIL|PASS) \S+\.\w+\s*$",
        r"^(?:FAIL|ok)\s+\S+\s+[\d.]+s\s*$", r"^\s*[✓✗✔✘×●√]\s", r"^(?:Tests?|Test Suites|Snapshots|Time):\s+\d",
        r"^npm (?:ERR!|WARN) ", r"^(?:make|gmake|ninja)(?:\[\d+\])?: ", r"^\[\d+/\d+\] ",
        r"^\s*(?:Compiling|Finished|Downloading|Downloaded|Collecting|Requirement already|Building wheel)\s",
        r"^\d+ (?:passed|failed|errors?|warnings?)\b", r"^Found \d+ errors?\b", r"^(?:fatal|error|hint): ",
        r"^[a-z][\w.-]*: (?:[\w./-]+: )?(?:cannot|can't|missing|no such|invalid|unrecognized|command not found"
        r"|permission denied)",
    )),
    ("log", _any(  # timestamps, levels, syslog, logfmt
        r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d", r"^\[?\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s", r"^\d+ (?:ERR|INF|DBG|WRN|TRC)\b",
        r"^\[?(?:INFO|DEBUG|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL|NOTICE)\]?(?::|\s+-|\s+\[|\s{2,})",
        r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d", r"\blevel=(?:info|debug|warn|error|fatal)\b", r"^\[[A-Z]{3,8}\]\s",
        r"^\[[\w.-]+:[\w:.-]+\]\s",
    )),
    ("http", _any(  # a browser's network panel, curl -i, raw requests
        r"^(?:Request URL|Request Method|Status Code|Remote Address|Referrer Policy|Content-Type|Content-Length"
        r"|Set-Cookie|Cache-Control|Access-Control-[\w-]+|Accept(?:-[\w-]+)?|User-Agent|Authorization|Cookie"
        r"|Host|Origin|Referer|Server|Date|Connection|Vary|X-[\w-]+|Sec-[\w-]+):\s",
        r"^HTTP/\d(?:\.\d)? \d{3}\b", r"^(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /\S* HTTP/\d",
    )),
    ("data", _any(  # JSON and XML (YAML: `_yaml_runs`)
        r"^\s*[{}\[\]],?\s*$", r"^\s*\"[^\"]+\"\s*:\s*", r"^\s*\{\s*\"", r"^\s*\[\s*[{\"\d\[]", r"^\s*<\?xml\b",
        r"^\s*</[\w:.-]+>\s*$", r"^\s*<[\w:.-]+(?:\s+[\w:.-]+=\"[^\"]*\")*\s*/?>\s*$",
    )),
    ("shell", _any(  # prompts: $, %, ❯, >>>, PowerShell, user@host, a virtualenv's (name)
        r"^(?:\$|%|❯|➜|>>>|PS [A-Z]:\\[^>]*>)\s+\S", r"^[\w.-]+@[\w.-]+(?::[^$#%\s]*)?\s?[$#%]\s",
        r"^\(\w[\w.-]*\)\s+\S+[$#%>]\s",
        r"^(?:sudo )?(?:npm|npx|pnpm|yarn|pip3?|python3?|node|git|docker|kubectl|cargo|uv|brew|apt(?:-get)?|curl"
        r"|wget|gh) (?=.*(?:\s-{1,2}\w|[:/=]))(?!.*\b(?:the|it|to|and|a|an|this|that|my|your|please|in|on|of)\b)"
        r"[\w./:@=~-]+(?: [\w./:@=~-]+){0,6}\s*$",  # a bare command line, not a sentence about one
    )),
    ("diff", _any(
        r"^diff --git ", r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", r"^(?:\+\+\+|---) (?:[ab]/|/dev/null)",
        r"^index [0-9a-f]{6,}\.\.",
    )),
    ("url", _any(r"^(?:<?https?://\S+>?[\s,;]*)+$")),
)  # fmt: skip
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)]|[a-z][.)])\s+\S")
_YAML = re.compile(r"^\s*(?:- )?[\w.-]+:(?:\s+\S.*)?$")
_CODE_START = _any(  # a line that opens or is a statement of code, whatever else it holds
    r"^\s*(?:async )?def \w+\s*\(", r"^\s*class \w+\s*[:(]", r"^\s*import [\w.]+(?: as \w+)?(?:,\s*[\w.]+)*\s*;?$",
    r"^\s*from [\w.]+ import ", r"^\s*(?:export )?(?:async )?function\*? ?\w*\s*\(", r"^\s*(?:const|let|var) \w+\s*=",
    r"^\s*#include\b", r"^\s*(?:public|private|protected) (?:static |final |async )*[\w<>\[\]]+ \w+\s*\(",
    r"^\s*fn \w+\s*[(<]", r"^\s*func \w+\s*\(", r"^\s*package \w+\s*;?$", r"^\s*if \(.*\)\s*\{", r"^\s*for \(",
    r"^\s*\}\s*else\b", r"^\s*return\b[^.!?]*;\s*$",
)  # fmt: skip
_CODE_END = _any(r"[;{]\s*$", r"^\s*\}\s*$", r"^\s*\)\s*;?\s*$")  # code only when the line is not prose
_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_PLAIN = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*|\d+[%a-z]{0,3}|[&+=/–—-]")


def _cjk(text: str) -> bool:
    """Chinese, Japanese or Korean prose (no spaces between words): a fifth of its characters or more."""
    return sum(1 for c in text if ord(c) > 0x2E7F) * 5 >= len(text.replace(" ", "")) > 0


def _sentence_like(text: str) -> bool:
    """Prose: several plain words (no paths, no dotted or joined names), mostly letters, not ending like code."""
    s = text.strip()
    if not s or (s.endswith(("{", ";", "(", "[", ",")) and len(s) < 40):
        return False
    tokens = s.split()
    plain = sum(1 for tok in tokens if _PLAIN.fullmatch(tok.strip("()[]{},.;:!?\"'`*_")))
    if _cjk(s):
        return True
    letters = sum(c.isalpha() or c.isspace() for c in s)
    return len(tokens) >= 3 and plain / len(tokens) >= 0.6 and letters / len(s) >= 0.75


def _shape(line: str) -> str | None:
    """The kind of paste a line is by its own shape, or None (typed or undecided)."""
    s = line.rstrip()
    if not s.strip():
        return None
    if s.lstrip().startswith(">") and not s.lstrip().startswith((">>>", "->", ">=")):
        return "quote"
    head = s[:SHAPE_CHARS]
    for kind, pattern in _STRONG:
        if pattern.search(head):
            return kind
    if _CODE_START.search(head) or (_CODE_END.search(s[-SHAPE_CHARS:]) and not _sentence_like(s)):
        return "code"
    stripped = s.strip()
    if _cjk(stripped):
        return None
    if len(stripped) > 60 and " " not in stripped:
        return "text"
    if len(stripped) >= 80 and not _sentence_like(stripped) and not _LIST_ITEM.match(stripped):
        return "text"
    return None


def _indented(line: str) -> bool:
    return (line.startswith("\t") or line.startswith("    ")) and not _LIST_ITEM.match(line)


# ---- the whole turn --------------------------------------------------------------------------------------

_TAG_BLOCK = re.compile(  # the wrapper tags coding-agent clients put around what they inject in the user's name
    r"<((?:ide|command|local-command|bash|system|user-prompt|task|tool)[-_][a-z_-]+)(?:\s[^<>]*)?>(.*?)</\1>", re.S
)


def _unwrap_tags(text: str) -> tuple[str, list[Segment]]:
    """Wrapper-tag blocks (<ide_selection>, <local-command-stdout>…) out of `text`; <command-args> stay typed."""
    found: list[Segment] = []

    def cut(m: re.Match[str]) -> str:
        if m.group(1) == "command-args":
            return m.group(2)
        if m.group(2).strip():
            found.append(Segment("tool", m.group(2).strip()))
        return "\n"

    return _TAG_BLOCK.sub(cut, text), found


def _norm(text: str) -> str:
    text = text.lower().replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return " ".join(re.sub(r"[*_`#>]|^\s*(?:[-•+]|\d{1,3}[.)])\s", " ", text).split())


def segments(text: str, echo: str = "") -> list[Segment]:
    """`text` as runs of typed and pasted lines, in order (blank lines go with the run before them).

    `echo` is what the assistant said just before the turn: a line of the turn that repeats it is "echo".
    """
    text, tags = _unwrap_tags(text.replace("\r\n", "\n"))
    lines = text.split("\n")
    kinds: list[str | None]
    if _is_template(text):
        pairs = _template(lines)
        lines = [ln for _, ln in pairs]
        kinds = [k for k, _ in pairs]
    else:
        kinds = _classify(lines, _norm(echo) if echo else "")
        if len(text) < TEMPLATE_CHARS:  # a longer one is the template rule's (and the search stays short)
            _instruction_blocks(text, lines, kinds)
        start = _document_start(text, lines)
        if start is not None:
            kinds[start:] = ["document"] * (len(lines) - start)
    out: list[Segment] = []
    for kind, line in zip(kinds, lines, strict=True):
        kind = kind or TYPED
        if out and (out[-1].kind == kind or not line.strip()):
            out[-1] = Segment(out[-1].kind, f"{out[-1].text}\n{line}")
        else:
            out.append(Segment(kind, line))
    cleaned = [Segment(s.kind, s.text.strip("\n")) for s in out if s.text.strip()]
    return cleaned + tags


def _classify(lines: list[str], echo: str) -> list[str | None]:
    kinds: list[str | None] = [None] * len(lines)
    fence: str | None = None
    for i, line in enumerate(lines):  # fenced blocks, then each line by its shape
        m = _FENCE.match(line)
        if fence is not None:
            kinds[i] = "code"
            if m and m.group(1) == fence and not line.strip()[3:].strip():
                fence = None
            continue
        if m:
            kinds[i], fence = "code", m.group(1)
            continue
        kinds[i] = _shape(line)
        if kinds[i] is None and echo and len(_WORDS.findall(line)) >= ECHO_WORDS and _norm(line) in echo:
            kinds[i] = "echo"
    _yaml_runs(lines, kinds)
    for _ in range(2):  # neighbours: lines without sentence structure join the paste next to them
        for i, line in enumerate(lines):
            before = kinds[i - 1] if i > 0 and lines[i - 1].strip() else None
            after = kinds[i + 1] if i + 1 < len(lines) and lines[i + 1].strip() else None
            if kinds[i] == "quote" and before in ("shell", "output"):  # npm's "> app@1.0.0 test" under its command
                kinds[i] = before
            if kinds[i] is not None or not line.strip():
                continue
            if before == "diff" and line[:1] in "+- ":
                kinds[i] = "diff"
            elif before and before not in ("quote", "echo") and (_indented(line) or not _sentence_like(line)):
                kinds[i] = before
            elif after and after not in ("quote", "echo") and not _sentence_like(line):
                kinds[i] = after
            elif before and after and before == after and before not in ("quote", "echo", "url"):
                kinds[i] = before
    return kinds


def _yaml_runs(lines: list[str], kinds: list[str | None]) -> None:
    """Three or more consecutive `key: value` lines with one-word keys are a YAML (or similar) blob."""
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and kinds[j] in (None, "data") and _YAML.match(lines[j]) and lines[j].strip():
            j += 1
        if j - i >= 3:
            for k in range(i, j):
                kinds[k] = "data"
        i = max(j, i + 1)


def structured(text: str) -> bool:
    """Whether what the person typed in `text` reads as a long markdown document (STRUCTURED_CHARS or more, with
    STRUCTURED_HEADINGS markdown headings or more): a spec, a design note, or another assistant's answer pasted
    whole, whose rules a person should look at before they are saved (`prefs`)."""
    if len(text) < STRUCTURED_CHARS:
        return False
    mine = typed(text)
    return len(mine) >= STRUCTURED_CHARS and len(_HEADING.findall(mine)) >= STRUCTURED_HEADINGS


def typed(text: str, echo: str = "") -> str:
    """Only what the person typed in `text`, its runs separated by a blank line."""
    return "\n\n".join(s.text for s in segments(text, echo) if s.typed)


def pasted(text: str, echo: str = "") -> str:
    """What the person pasted in `text` (context only, never their words), its runs separated by a blank line."""
    return "\n\n".join(s.text for s in segments(text, echo) if not s.typed)


def echoes(turns: Sequence[Turn]) -> dict[int, str]:
    """For each user turn (by index in `turns`), what the assistant said since the user's turn before it."""
    out: dict[int, str] = {}
    said: list[str] = []
    for i, turn in enumerate(turns):
        if turn.sidechain:
            continue
        if turn.role == "user":
            out[i] = "\n".join(said)[-ECHO_CHARS:]
            said = []
        elif turn.role == "assistant":
            said.append(turn.text)
    return out


def without_instructions(turns: Sequence[Turn]) -> list[Turn]:
    """`turns` with the lines of each user turn that repeat the project's instructions (an "instructions" turn before
    it: Codex CLI's AGENTS.md) taken out. The host gives the agent that file in every session, so its rules are
    neither the user's words nor a memory to keep; a user pasting it into a prompt is the case this is for.

    A line repeats the instructions when it is one of their lines (two words or more), or when it has ECHO_WORDS
    words or more and the instructions hold it; markdown emphasis, list marks and case do not count. Within a run
    of such lines, a shorter line that is one of theirs too (`end`, `}`) goes with the run.
    """
    lines: set[str] = set()
    whole: list[str] = []
    out: list[Turn] = []
    for turn in turns:
        if turn.role == "instructions":
            whole.append(_norm(turn.text))
            lines.update(n for n in (_norm(ln) for ln in turn.text.splitlines()) if n)
        elif turn.role == "user" and lines:
            kept, run = [], False
            for line in turn.text.split("\n"):
                norm = _norm(line)
                if not norm:
                    kept.append(line)
                elif _repeats(line, norm, lines, whole) or (run and norm in lines):
                    run = True
                else:
                    kept.append(line)
                    run = False
            if len(kept) != turn.text.count("\n") + 1:
                turn = replace(turn, text="\n".join(kept).strip("\n"))
        out.append(turn)
    return out


def _repeats(line: str, norm: str, lines: set[str], whole: list[str]) -> bool:
    if len(norm.split()) < 2:
        return False
    return norm in lines or (len(_WORDS.findall(line)) >= ECHO_WORDS and any(norm in text for text in whole))
