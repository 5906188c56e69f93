"""What changed in a data root since the last look: the change feed that lets a console open beside memoryd see
memoryd's captures, decisions, audit lines and rebuilds as they happen.

Asking is cheap first and thorough second. A :class:`Token` (SQLite's ``data_version`` on this connection, and
the size, time and identity of index.db, engram.db, their WAL files and the audit log) says whether anything can
have changed: a handful of ``stat`` calls and one pragma, cheap enough to ask every second. Only when the token
moved are the rows compared with the snapshot of the last look, to say which promotions are new or decided,
which memories were added, changed or removed, and how many audit lines were appended.

The snapshot keeps, per row, its key and one 64-bit hash of the columns a pane shows (never a body), in an SQLite
database in this process's memory (temporary tables in memory too: nothing of it reaches a disk), and SQLite
compares it with index.db, attached read-only for the look: a join on the key, so a look builds no Python object
per row beyond the hash's arguments (a million memories: about a second, where a dict of every row's hash took
ten, and 700 MB). The hash is Python's own, salted per process: the snapshot never outlives the process, and
keeping it instead of the columns takes 46 MB at a million memories, not 271 MB. Two rows that differ hash the
same once in 2**64 looks at them.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from peewee import DatabaseError

from engram.store.audit.chain import open_log
from engram.store.errors import StoreError
from engram.store.index import BUSY_TIMEOUT_MS
from engram.store.service import Store

_COLUMNS = {  # per table, its key (with the type SQLite needs to look it up by index) and the columns a pane shows
    "promotions": ("id INTEGER", "status", "decided_at"),
    "memories": (
        "slug TEXT",
        "body_path",
        "title",
        "updated_at",
        "decay_state",
        "fingerprint",
        "recall_count",
        "last_recalled_at",
    ),
}
_FileState = tuple[int, int, int, int] | None  # (device, inode, size, mtime in ns), None when absent


@dataclass(frozen=True)
class Token:
    """Everything whose change means "look again"."""

    data_version: int
    files: tuple[_FileState, ...]


@dataclass
class Changes:
    """What changed between two looks."""

    promotions: set[int] = field(default_factory=set)  # new, decided, or gone
    memories: set[str] = field(default_factory=set)  # added, changed or removed slugs
    audit_lines: int = 0  # lines appended to the audit log
    audit_rewritten: bool = False  # the log shrank or is another file: verify it again
    index_replaced: bool = False  # index.db is a new file (memoryd's rebuild-index)

    @property
    def kinds(self) -> set[str]:
        """The names of what changed, for a console deciding which panes to refresh."""
        found = {
            "promotions": bool(self.promotions),
            "memories": bool(self.memories),
            "audit": bool(self.audit_lines or self.audit_rewritten),
            "index": self.index_replaced,
        }
        return {kind for kind, changed in found.items() if changed}

    def __bool__(self) -> bool:
        return bool(self.kinds)


class ChangeFeed:
    """Polls one open store; each :meth:`poll` answers "what changed since the previous poll"."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.token = self._token()
        self._seen = _Seen(store.index.path)
        try:
            self._seen.compare()  # the first look: what later looks compare with
        except sqlite3.Error as exc:
            raise StoreError(f"{store.index.path}: cannot look for changes now ({exc})") from None
        self._audit = _stat(store.layout.audit_path)
        self._replaced = False  # a replacement noticed by a poll that then failed: the next one says it

    def poll(self) -> Changes | None:
        """None when the token has not moved (the cheap answer); else what changed, possibly nothing visible
        (a write that changed no row a pane shows). A database busy or half rebuilt is a :class:`StoreError`:
        ask again later."""
        try:
            return self._poll()
        except (DatabaseError, sqlite3.Error) as exc:
            raise StoreError(f"{self.store.index.path}: cannot look for changes now ({exc})") from None

    def _poll(self) -> Changes | None:
        self._replaced |= self.store.index.follow()  # kept until a poll succeeds: a rebuild is never unsaid
        token = self._token()
        if token == self.token and not self._replaced:
            return None
        promotions, memories = self._seen.compare()
        self.token = token
        changes = Changes(promotions={int(p) for p in promotions}, memories={str(m) for m in memories})
        changes.index_replaced, self._replaced = self._replaced, False
        changes.audit_lines, changes.audit_rewritten = self._audit_appended()
        return changes

    def _token(self) -> Token:
        layout, index = self.store.layout, self.store.index
        version = index.db.execute_sql("PRAGMA main.data_version").fetchone()[0]
        files = (_stat(index.path), _log(index.path), _stat(index.engram_path), _log(index.engram_path))
        return Token(version, (*files, _stat(layout.audit_path)))

    def _audit_appended(self) -> tuple[int, bool]:
        """Lines appended since the last look, counted in the new bytes only; a shorter or other file, or one
        changed without growing, is a rewrite."""
        before, now = self._audit, _stat(self.store.layout.audit_path)
        self._audit = now
        if before == now:
            return 0, False
        if before is None or now is None or before[:2] != now[:2] or now[2] <= before[2]:
            return 0, True  # another file, cut, or changed in place (a line edited or put back): verify again
        with open_log(self.store.layout.audit_path) as fh:
            fh.seek(before[2])
            return fh.read(now[2] - before[2]).count(b"\n"), False


