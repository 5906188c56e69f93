"""DataTables that show data as it is (never as markup), and whose columns fit the terminal: fixed widths, and one
column (the title) taking the rest."""

from __future__ import annotations

from rich.text import TextType
from textual import events
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from engram.tui.keymap import TABLE_ACTIONS, bindings
from engram.tui.widgets.safe import plain


class PlainTable(DataTable[object], inherit_bindings=False):
    """A DataTable whose text cells are data, never markup: each str cell is shown as :func:`plain` text. Its
    keys are the registry's (tui.keymap.TABLE_ACTIONS), so they can be remapped like every other."""

    BINDINGS = bindings(TABLE_ACTIONS)

    def add_row(
        self, *cells: object, height: int | None = 1, key: str | None = None, label: TextType | None = None
    ) -> RowKey:
        return super().add_row(*(_plain(cell) for cell in cells), height=height, key=key, label=label)

    def action_move(self, step: int | str) -> None:
        """The cursor by ``step`` rows, a page (``page``/``-page``) or to an end (``all``/``-all``): the same
        steps as LineList, so j k g G mean the same in every list."""
        if not self.row_count:
            return
        page = max(1, self.size.height - 2)
        delta = {"page": page, "-page": -page, "all": self.row_count, "-all": -self.row_count}.get(str(step))
        target = self.cursor_row + (delta if delta is not None else int(step))
        self.move_cursor(row=max(0, min(self.row_count - 1, target)))

    def update_cell(
        self, row_key: RowKey | str, column_key: ColumnKey | str, value: object, *, update_width: bool = False
    ) -> None:
        super().update_cell(row_key, column_key, _plain(value), update_width=update_width)


def _plain(cell: object) -> object:
    return plain(cell) if isinstance(cell, str) else cell


class FitTable(PlainTable):
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
