"""The supersedes pane driven by real keys on a copy of memoryd's root: the chains as a tree with the link's
diff, and confirm, reject, undo and add; index, frontmatter and audit checked afterwards."""

from __future__ import annotations

import hashlib
import json

from helpers import events, settle
from textual.widgets import Static, Tree

from engram.store.models import SupersedesChain
from engram.tui.app import EngramApp

SIZE = (140, 45)


def row(newer: str, older: str):
    return SupersedesChain.get_or_none(
        (SupersedesChain.newer_memory_id == newer) & (SupersedesChain.older_memory_id == older)
    )


async def to_link(app, pilot, decided_by: str):
    """Open the pane and put the cursor on the first link decided that way; returns the link."""
    await settle(app, pilot)
    await pilot.press("3")
    await settle(app, pilot)
    tree = app.query_one("#chains", Tree)
    stack = [tree.root]
    while stack:
        node = stack.pop(0)
        if node.data and node.data[0] is not None and node.data[0].decided_by == decided_by:
            tree.move_cursor(node)
            await settle(app, pilot)
            return node.data[0]
        stack.extend(node.children)
    raise AssertionError(f"no {decided_by} link in the tree")


async def test_tree_and_diff_then_confirm(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        link = await to_link(app, pilot, "digest")
        detail = app.query_one("#chain-detail", Static)
        text = "\n".join(line.text for line in detail.render_lines(detail.region.reset_offset))
        assert "decided by PROPOSED" in text
        older_title = store.memory(link.older).title
        assert any(line.lstrip().startswith("older") and "newer" in line for line in text.splitlines())
        assert any(line.lstrip().startswith(f"# {older_title[:10]}") for line in text.splitlines()), text
        await pilot.press("c")
        await settle(app, pilot)
    assert row(link.newer, link.older).decided_by == "user"
    assert link.older in store.read_doc(store.memory(link.newer).body_path).frontmatter.supersedes
    assert events(fixture_root)[-1]["event_type"] == "supersede_confirmed"


async def test_reject_with_a_reason_and_undo(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        link = await to_link(app, pilot, "digest")
        await pilot.press("x", *"different tool", "enter")
        await settle(app, pilot)
        assert row(link.newer, link.older) is None
        reason = json.loads(events(fixture_root)[-1]["details"])["reason"]  # identifiers only, text hashed
        assert reason == "sha256:" + hashlib.sha256(b"different tool").hexdigest()
        auto = await to_link(app, pilot, "auto")
        await pilot.press("u", "y")
        await settle(app, pilot)
        assert row(auto.newer, auto.older) is None
    assert events(fixture_root)[-1]["event_type"] == "supersede_undone"


async def test_add_a_link_by_search(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        tree = app.query_one("#chains", Tree)
        tree.move_cursor(tree.root.children[1])
        newer = tree.root.children[1].data[1].slug
        await pilot.press("a", *"quickbooks", "enter", "enter")
        await settle(app, pilot)
    added = SupersedesChain.select().where(
        (SupersedesChain.newer_memory_id == newer) & (SupersedesChain.decided_by == "user")
    )
    assert added.count() >= 1 and events(fixture_root)[-1]["event_type"] == "supersede_added"


async def test_links_only_a_file_lists_are_shown_confirmed_and_undone(store, fixture_root):
    """memoryd's fixture has links that only the newer file's frontmatter holds: the pane reads them from the
    files; confirming records them in the index, undoing takes them out of the file."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        link = await to_link(app, pilot, "file")
        assert row(link.newer, link.older) is None
        await pilot.press("c")
        await settle(app, pilot)
        assert row(link.newer, link.older).decided_by == "user"
        assert events(fixture_root)[-1]["event_type"] == "supersede_confirmed"
        other = await to_link(app, pilot, "file")
        await pilot.press("u", "y")
        await settle(app, pilot)
    assert other.older not in store.read_doc(store.memory(other.newer).body_path).frontmatter.supersedes
    undone = [e for e in events(fixture_root) if e["event_type"] == "supersede_undone"]
    assert [e["target_id"] for e in undone] == [other.newer]


async def test_the_top_line_explains_the_pane_at_80x24(store):
    """The pane opens on its top line: its detail says what was read and what the labels and keys mean, rather
    than staying empty until the cursor moves."""
    app = EngramApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        assert app.query_one("#chains", Tree).cursor_line == 0
        detail = app.query_one("#chain-detail", Static)
        text = " ".join(" ".join(line.text.split()) for line in detail.render_lines(detail.region.reset_offset))
        assert "chains, newest first, from the index and the files" in text
        assert "[PROPOSED] memoryd's digest proposed it" in text
        await pilot.press("j")
        await settle(app, pilot)
        text = "\n".join(line.text for line in detail.render_lines(detail.region.reset_offset))
        assert "newest first" not in text  # the first chain's memory now
