"""A memory's history, from the search (``h``): every revision, what each changed, and restore.

The list shows the revisions newest first; beside it (below, in a narrow terminal) the highlighted one against
the file as it is now, side by side, or against the revision marked with ``space``. An encrypted revision is
compared only when asked (``enter``): reading it is audited as opening the memory is, and moving the cursor
must not write to the audit log. ``R`` restores the highlighted revision through the write path, after a
confirmation; the list then shows the restore as the newest revision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import on
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engram.store.errors import StoreError
from engram.store.service import Store
from engram.tui.actions import attempt_in_worker
from engram.tui.colours import role
from engram.tui.keymap import HISTORY_ACTIONS, bindings
from engram.tui.screens.prompt import Confirm
from engram.tui.screens.split import SplitScreen
from engram.tui.threads import background, deliver
from engram.tui.widgets.safe import plain
from engram.tui.widgets.sidediff import side_by_side

if TYPE_CHECKING:
    from engram.store.history.ops import Revision


class HistoryScreen(SplitScreen["Revision"]):
    BINDINGS = bindings(HISTORY_ACTIONS)
    NAME = "history"

    def __init__(self, store: Store, slug: str) -> None:
        hint = "j/k move · enter compare · space mark · R restore · esc close"
        super().__init__(f"History of {slug}", "recording what changed on disk…", hint)
        self.store, self.slug = store, slug
        self.marked: Revision | None = None  # compared with the highlighted one, instead of the file now

    def on_mount(self) -> None:
        self.load()

    @background("history-load")
    def load(self) -> None:
        from engram.store.history import ops

        try:
            ops.catch_up(self.store)
            found = ops.revisions(self.store, self.slug)
        except StoreError as exc:
            deliver(self, self.say, plain(str(exc)))
            return
        deliver(self, self.loaded, found)

    def loaded(self, found: list[Revision]) -> None:
        self.items = found
        self.redraw(0)
        self.listing.focus()

    def line(self, found: Revision) -> Text:
        mark = "●" if self.marked is not None and found.id == self.marked.id else " "
        what = "removed" if found.removed else found.commit.summary.split(" ")[0].lower().rstrip(":")
        lock = " (encrypted)" if found.encrypted else ""
        return plain(f"{mark} {found.short[:8]} {found.commit.when:%m-%d %H:%M} {found.commit.author}: {what}{lock}")

    def redraw(self, at: int | None) -> None:
        self.listing.clear_options()
        self.listing.add_options(Option(self.line(r), id=r.id + r.relpath) for r in self.items)
        self.listing.highlighted = at
        count = len(self.items)
        against = f"marked {self.marked.short[:8]}" if self.marked is not None else "the file now"
        self.say(plain(f"{count} revision{'s' if count != 1 else ''} · compared with {against}"))

    @on(OptionList.OptionHighlighted, "#history-list")
    def _moved(self) -> None:
        found = self.current
        if found is None:
            return
        if found.encrypted or (self.marked is not None and self.marked.encrypted):
            self.show(plain(f"{found.commit.summary}\n\nencrypted: enter compares it (recorded in the audit log)"))
            return
        self.compare(found, self.marked)

    @on(OptionList.OptionSelected, "#history-list")
    def _selected(self) -> None:
        found = self.current
        if found is not None:
            self.compare(found, self.marked)

    @background("history-diff")
    def compare(self, found: Revision, marked: Revision | None) -> None:
        """The revision (left) against the marked one or the file now (right), with what it says of itself."""
        from engram.store.history import ops

        try:
            older = "" if found.removed else ops.text(self.store, found)
            if marked is not None:
                newer, against = ("" if marked.removed else ops.text(self.store, marked)), marked.short[:8]
            else:
                newer, against = ops.current_text(self.store, self.slug) or "", "now"
        except StoreError as exc:
            deliver(self, self.show, plain(str(exc)))
            return
        head = Text.assemble(
            plain(found.commit.summary, "bold"),
            "\n",
            plain(f"{found.short} by {found.commit.author}, {found.commit.when:%Y-%m-%d %H:%M} UTC", "dim"),
        )
        if older == newer:
            same = "the file as it is now" if marked is None else f"the same text as {against}"
            deliver(self, self.show, Group(head, plain(f"\nno difference: this revision is {same}", "dim")))
            return
        table = side_by_side(older, newer, lambda what: role(self, what), (found.short[:8], against), context=2)
        deliver(self, self.show, Group(head, table))

    def action_mark(self) -> None:
        found = self.current
        if found is None:
            return
        self.marked = None if self.marked is not None and self.marked.id == found.id else found
        self.redraw(self.at)

    def action_restore(self) -> None:
        found = self.current
        if found is None or found.removed:
            self.notify("Pick a revision that has the memory's text", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.restore(found)

        self.app.push_screen(Confirm(f"Restore {self.slug} to revision {found.short[:8]}? (y/n)"), answered)

    @background("history-restore", exclusive=False)
    def restore(self, found: Revision) -> None:
        from engram.store.history import ops

        attempt_in_worker(
            self,
            lambda: ops.restore(self.store, self.slug, found.id),
            f"Restored {self.slug} from {found.short[:8]}",
            self.load,
        )
