"""Words and tables for what harvest prints and writes.

    plural(1, "kernel")                   -> "1 kernel"
    plural(3, "launch", "launches")       -> "3 launches"
    plain_table([["kernel", "MB"], ["g0/add_kernel", "4.2"]], right={1})    -> aligned text, two spaces apart
    print_table(console, title, headers, rows, right={"MB"})   # a rich table where it fits, else plain_table's text

A rich table is drawn only on a terminal wide enough to show every cell on one line. Piped, or in a narrower
terminal, rich would fold each cell into slivers or cut names short; there the same rows print as plain aligned
text instead: nothing folded and nothing cut, one line per row.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def clipped(text: str, width: int) -> str:
    """text cut to width characters, the last an ellipsis when something was cut."""
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def md_cell(text: object) -> str:
    """Text safe inside a markdown table cell: pipes escaped, newlines as <br>."""
    return str(text).replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def plural(count: int, word: str, many: str | None = None) -> str:
    """`count word` with the word in the plural unless count is 1: 1 kernel, 0 kernels, 2 launches."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def fits(console, renderable) -> bool:
    """Whether `renderable` shows unbroken on `console`: a terminal at least as wide as its natural width."""
    from rich.measure import Measurement

    if not console.is_terminal:
        return False
    unbounded = console.options.update_width(1 << 16)  # measured against the console's width, a table reports that width
    return Measurement.get(console, unbounded, renderable).maximum <= console.width


def plain_table(rows: Sequence[Sequence[str]], right: Collection[int] = ()) -> str:
    """Rows as aligned plain text: two spaces between columns, the columns in `right` right-aligned, no trailing
    spaces. Cells are never cut: a column is as wide as its widest cell."""
    widths = [max(len(cell) for cell in column) for column in zip(*rows)]
    lines = []
    for row in rows:
        cells = [cell.rjust(width) if index in right else cell.ljust(width) for index, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def print_table(console, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[str] = ()) -> None:
    """The rows as a rich table titled `title` when it fits `console` (see `fits`), else the title and plain_table."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for header in headers:
        table.add_column(header, justify="right" if header in right else "left")
    for row in rows:
        table.add_row(*row)
    if fits(console, table):
        console.print(table)
        return
    text = plain_table([list(headers), *[list(row) for row in rows]], {i for i, header in enumerate(headers) if header in right})
    console.print(f"{title}\n{text}", markup=False, highlight=False, soft_wrap=True)
