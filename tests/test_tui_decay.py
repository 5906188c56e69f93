"""The decay pane driven by real keys on a copy of memoryd's root: the distribution, the lists, revive / pin /
ttl / forget on a row, and the sweep as a dry run that is applied only when confirmed."""

from __future__ import annotations

from datetime import UTC, datetime

from helpers import events, settle
from textual.widgets import DataTable

from engram.store.decay import plan_sweep, state_of
from engram.store.models import Memory
from engram.tui.app import EngramApp
from engram.tui.screens.prompt import Confirm

SIZE = (140, 45)
LATER = datetime(2027, 6, 1, tzinfo=UTC)


async def open_pane(app, pilot) -> DataTable:
    await settle(app, pilot)
    await pilot.press("4")
    await settle(app, pilot)
    return app.query_one("#decay-list", DataTable)


def current_slug(table: DataTable) -> str:
    return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value


async def test_distribution_and_lists(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_pane(app, pilot)
        dist = app.query_one("#decay-dist", DataTable)
        assert (
            sum(int(str(dist.get_row_at(r)[1])) for r in range(dist.row_count))
            == Memory.select()
            .where((Memory.decay_state == "alive") & ~Memory.body_path.contains("/forgotten/"))
            .count()
        )
        await pilot.press("t")
        assert dist.columns[next(iter(dist.columns))].label.plain == "type"
        await pilot.press("l")  # dim
        assert {str(table.get_row_at(r)[0]) for r in range(table.row_count)} == {"dim"}


async def test_revive_pin_ttl_forget_by_keys(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        table = await open_pane(app, pilot)
        await pilot.press("l", "l")  # soft-forgotten
        slug = current_slug(table)
        await pilot.press("r")
        await settle(app, pilot)
        assert store.memory(slug).decay_state == "alive"
        await pilot.press("l", "l")  # back to expiring
        slug = current_slug(table)
        await pilot.press("p")
        await settle(app, pilot)
        assert store.memory(slug).ttl_days is None
        await pilot.press("l", "l", "l")  # recently recalled
        slug = current_slug(table)
        await pilot.press("T", *"45", "enter")
        await settle(app, pilot)
        assert store.memory(slug).ttl_days == 45
        slug = current_slug(table)
        await pilot.press("f", "y")
        await settle(app, pilot)
        assert state_of(store.memory(slug)) == "forgotten"
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds[-4:] == ["memory_revived", "memory_pinned", "ttl_set", "memory_forgotten"]


async def test_sweep_is_a_dry_run_until_confirmed(store, fixture_root):
    store.clock = lambda: LATER
    planned = plan_sweep(store)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await open_pane(app, pilot)
        await pilot.press("s")
        assert isinstance(app.screen, Confirm) and f"{len(planned)} memories would change" in app.screen.question
        await pilot.press("n")
        await settle(app, pilot)
        assert plan_sweep(store) == planned  # nothing changed
        await pilot.press("s", "y")
        await settle(app, pilot)
    assert all(state_of(store.memory(s.slug)) == s.after for s in planned)
    assert events(fixture_root)[-1]["event_type"] == "decay_swept"
