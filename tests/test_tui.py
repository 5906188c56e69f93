"""The console driven by real keys (Textual's Pilot) on a copy of memoryd's root: every queue action, the
search pane, help, keymap and themes; files, index and audit checked afterwards."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3

import pytest
from helpers import events, settle
from textual.widgets import DataTable, Input, Markdown, OptionList, Static, Tree

from engram.store.domain import MemoryType
from engram.store.drift.check import KINDS
from engram.store.errors import StoreError
from engram.store.models import Memory, Promotion, PromotionNote
from engram.store.paths import engram_config_dir
from engram.store.promotions import Proposal, propose
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.store.settings import Settings, load_settings, settings_or_defaults
from engram.tui.app import EngramApp
from engram.tui.panes.queue import QueuePane
from engram.tui.panes.search import SearchPane
from engram.tui.panes.table import PANES
from engram.tui.screens.edit import EditScreen
from engram.tui.screens.help import HelpScreen
from engram.tui.screens.pick import MemoryPicker
from engram.tui.screens.prompt import Confirm
from engram.tui.widgets.hitlist import MATCH, HitList

SIZE = (140, 45)


def queue_ids(app) -> list[int]:
    return [item.id for item in app.query_one(QueuePane).items]


@pytest.fixture
def console(store):
    return EngramApp(store)


async def test_opens_on_the_queue_with_status_and_detail(console, fixture_root):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        status = str(console.query_one("#status", Static).render())
        assert "7 pending" in status and "audit: valid, 200 lines" in status
        assert len(queue_ids(console)) == 7
        head = str(console.query_one("#detail-head", Static).render())
        assert f"#{queue_ids(console)[0]}" in head


async def test_approve_then_undo_then_redo(console, fixture_root):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        first = queue_ids(console)[0]
        await pilot.press("a")
        await settle(console, pilot)
        assert Promotion.get_by_id(first).status == "approved"
        row = Memory.get(Memory.slug.startswith(f"promoted-{first}-"))
        assert (fixture_root / row.body_path).exists()
        assert first not in queue_ids(console)
        await pilot.press("u")
        await settle(console, pilot)
        assert Promotion.get_by_id(first).status == "pending"
        assert not (fixture_root / row.body_path).exists()
        await pilot.press("ctrl+r")
        await settle(console, pilot)
        assert Promotion.get_by_id(first).status == "approved"
    kinds = [e["event_type"] for e in events(fixture_root)[-3:]]
    assert kinds == ["promotion_approved", "undo_applied", "promotion_approved"]


async def test_reject_with_a_reason(console, fixture_root):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        first = queue_ids(console)[0]
        await pilot.press("r")
        await pilot.press(*"duplicate", "enter")
        await settle(console, pilot)
    assert Promotion.get_by_id(first).status == "rejected"
    assert PromotionNote.get_by_id(first).reject_reason == "duplicate"
    reason = json.loads(events(fixture_root)[-1]["details"])["reason"]  # the log keeps identifiers, text hashed
    assert reason == "sha256:" + hashlib.sha256(b"duplicate").hexdigest()


async def test_defer_sinks_and_escape_cancels(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        first = queue_ids(console)[0]
        await pilot.press("d", "escape")  # cancelled: nothing happens
        await settle(console, pilot)
        assert PromotionNote.get_or_none(PromotionNote.promotion_id == first) is None
        await pilot.press("d", *"ask", "enter")
        await settle(console, pilot)
        assert Promotion.get_by_id(first).status == "pending"
        assert queue_ids(console)[-1] == first
        assert console.query_one(QueuePane).cells(console.query_one(QueuePane).items[-1])[4] == "deferred"


async def test_bulk_marks_confirm_and_approve(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        chosen = queue_ids(console)[:2]
        await pilot.press("space", "space")
        assert console.query_one(QueuePane).marked == set(chosen)
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("n")  # the confirmation: no
        await settle(console, pilot)
        assert all(Promotion.get_by_id(p).status == "pending" for p in chosen)
        await pilot.press("a", "y")
        await settle(console, pilot)
        assert all(Promotion.get_by_id(p).status == "approved" for p in chosen)
        await pilot.press("u")  # one undo reverses the whole bulk step
        await settle(console, pilot)
        assert all(Promotion.get_by_id(p).status == "pending" for p in chosen)


async def test_edit_before_approving(console, fixture_root):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        first = queue_ids(console)[0]
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(console.screen, EditScreen)
        console.screen.query_one("#title", Input).value = "A better title"
        await pilot.press("ctrl+s")
        await settle(console, pilot)
    row = Memory.get(Memory.slug.startswith(f"promoted-{first}-"))
    assert row.title == "A better title"
    assert "title: A better title" in (fixture_root / row.body_path).read_text()


async def test_merge_into_a_memory_picked_by_search(console, fixture_root):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        first = queue_ids(console)[0]
        await pilot.press("m")
        await settle(console, pilot)
        picker = console.screen
        assert isinstance(picker, MemoryPicker)
        assert picker.query_one("#query", Input).value == ""  # the scope is fixed, not text to type over
        scope = Promotion.get_by_id(first).scope_hash
        await pilot.press(*"kafka")  # words of other scopes' memories too: only this scope's are offered
        await pilot.pause()
        offered = picker.query_one("#results", OptionList)
        slugs = [offered.get_option_at_index(i).id for i in range(offered.option_count)]
        assert slugs and all(Memory.get(Memory.slug == slug).scope_hash == scope for slug in slugs)
        await pilot.press("down", "down", "enter")  # ↓ into the list, down one, one enter picks the second
        await pilot.pause()
        confirm = console.screen
        target_title = Memory.get(Memory.slug == slugs[1]).title
        assert isinstance(confirm, Confirm) and target_title[:20] in confirm.question  # named, with a preview
        assert Promotion.get_by_id(first).status == "pending"  # nothing merged before the yes
        await pilot.press("y")
        await settle(console, pilot)
    note = PromotionNote.get_by_id(first)
    assert note.merged_into == slugs[1]
    assert Promotion.get_by_id(first).status == "merged" and note.merged_into
    target = Memory.get(Memory.slug == note.merged_into)
    assert f"merged from promotion #{first}" in (fixture_root / target.body_path).read_text()


async def test_locked_scope_asks_for_the_passphrase(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        session = Memory.get((Memory.scope_hash == "35998c22af79") & (Memory.type == "session"))
        pid = propose(
            store,
            Proposal(
                session.slug,
                MemoryType.FACT,
                "CANARY locked fact",
                "body",
                ["x"],
                {"D": 1.0, "U": 1.0, "R": 1.0, "A": 1.0},
                "test",
                "35998c22af79",
            ),
        )
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            pane = app.query_one(QueuePane)
            assert queue_ids(app)[0] == pid and pane.cells(pane.items[0])[4] == "locked"
            await pilot.press("a", *"wrong", "enter")
            await settle(app, pilot)
            assert Promotion.get_by_id(pid).status == "pending"
            assert any("wrong passphrase" in n.message for n in app._notifications)
            await pilot.press("a", *"engram-fixture-passphrase-2026", "enter")
            await settle(app, pilot)
            assert Promotion.get_by_id(pid).status == "approved"
            row = Memory.get(Memory.slug.startswith(f"promoted-{pid}-"))
            assert row.body_path.endswith(".md.enc")
            assert b"CANARY" not in (fixture_root / row.body_path).read_bytes()


async def test_filter_and_sort(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("slash", *"type:warning", "enter")
        await settle(console, pilot)
        assert {i.type for i in console.query_one(QueuePane).items} == {"warning"}
        await pilot.press("escape")
        await settle(console, pilot)
        assert len(queue_ids(console)) == 7
        await pilot.press("s")
        await settle(console, pilot)
        assert console.query_one(QueuePane).sort == "dura_min"


async def test_bodies_are_found_from_the_persistent_index_without_reading_files(store, monkeypatch):
    """With the search cache up to date, a body phrase is found as soon as the index loads: no file is read
    (enrichment, which reads files, is switched off here), and the index loads once the queue has settled."""
    from engram.store.search.fulltext import sync
    from engram.store.search.index import SearchIndex

    sync(store)
    monkeypatch.setattr(SearchIndex, "enrich", lambda *args, **kwargs: 0)
    console = EngramApp(store)
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        pane = console.query_one(SearchPane)
        assert pane.index is not None and not pane.loaded  # loaded while hidden, after the queue's first page
        await pilot.press("2", *"'config/ssr_cache.yaml")
        await settle(console, pilot)
        assert pane.result is not None and pane.result.total > 0
        assert all("config/ssr_cache.yaml" not in hit.title for hit in pane.result.hits)


async def test_search_pane_finds_and_opens_with_why(console, fixture_root):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("2")
        await settle(console, pilot)
        await pilot.press(*"quickbooks")
        await pilot.pause()
        pane = console.query_one(SearchPane)
        assert pane.result.total and "quickbooks" in pane.result.hits[0].title.lower()
        await pilot.press("enter", "enter")  # to the results, then open the first
        await settle(console, pilot)
        shown = console.query_one("#search-memory", Markdown).source
        assert "## Why is this here" in shown and "## Frontmatter" in shown
    if pane.result.hits[0].encrypted:
        assert events(fixture_root)[-1]["event_type"] == "sensitive_viewed"


async def test_search_results_move_by_keys_and_open_by_click(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("2")
        await settle(console, pilot)
        await pilot.press("enter")  # no query: the newest memories, more than fit on screen
        hits = console.query_one(HitList)
        assert hits.has_focus and len(hits.hits) > hits.size.height
        await pilot.press("j", "j", "down")
        assert hits.cursor == 3
        await pilot.press("k")
        assert hits.cursor == 2
        listed = len(hits.hits)
        await pilot.press("G")
        assert hits.cursor == listed - 1  # the last listed (more are listed below it)
        assert hits.scroll_offset.y > 0  # the cursor row was scrolled into view
        await pilot.press("g", "k")
        assert hits.cursor == 0 and hits.scroll_offset.y == 0
        await pilot.click(HitList, offset=(5, 5))  # line 0 is the header, then two lines a hit: the third hit
        await settle(console, pilot)
        assert hits.cursor == 2
        shown = console.query_one("#search-memory", Markdown).source
        assert hits.hits[2].title in shown


async def test_search_lists_more_at_the_end_and_keeps_the_cursor_on_a_refresh(console):
    """The cursor reaching the last hit listed lists as many more, and stays on its hit; the same query asked
    again (the index refreshed under it as memoryd writes) leaves the cursor where it was, not at the top."""
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("2")
        await settle(console, pilot)
        pane = console.query_one(SearchPane)
        hits = console.query_one(HitList)
        assert pane.result.total > 100 and len(hits.hits) == 100  # the fixture's 198 memories, no query
        await pilot.press("enter", "G")
        await settle(console, pilot)
        last = hits.hits[99].slug
        assert len(hits.hits) == pane.result.total and hits.cursor == 99 and hits.current.slug == last
        assert f"{pane.result.total} matches ·" in str(console.query_one("#search-status", Static).render())
        await pilot.press("k", "k")
        here = hits.current.slug
        pane.ready(pane.index)  # what a refresh delivers: the same query asked of a fresh index
        await settle(console, pilot)
        assert hits.current.slug == here and hits.cursor == 97
        await pilot.press("escape", "e")  # a new query: the best hit first, the first hundred again
        await settle(console, pilot)
        assert console.query_one("#search-query", Input).value == "e"
        assert hits.cursor == 0 and len(hits.hits) == min(100, pane.result.total)


async def test_help_lists_every_action_and_filters(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(console.screen, HelpScreen)
        table = console.screen.query_one("#keys", DataTable)
        everything = table.row_count
        await pilot.press(*"undo")
        await pilot.pause()
        assert 0 < table.row_count < everything
        await pilot.press("escape")


async def test_user_keymap_and_theme(store):
    app = EngramApp(store, Settings(theme="engram-light", keys={"queue.approve": "y"}))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.theme == "engram-light"
        first = queue_ids(app)[0]
        await pilot.press("y")
        await settle(app, pilot)
        assert Promotion.get_by_id(first).status == "approved"


async def test_a_theme_that_does_not_exist_falls_back_with_a_notification(store):
    app = EngramApp(store, Settings(theme="no-such-theme"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.theme == "engram-dark" and app.is_running
        assert any("no theme named 'no-such-theme'" in n.message for n in app._notifications)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("theme = [", "config.toml: "),
        ('thme = "engram-light"', "unknown setting 'thme'"),
        ('[keys]\n"queue.approve" = 3', "keys.queue.approve: Input should be a valid string"),
        ('[audit]\ncheckpoint_copy = ""', "audit.checkpoint_copy"),
    ],
)
def test_a_broken_config_toml_is_named_with_its_key(text, said):
    (engram_config_dir() / "config.toml").parent.mkdir(parents=True, exist_ok=True)
    (engram_config_dir() / "config.toml").write_text(text + "\n")
    with pytest.raises(StoreError, match=re.escape(said)):
        load_settings()
    settings, problem = settings_or_defaults()
    assert settings == Settings() and problem is not None and said in problem


async def test_a_broken_config_toml_opens_the_console_with_defaults_and_says_why(store):
    (engram_config_dir() / "config.toml").parent.mkdir(parents=True, exist_ok=True)
    (engram_config_dir() / "config.toml").write_text('thme = "engram-light"\n')
    settings, problem = settings_or_defaults()
    app = EngramApp(store, settings, warnings=[problem] if problem else [])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.is_running and app.theme == "engram-dark"
        assert [n.message for n in app._notifications if "unknown setting 'thme'" in n.message]


async def test_read_only_root_is_announced_and_refuses(fixture_root):
    con = sqlite3.connect(fixture_root / "index.db")
    con.execute("INSERT INTO _schema_migrations VALUES ('006_future.sql', 'x')")
    con.commit()
    con.close()
    with Store.open(fixture_root) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert any("006_future.sql" in n.message for n in app._notifications)
            await pilot.press("a")
            await settle(app, pilot)
            assert any("read-only" in n.message for n in app._notifications)
            assert "READ-ONLY" in str(app.query_one("#status", Static).render())


async def test_small_terminal_stacks_the_detail_and_a_wide_one_puts_it_beside(console):
    """Textual's breakpoints: below 110 columns the screen is -narrow and the detail goes under the list."""
    async with console.run_test(size=(80, 24)) as pilot:
        await settle(console, pilot)
        table, detail = console.query_one("#queue-table"), console.query_one("#queue-detail")
        assert console.screen.has_class("-narrow") and detail.region.y > table.region.y
        await pilot.resize_terminal(160, 40)
        await settle(console, pilot)
        assert not console.screen.has_class("-narrow") and detail.region.x > table.region.x  # -roomy from 120


