"""The console opens a real root, shows its counts, runs the drift check in a worker, and keeps running."""

from __future__ import annotations

from textual.widgets import DataTable, Static

from store.service import Store
from tui.app import EngramApp


async def test_overview_shows_counts_and_drift(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-tui") as store:
        app = EngramApp(store)
        async with app.run_test(size=(120, 40)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            summary = str(app.query_one("#summary", Static).render())
            assert "198 memories" in summary and "7 pending" in summary
            findings = app.query_one("#findings", DataTable)
            rows = [findings.get_row_at(i) for i in range(findings.row_count)]
            assert ["26", "yes", "decay state in the index but not in the frontmatter"] in rows
            scopes = app.query_one("#scopes", DataTable)
            assert scopes.row_count == 7
            await pilot.press("r")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert findings.row_count == 3
            await pilot.press("q")
        assert app.return_code == 0


async def test_read_only_root_is_announced(fixture_root):
    import sqlite3

    con = sqlite3.connect(fixture_root / "index.db")
    con.execute("INSERT INTO _schema_migrations VALUES ('006_future.sql', 'x')")
    con.commit()
    con.close()
    with Store.open(fixture_root) as store:
        app = EngramApp(store)
        async with app.run_test() as pilot:
            await pilot.pause()
            assert any("006_future.sql" in n.message for n in app._notifications)
