"""The scopes pane and the keys of sensitive scopes, driven by real keys on a copy of memoryd's root: unlock and
lock, mark and unmark with confirmation and a progress bar, grants issued and revoked, locked rows in the queue
and in search; files, index and audit checked afterwards."""

from __future__ import annotations

import base64
import json

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from helpers import events, fresh_store, settle
from textual.widgets import DataTable, Input, ProgressBar, Static

from engram.store.models import Memory
from engram.store.sensitive.crypto import KeyRing, derive_passphrase_key
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.messages import OpenMemory
from engram.tui.panes.scopes import ScopesPane
from engram.tui.screens.grant import GrantScreen
from engram.tui.screens.prompt import Confirm, TextPrompt
from engram.tui.widgets.hitlist import HitList

SIZE = (140, 45)
PASSPHRASE = "engram-fixture-passphrase-2026"
WEB, FINANCE, HEALTH = "710d5aaf7a15", "35998c22af79", "91c2073b561e"


async def to_scope(app, pilot, scope: str) -> ScopesPane:
    """Open the scopes pane and put the cursor on ``scope``."""
    await pilot.press("7")
    await settle(app, pilot)
    pane = app.query_one(ScopesPane)
    row = [i.scope_hash for i in pane.infos].index(scope)
    app.query_one("#scope-list", DataTable).move_cursor(row=row)
    await pilot.pause()
    return pane


def status(app) -> str:
    return str(app.query_one("#status", Static).render())


