"""What every pane is: a widget over the open store, made from the store alone, so the table of panes
(tui.panes.table) can build each one. It is a Textual Vertical; a pane that wants another layout says so in
engram.tcss (the graph and supersedes panes are side by side)."""

from __future__ import annotations

from textual.containers import Vertical

from engram.store.service import Store


class PaneBase(Vertical):
    LIST: str | None = None  # selector of the pane's main list, which j k g G move in

    def __init__(self, store: Store, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.store = store

    def action_move(self, step: int | str) -> None:
        """j k g G (keymap.list_moves): move in the pane's main list (a LineList or a PlainTable, which take the
        same steps)."""
        move = getattr(self.query_one(self.LIST), "action_move", None) if self.LIST is not None else None
        if move is not None:
            move(step)
