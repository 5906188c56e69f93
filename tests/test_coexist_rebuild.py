"""memoryd's ``rebuild-index`` beside engram: it deletes index.db and builds it again from the ``.md`` files only.
engram's own state is in engram.db and survives; what memoryd lost (encrypted rows, promotions, sensitive
registrations) is found by ``check`` and given back by ``repair``; until then no plaintext is written into a
scope engram knows is sensitive."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import events
from memoryd_emulation import memoryd_proposes, memoryd_rebuild_index

from engram.store.coexist import keep_registered
from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.errors import Conflict
from engram.store.models import Memory, Promotion, PromotionNote, ScopeLabel
from engram.store.promotions import approve, reject
from engram.store.scopes import set_label
from engram.store.sensitive.convert import mark_sensitive
from engram.store.service import Store
from engram.tui.cli import main
from engram.tui.cli.console import console_app


def sensitive_rows(root: Path) -> set[str]:
    return {r[0] for r in sqlite3.connect(root / "index.db").execute("SELECT scope_hash FROM sensitive_scopes")}


def test_rebuild_index_loses_nothing_engram_keeps_and_repair_gives_back_what_memoryd_lost(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        sensitive = store.sensitive_scopes()
        assert sensitive
        pending = [p.id for p in Promotion.select().where(Promotion.status == "pending").order_by(Promotion.id)]
        reject(store, pending[0], "duplicate of an older memory")
        set_label(store, next(iter(sensitive)), "health notes")
        promotions = {p.id: (p.status, p.proposed_title) for p in Promotion.select() if p.scope_hash not in sensitive}
        encrypted = Memory.select().where(Memory.body_path.endswith(".md.enc")).count()
    assert encrypted

    memoryd_rebuild_index(fixture_root)
    assert sensitive_rows(fixture_root) == set()

    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        assert store.index.rebuilt
        assert store.sensitive_scopes() == sensitive  # engram still knows: nothing goes in as plaintext
        assert [r.label for r in ScopeLabel.select()] == ["health notes"]
        assert PromotionNote.get(PromotionNote.promotion_id == pending[0]).reject_reason
        counts = check(store).counts()
        assert counts["sensitive_unregistered"] == len(sensitive)
        assert counts["promotion_lost"] == len(promotions)
        assert counts["enc_without_row"] == encrypted and counts["index_rebuilt"] == 1
        result = repair(store)
        assert not result.remaining.drift, result.remaining.counts()
        assert not store.index.rebuilt
        assert {
            p.id: (p.status, p.proposed_title) for p in Promotion.select() if p.scope_hash not in sensitive
        } == promotions
        assert Memory.select().where(Memory.body_path.endswith(".md.enc")).count() == encrypted
    assert sensitive_rows(fixture_root) == sensitive
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert {"sensitive_scope_restored", "promotions_restored", "index_rebuild_reconciled"} <= set(kinds)


def test_after_a_rebuild_an_approval_into_a_sensitive_scope_is_still_encrypted(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        scope = sorted(store.sensitive_scopes())[0]
        set_label(store, scope, "x")  # engram has written: it knows this root
    memoryd_rebuild_index(fixture_root)
    con = sqlite3.connect(fixture_root / "index.db")  # memoryd's analyze proposes into that scope
    session = con.execute("SELECT slug FROM memories WHERE type = 'session' LIMIT 1").fetchone()[0]
    pid = con.execute(
        "INSERT INTO promotions (source_session_slug, proposed_type, proposed_title, proposed_body, proposed_triggers,"
        " dura_score, reasoning, scope_hash, status, created_at) VALUES (?, 'fact', 'Blood pressure routine', "
        "'Measure at 8am.', '[]', '{}', 'r', ?, 'pending', '2026-11-23T00:00:00Z')",
        (session, scope),
    ).lastrowid
    con.commit()
    con.close()
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        assert store.index.rebuilt
        done = approve(store, pid)
    assert done.relpath.endswith(".md.enc") and not (fixture_root / done.relpath[:-4]).exists()
    assert b"Measure at 8am" not in (fixture_root / done.relpath).read_bytes()


def test_import_records_survive_a_rebuild(fixture_root, unlocked_keys):
    from engram.store.models import Imported

    with Store.open(fixture_root, keys=unlocked_keys) as store:
        store.index.writable()
        with store.index.transaction():
            Imported.insert(
                source_key="codex:t-1",
                system="codex",
                kind="session",
                memory_slug="s",
                origin="x.jsonl:1",
                imported_at="2026-11-23",
            ).execute()
    memoryd_rebuild_index(fixture_root)
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        assert [r.source_key for r in Imported.select()] == ["codex:t-1"]


def test_engrams_first_write_after_a_rebuild_registers_the_sensitive_scopes_again(fixture_root, unlocked_keys):
    with keep_registered(Store.open(fixture_root, keys=unlocked_keys, actor="engram-test")) as store:
        sensitive = store.sensitive_scopes()
        store.index.writable()  # engram has written to this root before
        memoryd_rebuild_index(fixture_root)
        assert sensitive_rows(fixture_root) == set()  # memoryd's next save there would be plaintext
        set_label(store, "710d5aaf7a15", "web shop")  # any write engram makes
        assert sensitive_rows(fixture_root) == sensitive  # memoryd encrypts there again
        kinds = [e["event_type"] for e in events(fixture_root)]
        assert kinds[-len(sensitive) - 1 :] == ["sensitive_scope_restored"] * len(sensitive) + ["scope_labeled"]
        assert check(store).of("promotion_lost")  # the rest waits for repair


def test_marking_a_scope_whose_promotions_only_engram_still_holds_waits_for_repair(fixture_root, unlocked_keys):
    scope = "710d5aaf7a15"
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        store.index.writable()
        theirs = {p.id for p in Promotion.select().where(Promotion.scope_hash == scope)}
        assert theirs
    memoryd_rebuild_index(fixture_root)
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        with pytest.raises(Conflict, match="repair"):
            mark_sensitive(store, scope, discover_in=())
        assert scope not in store.sensitive_scopes()
        repair(store)
        mark_sensitive(store, scope, discover_in=())
        assert {p.id for p in Promotion.select().where(Promotion.scope_hash == scope)} == theirs


def test_promotions_memoryd_proposed_after_its_rebuild_take_their_ids_and_the_restored_ones_move(
    fixture_root, unlocked_keys
):
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        store.index.writable()
        sensitive = store.sensitive_scopes()
        known = {(p.source_session_slug, p.proposed_title) for p in Promotion.select() if p.scope_hash not in sensitive}
    memoryd_rebuild_index(fixture_root)
    new = [memoryd_proposes(fixture_root) for _ in range(3)]  # ids 1, 2, 3 of the new table
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        result = repair(store)
        assert not result.failed and not result.remaining.of("promotion_lost")
        rows = list(Promotion.select())
        assert {(p.source_session_slug, p.proposed_title) for p in rows} >= known
        assert {p.id for p in rows if p.proposed_title == "Deploys go out on Tuesdays"} == set(new)


@pytest.mark.parametrize("moment", [1, 2, 3])
def test_a_rebuild_at_any_moment_of_engrams_first_write_loses_no_promotion(
    fixture_root, unlocked_keys, monkeypatch, moment
):
    """memoryd's rebuild-index unlinks index.db without any lock, so it can land between any two transactions of
    engram's preparation for writing (``writable``): here, before its first, second or third. Had engram found
    its identity in one transaction and brought its copies of memoryd's tables in step in a later one, a rebuild
    in between would have the copies follow an index that lost every promotion. Whether the preparation then
    goes through or fails, engram's copy still holds the promotions, and repair gives them back."""
    from contextlib import contextmanager

    from engram.store.errors import StoreError
    from engram.store.index import Index

    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        store.index.writable()  # engram has written here before: its identity and its copies exist
        kept = Promotion.select().where(Promotion.scope_hash.not_in(store.sensitive_scopes())).count()
    transaction = Index.transaction
    calls = []

    @contextmanager
    def rebuilt_before(index, prepare=True):
        calls.append(1)
        if len(calls) == moment:
            memoryd_rebuild_index(fixture_root)
        with transaction(index, prepare):
            yield

    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        monkeypatch.setattr(Index, "transaction", rebuilt_before)
        try:
            store.index.writable()
        except StoreError:
            pass  # the preparation failed on the replaced file: nothing of it counts
        monkeypatch.setattr(Index, "transaction", transaction)
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        if len(calls) < moment:  # engram prepared in fewer transactions: memoryd never struck
            assert not store.index.rebuilt and Promotion.select().count() >= kept
            return
        assert store.index.rebuilt and check(store).counts()["promotion_lost"] == kept
        repair(store)
        assert Promotion.select().count() >= kept


