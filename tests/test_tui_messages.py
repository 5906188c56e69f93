"""The console's shape: panes tell the console what they did through messages and never call the app; the
console fans the store's changes out to every pane (a hidden one follows when it is next shown); the queue never
decides twice, never sits on a row decided elsewhere, and keeps an undo step until its undo succeeded. The
change feed's look is called directly: no test waits on the clock."""

from __future__ import annotations

import ast
import re
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import events, held, settle, until
from memoryd_emulation import memoryd_append, memoryd_decides, memoryd_saves
from rich.cells import cell_len
from rich.color import Color
from textual.app import App
from textual.widgets import Input, Static, TabPane

from engram.store import promotions
from engram.store.domain import MemoryType
from engram.store.errors import DatabaseLocked
from engram.store.frontmatter import Frontmatter, MemoryDoc
from engram.store.models import Memory, Promotion
from engram.store.settings import Settings
from engram.tui import app as app_module
from engram.tui.app import EngramApp
from engram.tui.colours import role
from engram.tui.panes.audit import AuditPane
from engram.tui.panes.queue import QueuePane
from engram.tui.panes.search import SearchPane
from engram.tui.panes.table import BY_ID
from engram.tui.widgets.promotion import dura_bar

SIZE = (140, 45)
TUI = Path(__file__).parent.parent / "tui"
PLAIN = "710d5aaf7a15"


async def look(app: EngramApp, pilot) -> None:
    app.watch_store()
    await settle(app, pilot)


async def search(app: EngramApp, pilot, text: str) -> list[str]:
    box = app.query_one("#search-query", Input)
    box.value = text
    await settle(app, pilot)
    return [hit.slug for hit in app.query_one(SearchPane).result.hits]


def memoryd_writes_a_fact(root: Path, slug: str, title: str, body: str) -> None:
    fm = Frontmatter(
        title=title,
        slug=slug,
        type=MemoryType.FACT,
        scope_hash=PLAIN,
        source="claude-code",
        created_at=datetime(2026, 11, 24, tzinfo=UTC),
    )
    memoryd_saves(root, MemoryDoc(frontmatter=fm, body=body))


def test_panes_and_screens_reach_the_app_only_through_textual_and_messages():
    """No pane, screen, widget or action helper imports the console's app or uses an attribute of it that
    Textual's App does not have: what they need from it they ask with a message."""
    own = set(vars(EngramApp)) - set(dir(App))
    assert {"check_audit", "refresh_status", "store_changed"} <= own  # the check below means something
    for path in sorted(TUI.glob("**/*.py")):
        if path.name == "app.py" or path.parent.name == "cli":  # the app itself; the CLI starts it
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "engram.tui.app", f"{path.name} imports the app"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "app":
                assert node.attr not in own, f"{path.name}:{node.lineno} calls the app's own {node.attr}"


