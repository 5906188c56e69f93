"""DataTable columns that fit the terminal: fixed widths, and one column (the title) taking the rest."""

from __future__ import annotations

from textual.widgets import DataTable


def fit_columns(table: DataTable, fixed: list[tuple[str, str, int]], flex: tuple[str, str]) -> None:
    """Replace ``table``'s columns: ``fixed`` is (key, label, width) each; ``flex`` = (key, label) gets what is
    left. Auto widths would follow the longest cell, which pushes a horizontal scrollbar onto small terminals."""
    table.clear(columns=True)
    for key, label, width in fixed:
        table.add_column(label, key=key, width=width)
    used = sum(width for _, _, width in fixed) + 2 * table.cell_padding * (len(fixed) + 1)
    table.add_column(flex[1], key=flex[0], width=max(12, table.size.width - table.scrollbar_size_vertical - used))
