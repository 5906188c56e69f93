"""Two texts side by side, line against line, with what changed coloured: how a person compares an older
memory with the one that supersedes it (a unified diff makes them read both in one column)."""

from __future__ import annotations

import difflib

from rich.table import Table
from rich.text import Text

from engram.tui.colours import Paint

Row = tuple[str | None, str | None, str]  # (older line, newer line, difflib tag); None where a side has none


def aligned(older: list[str], newer: list[str]) -> list[Row]:
    """The lines of both texts paired up: equal lines side by side, replaced blocks row by row, and deleted or
    inserted lines against an empty cell."""
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, older, newer, autojunk=False).get_opcodes():
        left, right = older[i1:i2], newer[j1:j2]
        for k in range(max(len(left), len(right))):
            rows.append((left[k] if k < len(left) else None, right[k] if k < len(right) else None, tag))
    return rows


def side_by_side(older: str, newer: str, paint: Paint) -> Table:
    """A two-column table, older on the left (removed lines in the theme's "bad" colour), newer on the right
    (added lines in its "good" one)."""
    table = Table(expand=True, box=None, padding=(0, 1), show_edge=False)
    table.add_column("older", ratio=1, overflow="fold")
    table.add_column("newer", ratio=1, overflow="fold")
    for left, right, tag in aligned(older.splitlines(), newer.splitlines()):
        same = tag == "equal"
        table.add_row(
            Text(left or "", style="" if same else paint("bad")), Text(right or "", style="" if same else paint("good"))
        )
    return table
