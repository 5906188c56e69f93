"""The help overlay: every action with its current keys, filterable by typing."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label

from engram.tui.keymap import HELP_ACTIONS, bindings
from engram.tui.panes.table import ALL_ACTIONS
from engram.tui.tables import PlainTable


class HelpScreen(ModalScreen[None]):
    BINDINGS = bindings(HELP_ACTIONS)

    def __init__(self, keymap: dict[str, str]) -> None:
        super().__init__()
        self.keymap = keymap

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(
                Text("Keys (remap them in ~/.config/engram/config.toml, section [keys])"), classes="dialog-title"
            )
            yield Input(placeholder="type to filter", id="filter", compact=True)  # rows are for keys at 80x24
            yield PlainTable(id="keys", cursor_type="row", zebra_stripes=True)
            yield Label("esc close", classes="hint")

    def on_mount(self) -> None:
        table = self.query_one("#keys", DataTable)
        table.add_columns("keys", "action", "id")
        self.fill("")

    def on_input_changed(self, event: Input.Changed) -> None:
        self.fill(event.value)

    def fill(self, text: str) -> None:
        table = self.query_one("#keys", DataTable)
        table.clear()
        needle = text.lower()
        for action in ALL_ACTIONS:
            keys = self.keymap.get(action.id, action.keys)
            shown = " ".join(self.app.get_key_display(Binding(key.strip(), "")) for key in keys.split(","))
            row = (shown, action.description, action.id)
            if needle in " ".join(row).lower():
                table.add_row(*row)

    def action_close(self) -> None:
        self.dismiss(None)