class _Seen:
    """The rows of the last look, in memory, and their comparison with index.db as it is now."""

    def __init__(self, index_path: Path) -> None:
        self.path = index_path
        self.live = f"file:{index_path}?mode=ro"
        self.con = sqlite3.connect("file::memory:", uri=True, check_same_thread=False, isolation_level=None)
        self.con.execute("PRAGMA temp_store = MEMORY")
        self.con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        for table, (key, *rest) in _COLUMNS.items():
            self.con.create_function(f"{table}_hash", len(rest), _row_hash, deterministic=True)
            self.con.execute(f"CREATE TABLE {table} ({key} PRIMARY KEY, shown INTEGER NOT NULL) WITHOUT ROWID")
        self.looked: set[str] = set()  # the tables a look has taken in (an empty one is still compared)

    def compare(self) -> tuple[set[int | str], set[int | str]]:
        """The keys of the promotions and of the memories whose rows were added, changed or removed since the
        last look (none at the first); the rows as they are now become the next look's. Raises
        ``sqlite3.Error`` (busy, half rebuilt): nothing is taken then, the next look compares from the same rows."""
        with self._attached():
            return self._delta("promotions"), self._delta("memories")

    @contextmanager
    def _attached(self) -> Iterator[None]:
        """index.db attached read-only for one look, in one read transaction: no handle on it stays open between
        looks (memoryd's rebuild-index needs none left), and each look opens the file there now. Something other
        than a file there (a FIFO would hang SQLite's first read) is not looked at."""
        if self.path.exists() and not self.path.is_file():
            raise sqlite3.OperationalError(f"{self.path}: not a regular file")
        self.con.execute("ATTACH DATABASE ? AS live", (self.live,))
        try:
            self.con.execute("BEGIN")
            try:
                yield
                self.con.execute("COMMIT")
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
        finally:
            self.con.execute("DETACH DATABASE live")

    def _delta(self, table: str) -> set[int | str]:
        key, *rest = [name.split()[0] for name in _COLUMNS[table]]
        shown = f"{table}_hash({', '.join('l.' + c for c in rest)})"  # of a row of live, aliased l
        if self.con.execute(f"SELECT 1 FROM main.{table} LIMIT 1").fetchone() is None:  # nothing seen: all of it
            self.con.execute(
                f"INSERT OR REPLACE INTO main.{table} SELECT l.{key}, {shown} FROM live.{table} l WHERE {key} NOT NULL"
            )
            if table in self.looked:
                return {k for (k,) in self.con.execute(f"SELECT {key} FROM main.{table}")}
            self.looked.add(table)
            return set()  # the very first look names nothing (a million keys, only to be dropped)
        changed = [
            k
            for (k,) in self.con.execute(
                f"SELECT l.{key} FROM live.{table} l LEFT JOIN main.{table} s ON s.{key} = l.{key} "
                f"WHERE l.{key} NOT NULL AND (s.{key} IS NULL OR s.shown != {shown}) "
                f"UNION SELECT {key} FROM main.{table} "
                f"WHERE {key} NOT IN (SELECT {key} FROM live.{table} WHERE {key} NOT NULL)"
            )
        ]
        if changed:
            keys = (json.dumps(changed),)
            among = f"{key} IN (SELECT value FROM json_each(?))"
            self.con.execute(f"DELETE FROM main.{table} WHERE {among}", keys)
            self.con.execute(
                f"INSERT OR REPLACE INTO main.{table} SELECT l.{key}, {shown} FROM live.{table} l WHERE l.{among}",
                keys,
            )
        return set(changed)


def _row_hash(*shown: object) -> int:
    """The snapshot's stand-in for a row's shown columns: equal rows hash equal within this process."""
    return hash(shown)


def _log(path: Path) -> _FileState:
    """The state of a database's write-ahead log, where an empty log is no log: SQLite makes an empty one when
    the first connection opens and the last one to close removes it, and the console closes its connections
    whenever a worker ends. Counted as changes, the feed compared every row once a second on an idle console
    (a noticeable pause at 100,000 memories). A commit fills the log (or, once it restarts, rewrites it: a new
    time), and a last close's checkpoint writes the database file itself, so no commit goes unseen."""
    state = _stat(path.with_name(path.name + "-wal"))
    return None if state is None or state[2] == 0 else state


def _stat(path: Path) -> _FileState:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
