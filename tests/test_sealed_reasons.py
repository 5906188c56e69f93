"""A person's reasons for rejecting or deferring a sensitive scope's promotion: sealed in engram.db, read back
while the scope is unlocked, sealed when a scope is marked sensitive and opened when it is unmarked; given
while the scope is locked, not kept, and the person told so."""

from __future__ import annotations

from pathlib import Path

from helpers import settle
from test_audit_privacy import FINANCE, PLAIN, proposal
from textual.widgets import DataTable

from engram.store.models import PromotionNote
from engram.store.promotions import defer, propose, reject
from engram.store.queue import promotion_detail
from engram.store.sensitive.convert import mark_sensitive, unmark_sensitive
from engram.store.sensitive.crypto import KeyRing
from engram.store.sensitive.reasons import LOCKED
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.cli import main

WORDS = "Quartz-Heron"


def stored(root: Path) -> bytes:
    """What engram.db's files hold, its write-ahead log included."""
    return b"".join(path.read_bytes() for path in sorted(root.glob("engram.db*")))


def test_a_reason_for_a_sensitive_scope_never_reaches_engram_db_in_plaintext(store, fixture_root):
    rejected, deferred = propose(store, proposal(FINANCE)), propose(store, proposal(FINANCE, "another one"))
    reject(store, rejected, reason=f"{WORDS} is a duplicate")
    defer(store, deferred, reason=f"{WORDS} later")
    assert WORDS.encode() not in stored(fixture_root)
    assert promotion_detail(store, deferred).defer_reason == f"{WORDS} later"


def test_a_locked_scope_shows_its_reason_as_sealed(store, fixture_root):
    deferred = propose(store, proposal(FINANCE))
    defer(store, deferred, reason=f"{WORDS} later")
    store.close()
    with Store.open(fixture_root, keys=KeyRing(passphrase=None), actor="engram-test") as locked:
        assert promotion_detail(locked, deferred).defer_reason == LOCKED


def test_marking_seals_a_scope_s_reasons_and_unmarking_opens_them(store, fixture_root):
    deferred = propose(store, proposal(PLAIN, "a plain one"))
    defer(store, deferred, reason=f"{WORDS} later")
    assert WORDS.encode() in stored(fixture_root)  # a plain scope's reason is kept as it was typed
    mark_sensitive(store, PLAIN, discover_in=())
    assert WORDS.encode() not in stored(fixture_root)
    assert promotion_detail(store, deferred).defer_reason == f"{WORDS} later"
    unmark_sensitive(store, PLAIN)
    assert PromotionNote.get_by_id(deferred).defer_reason == f"{WORDS} later"


def test_a_reason_given_while_the_scope_is_locked_is_not_kept_and_the_person_is_told(store, fixture_root, capsys):
    pid = propose(store, proposal(FINANCE))
    store.close()
    assert main(["promotions", "reject", str(pid), "--reason", f"{WORDS} again", "--root", str(fixture_root)]) == 0
    told = "its reason is not kept: the scope is sensitive and locked"
    assert capsys.readouterr().out.strip() == f"rejected #{pid} ({told})"
    with Store.open(fixture_root, keys=KeyRing(passphrase=None), actor="engram-test"):
        note = PromotionNote.get_or_none(PromotionNote.promotion_id == pid)
    assert note is None or not note.reject_reason
    assert WORDS.encode() not in stored(fixture_root)


async def test_the_console_says_a_locked_scope_s_reason_is_not_kept(store, fixture_root):
    pid = propose(store, proposal(FINANCE))
    store.close()
    with Store.open(fixture_root, keys=KeyRing(passphrase=None), actor="engram-test") as locked:
        app = EngramApp(locked)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(app, pilot)
            table = app.query_one("#queue-table", DataTable)
            table.move_cursor(row=table.get_row_index(str(pid)))
            await settle(app, pilot)
            await pilot.press("r", *"dup", "enter")
            await settle(app, pilot)
            told = [n.message for n in app._notifications if "is not kept" in n.message]
    assert told == [f"the reason for #{pid} is not kept: its scope is sensitive and locked (ctrl+u unlocks it)"]
