"""Fixes: one episode each, an error, the change that fixed it and its confirmation (offline miner, pass 1).

A fix is kept only when all three come from the same episode, otherwise nothing:
- the error: a failed tool call (not the tool's own mechanics: a file too large to read, an edit
  string not found, a rejected call), or a problem the user reports;
- the change: after the error, the agent edits or writes a file, runs a command that changes
  something (installs, moves, configures), or runs the failing command again in a different way;
- the confirmation: the failing command (the same program and subcommand) runs again and succeeds
  without that error, or the user says it worked. A re-run that gets past the error but fails
  otherwise is weaker evidence (low); a clean success or the user's word is medium.
The episode ends unconfirmed when the user turns to something else, or after EPISODE_CALLS tool
calls. What the agent said between the error and the confirmation explains the fix; nothing said
elsewhere in the session is borrowed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memvault.reflect.transcript import Turn

from .text import Candidate, clip, make_key, make_title, prose, sentences, turn_ref, without_secrets
from .typed import segments

EPISODE_CALLS = 40  # tool calls after an error within which its fix must be confirmed

_TOOL_MECHANICS = re.compile(  # Claude Code's own tool errors: how the agent used a tool, not project knowledge
    r"exceeds maximum allowed tokens|String to replace not found|File has not been read yet|File does not exist"
    r"|File has been modified since read|EISDIR|Found \d+ matches of the string|has not been read|No such tool"
    r"|InputValidationError|Sibling tool call errored|The user doesn't want to proceed|was rejected"
    r"|Request interrupted|Permission to use|requires approval|is not allowed|Claude requested permissions"
    r"|has no upstream branch|nothing to commit",  # routine git states whose remedy the message itself names
    re.IGNORECASE,
)
_USER_PROBLEM = re.compile(
    r"\b(?:error|exception|traceback|fails|failing|failed|broken|crash(?:es|ed|ing)?|doesn't work|does not work"
    r"|not working|won't (?:start|build|compile|run)|doesn't (?:start|build|compile|run))\b"
)
_USER_CONFIRMS = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|yep|great|nice|cool|perfect|awesome|excellent|brilliant|thanks|thank you)\b[\s,!.]*)*"
    r"(?:(?:that|it|this) (?:worked|works|fixed it|did it|did the trick)|works (?:now|great|perfectly)|fixed\b"
    r"|it's fixed|all good|(?:perfect|great|thanks|thank you)[\s,!.]*$)"
)
_NOT_CONFIRMED = re.compile(r"\b(?:but|still|not|doesn't|didn't|isn't|no longer|again|except|however)\b|\?")
_NARRATION = re.compile(
    r"^(?:now |first,? |ok,? |good[.!]? )?(?:let me|let's|i'll|i will|i am going to|i'm going to)\s+"
    r"(?:\w+ )?(?:check|look|read|search|find|see|verify|run|try|fetch|explore|examine|inspect|understand|wait"
    r"|investigate)"
)
_EXPLANATION = re.compile(
    r"\b(?:the (?:real |root )?(?:issue|problem|error|cause|fix|bug|solution) (?:is|was)|(?:is|was|were) caused by"
    r"|because\b|the reason|needs? to be|has to be|must be|should be|instead\b|doesn't exist|does not exist|don't exist"
    r"|\bneed(?:s|ed)? (?:the |a |an )?`?[\w./:-]+`? (?:dependency|package|config\w*|setting|flag|option|module"
    r"|plugin)\b|\b(?:tests?|it|this|they|that) needs?\b"
    r"|isn't|wasn't|aren't|can't|cannot|expects?\b|requires?\b|is missing|was missing|are missing|fixed by|turns out"
    r"|the way to|the correct (?:way|format|api|syntax)|not (?:wrapped|a map|a struct|supported|available|tracked)"
    r"|gitignored|force-added|relative\b|returns?\b|resolves? to\b)"
)
_SUCCESS_WORDS = re.compile(
    r"\b(?:all (?:\d+ )?(?:\w+ )?(?:tests|checks) pass|tests? pass(?:es|ed)?|now passes|now works|works now|it works"
    r"|(?:build|compile|compilation|command|push|commit) succeed(?:s|ed)|succeeds\b|succeeded\b|compiles cleanly"
    r"|all green|no (?:more )?(?:errors|failures)|is now fixed|now fixed|is resolved)"
)
_FAILED_OUTPUT = re.compile(  # "0 failures", "no errors" are successes
    r"(?<!\b0 )(?<!\bno )\b(?:error|errors|failed|failure|failures|fatal|traceback|exception|not found|cannot"
    r"|could not)\b",
    re.I,
)
_NOISE_LINE = re.compile(r"^(?:exit code \d+|error:?|\[stderr\]|…|\W*)$", re.IGNORECASE)
_ERROR_LINE = re.compile(
    r"error|fatal|failed|failure|exception|not found|cannot|can't|could not|unable|denied|undefined|invalid|refused"
    r"|no such|missing|unknown|conflict|timed? ?out|ignored",
    re.IGNORECASE,
)
_BANNER = re.compile(r"^[=_\-*#~]{3,}.*[=_\-*#~]{3,}$|^[=_\-*#~]{5,}$")  # "===== ERRORS ====="
_ERROR_PASTES = ("trace", "output", "log", "shell")  # pasted kinds that can show an error (typed.segments)
_RAISED = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b:")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+([\w.-]+)")
_NUMBER = re.compile(r"\b\d[\d_.:]*\b")
_EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
_REMEDY = re.compile(r"\b(?:run|use|try|add) .{1,60}? to fix\b|\bdid you mean\b", re.IGNORECASE)
_ASSERTION = re.compile(r"\bassert(?:ion)?\b|AssertionError", re.IGNORECASE)
_GENERIC = frozenset(  # words of error messages that say nothing about which error it is
    ["error", "errors", "failed", "failure", "found", "could", "cannot", "unable", "exit", "code", "line", "file",
     "files", "command", "expected", "invalid", "missing", "unknown", "denied", "fatal", "exception", "with", "this",
     "that", "from", "have", "does", "were", "there", "your", "when", "test", "tests", "value", "type", "none"]
)  # fmt: skip
_TEST_FILE = re.compile(r"(?:^|[/\\])(?:tests?|spec|__tests__)[/\\]|(?:^|[/\\_.-])(?:test|spec)[_.][\w.]+$|_test\.\w+$")
_WRAPPERS = re.compile(
    r"^(?:(?:cd\s+\S+|source\s+\S+|\.\s+\S+|export\s+\S+|set\s+-\w+)\s*(?:&&|;)\s*)+"
    r"|^(?:sudo|timeout\s+\d+\w?|env|time|nice|uv run|poetry run|npx|bunx|python3? -m)\s+"
    r"|^(?:\w+=\S*\s+)+"
)
_READ_ONLY = re.compile(  # commands that only look: running one differently is exploring, not fixing
    r"^(?:ls|dir|cat|head|tail|less|grep|rg|find|fd|which|where|echo|pwd|wc|stat|file|tree|type|env|printenv|ps|id"
    r"|whoami|uname|df|du|get-\S+|test-\S+|select-\S+|measure-\S+|format-\S+"
    r"|git (?:status|log|show|diff|ls-files|rev-parse|blame)"
    r"|git (?:remote|branch|stash list|config --get)(?:\s+-\w+)*\s*$"
    r"|\S+ --version|\S+ --help)\b"
)
_SUBCOMMAND_PROGRAMS = frozenset(
    ["git", "npm", "pnpm", "yarn", "bun", "uv", "pip", "pip3", "poetry", "cargo", "go", "mix", "dotnet", "docker",
     "kubectl", "make", "gh", "brew", "apt", "apt-get", "dnf", "sc_auth", "security", "systemctl", "launchctl", "juju",
     "snap", "bd"]
)  # fmt: skip


def _error_line(text: str) -> str:
    """The most telling line of an error output, without exit codes, banners, decorations or long paths.

    A raised exception ("ModuleNotFoundError: …") is preferred to the first line that merely says "error".
    """
    lines = [ln.strip() for ln in prose(text.replace("\\n", "\n")).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not _NOISE_LINE.match(ln) and not _BANNER.match(ln)]
    if not useful:
        return ""
    at = next((i for i, ln in enumerate(useful) if _RAISED.search(ln)), None)
    if at is None:
        at = next((i for i, ln in enumerate(useful) if _ERROR_LINE.search(ln)), 0)
    best = useful[at]
    if best.endswith(":") and at + 1 < len(useful):  # "Pre-commit validation failed:" says little alone
        best = f"{best} {useful[at + 1]}"
    best = re.sub(r"^E\s+", "", best)  # pytest's "E   " margin
    best = re.sub(r"^[^\w\"'`(\[]+", "", best)  # "✘ [ERROR] …" → "[ERROR] …" → below
    best = re.sub(r"^\[?(?:error|fatal|err)\]?:?\s*", "", best, flags=re.IGNORECASE)
    best = re.sub(r"^\*\*\s*", "", best)
    return clip(best, 200)


def _error_signature(line: str) -> str:
    """The error without the parts that change between runs (paths, numbers), for a stable key.

    Secrets go first: cutting paths could break a credential (a connection string) past the scanner.
    """
    return _NUMBER.sub(" ", _PATH.sub(r"\1", without_secrets(line)))


def _fix_key(problem: str) -> str:
    """A fix's key: its error signature, numbers dropped (line numbers, ports, counts change between runs)."""
    return make_key("fix", _error_signature(problem), numbers=False)


