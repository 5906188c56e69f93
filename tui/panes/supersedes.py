"""The supersedes pane: chains as a tree, newest first, each link with who decided it, how sure, and why;
the two memories of the highlighted link side by side with what changed; confirm, reject, undo and add links.

The index's links show at once; a worker then reads the files' frontmatter (the truth) and adds the links only
a file lists, and flags index links no file lists."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group
from rich.markup import escape
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import ProgressBar, Static, Tree
from textual.widgets.tree import TreeNode

from engram.store.errors import StoreError
from engram.store.memories import add_supersede, view_memory
from engram.store.supersedes import (
    FILE_ONLY,
    PROPOSED,
    Link,
    Listed,
    Node,
    confirm_supersede,
    forest,
    listed_links,
    reject_supersede,
    undo_supersede,
)
from engram.tui.actions import attempt
from engram.tui.colours import role
from engram.tui.keymap import SUPERSEDES_ACTIONS, bindings
from engram.tui.panes.base import PaneBase
from engram.tui.screens.pick import MemoryPicker
from engram.tui.screens.prompt import Confirm, TextPrompt
from engram.tui.shared import Shared
from engram.tui.threads import background, deliver, progress
from engram.tui.widgets.movetree import MoveTree
from engram.tui.widgets.safe import plain
from engram.tui.widgets.sidediff import side_by_side

DECIDED = {"auto": "auto", "digest": "PROPOSED", "user": "you", FILE_ONLY: "file only"}


class SupersedesPane(PaneBase):
    BINDINGS = bindings(SUPERSEDES_ACTIONS)
    LIST = "#chains"
    WATCHES = frozenset({"memories", "index"})

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="supersedes-pane")
        self.listed: Listed | None = None  # the files' frontmatter links, once read

    def compose(self) -> ComposeResult:
        with Vertical(id="chains-box"):
            yield ProgressBar(id="chains-progress", show_eta=False)
            yield MoveTree("supersedes", id="chains")
        with VerticalScroll(id="chain-side"):
            yield Static("", id="chain-detail")

    def load(self) -> None:
        self.reload()
        self.read_files()

    def follow(self) -> None:
        """The index's links again, with the files' links as read (reading every file again is `load`'s)."""
        self.reload()

    @background("supersedes-load")
    def reload(self, changed: str | None = None) -> None:
        """The forest again; after an action on ``changed``'s links, its file is read again first."""
        try:
            if changed is not None and self.listed is not None:
                fresh = listed_links(self.store, slugs=[changed])
                self.listed.pairs = {p for p in self.listed.pairs if p[0] != changed} | fresh.pairs
            roots = forest(self.store, self.listed)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Supersedes", severity="error")
            return
        deliver(self, self.show_forest, roots)

    @background("supersedes-files")
    def read_files(self) -> None:
        """Read every file's ``supersedes`` (one read per file), with a progress bar, then show the full forest."""
        try:
            with progress(self, "#chains-progress") as report:
                listed = listed_links(self.store, report)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Supersedes", severity="error")
            return
        self.listed = listed
        self.reload()

    def show_forest(self, roots: list[Node]) -> None:
        tree = self.query_one("#chains", Tree)
        keep = _place(self.current)
        tree.clear()
        tree.root.set_label(f"{len(roots)} chains, newest first")  # the rest is the overview's: 80 columns
        tree.show_root = True
        for root in roots:
            self._add(tree.root.add(self._memory_label(root), data=(None, root), expand=True), root)
        tree.root.expand()
        if keep is not None:  # the store changed under the tree: the cursor stays on its memory or link
            self.call_after_refresh(self._move_to, keep)
        else:
            self.query_one("#chain-detail", Static).update(self._overview())

    def _move_to(self, place: tuple[str, str | None]) -> None:
        tree = self.query_one("#chains", Tree)
        for line in range(tree.last_line + 1):
            node = tree.get_node_at_line(line)
            if node is not None and _place(node.data) == place:
                tree.move_cursor_to_line(line)
                return

    def _add(self, parent: TreeNode, node: Node) -> None:
        for link, child in node.links:
            label = Text.assemble(
                ("supersedes ", "dim"),
                (f"[{_decided(link)}] ", self._style(link.decided_by)),
                self._memory_label(child),
            )
            if link.listed is False:  # memoryd's digest writes only the index: common, so quiet
                label.append("  · index only", style="dim")
            if child.links and not child.cycle:
                self._add(parent.add(label, data=(link, child), expand=True), child)
            else:
                parent.add_leaf(label, data=(link, child))

    def _memory_label(self, node: Node) -> Text:
        text = plain(node.title or node.slug)
        if node.cycle:
            text.append("  ↻ cycle: already above", style=role(self, "bad", bold=True))
        return text

    def _style(self, decided_by: str) -> Style | str:
        """Proposed links stand out (they wait for a person); yours and file-only ones are told apart."""
        roles = {PROPOSED: ("warn", True), "user": ("note", False), FILE_ONLY: ("other", False)}
        name, bold = roles.get(decided_by, ("", False))
        return role(self, name, bold=bold) if name else "dim"

    @property
    def current(self) -> tuple[Link | None, Node] | None:
        node = self.query_one("#chains", Tree).cursor_node
        return node.data if node is not None and node.data else None

    @on(Tree.NodeHighlighted, "#chains")
    def _highlighted(self) -> None:
        current = self.current
        if current is None:
            self.query_one("#chain-detail", Static).update(self._overview())
            return
        link, node = current
        if link is None:
            self.query_one("#chain-detail", Static).update(
                f"[b]{escape(node.title)}[/b]\n{node.slug}\n\na adds a memory this one supersedes"
            )
            return
        self.show_link(link)

    def _overview(self) -> Text:
        """What the top line's detail says: what was read, and what each key and label means (the pane opens
        there, and a person new to it has nothing else to go on)."""
        read = (
            "the index; the files' frontmatter is being read"
            if self.listed is None
            else f"the index and the files; {self.listed.unread} locked or unreadable files not read"
            if self.listed.unread
            else "the index and the files"
        )
        chains = len(self.query_one("#chains", Tree).root.children)
        text = Text.assemble((f"{chains} chains", "bold"), f", newest first, from {read}.\n\n")
        text.append("Each line under a memory is an older one it supersedes, with who decided the link:\n")
        for decided_by, meaning in (
            (PROPOSED, "memoryd's digest proposed it: it waits for you"),
            ("auto", "memoryd decided it alone"),
            ("user", "you decided it"),
            (FILE_ONLY, "only the newer file's frontmatter lists it"),
        ):
            text.append(f"  [{DECIDED[decided_by]}]".ljust(14), style=self._style(decided_by))
            text.append(f"{meaning}\n")
        text.append("\nOn a link: c confirm · x reject · u undo.  On a memory: a adds a link.  ? lists every key.")
        return text

    @background("supersedes-detail")
    def show_link(self, link: Link) -> None:
        """The link's facts, then the older memory turned into the newer one, as a diff (reading a sensitive
        memory is audited, as everywhere)."""
        listed = {
            None: "",
            True: "listed in the newer file's frontmatter\n",
            False: f"[{role(self, 'warn')}]only in the index[/]: the newer file's frontmatter does not list it "
            "(c confirms and writes it there)\n",
        }[link.listed]
        decided = (
            "only the newer file's frontmatter lists it (c records it in the index)"
            if link.decided_by == FILE_ONLY
            else f"decided by {_decided(link)} at {(link.decided_at or '')[:19]}"
        )
        head = (
            f"[b]{escape(link.newer)}[/b]\nsupersedes [b]{escape(link.older)}[/b]\n{decided}\n{listed}"
            f"entity: {escape(link.entity_id or '-')}\nreason: {escape(link.reason or '-')}\n"
        )
        try:
            newer, older = view_memory(self.store, link.newer), view_memory(self.store, link.older)
        except StoreError as exc:
            deliver(
                self,
                self.query_one("#chain-detail", Static).update,
                head + f"\n[i]the memories cannot be shown: {escape(str(exc))}[/i]",
            )
            return
        table = side_by_side(
            f"# {older.frontmatter.title}\n\n{older.body}",
            f"# {newer.frontmatter.title}\n\n{newer.body}",
            lambda name: role(self, name),
        )
        deliver(self, self.query_one("#chain-detail", Static).update, Group(Text.from_markup(head), table))

    # ------------------------------------------------------------------ actions

    def _link_or_say(self) -> Link | None:
        current = self.current
        if current is None or current[0] is None:
            self.notify("put the cursor on a 'supersedes' line", timeout=3)
            return None
        return current[0]

    def action_confirm(self) -> None:
        link = self._link_or_say()
        if link is not None:
            self._do(lambda: confirm_supersede(self.store, link.newer, link.older), "confirmed", link.newer)

    def action_reject(self) -> None:
        link = self._link_or_say()
        if link is None:
            return
        if link.decided_by != PROPOSED:
            self.notify("only a proposed link can be rejected; u undoes a decided one", timeout=4)
            return
        self.app.push_screen(
            TextPrompt("Reject this link: why? (optional)"),
            lambda reason: (
                None
                if reason is None
                else self._do(
                    lambda: reject_supersede(self.store, link.newer, link.older, reason or None), "rejected", link.newer
                )
            ),
        )

    def action_undo(self) -> None:
        link = self._link_or_say()
        if link is not None:
            self.app.push_screen(
                Confirm(f"Undo: {link.older} is no longer superseded by {link.newer}? (y/n)"),
                lambda yes: (
                    self._do(lambda: undo_supersede(self.store, link.newer, link.older), "undone", link.newer)
                    if yes
                    else None
                ),
            )

    def action_add(self) -> None:
        current = self.current
        index = self.shared.search
        if current is None or index is None:
            self.notify("put the cursor on a memory (the search index may still be loading)", timeout=3)
            return
        newer = current[1].slug
        self.app.push_screen(
            MemoryPicker(f"Which memory does {newer} supersede?", index),
            lambda older: self._do(lambda: add_supersede(self.store, newer, older), "added", newer) if older else None,
        )

    def _do(self, act: Callable[[], object], done: str, newer: str) -> None:
        attempt(self, act, f"link {done}", lambda: self.reload(newer))


def _place(data: tuple[Link | None, Node] | None) -> tuple[str, str | None] | None:
    """Where a tree line is, in terms that survive a reload: its memory, and the link it hangs by."""
    if not data:
        return None
    link, node = data
    return node.slug, None if link is None else link.newer


def _decided(link: Link) -> str:
    who = DECIDED.get(link.decided_by, link.decided_by)
    return who if link.confidence is None else f"{who} {link.confidence:.2f}"
