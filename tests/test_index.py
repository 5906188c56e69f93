"""index.db: memoryd's schema by memoryd's migration names, read-only on unknown schemas, clear lock errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from memoryd_emulation import memoryd_proposes

from engram.store.domain import DecayState
from engram.store.errors import DatabaseLocked, ReadOnlyStore
from engram.store.index import Index
from engram.store.memories import set_decay
from engram.store.models import Memory
from engram.store.service import Store

MEMORYD_MIGRATIONS = [
    "001_initial_schema.sql",
    "002_sensitive_scope.sql",
    "003_sensitive_scopes_table.sql",
    "004_knowledge_graph.sql",
    "005_profile_self_learning.sql",
]


def schema(path: Path) -> dict[str, list[tuple]]:
    """Tables and indexes with their columns, as SQLite reports them (not as text)."""
    con = sqlite3.connect(path)
    out = {}
    for name, kind in con.execute("SELECT name, type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"):
        if kind == "table":
            out[name] = [r[1:] for r in con.execute(f"PRAGMA table_info({name})")]
        elif kind == "index":
            out[name] = [r[1:] for r in con.execute(f"PRAGMA index_info({name})")]
    con.close()
    return out


ENGRAM_MIGRATIONS = [
    "100_engram_audit_outbox.sql",
    "101_engram_promotion_notes.sql",
    "102_engram_binding.sql",
    "103_engram_rekey.sql",
    "104_engram_scope_labels.sql",
    "105_engram_imports.sql",
    "106_engram_own_records.sql",
    "107_engram_key_verifier.sql",
    "108_engram_sealed_promotions.sql",
    "109_engram_snooze.sql",
    "110_engram_quarantine.sql",
    "111_engram_allowlist.sql",
]


def migrations(path: Path) -> dict[str, str]:
    return dict(sqlite3.connect(path).execute("SELECT * FROM _schema_migrations"))


def first_write(store: Store) -> None:
    slug = Memory.select().where(Memory.body_path.endswith(".md")).first().slug
    set_decay(store, slug, DecayState.DIM)


def test_opening_and_reading_a_memoryd_root_writes_nothing(fixture_root):
    before = (fixture_root / "index.db").read_bytes()
    with Store.open(fixture_root) as store:
        assert Memory.select().count() == 198 and not store.read_only
        assert store.queued_events() == []
    assert (fixture_root / "index.db").read_bytes() == before
    wal = fixture_root / "index.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0


def test_memoryd_root_is_not_migrated_twice_and_engram_keeps_its_tables_apart(fixture_root, unlocked_keys):
    before = migrations(fixture_root / "index.db")
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        first_write(store)
    after = migrations(fixture_root / "index.db")
    assert after == before and sorted(after) == MEMORYD_MIGRATIONS
    assert sorted(migrations(fixture_root / "engram.db")) == ENGRAM_MIGRATIONS
    tables = {
        n
        for (n,) in sqlite3.connect(fixture_root / "index.db").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    # only the identity and the crash-window twins of the outbox and the bindings live in index.db; they are
    # made again when missing
    own = {t for t in tables if t.startswith("engram_")}
    assert own == {"engram_identity", "engram_outbox_guard", "engram_binding_guard"}
    assert (fixture_root / "engram.db").stat().st_mode & 0o077 == 0


def test_engram_root_has_memoryds_schema(tmp_path, fixture_root):
    Store.open(tmp_path / "new", create=True).close()
    ours = schema(tmp_path / "new" / "index.db")
    theirs = schema(fixture_root / "index.db")
    assert {k: v for k, v in ours.items() if not k.startswith("engram_")} == theirs
    names = [
        r[0]
        for r in sqlite3.connect(tmp_path / "new" / "index.db").execute(
            "SELECT filename FROM _schema_migrations ORDER BY filename"
        )
    ]
    assert names == MEMORYD_MIGRATIONS


def test_engram_01_tables_inside_index_db_are_read_then_moved_out(fixture_root, unlocked_keys):
    """engram 0.1 kept its tables in index.db: they are read there until the first write moves them."""
    con = sqlite3.connect(fixture_root / "index.db")
    con.executescript("""
        CREATE TABLE engram_scope_labels (scope_hash TEXT PRIMARY KEY, label TEXT NOT NULL, set_at TEXT NOT NULL);
        INSERT INTO engram_scope_labels VALUES ('a8a1b588e66d', 'ledger', '2026-11-01');
        INSERT INTO _schema_migrations VALUES ('104_engram_scope_labels.sql', '2026-11-01 00:00:00');""")
    con.commit()
    con.close()
    from engram.store.models import ScopeLabel

    with Store.open(fixture_root, keys=unlocked_keys) as store:
        assert [r.label for r in ScopeLabel.select()] == ["ledger"]
        first_write(store)
        assert [r.label for r in ScopeLabel.select()] == ["ledger"]
    assert "104_engram_scope_labels.sql" not in migrations(fixture_root / "index.db")
    own = sqlite3.connect(fixture_root / "engram.db")
    assert own.execute("SELECT label FROM engram_scope_labels").fetchall() == [("ledger",)]


def test_a_write_looks_for_the_identity_again_only_after_another_connection_committed(
    fixture_root, unlocked_keys, monkeypatch
):
    """Every write asks whether index.db was rebuilt in place (engram's identity gone from it). It looks again
    only once another connection committed to it; what memoryd commits is then looked at, and an identity it
    took away is found at once."""
    looked: list[bool] = []
    real = Index._identity_lost

    def counted(self: Index) -> bool:
        looked.append(real(self))
        return looked[-1]

    with Store.open(fixture_root, keys=unlocked_keys) as store:
        first_write(store)
        monkeypatch.setattr(Index, "_identity_lost", counted)
        first_write(store)
        set_decay(store, Memory.select().where(Memory.body_path.endswith(".md")).first().slug, DecayState.ALIVE)
        assert looked == []

        memoryd_proposes(fixture_root)
        assert not store.index.follow() and looked == [False]
        assert not store.index.follow() and looked == [False]

        con = sqlite3.connect(fixture_root / "index.db")
        with con:
            con.execute("DELETE FROM engram_identity")
        con.close()
        assert store.index.follow() and store.index.rebuilt


def test_wal_and_busy_timeout(fixture_root):
    with Store.open(fixture_root) as store:
        assert store.index.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.index.db.execute_sql("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_newer_schema_opens_read_only_and_refuses_writes(fixture_root, unlocked_keys):
    con = sqlite3.connect(fixture_root / "index.db")
    con.execute("INSERT INTO _schema_migrations VALUES ('006_future.sql', '2027-01-01 00:00:00')")
    con.commit()
    con.close()
    before = (fixture_root / "index.db").read_bytes()
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        assert store.read_only and "006_future.sql" in store.index.read_only_reason
        assert Memory.select().count() == 198
        slug = Memory.select().first().slug
        with pytest.raises(ReadOnlyStore):
            set_decay(store, slug, DecayState.DIM)
    assert (fixture_root / "index.db").read_bytes() == before


def test_locked_database_is_a_clear_error(fixture_root, unlocked_keys, monkeypatch):
    monkeypatch.setattr("engram.store.index.BUSY_TIMEOUT_MS", 100)
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        row = Memory.get(Memory.body_path.endswith(".md") & (Memory.decay_state == "alive"))
        before = (fixture_root / row.body_path).read_bytes()
        other = sqlite3.connect(fixture_root / "index.db")
        other.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(DatabaseLocked, match="locked by another process"):
                set_decay(store, row.slug, DecayState.DIM)
        finally:
            other.rollback()
            other.close()
        assert (fixture_root / row.body_path).read_bytes() == before  # nothing changed
        assert Memory.get(Memory.slug == row.slug).decay_state == "alive"