def command_of(call: str | None) -> str:
    """The program and subcommand a tool call ran ("git add", "mix test", "pytest"); the tool name otherwise."""
    if not call:
        return ""
    name, _, rest = call.partition(": ")
    if name != "Bash":
        return name.split(" ", 1)[0]
    rest = re.sub(r"^powershell(?:\.exe)?\s+(?:-\w+\s+)*\"?", "", rest.strip())
    rest = re.sub(r"^cd\s+'[^']*'\s*;\s*", "", rest)
    for _ in range(3):
        rest = _WRAPPERS.sub("", rest).strip()
    words = [w for w in re.split(r"\s+", rest) if w and not w.startswith("-")]
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1].rsplit("\\", 1)[-1].lower()
    program = re.sub(r"\.exe$", "", program)
    if program in _SUBCOMMAND_PROGRAMS and len(words) > 1 and re.fullmatch(r"[\w.:-]+", words[1]):
        return f"{program} {words[1].lower()}"
    return program


def _changes(turn: Turn, failing: str) -> bool:
    """Whether a tool call changes something: an edit, or another command that does more than look."""
    call = turn.tool or turn.text
    name = call.split(":", 1)[0].split(" ", 1)[0]
    if name in _EDIT_TOOLS:
        return True
    if name != "Bash":
        return False
    command = command_of(call)
    if command == failing:
        return False  # the same command again is the check, not the change (see _rerun_differs)
    return bool(command) and not _READ_ONLY.match(_unwrapped(call))


