"""Pick a memory by searching for it: the target of a merge, or of a supersedes link."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from engram.store.secrets import masked
from engram.tui.keymap import CANCEL, bindings
from engram.tui.widgets.safe import plain

if TYPE_CHECKING:  # numpy and rapidfuzz load with the search index's worker, not with the console
    from engram.store.search.index import SearchIndex


class Candidate(NamedTuple):
    """A memory offered before anything is typed (the ones the queue's detail found most similar)."""

    slug: str
    type: str
    title: str


class MemoryPicker(ModalScreen[str | None]):
    """Type to search; ``down`` or ``enter`` reaches the list; ``enter`` on a line picks it; ``esc`` cancels.

    ``scope``: only memories of that scope are offered (a merge stays within its scope), said above the query
    and never part of its text, so typing cannot widen it. ``first``: what to offer before anything is typed
    (the similar memories the queue's detail ranked); without it, the best matches of an empty query."""

    # ``down`` and ``enter`` are the screen's, ahead of the focused widget's: a key pressed before a change of
    # focus has taken effect (typed fast, or pasted) goes where the one before it said, not to the query
    BINDINGS = [
        *bindings((CANCEL,)),
        Binding("down", "down", "To the list", show=False, priority=True),
        Binding("enter", "enter", "Pick", show=False, priority=True),
    ]

    def __init__(
        self,
        question: str,
        index: SearchIndex,
        query: str = "",
        *,
        scope: str | None = None,
        first: Sequence[Candidate] = (),
    ) -> None:
        super().__init__()
        self.question, self.index, self.initial = question, index, query
        self.scope, self.first = scope, list(first)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self.question, classes="dialog-title", markup=False)
            if self.scope:
                yield Label(f"in scope {self.scope} (a merge stays within its scope)", classes="hint")
            yield Input(self.initial, id="query", placeholder="search: words, type: …")
            yield OptionList(id="results")
            yield Label("type to search · ↓ to the list · enter pick · esc cancel", classes="hint")

    def on_mount(self) -> None:
        self.refresh_results(self.initial)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.refresh_results(event.value)

    def action_down(self) -> None:
        """From the query, into the list (its first line stays highlighted); in the list, one line down."""
        results = self.query_one("#results", OptionList)
        if self.focused is results:
            results.action_cursor_down()
        else:
            self.set_focus(results)  # at once: the next key is read with the list focused

    def action_enter(self) -> None:
        """From the query, into the list; in the list, pick the highlighted line."""
        results = self.query_one("#results", OptionList)
        if self.focused is not results:
            self.set_focus(results)
        elif (at := results.highlighted) is not None:
            option = results.get_option_at_index(at)
            self.dismiss(option.id)

    @on(OptionList.OptionSelected, "#results")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def refresh_results(self, text: str) -> None:
        results = self.query_one("#results", OptionList)
        results.clear_options()
        if not text.strip() and self.first:
            lines = [(c.slug, c.type, c.title) for c in self.first]
        else:
            query = f"{text} scope:{self.scope}" if self.scope else text
            lines = [(h.slug, h.type, h.title) for h in self.index.search(query, limit=50).hits]
        results.add_options(Option(plain(f"{kind:<10} {masked(title)}"), id=slug) for slug, kind, title in lines)
        if results.option_count:
            results.highlighted = 0

    def action_cancel(self) -> None:
        self.dismiss(None)
