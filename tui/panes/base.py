"""What every pane is: a widget over the open store, made from what the panes share (tui.shared), so the table
of panes (tui.panes.table) can build each one.

The contract: a pane reads the store in :meth:`PaneBase.load` the first time it is shown, not with the console.
When the store changes (the console fans out the change feed's answers and the panes' own writes), a pane that
shows what changed (:attr:`PaneBase.WATCHES`) follows at once if it is on screen, else it marks itself stale and
follows when it is next shown. Long work runs in a worker with tui.threads.progress showing its bar.

It is a Textual Vertical; a pane that wants another layout says so in engram.tcss.
"""

from __future__ import annotations

from textual.containers import Vertical

from engram.store.changes import Changes
from engram.tui.shared import Shared
from engram.tui.threads import failure


class PaneBase(Vertical):
    LIST: str | None = None  # selector of the pane's main list, which j k g G move in
    WATCHES: frozenset[str] = frozenset()  # the change feed's kinds the pane shows (see Changes.kinds)

    def __init__(self, shared: Shared, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.shared = shared
        self.store = shared.store
        self.loaded = False
        self.stale = False

    def on_show(self) -> None:
        try:
            if not self.loaded:
                self.loaded = True
                self.load()
            elif self.stale:
                self.stale = False
                self.follow()
        except Exception as exc:  # noqa: BLE001 - a damaged table stops this pane's reading, never the console
            self.app.notify(failure(exc), title=f"{self.id or 'pane'}: could not read", severity="error", timeout=10)

    def load(self) -> None:
        """Read what the pane shows (start a worker for anything slow). Called when the pane is first shown."""

    def follow(self) -> None:
        """Show the store's changes; by default, read everything again."""
        self.load()

    def store_changed(self, changes: Changes, showing: bool) -> None:
        """The store changed (``showing``: the pane is on screen). Panes that keep something for others (the
        search index) override this to follow even while hidden."""
        if self.loaded and changes.kinds & self.WATCHES:
            if showing:
                self.follow()
            else:
                self.stale = True

    def keys_changed(self, showing: bool) -> None:
        """Sensitive scopes were unlocked or locked; panes that show lock state or read bodies follow."""

    def settled(self) -> None:
        """The console's first screen has its data; a pane that prepares something for others starts it here."""

    def action_move(self, step: int | str) -> None:
        """j k g G (keymap.list_moves): move in the pane's main list (a LineList or a PlainTable, which take the
        same steps)."""
        move = getattr(self.query_one(self.LIST), "action_move", None) if self.LIST is not None else None
        if move is not None:
            move(step)
