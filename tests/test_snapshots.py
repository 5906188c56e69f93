"""Snapshots of the main screens (SVG, compared by pytest-textual-snapshot). After a deliberate change to
how a screen looks: `pytest tests/test_snapshots.py --snapshot-update`, then review the new SVGs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import settle as settled
from textual.widgets import DataTable, Input

from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.tui.app import EngramApp


@pytest.fixture
def app(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        console = EngramApp(store)
        console.sub_title = "memoryd-small"  # the copy's temporary path would differ on every run
        yield console


async def settle(pilot) -> None:
    await settled(pilot.app, pilot)


# Every pane at 80x24 and at 200x50: the smallest terminal must hold all a pane needs, the largest use its room.
PANES = {
    "queue": (),
    "search": ("2", *"type:warning kafka"),
    "supersedes": ("3",),
    "decay": ("4",),
    "graph": ("5",),
    "audit": ("6",),
    "scopes": ("7", "down", "down", "down"),
    "poison": ("8",),
}
SIZES = pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])


async def steady(pilot) -> None:
    """Text boxes' cursors shown steadily: a blink caught at its off half failed a loaded CI run. Tables measured:
    a DataTable sizes its columns to rows just added only when its queue next runs dry, and a loaded CI run caught
    the graph pane's "mentioned in" table between the two, its columns as wide as their headers."""
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    await pilot.pause()
    for _ in range(50):
        tables = pilot.app.screen.query(DataTable)
        if not any(t._require_update_dimensions or t._updated_cells or t._new_rows for t in tables):
            break
        await pilot.pause()


@SIZES
@pytest.mark.parametrize("pane", list(PANES))
def test_pane(app, snap_compare, pane, size):
    async def pane_open(pilot) -> None:
        await settle(pilot)
        await pilot.press(*PANES[pane])
        await settle(pilot)
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=pane_open)


@SIZES
def test_help(app, snap_compare, size):
    async def help_open(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=help_open)


@SIZES
def test_import_preview(app, snap_compare, tmp_path, size):
    source = tmp_path / "openrelix"
    shutil.copytree(Path(__file__).parent / "fixtures" / "importers" / "openrelix", source)

    async def preview(pilot) -> None:
        await settle(pilot)
        await pilot.press("I", "enter", *str(source), "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=preview)


# Every dialog of the day's triage, at 80x24 and at 200x50: what a person answers must fit the smallest terminal,
# and the largest must use its room. Keys go in one at a time, each dialog given a moment to open.
DIALOGS = {
    "edit": ("e",),
    "reject-reason": ("r",),
    "bulk-defer": ("space", "space", "d"),
    "snooze": ("z",),
    "merge-picker": ("m",),
    "merge-confirm": ("m", "down", "enter"),
    "unlock": ("ctrl+u",),
    "thresholds": ("t",),
}


@SIZES
@pytest.mark.parametrize("dialog", sorted(DIALOGS))
def test_dialog(app, snap_compare, dialog, size):
    async def opened(pilot) -> None:
        await settle(pilot)
        for key in DIALOGS[dialog]:
            await pilot.press(key)
            await settle(pilot)
        await steady(pilot)

    assert snap_compare(app, terminal_size=size, run_before=opened)
