"""The DURA scores engram keeps for the queue's first page: used while they are of this index.db, passed over
where they are not (replaced, rebuilt, damaged), never holding text, and kept by the console's first full read."""

from __future__ import annotations

import os
import shutil
import sqlite3

from helpers import promotion_texts_in, until

from engram.store import queue_scores
from engram.store.models import Promotion
from engram.store.queue import first_page, pending_queue
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.panes.queue import QueuePane


def _keep(store: Store) -> list[int]:
    """Keep every pending score as the console's full read does; the ids, best first."""
    items = pending_queue(store)
    queue_scores.keep(store, {item.id: item.dura for item in items})
    return [item.id for item in items]


def _edit_last_to_top(store: Store, order: list[int]) -> int:
    """Edit the last promotion's DURA text by hand (as memoryd's column allows) so it now ranks first."""
    last = order[-1]
    Promotion.update(dura_score='{"D": 1.0, "U": 1.0, "R": 1.0, "A": 1.0}').where(Promotion.id == last).execute()
    return last


def _first_ids(store: Store) -> list[int]:
    return [item.id for item in first_page(store, "dura_avg", 1000)[0]]


def test_the_first_page_orders_by_the_kept_scores(store):
    """The kept scores are what the first page is ordered by: a score edited by hand since ranks by its kept
    value until the full read, which ranks it by the new one."""
    order = _keep(store)
    assert len(order) > 2
    edited = _edit_last_to_top(store, order)
    assert _first_ids(store) == order  # the kept order: the edit not parsed
    assert pending_queue(store)[0].id == edited


def test_scores_kept_for_a_replaced_index_db_are_not_used(store, fixture_root, unlocked_keys):
    """``memoryd rebuild-index`` deletes index.db and makes another, whose ids may name other promotions: scores
    kept for the old file are passed over, and the next keep starts them again."""
    order = _keep(store)
    edited = _edit_last_to_top(store, order)
    store.close()
    index = fixture_root / "index.db"
    shutil.copy(index, fixture_root / "copy.db")
    os.replace(fixture_root / "copy.db", index)
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as again:
        assert _first_ids(again)[0] == edited  # parsed from the JSON
        queue_scores.keep(again, {item.id: item.dura for item in pending_queue(again)})
        with queue_scores.with_kept(again) as con:
            assert con.execute("SELECT count(*) FROM kept.scores").fetchone()[0] == len(order)


def test_scores_kept_before_the_file_gave_as_many_ids_are_not_used(store):
    """The file system may give a new index.db the old one's inode number: the kept scores also name how many ids
    their index.db had given, and a file that has given fewer is another file."""
    order = _keep(store)
    edited = _edit_last_to_top(store, order)
    with sqlite3.connect(queue_scores.scores_path(store)) as con:
        con.execute("UPDATE kept_for SET seq = seq + 1")
    assert _first_ids(store)[0] == edited


def test_damaged_kept_scores_are_passed_over_and_replaced(store):
    path = queue_scores.scores_path(store)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a database" * 100)
    expected = [item.id for item in pending_queue(store)]
    assert _first_ids(store) == expected
    queue_scores.keep(store, {})  # the damaged file goes
    assert not path.exists()
    assert _keep(store) == expected
    with queue_scores.with_kept(store) as con:
        assert con.execute("SELECT count(*) FROM kept.scores").fetchone()[0] == len(expected)


def test_an_unwritable_cache_changes_nothing(store):
    """A cache folder that cannot be made (a file in its place) is no error: the first page parses the JSON."""
    folder = queue_scores.scores_path(store).parent
    folder.parent.mkdir(parents=True)
    folder.write_text("a file where the folder goes")
    expected = _keep(store)
    assert folder.read_text() == "a file where the folder goes"
    assert _first_ids(store) == expected


def test_a_keep_writes_only_what_changed_and_forgets_decided_promotions(store):
    order = _keep(store)
    Promotion.update(status="approved").where(Promotion.id == order[0]).execute()
    _keep(store)
    with queue_scores.with_kept(store) as con:
        kept = {pid for (pid,) in con.execute("SELECT id FROM kept.scores")}
    assert kept == set(order[1:])


def test_the_kept_scores_hold_no_text(store):
    """Ids and numbers only: no title, trigger or body of any scope, sensitive or not."""
    _keep(store)
    assert promotion_texts_in(queue_scores.scores_path(store).read_bytes()) == []


async def test_the_console_keeps_the_scores_its_full_read_parsed(store):
    expected = {item.id: item.dura for item in pending_queue(store)}
    app = EngramApp(store)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(QueuePane)
        await until(pilot, lambda: pane.settled_once and queue_scores.scores_path(store).exists())
    with queue_scores.with_kept(store) as con:
        kept = {pid: dict(zip("DURA", row, strict=True)) for pid, *row in con.execute("SELECT * FROM kept.scores")}
    assert kept == {pid: {k: dura.get(k) for k in "DURA"} for pid, dura in expected.items()}