async def test_a_memory_engram_approves_is_found_by_search_at_once(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await look(app, pilot)
        first = app.query_one(QueuePane).items[0].id
        await pilot.press("a")
        await settle(app, pilot)
        slug = Memory.get(Memory.slug.startswith(f"promoted-{first}-")).slug
        await pilot.press("2")
        assert slug in await search(app, pilot, slug)


async def test_a_memory_memoryd_writes_is_found_by_title_and_body_after_the_next_look(store, fixture_root, monkeypatch):
    monkeypatch.setattr(app_module, "WATCH_SECONDS", 3600)  # only the test's looks: not the clock's, meanwhile
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")  # the bodies are read once the pane is shown
        await settle(app, pilot)
        await look(app, pilot)
        memoryd_writes_a_fact(
            fixture_root, "zanzibar-rollout", "Zanzibar rollout notes", "The quokkaflag must stay off until the end.\n"
        )
        assert await search(app, pilot, "zanzibar") == []
        await look(app, pilot)
        assert await search(app, pilot, "zanzibar") == ["zanzibar-rollout"]
        assert await search(app, pilot, "quokkaflag") == ["zanzibar-rollout"]  # its body, read just now


async def test_a_hidden_pane_marks_itself_stale_and_follows_when_shown(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await look(app, pilot)
        await pilot.press("6")  # the audit pane reads the log
        await settle(app, pilot)
        pane = app.query_one(AuditPane)
        before = len(pane.audit_log)
        await pilot.press("1")
        memoryd_append(
            fixture_root / "audit" / "audit.jsonl",
            {"scope_hash": "91c2073b561e", "event_type": "access_granted", "tool": "search_memory"},
        )
        await look(app, pilot)
        assert pane.stale and len(pane.audit_log) == before  # hidden: nothing read yet
        await pilot.press("6")
        await settle(app, pilot)
        assert not pane.stale and len(pane.audit_log) == before + 1


async def test_the_consoles_audit_check_waits_for_an_audit_pane_still_mounting(store):
    """The check at start may end while the audit pane is made but not yet mounted: it used to query the pane's
    widgets then, and the console said "That did not work"."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        verdict = app.shared.verdict
        assert verdict is not None
        await app.built["audit"].remove()  # made after the queue's first page: made again, not yet mounted
        app.made(BY_ID["audit"])
        app.show_audit(verdict)
        await settle(app, pilot)
        assert not any("did not work" in (n.title or "") + n.message for n in app._notifications)
        await app.query_one("#audit", TabPane).mount(app.built["audit"])
        await pilot.press("6")
        await settle(app, pilot)
        assert "VALID" in str(app.query_one("#audit-status", Static).render())


async def test_a_row_memoryd_decided_under_the_cursor_is_said_and_left(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await look(app, pilot)
        queue = app.query_one(QueuePane)
        gone, after = queue.items[0].id, queue.items[1].id
        memoryd_decides(fixture_root, gone, "rejected")  # the console has not looked since
        lines = len(events(fixture_root))
        told: list[tuple[str, str]] = []  # every notification, kept: a toast's timeout may pass on a loaded machine
        notify = app.notify
        app.notify = lambda message, **kw: (told.append((kw.get("title", ""), message)), notify(message, **kw))[1]
        await pilot.press("a")
        await settle(app, pilot)
        said = [(title, message) for title, message in told if f"#{gone}" in message]
        assert said and said[0][0] == "Changed elsewhere: skipped" and "rejected" in said[0][1]
        assert gone not in {i.id for i in queue.items} and queue.current().id == after
        assert "6 pending" in str(app.query_one("#status", Static).render())
        assert Promotion.get_by_id(gone).status == "rejected" and len(events(fixture_root)) == lines
        assert queue.history.undo_stack == [] and not any("0 promotions" in message for _, message in told)


async def test_a_second_a_while_a_decision_runs_decides_once(store, monkeypatch):
    release, calls = threading.Event(), []
    approve = promotions.approve

    def slow(store, pid, *args):
        calls.append(pid)
        release.wait(10)
        return approve(store, pid, *args)

    monkeypatch.setattr(promotions, "approve", slow)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("a", "u")  # while the first runs: neither decides nor undoes
        release.set()
        await settle(app, pilot)
        assert len(calls) == 1 and len(app.query_one(QueuePane).history.undo_stack) == 1


@pytest.mark.parametrize("failure", ["locked", "changed"])
async def test_undo_keeps_its_step_until_it_succeeded(store, monkeypatch, failure):
    """A database locked for a moment: the step stays, and undo again undoes it. A promotion decided again
    elsewhere: it cannot be undone any more, so undo says so and the step leaves the stack."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        queue = app.query_one(QueuePane)
        first = queue.items[0].id
        await pilot.press("a")
        await settle(app, pilot)
        undo = promotions.undo
        if failure == "locked":

            def locked(*args):
                raise DatabaseLocked("index.db is locked by another writer")

            monkeypatch.setattr(promotions, "undo", locked)
            await pilot.press("u")
            await settle(app, pilot)
            assert len(queue.history.undo_stack) == 1 and Promotion.get_by_id(first).status == "approved"
            monkeypatch.setattr(promotions, "undo", undo)
            await pilot.press("u")
            await settle(app, pilot)
            assert Promotion.get_by_id(first).status == "pending"
        else:
            memoryd_decides(store.layout.root, first, "rejected")
            await pilot.press("u")
            await settle(app, pilot)
            assert any("nothing to undo" in n.message for n in app._notifications)
        assert queue.history.undo_stack == [] and len(queue.history.redo_stack) == 1


COLOUR_NAME = re.compile(r"""["'\[](?:b |bold |dim )?(?:red|green|yellow|magenta|cyan|blue)\b""")


def test_code_names_no_colour_only_roles_the_theme_colours():
    found = [
        f"{path.name}:{n}"
        for path in sorted(TUI.glob("**/*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if COLOUR_NAME.search(line)
    ]
    assert found == []


@pytest.mark.parametrize("theme", ["engram-dark", "engram-high-contrast", "engram-light"])
async def test_a_dura_bar_takes_its_colours_from_the_theme(store, theme):
    app = EngramApp(store, Settings(theme=theme))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        variables = app.get_css_variables()
        bar = dura_bar(0.9, lambda name: role(app, name))
        assert bar.spans[0].style.color == Color.parse(variables["success"])
        assert role(app, "bad").color == Color.parse(variables["error"])


async def test_a_dialog_key_is_remapped_like_any_other(store):
    """Keys of dialogs and lists are in the registry too: here ``confirm.yes`` moves to ``j`` and a bulk
    approval is confirmed with it."""
    app = EngramApp(store, Settings(keys={"confirm.yes": "j"}))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        queue = app.query_one(QueuePane)
        first, second = queue.items[0].id, queue.items[1].id
        await pilot.press("space", "space", "a")
        await settle(app, pilot)
        await pilot.press("y")  # no longer yes
        await settle(app, pilot)
        assert Promotion.get_by_id(first).status == "pending"
        await pilot.press("j")
        await settle(app, pilot)
        assert {Promotion.get_by_id(p).status for p in (first, second)} == {"approved"}


@pytest.mark.parametrize("pane", ["supersedes", "graph", "audit"])
async def test_a_pane_on_screen_follows_the_store_without_moving_the_cursor(store, fixture_root, pane):
    """memoryd writing every few seconds must not pull the cursor away from what a person reads."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await look(app, pilot)
        await app.action_show_pane(pane)
        await settle(app, pilot)
        await pilot.press("j", "j", "j")
        await settle(app, pilot)
        widget = app.query_one({"supersedes": "#chains", "graph": "#entities", "audit": "#audit-lines"}[pane])

        def where() -> object:
            if pane == "supersedes":
                return widget.cursor_node.data[1].slug
            if pane == "graph":
                return app.query_one("GraphPane").current.id
            return widget.current_line

        before = where()
        memoryd_writes_a_fact(fixture_root, "another-note", "Another note", "text\n")
        with sqlite3.connect(
            fixture_root / "index.db"
        ) as con:  # memoryd's digest links two memories: a new chain on top
            con.execute(
                "INSERT INTO supersedes_chain (newer_memory_id, older_memory_id, confidence, decided_at, decided_by, "
                "reason) VALUES (?, ?, 0.97, '2026-11-24T00:00:00+00:00', 'auto', 'newer')",
                (
                    "2026-04-15-Don_t_risk_calling_fetch_in_useEffect_wi-1776211759",
                    "2026-04-03-0ad3f2d6-c878-4ae0-a32e-f1eac3693486",
                ),
            )
        memoryd_append(fixture_root / "audit" / "audit.jsonl", {"event_type": "memory_saved", "target_id": "x"})
        await look(app, pilot)
        await settle(app, pilot)
        assert where() == before


async def test_search_answers_from_the_kept_rows_while_index_db_is_read(store, monkeypatch):
    """At open the search pane answers from what the last open kept of the plain scopes (bodies included); the
    sensitive rows follow once index.db is read, which the test holds back."""
    from engram.store.search.fulltext import FullText, sync
    from engram.store.search.index import SearchIndex

    sync(store)
    SearchIndex.load(store, FullText.open(store), keep=True)
    gate = threading.Event()
    monkeypatch.setattr(SearchIndex, "load", classmethod(held(gate, SearchIndex.load.__func__)))
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        pane = app.query_one(SearchPane)
        await until(pilot, lambda: pane.index is not None)
        assert pane.index is not None and pane.index.partial
        app.query_one("#search-query", Input).value = "config"
        await pilot.pause()
        early = pane.result
        assert early.total and not any(hit.encrypted for hit in early.hits)
        assert "the rest loading" in str(app.query_one("#search-status", Static).render())
        gate.set()
        await settle(app, pilot)
        assert not pane.index.partial
        assert pane.result.total > early.total and any(hit.encrypted for hit in pane.result.hits)


async def test_the_status_says_the_bodies_index_is_being_brought_up_to_date_until_it_answers(store, monkeypatch):
    """On a root's first open the persistent index holds no body yet: while it is built (and loaded again after)
    the status line says so, rather than "in titles, triggers, bodies, tags" over hits of titles only."""
    from engram.store.search import fulltext

    gate = threading.Event()
    monkeypatch.setattr(fulltext, "sync", held(gate, fulltext.sync))
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        pane = app.query_one(SearchPane)
        await until(pilot, lambda: pane.syncing and pane.index is not None)
        app.query_one("#search-query", Input).value = "'config/ssr_cache.yaml"
        await pilot.pause()
        status = str(app.query_one("#search-status", Static).render())
        assert pane.result.total == 0 and "indexing bodies" in status
        gate.set()
        await settle(app, pilot)
        await until(pilot, lambda: not pane.syncing)
        status = str(app.query_one("#search-status", Static).render())
        assert pane.result.total > 0 and "indexing" not in status


async def test_at_80_columns_the_status_line_still_says_bodies_are_being_indexed(store, monkeypatch):
    """The note came last on the line, after the count, the hits shown and where the index looks: at 80 columns,
    with more hits than shown, it was cut off, and the line read "624 matches (best 100 shown) · in all but
    sensitive bodies (loading)" while no body had been indexed yet."""
    import engram.tui.panes.search as search_module
    from engram.store.search import fulltext

    gate = threading.Event()
    monkeypatch.setattr(fulltext, "sync", held(gate, fulltext.sync))
    monkeypatch.setattr(search_module, "SHOWN", 1)
    app = EngramApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        pane = app.query_one(SearchPane)
        await until(pilot, lambda: pane.syncing and pane.index is not None)
        app.query_one("#search-query", Input).value = "e"
        await pilot.pause()
        line = app.query_one("#search-status", Static)
        status = str(line.render())
        assert pane.result.total > len(pane.result.hits) and "shown" in status
        assert "so far" in status and status.endswith("indexing bodies…")
        assert cell_len(status) <= line.content_size.width, status
        gate.set()
        await settle(app, pilot)


async def test_a_large_index_is_searched_in_a_worker_and_only_the_last_query_is_shown(store, monkeypatch):
    import engram.tui.panes.search as search_module

    monkeypatch.setattr(search_module, "INLINE", 0)  # every index counts as large
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        pane = app.query_one(SearchPane)
        box = app.query_one("#search-query", Input)
        box.value = "config"
        box.value = "zzzz-no-such-thing"  # typed before the first answer came
        await settle(app, pilot)
        assert pane.result.total == 0 and not pane.result.hits
        assert await search(app, pilot, "config")  # and a query left standing is answered


class _Idle:
    """A timer the search pane sets after a key, in place of Textual's: it fires when the test says the delay
    has passed, not when the wall clock does (a loaded machine would let it fire between two keys)."""

    def __init__(self, delay: float, callback) -> None:  # type: ignore[no-untyped-def]
        self.delay, self.callback, self.stopped = delay, callback, False

    def stop(self) -> None:
        self.stopped = True


async def test_the_index_lets_go_of_its_mapped_pages_once_typing_stops(store, monkeypatch):
    import engram.tui.panes.search as search_module
    from engram.store.search.index import SearchIndex

    released: list[SearchIndex] = []
    monkeypatch.setattr(SearchIndex, "release", lambda index: released.append(index))
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        pane = app.query_one(SearchPane)
        timers: list[_Idle] = []

        def set_timer(delay: float, callback) -> _Idle:  # type: ignore[no-untyped-def]
            timers.append(_Idle(delay, callback))
            return timers[-1]

        monkeypatch.setattr(pane, "set_timer", set_timer)
        box = app.query_one("#search-query", Input)
        for text in ("c", "co", "con"):
            box.value = text
            await pilot.pause()
        assert [t.delay for t in timers] == [search_module.IDLE] * 3
        assert [t.stopped for t in timers] == [True, True, False]  # each key put the release off
        assert released == []
        timers[-1].callback()  # the delay passes with no key
        assert released == [pane.index]
