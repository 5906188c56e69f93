"""The change feed: what memoryd (another process, its own connections) and engram itself change in a root shows
up at the next poll, named by row; nothing changed is a cheap None; and a store that stays open through
memoryd's ``rebuild-index`` follows the new index.db instead of writing into the deleted one."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest
from memoryd_emulation import memoryd_append, memoryd_decides, memoryd_proposes, memoryd_rebuild_index

from engram.store import changes as feed_module
from engram.store.changes import ChangeFeed
from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.errors import StoreError
from engram.store.models import Promotion
from engram.store.promotions import approve, reject
from engram.store.service import Store


def test_nothing_changed_is_none(store):
    feed = ChangeFeed(store)
    assert feed.poll() is None
    assert feed.poll() is None


def test_nothing_changed_is_none_though_the_connection_is_closed_between_polls(store, fixture_root):
    """The console closes its connections whenever a worker ends: SQLite then removes the empty write-ahead logs
    it made, and makes them again at the next query. That is no change (it was, once a second, a comparison of
    every row); a commit made while engram's connection was closed still is one."""
    feed = ChangeFeed(store)
    for _ in range(3):
        store.index.release()
        assert feed.poll() is None
    store.index.release()
    pid = memoryd_proposes(fixture_root)
    assert feed.poll().promotions == {pid}
    store.index.release()
    assert feed.poll() is None


def test_memoryd_proposing_and_deciding_is_named_by_row(store, fixture_root):
    feed = ChangeFeed(store)
    pid = memoryd_proposes(fixture_root)
    changes = feed.poll()
    assert changes is not None and changes.promotions == {pid} and changes.kinds == {"promotions"}
    memoryd_decides(fixture_root, pid, "approved")
    assert feed.poll().promotions == {pid}
    assert feed.poll() is None


def test_a_memory_memoryd_recalled_is_named(store, fixture_root):
    feed = ChangeFeed(store)
    con = sqlite3.connect(fixture_root / "index.db")
    slug = con.execute("SELECT slug FROM memories ORDER BY slug LIMIT 1").fetchone()[0]
    con.execute("UPDATE memories SET recall_count = recall_count + 1 WHERE slug = ?", (slug,))
    con.commit()
    con.close()
    assert feed.poll().memories == {slug}


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("fingerprint", hashlib.sha1(b"a body memoryd wrote").hexdigest()),
        ("title", "A title memoryd wrote"),
        ("decay_state", "dormant"),
        ("recall_count", 41),
        ("last_recalled_at", "2026-11-25T00:00:00Z"),
        ("updated_at", "2026-11-25T00:00:01Z"),
        ("body_path", "scopes/elsewhere/semantic/moved.md"),
    ],
)
def test_each_shown_column_memoryd_changes_is_named_though_the_feed_keeps_one_hash_a_row(
    store, fixture_root, column, value
):
    """The snapshot keeps a row's key and one hash of what a pane shows of it, not the columns themselves (271 MB at
    a million memories): a change to any one of them still changes the hash."""
    feed = ChangeFeed(store)
    kept = [row[1] for row in feed._seen.con.execute("PRAGMA main.table_info(memories)")]
    assert kept == ["slug", "shown"]
    con = sqlite3.connect(fixture_root / "index.db")
    slug = con.execute("SELECT slug FROM memories ORDER BY slug LIMIT 1").fetchone()[0]
    con.execute(f"UPDATE memories SET {column} = ? WHERE slug = ?", (value, slug))
    con.commit()
    con.close()
    assert feed.poll().memories == {slug}
    assert feed.poll() is None


def test_audit_lines_memoryd_appends_are_counted(store, fixture_root):
    feed = ChangeFeed(store)
    log = fixture_root / "audit" / "audit.jsonl"
    memoryd_append(log, {"scope_hash": "91c2073b561e", "event_type": "access_granted", "tool": "search_memory"})
    memoryd_append(log, {"scope_hash": "91c2073b561e", "event_type": "access_denied", "tool": "get_memory"})
    changes = feed.poll()
    assert (changes.audit_lines, changes.audit_rewritten, changes.kinds) == (2, False, {"audit"})
    log.write_bytes(log.read_bytes()[:-50])  # shorter: someone rewrote it
    assert feed.poll().audit_rewritten


def test_engrams_own_decision_shows_too(store):
    feed = ChangeFeed(store)
    pid = (
        Promotion.select()
        .where(Promotion.status == "pending", Promotion.scope_hash.not_in(list(store.sensitive_scopes())))
        .first()
        .id
    )
    approve(store, pid)
    changes = feed.poll()
    assert pid in changes.promotions and changes.memories and changes.audit_lines == 1