def _unwrapped(call: str | None) -> str:
    """A Bash call's command line without `cd …&&`, env assignments, sudo and the like, lower case."""
    rest = (call or "").partition(": ")[2].strip().lower()
    for _ in range(3):
        rest = _WRAPPERS.sub("", rest).strip()
    return rest


def _explanation(turn: Turn) -> list[str]:
    """The sentences of an assistant turn that say why something failed or what the fix is."""
    picked = []
    for s in sentences(turn.text):
        low = s.lower()
        if len(s) <= 400 and not _NARRATION.match(low) and not low.endswith(":") and _EXPLANATION.search(low):
            picked.append(s)
    return picked[:3]


def _explained(episode: _Episode) -> bool:
    """The episode says why: the error names its own remedy, or the agent explains it in words of the error.

    A problem the user reported ("it crashed") may share no word with the explanation; any explanation counts.
    """
    if not episode.said:
        return False
    if not episode.command or episode.said[0][0] is episode.start:
        return True
    problem = episode.problem.lower()
    named = {w for w in re.findall(r"[a-z][a-z0-9_]{3,}", problem) if w not in _GENERIC}
    named |= {w.strip(".") for w in re.findall(r"[\w-]+(?:[./][\w-]+)+", problem)}  # js/app.js, relation.app
    said = " ".join(s for _, ss in episode.said for s in ss).lower()
    return any(w in said for w in named)


