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


def side_by_side(
    older: str, newer: str, paint: Paint, names: tuple[str, str] = ("older", "newer"), context: int | None = None
) -> Table:
    """A two-column table, older on the left (removed lines in the theme's "bad" colour), newer on the right
    (added lines in its "good" one). With ``context``, a run of equal lines longer than that before and after a
    change is cut to a line saying how many were left out: two versions of a memory differ in a line or two
    of its frontmatter and body, and a narrow terminal must show those, not the lines they share."""
    table = Table(expand=True, box=None, padding=(0, 1), show_edge=False)
    table.add_column(names[0], ratio=1, overflow="fold")
    table.add_column(names[1], ratio=1, overflow="fold")
    rows = aligned(older.splitlines(), newer.splitlines())
    for left, right, tag in rows if context is None else shortened(rows, context):
        if tag == "skip":
            table.add_row(Text(left or "", style="dim italic"), Text(""))
            continue
        same = tag == "equal"
        table.add_row(
            Text(left or "", style="" if same else paint("bad")), Text(right or "", style="" if same else paint("good"))
        )
    return table


def shortened(rows: list[Row], context: int) -> list[Row]:
    """``rows`` with each run of equal rows farther than ``context`` from a change replaced by one ``skip`` row."""
    changed = [i for i, (_, _, tag) in enumerate(rows) if tag != "equal"]
    near = {j for i in changed for j in range(i - context, i + context + 1)}
    out: list[Row] = []
    left_out = 0
    for i, row in enumerate(rows):
        if i in near or row[2] != "equal":
            if left_out:
                out.append((f"… {left_out} same line{'s' if left_out != 1 else ''}", None, "skip"))
                left_out = 0
            out.append(row)
        else:
            left_out += 1
    if left_out:
        out.append((f"… {left_out} same line{'s' if left_out != 1 else ''}", None, "skip"))
    return out
