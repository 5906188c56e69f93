"""The audit pane driven by real keys on a copy of memoryd's root: the log newest first, a line's details,
filters, verification finding and highlighting the first bad line, the checkpoint, the timeline."""

from __future__ import annotations

from helpers import settle
from textual.widgets import Sparkline, Static

from engram.store.audit.view import AuditLog, parse_filter
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.colours import role
from engram.tui.panes.audit import AuditList

SIZE = (140, 45)


async def open_pane(app, pilot) -> AuditList:
    await settle(app, pilot)
    await pilot.press("6")
    await settle(app, pilot)
    return app.query_one(AuditList)


async def test_log_newest_first_with_details_and_timeline(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        listing = await open_pane(app, pilot)
        assert listing.row_count == 200 and listing.current_line == 200
        assert "access_" in listing.row_text(0).plain
        await pilot.press("j", "j", "enter")
        detail = str(app.query_one("#audit-detail", Static).render())
        assert detail.startswith("Line 198") and '"prev_hash"' in detail
        await pilot.press("escape")
        assert not app.query_one("#audit-open").display
        assert sum(app.query_one(Sparkline).data) == 200  # every event on the timeline, empty days as 0
        await pilot.press("G")
        assert listing.current_line == 1


async def test_filter_by_type_and_scope(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        listing = await open_pane(app, pilot)
        await pilot.press("slash", *"type:access_denied scope:35998c22af79", "enter")
        await settle(app, pilot)
        rows = [listing.row_text(r).plain for r in range(listing.row_count)]
        assert rows and all("access_denied" in r and "35998c22af79" in r for r in rows)
        with AuditLog(store.layout.audit_path) as log:
            assert len(rows) == len(log.matching(parse_filter("type:access_denied scope:35998c22af79")))
        assert "match" in str(app.query_one("#audit-status", Static).render())


async def test_verify_finds_and_highlights_the_first_bad_line(fixture_root):
    log = fixture_root / "audit" / "audit.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"duration": "task"', b'"duration": "session"', 1)
    log.write_bytes(b"".join(lines))
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            listing = await open_pane(app, pilot)
            await pilot.press("v")
            await settle(app, pilot)
            assert "TAMPERED" in str(app.query_one("#audit-status", Static).render())
            assert listing.bad_line == 4 and listing.current_line == 4  # jumped to it
            assert listing.row_style(listing.cursor) == role(app, "bad", bold=True, reverse=True)


async def test_print_checkpoint(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await open_pane(app, pilot)
        await pilot.press("p")
        await settle(app, pilot)
        assert "engram-checkpoint/1" in str(app.query_one("#audit-detail", Static).render())


async def test_the_pane_shows_the_verdict_the_console_has_and_follows_a_restored_line(fixture_root):
    """The status line said TAMPERED while the pane said nothing found until v; once the line was put back, the
    status line stayed TAMPERED until v. One verdict, followed as the log changes."""
    log = fixture_root / "audit" / "audit.jsonl"
    good = log.read_bytes()
    lines = good.splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"duration": "task"', b'"duration": "sessn"', 1)  # the same length
    log.write_bytes(b"".join(lines))
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            listing = await open_pane(app, pilot)
            assert "TAMPERED" in str(app.query_one("#status", Static).render())
            assert "TAMPERED" in str(app.query_one("#audit-status", Static).render())  # no v pressed
            assert listing.bad_line == 4
            log.write_bytes(good)  # put back as it was
            app.action_refresh()
            await settle(app, pilot)
            assert "audit: valid" in str(app.query_one("#status", Static).render())
            assert "VALID" in str(app.query_one("#audit-status", Static).render()) and listing.bad_line is None