def _test_adjusted(episode: _Episode) -> bool:
    """A failing assertion made to pass by editing only tests: the test changed, nothing was fixed."""
    edited = [(t.tool or "").split(" ", 1)[-1] for t in episode.changes if (t.tool or "").startswith(_EDIT_TOOLS)]
    return bool(_ASSERTION.search(episode.problem)) and bool(edited) and all(_TEST_FILE.search(p) for p in edited)


@dataclass
class _Episode:
    """An error being worked on: the changes made and what was said since, until it is confirmed fixed."""

    start: Turn
    problem: str
    command: str  # "" for a problem the user reported
    failing_call: str
    changes: list[Turn] = field(default_factory=list)
    said: list[tuple[Turn, list[str]]] = field(default_factory=list)
    calls: int = 0
    key: str = ""  # the fix key of its error (computed once: it runs the secret scanner)
    probe: str = ""  # its error as found again in a later output


def fixes(turns: Sequence[Turn]) -> list[Candidate]:
    """Error → change → confirmation episodes of the main conversation (and of each subagent file's own)."""
    out: list[Candidate] = []
    keys: set[str] = set()
    open_: list[_Episode] = []

    def confirm(episode: _Episode, by: Turn, outcome: str, confidence: str) -> None:
        key = episode.key
        if key not in keys and _explained(episode) and not _test_adjusted(episode):
            keys.add(key)
            out.append(_fix(episode, by, outcome, confidence, key))

    for turn in turns:
        if turn.role == "summary":
            open_ = []
            continue
        if turn.role == "tool_error":
            started = _start(turn)
            same = [e for e in open_ if started and e.key == started.key]
            for e in same:  # the same error again: what was changed so far did not fix it
                e.changes, e.calls = [], 0
            command = command_of(turn.tool)
            for e in open_:  # the same command now fails otherwise: the change got past this error
                if e not in same and e.command and e.command == command and e.changes and _problem_gone(e, turn.text):
                    confirm(e, turn, f"`{clip(_shown(turn.tool or ''), 120)}` then got past this error", "low")
                    e.calls = EPISODE_CALLS + 1
            open_ = [e for e in open_ if e.calls <= EPISODE_CALLS]
            if started and not same and started.key not in keys:
                open_.append(started)
            continue
        if turn.role == "user":
            confirmed = _user_confirms(turn)
            for e in open_:
                if confirmed and e.changes:
                    confirm(e, turn, clip(turn.text, 200), "medium")
            open_ = []
            problem = _reported(turn)
            if problem is not None:
                open_.append(problem)
            continue
        for e in open_:
            if e.start.sidechain != turn.sidechain:
                continue
            if turn.role == "assistant":
                picked = _explanation(turn)
                if picked:
                    e.said.append((turn, picked))
            elif turn.role == "tool_call":
                e.calls += 1
                if _changes(turn, e.command) or (e.command and _rerun_differs(turn, e)):
                    e.changes.append(turn)
            elif turn.role == "tool_ok" and e.command and command_of(turn.tool) == e.command:
                if e.changes and _FAILED_OUTPUT.search(turn.text) is None and _problem_gone(e, turn.text):
                    confirm(e, turn, f"`{clip(_shown(turn.tool or ''), 120)}` then succeeded", "medium")
                e.calls = EPISODE_CALLS + 1  # it worked: fixed, or without a change (transient); either way done
        open_ = [e for e in open_ if e.calls <= EPISODE_CALLS]
    return out


def _rerun_differs(turn: Turn, episode: _Episode) -> bool:
    """The failing command run again in a corrected form (other flags, another folder): itself a change."""
    if command_of(turn.tool) != episode.command or _READ_ONLY.match(_unwrapped(episode.failing_call)):
        return False
    before, after = _tokens(episode.failing_call), _tokens(turn.tool)
    return before != after and len(before & after) >= 0.5 * len(before | after)


