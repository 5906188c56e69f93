"""Snooze: a promotion out of the queue until a time a person says, pending for memoryd all along, back on its
own; undone like any decision."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from helpers import events, settle

from engram.store.errors import BadInput
from engram.store.models import Promotion
from engram.store.promotions import snooze, undo
from engram.store.queue import first_page, pending_queue
from engram.store.snooze import parse_until
from engram.tui.app import EngramApp
from engram.tui.cli import main
from engram.tui.panes.queue import QueuePane

NOW = datetime(2026, 12, 2, 15, 30, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("said", "until"),
    [
        ("3d", NOW + timedelta(days=3)),
        ("12h", NOW + timedelta(hours=12)),
        ("2w", NOW + timedelta(weeks=2)),
        ("tomorrow", datetime(2026, 12, 3, 9, tzinfo=UTC)),
        ("next week", datetime(2026, 12, 7, 9, tzinfo=UTC)),
        ("2026-12-20", datetime(2026, 12, 20, tzinfo=UTC)),
    ],
)
def test_spans_and_dates_a_person_types(said, until):
    assert parse_until(said, NOW) == until


@pytest.mark.parametrize("said", ["soon", "-3d", "2026-11-01", ""])
def test_what_is_no_time_to_come_is_refused_naming_the_forms(said):
    with pytest.raises(BadInput, match="snooze until"):
        parse_until(said, NOW)


def test_a_snoozed_promotion_leaves_the_queue_stays_pending_and_comes_back(store, fixture_root):
    pid = pending_queue(store)[0].id
    store.clock = lambda: NOW
    done = snooze(store, pid, NOW + timedelta(days=3))
    assert pid not in [i.id for i in pending_queue(store)]
    page, total = first_page(store, "dura_avg", 50)
    assert pid not in [i.id for i in page] and total == len(pending_queue(store))
    con = sqlite3.connect(fixture_root / "index.db")
    assert con.execute("SELECT status FROM promotions WHERE id = ?", (pid,)).fetchone()[0] == "pending"  # memoryd's
    assert events(fixture_root)[-1]["event_type"] == "promotion_snoozed"
    store.clock = lambda: NOW + timedelta(days=3, seconds=1)
    assert pid in [i.id for i in pending_queue(store)]  # back on its own
    store.clock = lambda: NOW
    undo(store, done)
    assert pid in [i.id for i in pending_queue(store)] and Promotion.get_by_id(pid).status == "pending"


def test_the_cli_snoozes_by_id(fixture_root, capsys):
    code = main(["promotions", "snooze", "16", "--until", "2w", "--root", str(fixture_root)])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("snoozed #16")
    assert main(["promotions", "snooze", "17", "--until", "whenever", "--root", str(fixture_root)]) == 1


async def test_z_snoozes_from_the_queue_and_the_cursor_moves_on(store):
    app = EngramApp(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)
        first, second = (item.id for item in pane.items[:2])
        await pilot.press("z", *"3d", "enter")
        await settle(app, pilot)
        assert first not in [i.id for i in pane.items] and pane.current().id == second
        assert "(1 snoozed)" in str(app.query_one("#status").render())  # still pending for memoryd
        await pilot.press("u")
        await settle(app, pilot)
        assert first in [i.id for i in pane.items] and pane.current().id == first


async def test_a_snooze_that_ends_brings_its_promotion_back_in_an_idle_console(store):
    app = EngramApp(store)
    start = datetime.now(UTC)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)
        first = pane.items[0].id
        await pilot.press("z", *"1h", "enter")
        await settle(app, pilot)
        assert first not in [i.id for i in pane.items]
        store.clock = lambda: start + timedelta(hours=2)  # the hour has passed; nothing else changed
        app.tick()
        await settle(app, pilot)
        assert first in [i.id for i in pane.items]
