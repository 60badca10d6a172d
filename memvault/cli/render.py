"""Tables that fit the terminal: a table when every cell fits unbroken, else one block per row."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .group import out

PROSE_MIN = 20  # the narrowest a wrapping column (a title, a snippet) may get; narrower, rows become blocks
INDENT = "  "  # a block's fields, under its key
_WORD = re.compile(r"\S+")


def print_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    key: int = 0,
    wrap: Collection[int] = (),
    narrow: Collection[int] = (),
    console: Console | None = None,
) -> None:
    """Rows of rich-markup cells as a table when it fits the console, else as one block per row.

    A column not in `wrap` holds paths, names, numbers or statuses: it is as wide as its widest cell and
    is never broken. A `wrap` column (titles, snippets, reasons) wraps between words, never inside one:
    it is at least as wide as its longest word and PROSE_MIN (a `narrow` one, a list of names such as
    tags, only as wide as its longest word). When the table is wider than the console,
    each row prints its `key` cell alone on a line (a path copies whole), then its other cells as
    `header: value` lines indented under it: the unbroken ones side by side as they fit, each wrapping
    one on lines of its own, wrapped between words.
    """
    console = console or out
    if not rows:
        return
    cells = [[Text.from_markup(cell, emoji=False) for cell in row] for row in rows]
    wrap = {*wrap, *narrow}
    if fits(headers, cells, wrap=wrap, narrow=narrow, width=console.width):
        table = Table(box=None)
        for i, header in enumerate(headers):
            width = _min_width(header, [row[i] for row in cells], i in wrap, i in narrow)
            if i in wrap:
                table.add_column(header, min_width=width, overflow="fold")
            else:
                table.add_column(header, min_width=width, no_wrap=True)
        for row in cells:
            table.add_row(*row)
        console.print(table)
        return
    for row in cells:
        if row[key].plain.strip():
            console.print(row[key], soft_wrap=True)  # never broken by us: a path longer than the terminal copies whole
        _print_fields(console, headers, row, key=key, wrap=wrap)


def fits(
    headers: Sequence[str],
    rows: Sequence[Sequence[Text | str]],
    *,
    wrap: Collection[int],
    narrow: Collection[int] = (),
    width: int,
) -> bool:
    """Whether the table fits `width` columns with every cell unbroken (one space of padding each side)."""
    cells = [[Text.from_markup(c, emoji=False) if isinstance(c, str) else c for c in row] for row in rows]
    columns = enumerate(headers)
    need = sum(_min_width(h, [row[i] for row in cells], i in wrap or i in narrow, i in narrow) + 2 for i, h in columns)
    return need <= width


def _min_width(header: str, column: Sequence[Text], wraps: bool, narrow: bool = False) -> int:
    """The narrowest a column may be: its widest line; for a wrapping column, its longest word (PROSE_MIN at least)."""
    lines = [line for cell in (Text(header), *column) for line in cell.plain.splitlines()]
    widest = max((cell_len(line) for line in lines), default=0)
    if not wraps:
        return widest
    longest = max((cell_len(w) for line in lines for w in line.split()), default=0)
    return longest if narrow else max(longest, min(widest, PROSE_MIN))


def _print_fields(
    console: Console, headers: Sequence[str], row: Sequence[Text], *, key: int, wrap: Collection[int]
) -> None:
    """A block's other cells: unbroken ones packed side by side, wrapping ones each word-wrapped under the key."""
    width = max(console.width - len(INDENT), PROSE_MIN)
    line = Text()
    for i, cell in enumerate(row):
        if i == key or i in wrap or not cell.plain.strip():
            continue
        value = Text(" ").join(cell.split("\n"))
        field = _labelled(headers[i], value)
        if line.cell_len and line.cell_len + 2 + field.cell_len > width:
            console.print(Text(INDENT) + line, soft_wrap=True)
            line = Text()
        if field.cell_len > width:  # a long path: its label, then the path alone on a line
            console.print(Text(INDENT) + Text(f"{headers[i]}:", "dim"), soft_wrap=True)
            console.print(Text(INDENT) + value, soft_wrap=True)
            continue
        line = line + Text("  ") + field if line.cell_len else field
    if line.cell_len:
        console.print(Text(INDENT) + line, soft_wrap=True)
    for i in sorted(wrap):
        if i != key and row[i].plain.strip():
            for part in wrapped(_labelled(headers[i], row[i]), width):
                console.print(Text(INDENT) + part, soft_wrap=True)


def _labelled(header: str, value: Text) -> Text:
    return Text.assemble((f"{header}: ", "dim"), value) if header else value


def wrapped(text: Text, width: int) -> list[Text]:
    """`text` broken into lines of at most `width` cells between words; a longer word keeps a line of its own."""
    lines: list[Text] = []
    for paragraph in text.split("\n", allow_blank=True):
        plain = paragraph.plain
        start, end = 0, 0  # the line being filled: plain[start:end]
        for word in _WORD.finditer(plain):
            if end > start and cell_len(plain[start : word.end()]) > width:
                lines.append(paragraph[start:end])
                start = word.start()
            end = word.end()
        lines.append(paragraph[start:end])
    return lines