async def test_unlock_with_the_passphrase_then_lock_again(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "2 locked scopes" in status(app)
            await pilot.press("ctrl+u")
            assert isinstance(app.screen, TextPrompt) and app.screen.query_one(Input).password
            await pilot.press(*"wrong-one", "enter")
            await settle(app, pilot)
            assert any("wrong passphrase" in n.message for n in app._notifications)
            assert "2 locked scopes" in status(app)
            await pilot.press("ctrl+u", *PASSPHRASE, "enter")
            await settle(app, pilot)
            assert "0 locked scopes" in status(app)
            await pilot.press("ctrl+l")
            await settle(app, pilot)
            assert "2 locked scopes" in status(app) and store.keys.passphrase is None


async def test_scopes_pane_shows_labels_lock_grant_and_leaks(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            pane = await to_scope(app, pilot, HEALTH)
            table = app.query_one("#scope-list", DataTable)
            row = [str(c) for c in table.get_row_at(table.cursor_row)]
            assert row[1] == "yes, locked !" and row[2] == "task" and "个人健康" in row[3]
            detail = str(app.query_one("#scope-detail", Static).render())
            assert "LOCKED" in detail and "task annual-checkup-2026, until revoked" in detail
            assert "index.db holds in clear: 20 titles" in detail
            assert {i.scope_hash: i.label for i in pane.infos}[WEB].endswith("acme-web")


async def test_mark_asks_confirms_shows_progress_and_encrypts(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await to_scope(app, pilot, WEB)
        await pilot.press("m")
        assert isinstance(app.screen, Confirm) and "54 memories" in app.screen.question
        await pilot.press("y")
        await settle(app, pilot)
        bar = app.query_one("#scope-progress", ProgressBar)
        assert (bar.total, bar.progress) == (54, 54) and not bar.display  # it ran to the end, then hid
        assert "yes, unlocked" in str(app.query_one("#scope-list", DataTable).get_row_at(0)[1])
    files = list((fixture_root / "scopes" / WEB).rglob("*.md*"))
    assert files and all(f.name.endswith(".md.enc") for f in files)
    assert Memory.select().where((Memory.scope_hash == WEB) & ~Memory.body_path.endswith(".md.enc")).count() == 0
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert "scope_marked_sensitive" in kinds and kinds.count("memory_encrypted") == 2  # 54 files, batches of 50


async def test_declining_the_confirmation_changes_nothing(store, fixture_root):
    before = len(events(fixture_root))
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await to_scope(app, pilot, WEB)
        await pilot.press("m", "n")
        await settle(app, pilot)
    assert len(events(fixture_root)) == before
    assert not list((fixture_root / "scopes" / WEB).rglob("*.md.enc"))


async def test_unmark_asks_for_the_passphrase_when_locked_then_decrypts(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await to_scope(app, pilot, FINANCE)
            await pilot.press("M", "y")
            assert isinstance(app.screen, TextPrompt)  # locked: the key first, then the work
            await pilot.press(*PASSPHRASE, "enter")
            await settle(app, pilot)
    files = list((fixture_root / "scopes" / FINANCE).rglob("*.md*"))
    assert len(files) == 18 and not any(f.name.endswith(".enc") for f in files)
    assert events(fixture_root)[-1]["event_type"] == "scope_unmarked_sensitive"


async def test_grant_issue_and_revoke(store, fixture_root):
    grant_file = fixture_root / "grants" / f"{FINANCE}.json"
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await to_scope(app, pilot, FINANCE)
        await pilot.press("i")
        assert isinstance(app.screen, GrantScreen)
        await pilot.press("t", *"q4-close", "enter")
        await settle(app, pilot)
        data = json.loads(grant_file.read_text())
        assert (data["duration"], data["task_id"], data["issued_by"]) == ("task", "q4-close", "engram grant")
        assert "task q4-close, until revoked" in str(app.query_one("#scope-detail", Static).render())
        await pilot.press("R", "y")
        await settle(app, pilot)
        assert not grant_file.exists()
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds[-2:] == ["grant_issued", "grant_revoked"]


async def test_locked_rows_in_queue_and_search(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("2")
            await settle(app, pilot)
            await pilot.press(*f"scope:{HEALTH}")
            await pilot.pause()
            hits = app.query_one(HitList)
            assert hits.hits and "locked" in hits.row_text(0).plain
            await pilot.press("enter", "ctrl+u", *PASSPHRASE, "enter")  # from the results: in the query box
            await settle(app, pilot)  # ctrl+u deletes to the line's start. The index is built again, query rerun
            assert hits.hits and "locked" not in hits.row_text(0).plain and " enc" in hits.row_text(0).plain


async def test_name_a_scope_and_rekey_it(store, fixture_root):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = await to_scope(app, pilot, FINANCE)
        await pilot.press("l", *"Client books", "enter")
        await settle(app, pilot)
        info = {i.scope_hash: i for i in pane.infos}[FINANCE]
        assert (info.label, info.label_from) == ("Client books", "you")
        await to_scope(app, pilot, FINANCE)
        await pilot.press("K", "y", *"new-pass-1", "enter", *"new-pass-1", "enter")
        await settle(app, pilot)
    for scope in store.sensitive_scopes():  # memoryd keeps one passphrase: every sensitive scope moved to it
        key = derive_passphrase_key("new-pass-1", scope)
        for path in (fixture_root / "scopes" / scope).rglob("*.md.enc"):
            raw = base64.b64decode(path.read_bytes())
            assert AESGCM(key).decrypt(raw[:12], raw[12:], scope.encode()).startswith(b"---")
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert "scope_labeled" in kinds and kinds[-1] == "scope_rekeyed"


async def test_a_tampered_file_is_an_error_for_that_memory_only(store, fixture_root):
    row = Memory.get(Memory.scope_hash == FINANCE)
    path = fixture_root / row.body_path
    path.write_bytes(path.read_bytes()[:-8] + b"AAAAAAA=")
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.post_message(OpenMemory(row.slug))
        await settle(app, pilot)
        shown = app.query_one("#search-memory").source
        assert "cannot be opened" in shown and "does not authenticate" in shown
        other = Memory.get((Memory.scope_hash == FINANCE) & (Memory.slug != row.slug))
        app.post_message(OpenMemory(other.slug))
        await settle(app, pilot)
        assert other.title in app.query_one("#search-memory").source  # the rest of the scope still reads


async def test_the_first_sensitive_scope_asks_for_its_passphrase_twice(tmp_path):
    root = tmp_path / "root"
    with fresh_store(root, KeyRing(), WEB) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await to_scope(app, pilot, WEB)
            await pilot.press("m", "y", *"first-pass", "enter", *"first-typo", "enter")
            await settle(app, pilot)
            assert any("differ" in n.message for n in app._notifications)
            assert not list((root / "scopes" / WEB).rglob("*.md.enc"))
            await pilot.press("m", "y", *"first-pass", "enter", *"first-pass", "enter")
            await settle(app, pilot)
    enc = next((root / "scopes" / WEB).rglob("*.md.enc"))
    raw = base64.b64decode(enc.read_bytes())
    key = derive_passphrase_key("first-pass", WEB)
    assert AESGCM(key).decrypt(raw[:12], raw[12:], WEB.encode()).endswith(b"120/h\n")


async def test_a_passphrase_given_once_is_asked_again_before_the_first_encryption(tmp_path):
    root = tmp_path / "root"
    with fresh_store(root, KeyRing(passphrase="from-env"), WEB) as store:  # memoryd's passphrase given once
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await to_scope(app, pilot, WEB)
            await pilot.press("m", "y")
            await settle(app, pilot)
            assert isinstance(app.screen, TextPrompt)  # nothing encrypted under it yet: typed, twice
            assert not list((root / "scopes" / WEB).rglob("*.md.enc"))
            await pilot.press(*"from-env", "enter", *"from-env", "enter")
            await settle(app, pilot)
    assert list((root / "scopes" / WEB).rglob("*.md.enc"))
