"""rebuild-index rewrites the rows the files own and keeps everything only the index knows."""

from __future__ import annotations

import os
import sqlite3

import pytest

from engram.store.drift.check import check
from engram.store.drift.rebuild import open_for_rebuild, rebuild_index
from engram.store.models import Entity, Memory, Promotion, Relation, SupersedesChain
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


CORRUPT = {
    "not sqlite": lambda path: path.write_bytes(b"this is not sqlite" * 100),
    "a FIFO": os.mkfifo,  # SQLite's first read of it would wait forever
    "a directory": lambda path: path.mkdir(),
}


@pytest.mark.parametrize("damage", list(CORRUPT))
def test_corrupt_index_is_moved_aside_and_rebuilt(fixture_root, unlocked_keys, damage):
    (fixture_root / "index.db").unlink()
    CORRUPT[damage](fixture_root / "index.db")
    for side in ("index.db-wal", "index.db-shm"):
        (fixture_root / side).unlink(missing_ok=True)
    store, aside = open_for_rebuild(fixture_root, "engram-test")
    store.keys = unlocked_keys
    with store:
        result = rebuild_index(store)
        assert aside and (fixture_root / aside).exists()
        assert result.indexed == 198


def _counted_entries(monkeypatch, hook=None) -> list[int]:
    """Count the rows the rebuild makes of files (in this process: fewer files than the workers' threshold),
    calling ``hook(made)`` before each."""
    import engram.store.drift.rebuild as rebuilding

    made: list[int] = []
    real = rebuilding.index_entry

    def index_entry(doc, relpath):
        if hook is not None:
            hook(len(made))
        made.append(1)
        return real(doc, relpath)

    monkeypatch.setattr(rebuilding, "index_entry", index_entry)
    return made


def test_rebuild_streams_a_batch_at_a_time(store, fixture_root, monkeypatch):
    """A rebuild holds one batch's rows at a time, never every file's (2.9 GB at 1M), and commits each batch on
    its own: a writer looking in while later files are read finds the earlier batches' rows written."""
    import engram.store.drift.rebuild as rebuilding

    monkeypatch.setattr(rebuilding, "BATCH", 16)
    con = sqlite3.connect(fixture_root / "index.db")
    con.execute("UPDATE memories SET title = 'wrong'")
    con.commit()
    fixed_when_read: dict[int, int] = {}

    def look(made: int) -> None:
        if made in (16 * 3, 16 * 6):
            (wrong,) = con.execute("SELECT count(*) FROM memories WHERE title = 'wrong'").fetchone()
            fixed_when_read[made] = 198 + 38 - wrong

    made = _counted_entries(monkeypatch, look)
    held: list[int] = []  # rows made since the last write, when the next is written: one batch's, and no more
    before: list[int] = [0]
    upsert = store.upsert_index_entries

    def watched(entries, **options):
        held.append(len(made) - before[0])
        before[0] = len(made)
        return upsert(entries, **options)

    monkeypatch.setattr(store, "upsert_index_entries", watched)
    result = rebuild_index(store)
    assert result.indexed == 198 and len(held) >= 12 and max(held) <= 16 + 1  # a file's ahead, where the streams merge
    assert fixed_when_read[16 * 3] >= 16 * 2 and fixed_when_read[16 * 6] >= 16 * 5
    assert con.execute("SELECT count(*) FROM memories WHERE title = 'wrong'").fetchone() == (0,)
    assert check(store).counts().get("stale_row") is None


def test_a_memory_memoryd_saves_while_a_rebuild_runs_keeps_its_row(store, fixture_root, monkeypatch):
    """memoryd saves a memory (file, then row) between two of the rebuild's batches: its busy timeout is never
    reached, and the row of a file the walk could not have seen is not removed as a row without a file."""
    from memoryd_emulation import memoryd_saves

    import engram.store.drift.rebuild as rebuilding
    from engram.store.frontmatter import Frontmatter, MemoryDoc

    monkeypatch.setattr(rebuilding, "BATCH", 16)
    scope = Memory.get(Memory.scope_sensitive == 0).scope_hash
    fm = Frontmatter.model_validate(
        {"slug": "saved-during-rebuild", "type": "fact", "scope_hash": scope, "title": "saved meanwhile"}
        | {"source": "session", "created_at": "2026-11-28T09:00:00Z"}
    )

    def save(made: int) -> None:
        if made == 40:
            memoryd_saves(fixture_root, MemoryDoc(frontmatter=fm, body="written while engram rebuilt the index\n"))

    _counted_entries(monkeypatch, save)
    result = rebuild_index(store)
    assert result.removed == 0
    saved = Memory.get(Memory.slug == "saved-during-rebuild")
    assert saved.title == "saved meanwhile" and (fixture_root / saved.body_path).is_file()
    assert not [f for f in check(store).findings if f.path == saved.body_path or f.data.get("slug") == saved.slug]


