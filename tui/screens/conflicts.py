"""The sync-conflict inbox (``C`` from anywhere; the status line counts what waits there).

Each conflict is a local version a sync set aside, beside the remote version that won: shown side by side, the
local one on the left. One key decides it: ``r`` keeps the remote version, ``l`` writes the local one back,
``m`` opens both in an editor to merge (conflict markers around what differs). Each decision goes through the
write path and is audited; the set-aside copy is removed only once the decision is written. An encrypted
conflict is compared only when asked (``enter``): reading it is audited as opening the memory is.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, TextArea
from textual.widgets.option_list import Option

from engram.store import conflicts as inbox
from engram.store.errors import StoreError
from engram.store.service import Store
from engram.tui.actions import attempt_in_worker
from engram.tui.colours import role
from engram.tui.keymap import CONFLICT_ACTIONS, MERGE_ACTIONS, bindings
from engram.tui.screens.prompt import Confirm
from engram.tui.screens.split import SplitScreen
from engram.tui.threads import background, deliver
from engram.tui.widgets.safe import plain
from engram.tui.widgets.sidediff import side_by_side


class ConflictsScreen(SplitScreen[inbox.Conflict]):
    BINDINGS = bindings(CONFLICT_ACTIONS)
    NAME = "conflicts"

    def __init__(self, store: Store) -> None:
        super().__init__(
            "Sync conflicts", "looking…", "l keep local · r keep remote · m merge · enter compare · esc close"
        )
        self.store = store
        self.texts: dict[str, tuple[str, str | None]] = {}  # id -> (local, remote), once read

    def on_mount(self) -> None:
        self.load()

    @background("conflicts-load")
    def load(self) -> None:
        deliver(self, self.loaded, inbox.conflicts(self.store))

    def loaded(self, found: list[inbox.Conflict]) -> None:
        self.items = found
        listing = self.listing
        listing.clear_options()
        listing.add_options(
            Option(plain(f"{c.id} {c.slug}" + (" (encrypted)" if c.encrypted else "")), id=c.id) for c in found
        )
        count = len(found)
        status = (
            f"{count} conflict{'s' if count != 1 else ''}: the local version set aside (left) beside the one in place"
            if found
            else "no sync conflicts"
        )
        self.say(plain(status))
        if found:
            listing.highlighted = 0
            listing.focus()
        else:
            self.show("")

    @on(OptionList.OptionHighlighted, "#conflicts-list")
    def _moved(self) -> None:
        found = self.current
        if found is None:
            return
        if found.encrypted and found.id not in self.texts:
            self.show(plain(f"{found.slug}: encrypted, enter compares it (recorded in the audit log)"))
            return
        self.compare(found)

    @on(OptionList.OptionSelected, "#conflicts-list")
    def _selected(self) -> None:
        if self.current is not None:
            self.compare(self.current)

    @background("conflicts-diff")
    def compare(self, found: inbox.Conflict) -> None:
        try:
            local, remote = self.versions(found)
        except StoreError as exc:
            deliver(self, self.show, plain(str(exc)))
            return
        head = Text.assemble(
            plain(found.slug, "bold"),
            "\n",
            plain(f"local: set aside by {found.source} · remote: {'in place' if found.relpath else 'no file'}", "dim"),
        )
        names = ("local", "remote")
        table = side_by_side(local, remote or "", lambda name: role(self, name), names, context=2)
        deliver(self, self.show, Group(head, table))

    def versions(self, found: inbox.Conflict) -> tuple[str, str | None]:
        """Read once per conflict (an encrypted one's reading is audited once, not at every cursor move)."""
        if found.id not in self.texts:
            self.texts[found.id] = inbox.versions(self.store, found)
        return self.texts[found.id]

    def action_keep(self, keep: str) -> None:
        found = self.current
        if found is None:
            return
        what = "write the local version back" if keep == "local" else "keep the version in place"
        question = f"{found.slug}: {what}, and remove the set-aside copy? (y/n)"
        self.app.push_screen(Confirm(question), lambda yes: self.decide(found, keep) if yes else None)

    def action_merge(self) -> None:
        found = self.current
        if found is None:
            return
        self.draft(found)

    @background("conflicts-merge")
    def draft(self, found: inbox.Conflict) -> None:
        try:
            local, remote = self.versions(found)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), severity="error")
            return
        text = inbox.merge_draft(local, remote or "")

        def merged(result: str | None) -> None:
            if result is not None:
                self.decide(found, "merged", result)

        deliver(self, self.app.push_screen, MergeScreen(found.slug, text), merged)

    @background("conflicts-decide", exclusive=False)
    def decide(self, found: inbox.Conflict, keep: str, merged: str | None = None) -> None:
        attempt_in_worker(
            self, lambda: inbox.resolve(self.store, found, keep, merged), lambda done: str(done), self.load
        )


class MergeScreen(ModalScreen[str | None]):
    """Both versions in one editor, what differs between conflict markers; ctrl+s writes the merge (refused
    while a marker is left), esc cancels. Kept in memory: a sensitive memory's text never reaches a temp file."""

    BINDINGS = bindings(MERGE_ACTIONS)

    def __init__(self, slug: str, draft: str) -> None:
        super().__init__()
        self.slug, self.draft = slug, draft

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide split"):
            yield Label(f"Merge {self.slug}", classes="dialog-title", markup=False)
            yield TextArea(self.draft, id="merge-text", language="markdown")
            yield Label("keep what you want, delete the markers · ctrl+s write · esc cancel", classes="hint split-hint")

    def on_mount(self) -> None:
        """The cursor on the first block to merge."""
        area = self.query_one("#merge-text", TextArea)
        first = next((n for n, line in enumerate(self.draft.splitlines()) if line == inbox.MARKERS[0]), 0)
        area.move_cursor((first, 0), center=True)
        area.focus()

    def action_save(self) -> None:
        text = self.query_one("#merge-text", TextArea).text
        if inbox.unmerged(text):
            self.notify("Conflict markers are left (<<<<<<< ======= >>>>>>>)", severity="error")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