def test_an_open_store_follows_index_db_through_rebuild_index(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        feed = ChangeFeed(store)
        sensitive = store.sensitive_scopes()
        pending = [
            p.id
            for p in Promotion.select().where(
                Promotion.status == "pending", Promotion.scope_hash.not_in(list(sensitive))
            )
        ]
        reject(store, pending[0], "known already")
        memoryd_rebuild_index(fixture_root)  # while engram stays open
        changes = feed.poll()
        assert changes.index_replaced and "index" in changes.kinds
        assert store.index.rebuilt and store.sensitive_scopes() == sensitive  # no plaintext into those scopes
        report = check(store)
        assert report.of("index_rebuilt")
        assert pending[0] in {f.data["promotion_id"] for f in report.of("promotion_lost")}  # engram's rejection
    con = sqlite3.connect(fixture_root / "index.db")
    assert con.execute("SELECT count(*) FROM memories").fetchone()[0] > 0  # the new file, not the deleted one


def test_a_write_after_rebuild_index_lands_in_the_new_index(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        store.index.writable()
        memoryd_rebuild_index(fixture_root)
        repair(store)  # gives back the promotions memoryd's rebuild dropped
        pid = (
            Promotion.select()
            .where(Promotion.status == "pending", Promotion.scope_hash.not_in(list(store.sensitive_scopes())))
            .first()
            .id
        )
        reject(store, pid, "not true")
    con = sqlite3.connect(fixture_root / "index.db")
    assert con.execute("SELECT status FROM promotions WHERE id = ?", (pid,)).fetchone() == ("rejected",)


def test_a_rebuild_seen_by_a_poll_that_then_failed_is_said_by_the_next(fixture_root, unlocked_keys, monkeypatch):
    """A poll that notices the new index.db (or a new row) and then cannot read it (busy, half written) must not
    swallow the news: the next poll says it."""

    def failing(*args):
        raise sqlite3.OperationalError("database is locked")

    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        feed = ChangeFeed(store)
        memoryd_rebuild_index(fixture_root)
        with monkeypatch.context() as patched:
            patched.setattr(feed_module._Seen, "compare", failing)
            with pytest.raises(StoreError):
                feed.poll()
        assert feed.poll().index_replaced
        pid = memoryd_proposes(fixture_root)
        with monkeypatch.context() as patched:
            patched.setattr(feed_module._Seen, "_delta", failing)
            with pytest.raises(StoreError):
                feed.poll()
        assert pid in feed.poll().promotions


def test_a_memory_removed_beside_a_row_without_a_key_is_named(store, fixture_root):
    """A row whose key is NULL (SQLite lets a TEXT PRIMARY KEY be NULL) is no change of its own, and does not
    hide that another memory went (``x NOT IN`` a set holding NULL is never true)."""
    feed = ChangeFeed(store)
    con = sqlite3.connect(fixture_root / "index.db")
    with con:
        gone = con.execute("SELECT slug FROM memories ORDER BY slug LIMIT 1").fetchone()[0]
        con.execute("DELETE FROM memories WHERE slug = ?", (gone,))
        con.execute(
            "INSERT INTO memories (slug, type, scope_hash, title, source, created_at, fingerprint, body_path) "
            "VALUES (NULL, 'fact', '710d5aaf7a15', 'no key', 'x', '2026-11-24', 'f', 'scopes/x/facts/nokey.md')"
        )
    con.close()
    changes = feed.poll()
    assert changes is not None and changes.memories == {gone}


def test_a_rebuild_under_the_same_inode_number_is_told_by_the_identity(fixture_root, unlocked_keys, monkeypatch):
    """memoryd unlinks index.db and creates a new one; once no connection holds the old file, the file system may
    give the new one the same inode number, so the file's identity alone does not tell. engram's identity row,
    missing from the new file, does."""
    from engram.store import index as index_module

    monkeypatch.setattr(index_module, "file_id", lambda path: (1, 1))  # every file looks like the first one
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        store.index.writable()  # engram wrote to this root before: its identity is in index.db
        feed = ChangeFeed(store)
        store.index.release()
        memoryd_rebuild_index(fixture_root)
        changes = feed.poll()
        assert changes.index_replaced and store.index.rebuilt
        assert not feed.poll()  # said once


def test_the_first_look_names_nothing_and_a_table_empty_then_still_names_its_new_rows(fixture_root):
    """The first look only takes the rows in (naming a million memories, to be dropped, left their strings in the
    heap); a table that was empty then is compared like any other, so its first row is news."""
    seen = feed_module._Seen(fixture_root / "index.db")
    con = sqlite3.connect(fixture_root / "index.db")
    with con:
        con.execute("DELETE FROM promotions")
    con.close()
    assert seen.compare() == (set(), set())
    pid = memoryd_proposes(fixture_root)
    assert seen.compare() == ({pid}, set())
