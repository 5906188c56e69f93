"""index.db: memoryd's schema by memoryd's migration names, read-only on unknown schemas, clear lock errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from store.errors import DatabaseLocked, ReadOnlyStore
from store.index import Memory
from store.memories import set_decay
from store.domain import DecayState
from store.service import Store

MEMORYD_MIGRATIONS = ["001_initial_schema.sql", "002_sensitive_scope.sql", "003_sensitive_scopes_table.sql",
                      "004_knowledge_graph.sql", "005_profile_self_learning.sql"]


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


def test_memoryd_root_is_not_migrated_twice(fixture_root):
    before = dict(sqlite3.connect(fixture_root / "index.db").execute("SELECT * FROM _schema_migrations"))
    Store.open(fixture_root).close()
    after = dict(sqlite3.connect(fixture_root / "index.db").execute("SELECT * FROM _schema_migrations"))
    assert {k: after[k] for k in before} == before
    assert sorted(after) == MEMORYD_MIGRATIONS + ["100_engram_audit_outbox.sql", "101_engram_promotion_notes.sql",
                                                  "102_engram_binding.sql", "103_engram_rekey.sql",
                                                  "104_engram_scope_labels.sql",
                                                  "105_engram_imports.sql"]


def test_engram_root_has_memoryds_schema(tmp_path, fixture_root):
    Store.open(tmp_path / "new", create=True).close()
    ours = schema(tmp_path / "new" / "index.db")
    theirs = schema(fixture_root / "index.db")
    assert {k: v for k, v in ours.items() if not k.startswith("engram_")} == theirs
    names = [r[0] for r in sqlite3.connect(tmp_path / "new" / "index.db").execute(
        "SELECT filename FROM _schema_migrations ORDER BY filename")]
    assert names[:5] == MEMORYD_MIGRATIONS


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
    monkeypatch.setattr("store.index.BUSY_TIMEOUT_MS", 100)
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
