"""The binding manifest: files engram encrypts are bound; swapped and rolled-back files are flagged, not
accepted; memoryd's files are bound once they decrypt; memoryd's later edits are told apart from rollbacks."""

from __future__ import annotations

import base64
import sqlite3
from datetime import UTC, datetime, timedelta

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engram.store.decay import set_ttl
from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.explain import explain
from engram.store.frontmatter import parse, serialize
from engram.store.memories import edit_memory
from engram.store.models import Binding, BindingGuard, Memory
from engram.store.sensitive.binding import BOUND, CHANGED, ROLLED_BACK, SWAPPED, UNBOUND, verify
from engram.store.sensitive.convert import mark_sensitive, unmark_sensitive
from engram.store.sensitive.crypto import derive_passphrase_key
from engram.store.service import Store
from engram.store.write.change import memory_row

PASSPHRASE = "engram-fixture-passphrase-2026"
FINANCE, WEB = "35998c22af79", "710d5aaf7a15"


def state(store, rel: str) -> str:
    data = store.layout.resolve(rel).read_bytes()
    plaintext = store.read_bytes(rel)
    return verify(store, rel, data, parse(plaintext, rel), plaintext).state


def finance_files(store) -> list[str]:
    return [m.body_path for m in Memory.select().where(Memory.scope_hash == FINANCE).order_by(Memory.slug)]


def test_memoryd_files_are_unbound_until_repair_binds_them(store):
    rels = finance_files(store)
    assert {state(store, r) for r in rels} == {UNBOUND}
    assert len(check(store).unbound[FINANCE]) == len(rels)
    repair(store)
    assert {state(store, r) for r in rels} == {BOUND}
    assert check(store).unbound == {}


def test_files_engram_encrypts_are_bound_and_unmark_forgets_them(store):
    mark_sensitive(store, WEB)
    rels = [m.body_path for m in Memory.select().where(Memory.scope_hash == WEB)]
    assert {state(store, r) for r in rels} == {BOUND}
    unmark_sensitive(store, WEB)
    assert Binding.select().where(Binding.scope_hash == WEB).count() == 0


def test_a_binding_engram_db_lost_to_a_crash_is_read_from_its_twin_and_settled_by_the_next_write(store):
    """SQLite commits index.db and the attached engram.db one after the other: a kill in between keeps the
    change's index row and loses its new binding. The twin in index.db still has it, so the file reads as
    bound (not rolled back: same updated_at, other text), a real rollback still reads as one, and the next
    write puts the row back in engram.db."""
    repair(store)
    rel, other = finance_files(store)[:2]
    old = store.layout.resolve(rel).read_bytes()
    slug = Memory.get(Memory.body_path == rel).slug
    before = Binding.get(Binding.slug == slug).__data__
    set_ttl(store, slug, 30)  # rewritten with the same updated_at, as a sweep rewrites it
    Binding.replace(**before).execute()  # engram.db's part of the change lost
    assert state(store, rel) == BOUND
    assert check(store).of("binding_mismatch") == []
    current = store.layout.resolve(rel).read_bytes()
    store.layout.resolve(rel).write_bytes(old)
    assert state(store, rel) == ROLLED_BACK  # the twin hides no rollback
    store.layout.resolve(rel).write_bytes(current)
    with Store.open(store.layout.root, keys=store.keys, actor="engram-test"):  # opening copies the row back:
        assert Binding.get(Binding.slug == slug).version == before["version"] + 1  # memoryd's rebuild can't take it
    Binding.replace(**before).execute()  # lost again, for the next write to settle
    other_slug = Memory.get(Memory.body_path == other).slug
    edit_memory(store, other_slug, title="Another edit")
    assert Binding.get(Binding.slug == slug).version == before["version"] + 1
    # the copied row leaves the twin at the write after, once engram.db is seen to have it committed
    assert {g.slug for g in BindingGuard.select()} == {slug, other_slug}
    edit_memory(store, other_slug, title="A third edit")
    assert [g.slug for g in BindingGuard.select()] == [other_slug]
    assert state(store, rel) == BOUND


def test_two_swapped_files_are_flagged_and_not_repaired(store, fixture_root):
    repair(store)
    a, b = finance_files(store)[:2]
    pa, pb = store.layout.resolve(a), store.layout.resolve(b)
    da, db = pa.read_bytes(), pb.read_bytes()
    pa.write_bytes(db)
    pb.write_bytes(da)
    assert state(store, a) == SWAPPED and state(store, b) == SWAPPED
    flagged = {f.path for f in check(store).of("binding_mismatch")}
    assert flagged == {a, b}
    assert {f.path for f in repair(store).remaining.of("binding_mismatch")} == {a, b}  # a person decides
    shown = explain(store, Memory.get(Memory.body_path == a).slug)
    assert "Warning: this file was swapped." in shown


def test_an_older_version_restored_is_flagged_as_rolled_back(store):
    repair(store)
    rel = finance_files(store)[0]
    old = store.layout.resolve(rel).read_bytes()
    slug = Memory.get(Memory.body_path == rel).slug
    store.clock = lambda: datetime(2027, 1, 1, tzinfo=UTC)  # the edit is newer than the file
    edit_memory(store, slug, title="A newer title")
    assert state(store, rel) == BOUND
    store.layout.resolve(rel).write_bytes(old)
    assert state(store, rel) == ROLLED_BACK
    assert [f.path for f in check(store).of("binding_mismatch")] == [rel]


def memoryd_rewrite(store, rel: str, **changes) -> None:
    """Write the file as memoryd would: its own encryption of the (changed) memory, no binding update."""
    doc = store.read_doc(rel)
    if changes:
        doc = type(doc)(frontmatter=doc.frontmatter.replace(**changes), body=doc.body)
    key = derive_passphrase_key(PASSPHRASE, FINANCE)
    nonce = bytes(range(12))
    sealed = AESGCM(key).encrypt(nonce, serialize(doc), FINANCE.encode())
    store.layout.resolve(rel).write_bytes(base64.b64encode(nonce + sealed))
    row = memory_row(doc, rel)  # memoryd's save_memory indexes what it wrote, on its own connection
    con = sqlite3.connect(store.layout.index_path)
    con.execute(
        f"UPDATE memories SET {', '.join(f'{k} = ?' for k in row)} WHERE slug = ?",
        [*row.values(), doc.frontmatter.slug],
    )
    con.commit()
    con.close()


def test_memoryds_later_edits_are_changes_not_rollbacks_and_repair_binds_them(store):
    repair(store)
    first, second = finance_files(store)[:2]
    memoryd_rewrite(store, first)  # the same text, encrypted again
    doc = store.read_doc(second)
    memoryd_rewrite(
        store,
        second,
        title="Edited by memoryd",
        updated_at=(doc.frontmatter.updated_at or doc.frontmatter.created_at) + timedelta(days=1),
    )
    assert state(store, first) == CHANGED and state(store, second) == CHANGED
    report = check(store)
    assert not report.drift  # memoryd's mem_update is its normal work: no finding, no alarm
    assert {first, second} <= set(report.unbound[FINANCE])  # to bind again, as repair and unlocking do
    repair(store)
    assert state(store, first) == BOUND and state(store, second) == BOUND


def test_the_manifest_holds_no_plaintext(store, fixture_root):
    repair(store)
    titles = [m.title for m in Memory.select().where(Memory.scope_hash == FINANCE)]
    rows = [tuple(map(str, r)) for r in Binding.select().tuples()]
    assert rows and not any(t in value for t in titles for row in rows for value in row)
