"""The graph pane driven by real keys on a copy of memoryd's root: fuzzy filter, hops, rename, merge and
marking a relation superseded; index and audit checked afterwards."""

from __future__ import annotations

from helpers import events, settle
from textual.widgets import DataTable, Static, Tree

from engram.store.models import Entity, Relation
from engram.tui.app import EngramApp
from engram.tui.panes.graph import GraphPane

SIZE = (140, 45)


async def open_on(app, pilot, name: str) -> GraphPane:
    await settle(app, pilot)
    await pilot.press("5")
    await settle(app, pilot)
    app.query_one("#graph-filter").focus()
    await pilot.press(*name, "enter")
    await settle(app, pilot)
    return app.query_one(GraphPane)


async def test_filter_hops_and_details(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_on(app, pilot, "acme web")
        assert pane.current.id == "entity:project:acme-web"
        assert "acme-web" in str(app.query_one("#entity-head", Static).render())
        tree = app.query_one("#neighbourhood", Tree)
        one_hop = len(list(tree.root.children))
        await pilot.press("plus")
        await settle(app, pilot)
        assert pane.hops == 2 and len(list(tree.root.children)) >= one_hop
        assert app.query_one("#entity-memories", DataTable).row_count > 0


async def test_rename_merge_supersede_by_keys(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_on(app, pilot, "pnpm")
        assert pane.current.id == "entity:tool:pnpm"
        await pilot.press("R", "ctrl+u", *"pnpm 9", "enter")  # the prompt opens with the old name: clear it
        await settle(app, pilot)
        assert Entity.get_by_id("entity:tool:pnpm").name == "pnpm 9"
        app.query_one("#graph-filter").value = "pnpm"
        await settle(app, pilot)
        app.query_one("#entities", DataTable).focus()
        await pilot.press("M", *"zod", "enter", "y")
        await settle(app, pilot)
        assert Entity.get_or_none(Entity.id == "entity:library:zod") is None
        tree = app.query_one("#neighbourhood", Tree)
        leaf = next(n for group in tree.root.children for n in group.children if n.data is not None)
        tree.focus()
        tree.move_cursor(leaf)
        await pilot.press("s", "y")
        await settle(app, pilot)
        assert Relation.get_by_id(leaf.data.id).superseded_at
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds[-3:] == ["entity_renamed", "entities_merged", "relation_superseded"]
