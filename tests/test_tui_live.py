"""The console beside a running memoryd: what memoryd proposes, decides and appends shows up at the change
feed's next look, the row under the cursor stays the promotion the person was reading, and a rebuilt index.db
is said plainly. The feed's look is called directly: no test waits on the clock."""

from __future__ import annotations

from helpers import settle
from memoryd_emulation import (
    memoryd_append,
    memoryd_decides,
    memoryd_proposes,
    memoryd_rebuild_index,
)
from textual.widgets import DataTable

import engram.tui.app as app_module
from engram.tui.app import EngramApp
from engram.tui.panes.queue import QueuePane

SIZE = (140, 45)


async def look(app, pilot) -> None:
    app.watch_store()
    await settle(app, pilot)


async def test_memoryds_new_promotion_appears_and_the_cursor_keeps_its_promotion(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await look(app, pilot)  # the feed's first look
        queue = app.query_one(QueuePane)
        await pilot.press("down", "down")
        await settle(app, pilot)
        reading = queue.current().id
        before = len(queue.items)
        pid = memoryd_proposes(fixture_root, dura=1.0)  # sorts first: above the row being read
        await look(app, pilot)
        assert len(queue.items) == before + 1 and queue.items[0].id == pid
        assert queue.current().id == reading  # not silently another promotion under the cursor
        memoryd_decides(fixture_root, reading, "approved")
        await look(app, pilot)
        assert reading not in {i.id for i in queue.items}
        assert app.query_one("#queue-table", DataTable).row_count


async def test_memoryds_audit_lines_and_rebuild_show_up(store, fixture_root):
    store.index.writable()  # engram has written to this root before: it knows its index.db
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await look(app, pilot)
        memoryd_append(
            fixture_root / "audit" / "audit.jsonl",
            {"scope_hash": "91c2073b561e", "event_type": "access_granted", "tool": "search_memory"},
        )
        await look(app, pilot)
        lines = len((fixture_root / "audit" / "audit.jsonl").read_text().splitlines())
        assert f"{lines:,} lines" in app.audit_state
        memoryd_rebuild_index(fixture_root)
        await look(app, pilot)
        assert any("rebuilt" in n.message for n in app._notifications)
        assert store.index.rebuilt


async def test_an_idle_console_holds_index_db_open_nowhere(store, fixture_root):
    """memoryd's rebuild-index deletes index.db but not its WAL: a WAL kept alive by an open connection makes the
    new index.db malformed. An idle console lets go, so memoryd's own last connection removes the WAL."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.tick()
        await settle(app, pilot)
        memoryd_proposes(fixture_root)  # memoryd writes, and its connection is the last to close
        assert not (fixture_root / "index.db-wal").exists()


async def test_f5_looks_for_memoryds_changes_at_once(store, fixture_root, monkeypatch):
    monkeypatch.setattr(app_module, "WATCH_SECONDS", 3600)  # only the key looks
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f5")  # the feed's first look, if the clock has not made it yet
        await settle(app, pilot)
        pid = memoryd_proposes(fixture_root, dura=1.0)
        await pilot.press("f5")
        await settle(app, pilot)
        assert pid in {i.id for i in app.query_one(QueuePane).items}
        assert "8 pending" in str(app.query_one("#status").render())