def _tokens(call: str | None) -> frozenset[str]:
    """A command's words with paths cut to their last part: `node assets/build.js` ~ `cd assets && node build.js`."""
    rest = (call or "").partition(": ")[2]
    return frozenset(re.split(r"[/\\]", w)[-1] for w in rest.split() if w not in ("&&", ";", "|") and w != "cd")


def _problem_gone(episode: _Episode, output: str) -> bool:
    """The confirming output does not show the episode's error again."""
    return not episode.probe or episode.probe not in _NUMBER.sub(" ", _PATH.sub(r"\1", output)).lower()


def _start(turn: Turn) -> _Episode | None:
    """The episode a failed tool call starts, or None for tool mechanics and errors with nothing to name."""
    if _TOOL_MECHANICS.search(turn.text):
        return None
    problem = _error_line(turn.text)
    if len(re.findall(r"[A-Za-z]{3,}", problem)) < 2:
        return None
    episode = _Episode(turn, problem, command_of(turn.tool), turn.tool or "")
    episode.key, episode.probe = _fix_key(problem), _error_signature(problem).strip().lower()[:60]
    remedy = [m.group(0).strip() for m in _REMEDY.finditer(turn.text.replace("\\n", "\n"))][:1]
    if remedy:  # "Run 'mix format' to fix": the error names its own remedy
        episode.said.append((turn, remedy))
    return episode


def _reported(turn: Turn) -> _Episode | None:
    """A problem the user reports in a short statement (not a question), or an error they pasted.

    What the user pasted is evidence of the problem (its most telling error line), never their words.
    """
    if turn.sidechain:
        return None
    text = " ".join(sentences(turn.text))
    if len(text) <= 600 and _USER_PROBLEM.search(text.lower()) and not text.rstrip().endswith("?"):
        problem = clip(text, 200)
        return _Episode(turn, problem, "", "", key=_fix_key(problem))
    paste = "\n".join(s.text for s in segments(turn.text) if s.kind in _ERROR_PASTES)
    if len(text) <= 600 and not text.rstrip().endswith("?") and (_RAISED.search(paste) or _ERROR_LINE.search(paste)):
        problem = _error_line(paste)
        if problem:
            return _Episode(turn, problem, "", "", key=_fix_key(problem))
    return None


def _user_confirms(turn: Turn) -> bool:
    first = next(iter(sentences(turn.text)), "").lower()
    return bool(_USER_CONFIRMS.match(first)) and not _NOT_CONFIRMED.search(first) and len(turn.text) <= 300


def _fix(episode: _Episode, by: Turn, outcome: str, confidence: str, key: str) -> Candidate:
    said = [s for _, ss in episode.said[-3:] for s in ss if s not in episode.problem]
    changed = list(dict.fromkeys(clip(_shown(t.tool or t.text), 160) for t in episode.changes[-3:]))
    lines = [f"**Error:** {episode.problem}"]
    if episode.failing_call:
        lines += ["", f"**While running:** `{clip(_shown(episode.failing_call), 160)}`"]
    if said:
        lines += ["", f"**Why, and what fixed it:** {clip(' '.join(dict.fromkeys(said)), 700)}"]
    lines += ["", "**The change:** " + "; ".join(f"`{c}`" for c in changed), "", f"**Confirmed:** {outcome}"]
    refs = [episode.start, *[t for t, _ in episode.said[-3:]], *episode.changes[-3:], by]
    evidence = tuple(dict.fromkeys(turn_ref(t) for t in sorted(refs, key=lambda t: t.line)))
    return Candidate(
        "fix",
        make_title(episode.problem, "Fix: "),
        "\n".join(lines),
        evidence,
        confidence,
        "error-change-confirmed" if episode.command else "reported-change-confirmed",
        key,
    )


def _shown(call: str) -> str:
    """A call as a person reads it: the command itself for Bash, else "Edit path"."""
    return call.removeprefix("Bash: ")
