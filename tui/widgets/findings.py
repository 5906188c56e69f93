"""The poisoning screen's findings as the console lists them, under a promotion or a stored memory."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.style import Style
from rich.table import Table
from rich.text import Text

from engram.tui.widgets.safe import plain

if TYPE_CHECKING:
    from engram.store.screen import Finding


def findings_grid(findings: Iterable[Finding], style: str | Style = "", notes: Iterable[str] = ()) -> Table:
    """A finding a row, indented, then ``notes`` (dim): a grid, not lines of text, so a finding that wraps (most
    do in a half-width detail at 80 columns) goes on under its own text instead of at the margin."""
    grid = Table.grid()
    grid.add_column(width=2)
    grid.add_column(ratio=1)
    for f in findings:
        how = f", {f.revealed}" if f.revealed else ""
        grid.add_row("", Text.assemble((f"{f.rule} ({f.field}{how}): ", style), plain(f.excerpt, "dim")))
    for note in notes:
        grid.add_row("", plain(note, "dim"))
    return grid
