"""Result tables that never cut a header or a name, at any width, on a terminal or in a file.

A table is drawn when its columns fit side by side, each at least as wide as its longest word
(headers and prose cells wrap at spaces, names never); otherwise each row becomes a block of its
own: its key cells on one line, then every other column as ``header value``, wrapped at the
width. Rich alone would shrink the columns until their headers read ``rede…``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

Justify = Literal["left", "right", "center"]


@dataclass(frozen=True)
class Column:
    """A column: its header, how its cells align, and whether they are prose that may wrap
    (a name or a number never does)."""

    header: str
    justify: Justify = "left"
    wrap: bool = False


def _longest_word(text: Text) -> int:
    return max((len(word) for word in text.plain.split()), default=0)


def _longest_line(text: Text) -> int:
    return max((len(line) for line in text.plain.splitlines()), default=0)


def _widths(columns: Sequence[Column], cells: list[list[Text]], room: int) -> list[int] | None:
    """Each column's width within ``room``, or None when even the narrowest do not fit."""
    natural, narrowest = [], []
    for index, column in enumerate(columns):
        header = Text(column.header)
        values = [row[index] for row in cells]
        natural.append(max([_longest_line(header), *map(_longest_line, values)]))
        fitted = _longest_word if column.wrap else _longest_line
        narrowest.append(max([_longest_word(header), *map(fitted, values)]))
    if sum(natural) <= room:
        return natural
    if sum(narrowest) > room:
        return None
    # The room left goes first to the columns that it makes whole, the nearest first, so a
    # label stays on one line while the prose beside it wraps.
    widths, spare = list(narrowest), room - sum(narrowest)
    for index in sorted(range(len(widths)), key=lambda i: natural[i] - narrowest[i]):
        given = min(spare, natural[index] - widths[index])
        widths[index] += given
        spare -= given
    return widths


def fitted(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    title: str | None = None,
    caption: str | None = None,
    keys: int = 1,
) -> RenderableType:
    """``rows`` (cells in rich markup) as a table at most ``width`` wide, or as blocks of
    ``header value`` lines under each row's first ``keys`` cells when no table fits."""
    cells = [[Text.from_markup(cell) for cell in row] for row in rows]
    # A box draws one rule before each column and one after the last, and pads each cell.
    widths = _widths(columns, cells, width - 3 * len(columns) - 1)
    if widths is None:
        return _blocks(columns, cells, title, caption, keys, width)
    table = Table(title=title, caption=caption, caption_justify="left")
    for column, column_width in zip(columns, widths, strict=True):
        table.add_column(column.header, justify=column.justify, width=column_width,
                         overflow="fold")
    for row in cells:
        table.add_row(*row)
    return table


def _blocks(
    columns: Sequence[Column], cells: list[list[Text]], title: str | None,
    caption: str | None, keys: int, width: int,
) -> RenderableType:
    parts: list[RenderableType] = [Text(title, style="italic")] if title else []
    # Wrapped here rather than by the console, which would pad each line to the width.
    wrapper = Console(width=width)
    for row in cells:
        heading = Text(" · ").join(row[:keys])
        heading.stylize("bold")
        pairs = [Text.assemble(f"{column.header} ", value)
                 for column, value in zip(columns[keys:], row[keys:], strict=True)
                 if value.plain]
        lines = Text(", ").join(pairs).wrap(wrapper, width - 2)
        for line in lines:
            line.rstrip()
        parts += [heading, *(Text.assemble("  ", line) for line in lines)]
    if caption:
        parts.append(Text(caption, style="dim"))
    return Group(*parts)
