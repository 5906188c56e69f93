"""The history and the sync-conflict inbox in the console, by their keys: `h` in the search, then `R` restores;
`C` from anywhere, then `r`, `l`, or `m` and an edit, settle a conflict. Snapshots at 80x24 and 200x50."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import settle
from memoryd_emulation import memoryd_sync_imports, memoryd_updates
from textual.widgets import Input, TextArea

from engram.store import conflicts as inbox
from engram.store.history import ops
from engram.store.memories import edit_memory
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.screens.conflicts import ConflictsScreen, MergeScreen
from engram.tui.screens.history import HistoryScreen

SLUG = "promoted-1-2026-04-04-709bdda6-94d4-4c36-bd1d-8480d691cfe9"
PLAIN = f"scopes/798e262b88f2/playbooks/{SLUG}.md"
NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # revisions' ids and times the same on every run


def fixed(store: Store) -> Store:
    store.clock = lambda: NOW
    return store


def rewritten(fixture_root: Path) -> None:
    """The memory edited by memoryd, then by engram: three revisions of it."""
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as store:
        fixed(store)
        ops.catch_up(store)
        memoryd_updates(fixture_root, SLUG, body="memoryd rewrote it: drain the consumer group first.\n", at=NOW)
        edit_memory(store, SLUG, title="Resize the consumer group safely")


def conflicted(fixture_root: Path, tmp_path: Path) -> None:
    """memoryd's sync import overwrote the memory with the other machine's copy."""
    sync = tmp_path / "sync"
    (sync / PLAIN).parent.mkdir(parents=True)
    (sync / PLAIN).write_bytes((fixture_root / PLAIN).read_bytes().replace(b"\n---\n", b"\n---\nFrom the laptop.\n", 1))
    assert memoryd_sync_imports(fixture_root, sync) == 1


async def open_history(pilot) -> None:
    await settle(pilot.app, pilot)
    await pilot.press("2", *"consumer group safely", "enter")
    await settle(pilot.app, pilot)
    await pilot.press("h")
    await settle(pilot.app, pilot)
    await pilot.press("j")  # the version before engram's edit
    await settle(pilot.app, pilot)


@contextmanager
def console(fixture_root: Path) -> Iterator[EngramApp]:
    """The console on the root, opened after the root was prepared (a process has one open store: the models
    are bound to its index)."""
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-tui") as store:
        app = EngramApp(fixed(store))
        app.sub_title = "memoryd-small"
        yield app


async def test_h_shows_the_revisions_and_r_restores_one(fixture_root):
    rewritten(fixture_root)
    with console(fixture_root) as app:
        async with app.run_test(size=(100, 30)) as pilot:
            await open_history(pilot)
            screen = app.screen
            assert isinstance(screen, HistoryScreen)
            assert [r.commit.author for r in screen.items][:2] == ["engram-test", "outside-engram"]
            await pilot.press("R", "y")
            await settle(app, pilot)
    text = (fixture_root / PLAIN).read_text()
    assert "memoryd rewrote it" in text and "Resize the consumer group safely" not in text


async def decide(fixture_root: Path, *keys: str) -> None:
    """Open the inbox, press ``keys``, and see the conflict gone."""
    with console(fixture_root) as app:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(app, pilot)
            assert "1 sync conflict (C)" in str(app.query_one("#status").render())
            await pilot.press("C")
            await settle(app, pilot)
            assert isinstance(app.screen, ConflictsScreen)
            await pilot.press(*keys)
            await settle(app, pilot)
            assert inbox.conflicts(app.store) == []


async def test_l_keeps_the_local_version(fixture_root, tmp_path):
    conflicted(fixture_root, tmp_path)
    await decide(fixture_root, "l", "y")
    assert "From the laptop." not in (fixture_root / PLAIN).read_text()


async def test_r_keeps_the_remote_version(fixture_root, tmp_path):
    conflicted(fixture_root, tmp_path)
    await decide(fixture_root, "r", "y")
    assert "From the laptop." in (fixture_root / PLAIN).read_text()


async def test_m_merges_in_the_editor_and_refuses_markers_left(fixture_root, tmp_path):
    conflicted(fixture_root, tmp_path)
    with console(fixture_root) as app:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(app, pilot)
            await pilot.press("C")
            await settle(app, pilot)
            await pilot.press("m")
            await settle(app, pilot)
            assert isinstance(app.screen, MergeScreen)
            await pilot.press("ctrl+s")  # markers left: refused, nothing written
            assert isinstance(app.screen, MergeScreen)
            merged = (fixture_root / PLAIN).read_text().replace("From the laptop.", "Merged.")
            app.screen.query_one(TextArea).text = merged
            await pilot.press("ctrl+s")
            await settle(app, pilot)
    text = (fixture_root / PLAIN).read_text()
    assert "Merged." in text and "From the laptop." not in text


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_history_snapshot(fixture_root, snap_compare, size, monkeypatch):
    made = itertools.count(1)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(made)))  # op ids, in the revisions' messages
    rewritten(fixture_root)

    async def opened(pilot) -> None:
        await open_history(pilot)
        for box in pilot.app.query(Input):
            box.cursor_blink = False

    with console(fixture_root) as app:
        assert snap_compare(app, terminal_size=size, run_before=opened)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_conflicts_snapshot(fixture_root, tmp_path, snap_compare, size):
    conflicted(fixture_root, tmp_path)

    async def opened(pilot) -> None:
        await settle(pilot.app, pilot)
        await pilot.press("C")
        await settle(pilot.app, pilot)

    with console(fixture_root) as app:
        assert snap_compare(app, terminal_size=size, run_before=opened)