async def test_search_highlights_the_typed_words(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("2")
        await settle(console, pilot)
        await pilot.press(*"kafka")
        await pilot.pause()
        line = console.query_one(HitList).row_text(0)
        start = next(span.start for span in line.spans if span.style == MATCH)
        assert line.plain[start : start + 5].lower() == "kafka"


async def test_each_result_shows_the_body_around_the_match(console):
    """The line under each result's title is its body around the typed word (why it was found); a sensitive
    memory's body is not read for it, and a locked one says how to unlock."""
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("2")
        await settle(console, pilot)
        await pilot.press(*"kafka")
        await settle(console, pilot)
        listing = console.query_one(HitList)
        lines = {hit.slug: listing.row_detail(row, 1) for row, hit in enumerate(listing.hits)}
        found = [line for line in lines.values() if any(span.style == MATCH for span in line.spans)]
        assert found, "no result shows the word in its body"
        start = next(span.start for span in found[0].spans if span.style == MATCH)
        assert found[0].plain[start : start + 5].lower() == "kafka"
        for hit in listing.hits:
            if hit.encrypted:
                assert "ctrl+u unlocks" in lines[hit.slug].plain or "enter opens it" in lines[hit.slug].plain
            else:
                assert "kafka" not in hit.title.lower() or lines[hit.slug].plain.strip(), hit.slug


async def test_no_color_still_says_every_state(fixture_root, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            status = str(app.query_one("#status", Static).render())
            assert "2 locked scopes" in status and "audit: valid" in status


async def test_scopes_pane_runs_the_drift_check_when_shown(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        findings = console.query_one("#findings", DataTable)
        assert findings.row_count == 0  # not run at start: it reads every file
        await pilot.press("7")
        await settle(console, pilot)
        rows = [[str(c) for c in findings.get_row_at(i)] for i in range(findings.row_count)]
        assert ["26", "yes", KINDS["decay_index_only"][0]] in rows
        assert "198 memories" in str(console.query_one("#summary", Static).render())


@pytest.mark.parametrize(
    "damage, shown", [("line", "audit: TAMPERED at line 4"), ("checkpoint", "audit: TAMPERED (checkpoint)")]
)
async def test_status_line_names_what_failed_verification(store, fixture_root, damage, shown):
    log = fixture_root / "audit" / "audit.jsonl"
    if damage == "line":
        lines = log.read_bytes().splitlines(keepends=True)
        lines[2] = lines[2].replace(b'"duration": "task"', b'"duration": "session"', 1)
        log.write_bytes(b"".join(lines))
    else:
        store.checkpoints.path.parent.mkdir(parents=True, exist_ok=True)
        store.checkpoints.path.write_text('{"format": "something-else/9"}', encoding="utf-8")
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert shown in str(app.query_one("#status", Static).render())


async def test_a_pane_command_from_the_palette_shows_its_pane_before_it_acts(store):
    """ "Queue: Approve" chosen while the graph is showing switches to the queue, then approves the row under the
    cursor there: never a row nobody sees."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        first = queue_ids(app)[0]
        await pilot.press("5")
        await settle(app, pilot)
        assert app.showing == "graph"
        commands = [c.title for c in app.get_system_commands(app.screen)]
        pane_commands = [t for t in commands if ": " in t]
        assert pane_commands[0].startswith("Graph: ")  # the showing pane's commands first
        assert "Queue: Approve" in pane_commands and "Scopes: Mark sensitive" in pane_commands
        await pilot.press("colon", *"Queue: Approve")
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.showing == "queue"
        assert Promotion.get_by_id(first).status == "approved"


async def test_every_pane_comes_from_the_table(store):
    """Tabs, number keys and focus targets are the table's: each key shows its pane and focuses its widget (the
    search pane last: its query field takes digits as text)."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for pane in sorted(reversed(PANES), key=lambda p: p.id == "search"):
            await pilot.press(pane.key)
            await settle(app, pilot)
            assert app.showing == pane.id and app.focused is app.query_one(pane.focus)


@pytest.mark.parametrize(
    ("pane", "listing"),
    [("decay", "#decay-list"), ("scopes", "#scope-list"), ("graph", "#entities"), ("supersedes", "#chains")],
)
async def test_j_k_g_G_move_in_every_list(store, pane, listing):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await app.action_show_pane(pane)
        await settle(app, pilot)
        widget = app.query_one(listing)
        if isinstance(widget, Tree):
            at, last = (lambda: widget.cursor_line), widget.last_line
        else:
            at, last = (lambda: widget.cursor_row), widget.row_count - 1
        assert last >= 2
        await pilot.press("j", "j")
        assert at() == 2
        await pilot.press("k")
        assert at() == 1
        await pilot.press("G")
        assert at() == last
        await pilot.press("g")
        assert at() == 0
