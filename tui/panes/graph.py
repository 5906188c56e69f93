"""The graph pane: entities by mentions (fuzzy filter, ``scope:`` too); for the one under the cursor, its
neighbourhood 1-3 hops deep grouped by predicate, its conflicts and the memories that mention it; rename,
merge aliases, and mark a relation superseded."""

from __future__ import annotations

from collections.abc import Callable

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Input, Static, Tree
from textual.widgets.tree import TreeNode

from engram.store.graph import (
    MAX_HOPS,
    EntityRow,
    Hop,
    Rel,
    conflicts,
    entities,
    mentioned_in,
    merge_entities,
    neighbourhood,
    rename_entity,
    supersede_relation,
)
from engram.tui.actions import attempt
from engram.tui.keymap import GRAPH_ACTIONS, bindings
from engram.tui.messages import OpenMemory
from engram.tui.panes.base import PaneBase
from engram.tui.screens.prompt import Confirm, TextPrompt
from engram.tui.shared import Shared
from engram.tui.tables import PlainTable
from engram.tui.threads import background, deliver
from engram.tui.widgets.safe import plain


class GraphPane(PaneBase):
    BINDINGS = bindings(GRAPH_ACTIONS)
    LIST = "#entities"
    WATCHES = frozenset({"memories", "index"})  # memoryd extracts entities from the memories it writes

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="graph-pane")
        self.rows: list[EntityRow] = []
        self.hops = 1

    def compose(self) -> ComposeResult:
        with Vertical(id="graph-left"):
            yield Input(placeholder="name (fuzzy), scope:HASH", id="graph-filter")
            yield PlainTable(id="entities", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="graph-right"):
            yield Static("", id="entity-head")
            yield Tree("relations", id="neighbourhood")
            yield Static("", id="entity-conflicts")
            yield PlainTable(id="entity-memories", cursor_type="row")

    def load(self) -> None:
        self.show_entities(self.query_one("#graph-filter", Input).value)

    @on(Input.Changed, "#graph-filter")
    def _filter(self, event: Input.Changed) -> None:
        self.show_entities(event.value)

    @on(Input.Submitted, "#graph-filter")
    def _to_list(self) -> None:
        self.query_one("#entities", DataTable).focus()

    def show_entities(self, text: str) -> None:
        words = text.split()
        scope = next((w[6:] for w in words if w.startswith("scope:")), None)
        name = " ".join(w for w in words if not w.startswith("scope:"))
        keep = self.current.id if self.current is not None else None
        self.rows = entities(self.store, name, scope)
        table = self.query_one("#entities", DataTable)
        table.clear(columns=True)
        table.add_columns("entity", "type", "mentions", "last seen")
        for row in self.rows:
            table.add_row(row.name, row.type, str(row.mentions), row.last_seen[:10], key=row.id)
        at = next((i for i, row in enumerate(self.rows) if row.id == keep), 0)  # the store changed: stay put
        if self.rows:
            table.move_cursor(row=at)
            self.show_entity(self.rows[at])

    @property
    def current(self) -> EntityRow | None:
        table = self.query_one("#entities", DataTable)
        return self.rows[table.cursor_row] if 0 <= table.cursor_row < len(self.rows) else None

    @on(DataTable.RowHighlighted, "#entities")
    def _highlighted(self) -> None:
        if self.current is not None:
            self.show_entity(self.current)

    def show_entity(self, row: EntityRow) -> None:
        aliases = f" · aliases: {escape(', '.join(row.aliases))}" if row.aliases else ""
        self.query_one("#entity-head", Static).update(
            f"[b]{escape(row.name)}[/b] ({row.type}) · {row.mentions} mentions · last seen {row.last_seen[:10]}"
            f"{aliases}\n{row.id} · {self.hops} hop{'s' if self.hops > 1 else ''} (+ / -) · R rename · M merge "
            "into · s supersede a relation"
        )
        self.load_entity(row.id, self.hops)

    @background("graph-entity")
    def load_entity(self, entity_id: str, hops: int) -> None:
        centre = neighbourhood(self.store, entity_id, hops)
        found = conflicts(self.store, entity_id)
        memories = mentioned_in(self.store, entity_id)
        deliver(self, self.show_details, centre, found, memories)

    def show_details(self, centre: Hop, found: dict, memories: list) -> None:  # noqa: ANN001
        tree = self.query_one("#neighbourhood", Tree)
        tree.clear()
        tree.root.set_label(plain(centre.label))
        self._add(tree.root, centre)
        tree.root.expand_all()
        lines = [f"[b]{len(found)} conflicts[/b]" + (" (one subject, one predicate, several objects)" if found else "")]
        for (subject, predicate), rows in found.items():
            objects = ", ".join(sorted({r.object_id.split(":")[-1] for r in rows}))
            lines.append(f"  {escape(subject.split(':')[-1])} {escape(predicate)}: {escape(objects)}")
        self.query_one("#entity-conflicts", Static).update("\n".join(lines))
        table = self.query_one("#entity-memories", DataTable)
        table.clear(columns=True)
        table.add_columns(f"mentioned in {len(memories)} memories", "type", "created")
        for m in memories:
            table.add_row(m.title, m.type, m.created_at[:10], key=m.slug)

    def _add(self, parent: TreeNode, hop: Hop) -> None:
        for predicate, pairs in sorted(hop.by_predicate.items()):
            total = len(pairs) + hop.more.get(predicate, 0)
            group = parent.add(plain(f"{predicate} ({total})", style="bold"), expand=True)
            for rel, child in pairs:
                label = plain(child.label)
                if child.seen_before:
                    label.append("  ↑ shown above", style="dim")
                if child.by_predicate and not child.seen_before:
                    self._add(group.add(label, data=rel, expand=True), child)
                else:
                    group.add_leaf(label, data=rel)
            if hop.more.get(predicate):
                group.add_leaf(Text(f"… and {hop.more[predicate]} more", style="dim"))

    # ------------------------------------------------------------------ actions

    def action_hops(self, step: int) -> None:
        self.hops = max(1, min(MAX_HOPS, self.hops + step))
        if self.current is not None:
            self.show_entity(self.current)

    def action_rename(self) -> None:
        row = self.current
        if row is not None:
            self.app.push_screen(
                TextPrompt(f"New name for {row.name}", value=row.name),
                lambda name: self._do(lambda: rename_entity(self.store, row.id, name), "renamed") if name else None,
            )

    def action_merge(self) -> None:
        row = self.current
        if row is None:
            return

        def named(text: str | None) -> None:
            others = [e for e in entities(self.store, text or "") if e.id != row.id] if text else []
            if not others:
                if text:
                    self.notify(f"no other entity like {text!r}", severity="error")
                return
            other = others[0]
            self.app.push_screen(
                Confirm(
                    f"Merge {other.name} ({other.id}) into {row.name}: its relations move "
                    "over and its names become aliases? (y/n)"
                ),
                lambda yes: self._do(lambda: merge_entities(self.store, row.id, other.id), "merged") if yes else None,
            )

        self.app.push_screen(TextPrompt(f"Which entity is another name for {row.name}?"), named)

    def action_supersede(self) -> None:
        node = self.query_one("#neighbourhood", Tree).cursor_node
        rel = node.data if node is not None else None
        if not isinstance(rel, Rel):
            self.notify("put the cursor on a relation in the tree", timeout=3)
            return
        self.app.push_screen(
            Confirm(f"Mark superseded: {rel.subject_id} {rel.predicate} {rel.object_id}? (y/n)"),
            lambda yes: self._do(lambda: supersede_relation(self.store, rel.id), "superseded") if yes else None,
        )

    def _do(self, act: Callable[[], object], done: str) -> None:
        attempt(self, act, done, self.load)

    @on(DataTable.RowSelected, "#entity-memories")
    def _open(self, event: DataTable.RowSelected) -> None:
        self.post_message(OpenMemory(str(event.row_key.value)))