def test_rebuild_with_worker_processes_writes_what_one_process_writes(
    fixture_root, tmp_path, unlocked_keys, monkeypatch
):
    """The files of plain scopes parsed by worker processes: the same rows, the same result, and no file of a
    sensitive scope handed to a worker."""
    import shutil

    from engram.store.drift import examine

    twin = tmp_path / "twin"
    shutil.copytree(fixture_root, twin)
    for root in (fixture_root, twin):
        con = sqlite3.connect(root / "index.db")
        con.execute("DELETE FROM triggers")
        con.execute("UPDATE memories SET title = 'wrong', fingerprint = 'x'")
        con.commit()
        con.close()

    def rows(root):
        con = sqlite3.connect(root / "index.db")
        try:
            return [
                con.execute("SELECT * FROM memories ORDER BY slug").fetchall(),
                con.execute("SELECT slug, trigger FROM triggers ORDER BY slug, trigger").fetchall(),
            ]
        finally:
            con.close()

    with Store.open(fixture_root, keys=unlocked_keys) as store:
        alone = vars(rebuild_index(store))
    handed: list[str] = []

    class Counted(examine.ProcessPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
            handed.extend(args[1])
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(examine, "MIN_FILES", 0)
    monkeypatch.setattr(examine, "_cores", lambda: 2)
    monkeypatch.setattr(examine, "_CHUNK", 8)
    monkeypatch.setattr(examine, "ProcessPoolExecutor", Counted)
    with Store.open(twin, keys=unlocked_keys) as store:
        with_workers = vars(rebuild_index(store))
        sensitive = store.sensitive_scopes()
    assert with_workers == alone and rows(twin) == rows(fixture_root)
    assert len(handed) > 150 and not [p for p in handed if p.split("/")[1] in sensitive or p.endswith(".enc")]


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


def test_rebuild_keeps_decay_and_recalls_only_the_index_knows(store, fixture_root):
    """memoryd's sweep and its recalls write the index only: a rebuild keeps the further decay state, the higher
    recall count and the later recall; a state no writer knows gives way to the file's."""
    con = sqlite3.connect(fixture_root / "index.db")
    alive = [
        slug
        for (slug,) in con.execute(
            "SELECT slug FROM memories WHERE decay_state = 'alive' AND body_path LIKE '%.md' ORDER BY slug LIMIT 3"
        )
    ]
    con.execute(
        "UPDATE memories SET decay_state = 'dim', recall_count = 99, last_recalled_at = '2099-01-01T00:00:00Z' "
        "WHERE slug = ?",
        (alive[0],),
    )
    con.execute("UPDATE memories SET decay_state = 'withered', recall_count = -1 WHERE slug = ?", (alive[1],))
    con.commit()
    files = {slug: store.read_doc(store.memory(slug).body_path).frontmatter for slug in alive}
    rebuild_index(store)
    further, unknown, untouched = (
        con.execute(
            "SELECT decay_state, recall_count, last_recalled_at FROM memories WHERE slug = ?", (slug,)
        ).fetchone()
        for slug in alive
    )
    assert further == ("dim", 99, "2099-01-01T00:00:00Z")
    assert unknown[:2] == ("alive", max(files[alive[1]].recall_count, 0))
    assert untouched[:2] == ("alive", files[alive[2]].recall_count)


def test_a_rebuild_rewrites_only_the_rows_that_differ(store, fixture_root, monkeypatch):
    """A row and triggers already as the file says are left alone (rewriting each of a million rows took a batch
    through all of memoryd's indexes): a rebuild after a rebuild writes only what changed in between."""
    rebuild_index(store)
    con = sqlite3.connect(fixture_root / "index.db")
    retitled, untriggered = (
        slug
        for (slug,) in con.execute(
            "SELECT slug FROM memories WHERE scope_sensitive = 0 AND slug IN (SELECT slug FROM triggers) "
            "ORDER BY slug LIMIT 2"
        )
    )
    con.execute("UPDATE memories SET title = 'wrong' WHERE slug = ?", (retitled,))
    con.execute("DELETE FROM triggers WHERE slug = ?", (untriggered,))
    con.commit()
    written: list[str] = []
    upsert = store._upsert_rows

    def watched(values, triggers):
        written.extend(v[0] for v in values)
        return upsert(values, triggers)

    monkeypatch.setattr(store, "_upsert_rows", watched)
    result = rebuild_index(store)
    assert sorted(written) == sorted([retitled, untriggered]) and result.indexed == 198
    assert check(store).counts().get("stale_row") is None
    assert con.execute("SELECT count(*) FROM triggers WHERE slug = ?", (untriggered,)).fetchone()[0] > 0