def test_a_first_write_after_memoryds_rebuild_keeps_an_encrypted_memory_encrypted(fixture_root, unlocked_keys):
    """engram open, nothing written yet (so no copy of the sensitive_scopes rows), memoryd rebuilds index.db and
    drops those rows: a rewrite of an encrypted memory must not put its plaintext on disk. (A sync conflict
    resolved by keeping the local version found it.)"""
    from engram.store.memories import edit_memory
    from engram.store.write.change import memory_row

    secret = "scopes/91c2073b561e/sessions/2026-05-26-2026-05-26T07-38-06-xMmS-session.md.enc"
    slug = secret.rsplit("/", 1)[1].removesuffix(".md.enc")
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        row = memory_row(store.read_doc(secret), secret)
        memoryd_rebuild_index(fixture_root)
        con = sqlite3.connect(fixture_root / "index.db")  # memoryd's rebuild indexes only *.md: the row back
        con.execute(f"INSERT INTO memories ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        con.commit()
        con.close()
        edit_memory(store, slug, body="written after the rebuild\n")
    assert not (fixture_root / secret.removesuffix(".enc")).exists()
    assert b"written after the rebuild" not in (fixture_root / secret).read_bytes()


def test_a_memory_approved_after_memoryds_rebuild_into_an_encrypted_scope_is_encrypted(fixture_root, unlocked_keys):
    """The same moment as above, for a new file: the scope's files are encrypted, so its new memory is too."""
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        memoryd_rebuild_index(fixture_root)
        pid = memoryd_proposes(fixture_root, "91c2073b561e", title="a lesson for a sensitive project")
        approve(store, pid)
    made = [p for p in (fixture_root / "scopes" / "91c2073b561e").rglob(f"promoted-{pid}-*")]
    assert made and all(p.name.endswith(".md.enc") for p in made)


def test_a_command_that_writes_after_a_rebuild_registers_the_sensitive_scopes_again(fixture_root, unlocked_keys):
    """The command line sets every store it opens to register again (see ``coexist.keep_registered``): the
    first command that writes after memoryd's rebuild-index does, before its own change."""
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        sensitive = store.sensitive_scopes()
        store.index.writable()
    memoryd_rebuild_index(fixture_root)
    assert sensitive_rows(fixture_root) == set()
    assert main(["--root", str(fixture_root), "allow", "docs.example.org"]) == 0
    assert sensitive_rows(fixture_root) == sensitive
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds[-len(sensitive) - 1 :] == ["sensitive_scope_restored"] * len(sensitive) + ["allowlist_added"]


def test_the_consoles_first_write_after_a_rebuild_registers_the_sensitive_scopes_again(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        sensitive = store.sensitive_scopes()
        store.index.writable()
    memoryd_rebuild_index(fixture_root)
    app = console_app(fixture_root)
    try:
        set_label(app.store, "710d5aaf7a15", "web shop")
    finally:
        app.store.close()
    assert sensitive_rows(fixture_root) == sensitive
