"""A person's reasons for rejecting or deferring a sensitive scope's promotion: sealed in engram.db, read back
while the scope is unlocked, sealed when a scope is marked sensitive and opened when it is unmarked."""

from __future__ import annotations

from pathlib import Path

from test_audit_privacy import FINANCE, PLAIN, proposal

from engram.store.models import PromotionNote
from engram.store.promotions import defer, propose, reject
from engram.store.queue import promotion_detail
from engram.store.sensitive.convert import mark_sensitive, unmark_sensitive
from engram.store.sensitive.crypto import KeyRing
from engram.store.sensitive.reasons import LOCKED
from engram.store.service import Store

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
