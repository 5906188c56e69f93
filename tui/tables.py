"""DataTables whose columns fit the terminal: fixed widths, and one column (the title) taking the rest."""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import DataTable


class FitTable(DataTable):
    """A DataTable that says when its own size changes, so its owner can fit the columns to the new width
    (auto widths would follow the longest cell and push a horizontal scrollbar onto small terminals)."""

    class Resized(Message):
        def __init__(self, table: FitTable) -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> FitTable:  # lets @on(FitTable.Resized, "#id") pick the table
            return self.table

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized(self))


def fit_columns(table: DataTable, fixed: list[tuple[str, str, int]], flex: tuple[str, str]) -> None:
    """Replace ``table``'s columns: ``fixed`` is (key, label, width) each; ``flex`` = (key, label) gets what is
    left of the table's current width."""
    table.clear(columns=True)
    for key, label, width in fixed:
        table.add_column(label, key=key, width=width)
    used = sum(width for _, _, width in fixed) + 2 * table.cell_padding * (len(fixed) + 1)
    table.add_column(flex[1], key=flex[0], width=max(12, table.size.width - table.scrollbar_size_vertical - used))
