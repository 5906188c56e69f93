"""The supersedes pane: chains as a tree, newest first, each link with who decided it, how sure, and why;
the two memories of the highlighted link side by side as a diff; confirm, reject, undo and add links."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from store.errors import StoreError
from store.memories import add_supersede, view_memory
from store.service import Store
from store.supersedes import PROPOSED, Link, Node, confirm_supersede, forest, reject_supersede, undo_supersede
from tui.actions import attempt
from tui.keymap import SUPERSEDES_ACTIONS, bindings
from tui.screens.pick import MemoryPicker
from tui.screens.prompt import Confirm, TextPrompt

DECIDED = {"auto": "auto", "digest": "PROPOSED", "user": "you"}


class SupersedesPane(Horizontal):
    BINDINGS = bindings(SUPERSEDES_ACTIONS)

    def __init__(self, store: Store) -> None:
        super().__init__(id="supersedes-pane")
        self.store = store
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Tree("supersedes", id="chains")
        with VerticalScroll(id="chain-side"):
            yield Static("", id="chain-detail")

    def on_show(self) -> None:
        if not self.loaded:
            self.loaded = True
            self.reload()

    @work(thread=True, exclusive=True, group="supersedes-load")
    def reload(self) -> None:
        try:
            roots = forest(self.store)
        except StoreError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="Supersedes", severity="error")
            return
        self.app.call_from_thread(self.show_forest, roots)

    def show_forest(self, roots: list[Node]) -> None:
        tree = self.query_one("#chains", Tree)
        tree.clear()
        tree.root.set_label(f"{len(roots)} chains (newest first) · c confirm · x reject · u undo · a add")
        tree.show_root = True
        for root in roots:
            self._add(tree.root.add(self._memory_label(root), data=(None, root), expand=True), root)
        tree.root.expand()

    def _add(self, parent: TreeNode, node: Node) -> None:
        for link, child in node.links:
            label = Text.assemble(("supersedes ", "dim"), (f"[{DECIDED.get(link.decided_by, link.decided_by)} "
                                                          f"{link.confidence:.2f}] ", _style(link)),
                                  self._memory_label(child))
            if child.links and not child.cycle:
                self._add(parent.add(label, data=(link, child), expand=True), child)
            else:
                parent.add_leaf(label, data=(link, child))

    @staticmethod
    def _memory_label(node: Node) -> Text:
        text = Text(node.title or node.slug)
        if node.cycle:
            text.append("  ↻ cycle: already above", style="bold red")
        return text

    @property
    def current(self) -> tuple[Link | None, Node] | None:
        node = self.query_one("#chains", Tree).cursor_node
        return node.data if node is not None and node.data else None

    @on(Tree.NodeHighlighted, "#chains")
    def _highlighted(self) -> None:
        current = self.current
        if current is None:
            return
        link, node = current
        if link is None:
            self.query_one("#chain-detail", Static).update(f"[b]{escape(node.title)}[/b]\n{node.slug}\n\n"
                                                          "a adds a memory this one supersedes")
            return
        self.show_link(link)

    @work(thread=True, exclusive=True, group="supersedes-detail")
    def show_link(self, link: Link) -> None:
        """The link's facts, then the older memory turned into the newer one, as a diff (reading a sensitive
        memory is audited, as everywhere)."""
        head = (f"[b]{escape(link.newer)}[/b]\nsupersedes [b]{escape(link.older)}[/b]\n"
                f"decided by {DECIDED.get(link.decided_by, link.decided_by)} at {link.decided_at[:19]}, "
                f"confidence {link.confidence:.2f}\nentity: {escape(link.entity_id or '-')}\n"
                f"reason: {escape(link.reason or '-')}\n")
        try:
            newer, older = view_memory(self.store, link.newer), view_memory(self.store, link.older)
        except StoreError as exc:
            self.app.call_from_thread(self.query_one("#chain-detail", Static).update,
                                      head + f"\n[i]the memories cannot be shown: {escape(str(exc))}[/i]")
            return
        diff = Text()
        for line in difflib.unified_diff(f"# {older.frontmatter.title}\n{older.body}".splitlines(),
                                         f"# {newer.frontmatter.title}\n{newer.body}".splitlines(),
                                         "older", "newer", lineterm="", n=2):
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            diff.append(line + "\n", style=style)
        self.app.call_from_thread(self.query_one("#chain-detail", Static).update,
                                  Text.from_markup(head).append("\n").append_text(diff))

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
            self._do(lambda: confirm_supersede(self.store, link.newer, link.older), "confirmed")

    def action_reject(self) -> None:
        link = self._link_or_say()
        if link is None:
            return
        if link.decided_by != PROPOSED:
            self.notify("only a proposed link can be rejected; u undoes a decided one", timeout=4)
            return
        self.app.push_screen(TextPrompt("Reject this link: why? (optional)"), lambda reason: None if reason is None
                             else self._do(lambda: reject_supersede(self.store, link.newer, link.older, reason or None),
                                           "rejected"))

    def action_undo(self) -> None:
        link = self._link_or_say()
        if link is not None:
            self.app.push_screen(Confirm(f"Undo: {link.older} is no longer superseded by {link.newer}? (y/n)"),
                                 lambda yes: self._do(lambda: undo_supersede(self.store, link.newer, link.older),
                                                      "undone") if yes else None)

    def action_add(self) -> None:
        current = self.current
        index = self.app.search_index()
        if current is None or index is None:
            self.notify("put the cursor on a memory (the search index may still be loading)", timeout=3)
            return
        newer = current[1].slug
        self.app.push_screen(MemoryPicker(f"Which memory does {newer} supersede?", index),
                             lambda older: self._do(lambda: add_supersede(self.store, newer, older), "added")
                             if older else None)

    def _do(self, act: Callable[[], object], done: str) -> None:
        attempt(self, act, f"link {done}", self.reload)


def _style(link: Link) -> str:
    return "bold yellow" if link.decided_by == PROPOSED else "cyan" if link.decided_by == "user" else "dim"
