"""A list beside a comparison of its highlighted item (below it, in a narrow terminal): what a memory's history
and the sync-conflict inbox share."""

from __future__ import annotations

from typing import Generic, TypeVar

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static

T = TypeVar("T")


class SplitScreen(ModalScreen[None], Generic[T]):
    """Subclasses name their ids' prefix (``NAME``), title, first status and hint; they fill the list with
    ``items`` (a line each) and say what the highlighted one is against."""

    NAME = "split"

    def __init__(self, title: str, status: str, hint: str) -> None:
        super().__init__()
        self.title_text, self.first_status, self.hint = title, status, hint
        self.items: list[T] = []

    def compose(self) -> ComposeResult:
        name = self.NAME
        with Vertical(classes="dialog wide split", id=name):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield Static(self.first_status, id=f"{name}-status", classes="split-status")
            with Horizontal(id=f"{name}-body", classes="split-body"):
                yield OptionList(id=f"{name}-list", classes="split-list")
                with VerticalScroll(id=f"{name}-diff", classes="split-diff"):
                    yield Static(id=f"{name}-diff-text")
            yield Label(self.hint, classes="hint split-hint")

    @property
    def listing(self) -> OptionList:
        return self.query_one(f"#{self.NAME}-list", OptionList)

    @property
    def at(self) -> int | None:
        """The highlighted line's index."""
        return self.listing.highlighted

    @property
    def current(self) -> T | None:
        """The highlighted item."""
        at = self.at
        return self.items[at] if at is not None and at < len(self.items) else None

    def say(self, status: RenderableType) -> None:
        self.query_one(f"#{self.NAME}-status", Static).update(status)

    def show(self, what: RenderableType) -> None:
        self.query_one(f"#{self.NAME}-diff-text", Static).update(what)

    def action_move(self, step: int) -> None:
        self.listing.action_cursor_down() if step > 0 else self.listing.action_cursor_up()

    def action_close(self) -> None:
        self.dismiss(None)
