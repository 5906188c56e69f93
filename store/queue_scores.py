"""The pending promotions' DURA scores as numbers, kept in engram's cache for the queue's first page.

memoryd keeps each score as JSON text in a column that follows the proposed body, and text anyone may edit: ordering
the first page by it means reading every pending row and parsing its JSON sixteen times (the most of a launch
that grows with the root). The console's full read parses every score
anyway; it keeps them here, as four numbers a promotion, and the next start's first page reads those for every
promotion they know and parses only the ones proposed since. It is a cache and no more: deleted, damaged, written
for an index.db since replaced, or unwritable, the first page is ordered from the JSON as before. A score edited by
hand since it was kept orders that first page by its old value until the full read, which follows at once, shows
the queue from memoryd's columns. It holds promotion ids and numbers only: no text of any scope.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from engram.store.index import BUSY_TIMEOUT_MS, TEMP_IN_MEMORY, file_id
from engram.store.paths import root_cache_file
from engram.store.service import Store

KEYS = ("D", "U", "R", "A")
Scores = tuple[float | None, ...]  # a promotion's D, U, R and A, None where its JSON has none
_SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (id INTEGER PRIMARY KEY, D REAL, U REAL, R REAL, A REAL);
CREATE TABLE IF NOT EXISTS kept_for (dev INTEGER NOT NULL, ino INTEGER NOT NULL, seq INTEGER NOT NULL);
"""


def scores_path(store: Store) -> Path:
    return root_cache_file(store.layout.root, "queue", ".db")


@contextmanager
def with_kept(store: Store) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``store``'s index.db with the kept scores attached as ``kept`` (scores of the
    pending promotions the last full read saw). Raises ``LookupError`` where none are kept for this very index.db,
    ``sqlite3.Error`` or ``OSError`` where they cannot be read: the caller then orders from the JSON."""
    path = scores_path(store)
    if not path.is_file():
        raise LookupError(path)
    con = store.index.reader()
    try:
        con.execute(TEMP_IN_MEMORY)
        con.execute("ATTACH DATABASE ? AS kept", (f"file:{path}?mode=ro",))
        kept = con.execute(f"SELECT dev, ino FROM kept.kept_for WHERE seq <= ({_SEQ})").fetchone()
        if kept is None or tuple(kept) != file_id(store.index.path):
            raise LookupError(path)
        yield con
    finally:
        con.close()


def keep(store: Store, scores: Mapping[int, Mapping[str, float]]) -> None:
    """Keep ``scores`` (every pending promotion's, by id, as the full read parsed them) for the next first page:
    only the rows that changed are written. A score that is not a number SQLite can hold (NaN) is left out, and that
    promotion's JSON is parsed as if it were new. A cache that cannot be written is left as it is, a damaged one is
    deleted: the first page then parses every score, and the next full read keeps them again."""
    path, index_file = scores_path(store), file_id(store.index.path)
    if index_file is None:
        return  # index.db is being made again (memoryd's rebuild-index): the next full read keeps them
    wanted = {pid: row for pid, dura in scores.items() if not _nan(row := tuple(dura.get(key) for key in KEYS))}
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            con.execute(TEMP_IN_MEMORY)
            con.executescript(_SCHEMA)
            con.execute("BEGIN IMMEDIATE")
            _write(con, (*index_file, _seq(store)), wanted)
            con.execute("COMMIT")
        finally:
            con.close()
    except sqlite3.OperationalError:
        return  # busy (another console keeps them now) or a full disk: this start's read keeps them next time
    except sqlite3.DatabaseError:
        path.unlink(missing_ok=True)
    except OSError:
        return


def _write(con: sqlite3.Connection, kept_for: tuple[int, int, int], wanted: dict[int, Scores]) -> None:
    if con.execute("SELECT dev, ino FROM kept_for").fetchone() != kept_for[:2]:  # another index.db's ids
        con.execute("DELETE FROM scores")
    con.execute("DELETE FROM kept_for")
    con.execute("INSERT INTO kept_for VALUES (?, ?, ?)", kept_for)
    kept = {pid: tuple(row) for pid, *row in con.execute("SELECT id, D, U, R, A FROM scores")}
    con.executemany("DELETE FROM scores WHERE id = ?", ((pid,) for pid in kept.keys() - wanted.keys()))
    con.executemany(
        "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?)",
        ((pid, *row) for pid, row in wanted.items() if kept.get(pid) != row),
    )


def _nan(row: Scores) -> bool:
    return any(value is not None and math.isnan(value) for value in row)


# Kept scores are of one index.db file (``kept_for``: its device and inode): ``memoryd rebuild-index`` deletes it and
# makes another, whose ids may name other promotions. The file system may give the new file the old one's inode
# number; the highest promotion id the file has given (AUTOINCREMENT: never given again in the same file) then tells
# the two apart unless the new file has given as many.
_SEQ = "SELECT coalesce(max(seq), 0) FROM main.sqlite_sequence WHERE name = 'promotions'"


def _seq(store: Store) -> int:
    return int(store.index.db.execute_sql(_SEQ).fetchone()[0])
