"""rebuild-index rewrites the rows the files own and keeps everything only the index knows."""

from __future__ import annotations

import sqlite3

from engram.store.drift.check import check
from engram.store.drift.rebuild import open_for_rebuild, rebuild_index
from engram.store.index import Entity, Memory, Promotion, Relation, SupersedesChain
from engram.store.service import Store


def test_rebuild_keeps_promotions_graph_sensitivity_and_decay(store, fixture_root):
    before = {
        "promotions": Promotion.select().count(),
        "entities": Entity.select().count(),
        "relations": Relation.select().count(),
        "supersedes": SupersedesChain.select().count(),
        "sensitive": sorted(store.sensitive_scopes()),
        "decay": {m.slug: m.decay_state for m in Memory.select()},
    }
    con = sqlite3.connect(fixture_root / "index.db")
    con.execute("DELETE FROM triggers")
    con.execute("UPDATE memories SET title='wrong', fingerprint='x'")
    con.commit()
    result = rebuild_index(store)
    assert result.indexed == 198 and result.removed == 0
    assert len(result.skipped) == 2  # the two slug collisions, left to repair
    assert Promotion.select().count() == before["promotions"]
    assert Entity.select().count() == before["entities"] and Relation.select().count() == before["relations"]
    assert SupersedesChain.select().count() == before["supersedes"]
    assert sorted(store.sensitive_scopes()) == before["sensitive"]
    assert {m.slug: m.decay_state for m in Memory.select()} == before["decay"]
    assert check(store).counts().get("stale_row") is None


def test_rebuild_without_key_keeps_encrypted_rows(fixture_root):
    with Store.open(fixture_root) as store:
        result = rebuild_index(store)
        assert result.kept_locked == 38
        assert Memory.select().where(Memory.scope_sensitive == 1).count() == 38


def test_corrupt_index_is_moved_aside_and_rebuilt(fixture_root, unlocked_keys):
    (fixture_root / "index.db").write_bytes(b"this is not sqlite" * 100)
    for side in ("index.db-wal", "index.db-shm"):
        (fixture_root / side).unlink(missing_ok=True)
    store, aside = open_for_rebuild(fixture_root, "engram-test")
    store.keys = unlocked_keys
    with store:
        result = rebuild_index(store)
        assert aside and (fixture_root / aside).exists()
        assert result.indexed == 198


def test_rebuild_holds_no_parsed_file_when_it_writes(store, monkeypatch):
    """Each parsed file is let go once what it puts in the index is taken: at 100k memories, holding every body
    until the write cost hundreds of MB. By the time the rows are written, no parsed document is alive."""
    import gc
    import weakref

    import engram.store.drift.rebuild as rebuild

    parsed: list[weakref.ref] = []

    def parse(data, relpath):
        doc = real_parse(data, relpath)
        parsed.append(weakref.ref(doc))
        return doc

    real_parse = rebuild.parse
    monkeypatch.setattr(rebuild, "parse", parse)
    alive_at_write: list[int] = []
    upsert = store.upsert_index_entries

    def watched(entries, **options):
        gc.collect()
        alive_at_write.append(sum(ref() is not None for ref in parsed))
        return upsert(entries, **options)

    monkeypatch.setattr(store, "upsert_index_entries", watched)
    result = rebuild_index(store)
    assert result.indexed > 150 and len(parsed) > 150 and alive_at_write == [0]


def test_a_file_memoryds_sweep_moves_during_a_rebuild_keeps_its_row(store, fixture_root, monkeypatch):
    """memoryd may move a memory to ``forgotten/`` (and update its row) between the walk and the read: the
    rebuild neither fails on the missing file nor deletes the row, which names where the file went."""
    from memoryd_emulation import memoryd_forgets

    from engram.store.drift import rebuild as rebuilding

    row = Memory.get(Memory.body_path.endswith(".md"), ~Memory.body_path.contains("/forgotten/"))
    real = rebuilding.read_ahead

    def moved_first(*args):
        memoryd_forgets(fixture_root, row.slug)
        return real(*args)

    monkeypatch.setattr(rebuilding, "read_ahead", moved_first)
    rebuild_index(store)
    kept = Memory.get(Memory.slug == row.slug)
    assert kept.body_path.split("/")[2] == "forgotten" and (fixture_root / kept.body_path).is_file()
