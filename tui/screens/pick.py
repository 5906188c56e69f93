"""Pick a memory by searching for it (the merge target)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from engram.tui.keymap import CANCEL, bindings
from engram.tui.widgets.safe import plain

if TYPE_CHECKING:  # numpy and rapidfuzz load with the search index's worker, not with the console
    from engram.store.search.index import SearchIndex


class MemoryPicker(ModalScreen[str | None]):
    """Type to search; Enter on a result picks it; Escape cancels."""

    BINDINGS = bindings((CANCEL,))

    def __init__(self, question: str, index: SearchIndex, query: str = "") -> None:
        super().__init__()
        self.question, self.index, self.initial = question, index, query

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self.question, classes="dialog-title", markup=False)
            yield Input(self.initial, id="query", placeholder="search: words, type:, scope: …")
            yield OptionList(id="results")
            yield Label("type to search · ↓ to the list · enter pick · esc cancel", classes="hint")

    def on_mount(self) -> None:
        self.refresh_results(self.initial)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.refresh_results(event.value)

    def on_input_submitted(self) -> None:
        results = self.query_one("#results", OptionList)
        if results.option_count:
            results.focus()
            results.highlighted = 0

    def refresh_results(self, text: str) -> None:
        results = self.query_one("#results", OptionList)
        results.clear_options()
        found = self.index.search(text, limit=50)
        results.add_options(Option(plain(f"{h.type:<10} {h.title}"), id=h.slug) for h in found.hits)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
