"""engram's persistent full-text index: a trigram index of the memories of plain scopes, kept in engram's cache
directory (``$XDG_CACHE_HOME/engram/search/``, one SQLite file per data root), never in memoryd's index.db.

It is a cache: the Markdown files are the truth, and deleting the file loses nothing but the time to build it
again. Each row keeps the fingerprint of the file it was read from (path, size, mtime, a hash of the bytes), so
:func:`sync` brings it up to date by stat-ing every file and reading only those whose fingerprint moved; the
console opens with the index as it was and searches bodies at once while the sync runs in the background.

Nothing of a sensitive scope is ever written to it: only ``.md`` files of scopes that are not sensitive are
read, and every batch is written only after asking again which scopes are sensitive. When a scope is marked
sensitive (by engram or memoryd), the whole file is overwritten with zeros and unlinked, as the scope's own
plaintext files are, and built again from the plain scopes; deleting rows would leave their text in SQLite's
free pages.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import mmap
import os
import secrets
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engram.store.drift.scan import FileEntry, read_ahead
from engram.store.errors import BadMemoryFile, StoreError
from engram.store.index import TEMP_IN_MEMORY
from engram.store.lazy import lazy_module
from engram.store.paths import root_cache_file
from engram.store.search import generation
from engram.store.search.arrays import parse_rows, phrase
from engram.store.search.rows import padded
from engram.store.search.segments import verify as verify_segments
from engram.store.service import Store
from engram.store.write.atomic import flush_written, fsync_dir, scrub, scrub_except, write_atomic

if TYPE_CHECKING:
    from engram.store import header
else:
    header = lazy_module("engram.store.header")  # PyYAML: only when a file is read

SCHEMA = "7"  # how rows are built: a file of another schema is discarded and built again (3 to 6 are upgraded)
OPTIMIZE_FROM = 2_000  # rows a sync writes from which it merges the index (see _merge_if_many)
SLICE = 20_000  # memories a full sync compares at a time (a million at once held 1.1 GB)
BATCH = 500  # files read per transaction: what a reader waits for at most, and what the sync holds in memory
SUFFIXES = ("", "-wal", "-shm", "-journal")
BUSY_TIMEOUT = 5.0  # seconds a connection waits for another's write lock before it gives up (see ``busy``)


TAG_SEPARATOR = "\x1f"  # between a memory's tags in the ``tags`` column (the text has them space-separated)

# FTS5 indexes only the memories above the segments (the ``tail`` view: ids above ``meta``'s FTS_FROM, which the
# transaction that commits the segments' manifest moves to what they cover): the segments answer for the others,
# and FTS5 over all of them had cost a build more than the segments (at a million memories, minutes of merging
# and gigabytes written) to answer the few memories a sync adds between two folds. It follows ``docs`` through
# triggers, except while a build defers it (see _defer_if_empty): the row named DEFERRED is in ``meta`` from
# before the build's first row until the transaction that fills FTS5 from the tail.
DEFERRED = "fts_deferred"
STAMP = "root_stamp"  # the stamp of the root the last full sync saw
FTS_FROM = "fts_from"
_ABOVE = f"coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{FTS_FROM}'), 0)"
_FOLLOWING = f"WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = '{DEFERRED}')"
_FOLLOWERS = ("docs_added", "docs_removed", "docs_changed")

_TABLES = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    slug TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    digest TEXT NOT NULL,
    tags TEXT NOT NULL,
    head TEXT NOT NULL,
    body TEXT NOT NULL,
    listing TEXT
);
CREATE TABLE IF NOT EXISTS snapshot (name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE VIEW IF NOT EXISTS tail AS SELECT id, head, body FROM docs WHERE id > {_ABOVE};
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(head, body, content='tail', content_rowid='id', tokenize='trigram');
CREATE TABLE IF NOT EXISTS dead (seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS docs_dead AFTER DELETE ON docs BEGIN
    INSERT INTO dead (id) VALUES (old.id);
END;
CREATE TRIGGER IF NOT EXISTS docs_added AFTER INSERT ON docs {_FOLLOWING} AND new.id > {_ABOVE} BEGIN
    INSERT INTO fts (rowid, head, body) VALUES (new.id, new.head, new.body);
END;
CREATE TRIGGER IF NOT EXISTS docs_removed AFTER DELETE ON docs {_FOLLOWING} AND old.id > {_ABOVE} BEGIN
    INSERT INTO fts (fts, rowid, head, body) VALUES ('delete', old.id, old.head, old.body);
END;
CREATE TRIGGER IF NOT EXISTS docs_changed AFTER UPDATE OF head, body ON docs {_FOLLOWING} AND old.id > {_ABOVE} BEGIN
    INSERT INTO fts (fts, rowid, head, body) VALUES ('delete', old.id, old.head, old.body);
    INSERT INTO fts (rowid, head, body) VALUES (new.id, new.head, new.body);
END;
"""


# a memory's triggers in one string, sorted (so every reader builds the same head), for a query over memories m
TRIGGERS = (
    "coalesce((SELECT group_concat(trigger, ' ') FROM "
    "(SELECT trigger FROM triggers t WHERE t.slug = m.slug ORDER BY trigger)), '')"
)
# Everything index.db says of a memory m that its row here is built from or stands for, in one string kept in the
# row (``listing``): a memory whose string is not its row's is compared again (see the partial sync in
# engram.store.search.lookup). memoryd's ``updated_at`` and ``fingerprint`` (a hash of the body's start) move with
# every save and update of its own; engram's writes set ``updated_at``.
_LISTED = (  # the listing's parts, the triggers second; a sync joins them here, as LISTING does in SQL
    "coalesce(CAST(m.title AS TEXT), '')",
    TRIGGERS,
    "coalesce(CAST(m.body_path AS TEXT), '')",
    "coalesce(CAST(m.scope_hash AS TEXT), '')",
    "coalesce(CAST(m.updated_at AS TEXT), '')",
    "coalesce(CAST(m.fingerprint AS TEXT), '')",
)
LISTING = " || char(31) || ".join(_LISTED)


def head_text(title: str, triggers: str, slug: str) -> str:
    """What a memory is searched by before its body: title, triggers (as TRIGGERS joins them) and slug,
    lowercased and ``padded``. The console's index and the persistent one build it the same way, so both answer
    alike."""
    return padded(f"{title} {triggers} {slug}".lower())


def searched_parts(data: bytes, path: str) -> tuple[list[str], str]:
    """A memory file's tags and body, what it is searched by beyond its head. The file is read as
    :func:`engram.store.header.read` reads it, its other fields not validated: a file with a field memoryd would
    refuse (``engram check`` reports it) is still found by its words, and no search waits for pydantic. Its tags
    must be a list of strings, as memoryd's schema has them."""
    loaded, parts = header.read(data, path)
    tags = loaded.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise BadMemoryFile(path, "bad frontmatter field tags: not a list of strings")
    return tags, parts.body


def cache_path(store: Store) -> Path:
    """The index file of ``store``'s root: named by a hash of the root's resolved path."""
    return root_cache_file(store.layout.root, "search", ".db")


def segments_dir(path: Path) -> Path:
    """Where the segments of the index file ``path`` are (see :mod:`engram.store.search.generation`)."""
    return path.with_suffix(".seg")


def rows_dir(path: Path) -> Path:
    """Where the search's rows of plain scopes are kept for the index file ``path`` (see :meth:`FullText.keep`)."""
    return path.with_suffix(".rows")


def _connect(path: Path, *, create: bool) -> sqlite3.Connection:
    """A connection in WAL mode (the console reads while a sync writes). Raises ``sqlite3.Error`` or
    ``OSError`` for a file that is not this index (the caller discards it), :func:`busy` when another process
    holds it for writing past the timeout while it must be made or upgraded (the caller tries later). A file of
    this schema is only read here: opening never waits for a sync's transaction."""
    if create:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    elif not path.exists():
        raise FileNotFoundError(path)
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT, check_same_thread=False, isolation_level=None)
    try:
        con.execute(TEMP_IN_MEMORY)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA secure_delete=ON")
        schema = _schema(con)
        if create and schema in (None, *_UPGRADED):
            os.chmod(path, 0o600)
            _create(con)
            schema = _schema(con)
        if schema != SCHEMA:
            raise sqlite3.DatabaseError(f"schema {schema or 'missing'}, not {SCHEMA}")
    except BaseException:
        con.close()
        raise
    return con


# schemas made this one in place: 3 has no ``dead`` table, 4 triggers that always follow, 5 FTS5 over every row,
# 6 no ``listing`` (NULL in its rows until a sync compares them: never equal to a memory's)
_UPGRADED = ("3", "4", "5", "6")
_FTS_REMADE = ("3", "4", "5")


def _schema(con: sqlite3.Connection) -> str | None:
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return None
    row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    return None if row is None else str(row[0])


def _create(con: sqlite3.Connection) -> None:
    """Make the tables, or bring a file of an older schema to this one, in one transaction: no writer ever sees
    the triggers gone. An older FTS5 table indexed every row: it is dropped, and the new one filled from the rows
    above the segments (all of them when there are none)."""
    with _immediate(con):
        schema = _schema(con)
        if schema not in (None, *_UPGRADED):
            return  # made meanwhile by another process (or of another schema: the caller says so)
        if schema in _FTS_REMADE:
            for trigger in _FOLLOWERS:
                con.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            con.execute("DROP TABLE IF EXISTS fts")
        for statement in _statements(_TABLES):
            con.execute(statement)
        if "listing" not in {row[1] for row in con.execute("PRAGMA table_info(docs)")}:
            con.execute("ALTER TABLE docs ADD COLUMN listing TEXT")
        if schema in _FTS_REMADE:
            try:
                known = generation.manifest(con)
            except generation.DamagedManifest:
                known = None  # built again by the next sync's fold; FTS5 holds every row meanwhile
            _follow_segments(con, known.covered if known is not None else 0)
        con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA,))


def _follow_segments(con: sqlite3.Connection, covered: int) -> None:
    """In the transaction that makes the segments cover the ids up to ``covered``: FTS5 now indexes the rows above
    them only, filled again from them (a fold leaves few or none; a build's deferred fill is this too)."""
    con.execute(f"INSERT OR REPLACE INTO meta (key, value) VALUES ('{FTS_FROM}', ?)", (str(covered),))
    con.execute("INSERT INTO fts (fts) VALUES ('rebuild')")
    con.execute("DELETE FROM meta WHERE key = ?", (DEFERRED,))


def _statements(script: str) -> Iterator[str]:
    """The statements of ``script`` one at a time (``executescript`` would commit the transaction first)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            yield statement
            statement = ""


def busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says another connection holds the file (a lock, not damage: nothing to discard)."""
    return getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def discard(store: Store) -> None:
    """Overwrite the index's files with zeros and unlink them: what a scope just marked sensitive may have left
    there goes the way of its plaintext files. The next sync builds it again."""
    path = cache_path(store)
    for suffix in SUFFIXES:
        scrub(path.with_name(path.name + suffix))
    generation.sweep(segments_dir(path), None)
    scrub_except(rows_dir(path), ())  # the kept rows: of plain scopes, one of which is being marked


def _mapped(path: Path) -> bytes | mmap.mmap:
    """A kept-rows file where it is mapped (read-only; an empty one as no bytes, which cannot be mapped). Raises
    ``OSError`` for a file missing, or not a regular file (a FIFO or a symlink put in its place)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path.name}: not a regular file")
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if st.st_size else b""
    finally:
        os.close(fd)


def _digest(data: bytes | mmap.mmap) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@contextlib.contextmanager
def _immediate(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction on ``con`` (taken at once: a reader waits for it, never the other way), committed on
    leaving, rolled back on any exception."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


class _Abandoned(Exception):
    """A keep that must not commit (a scope it holds was marked sensitive meanwhile, or the index replaced)."""


class FullText:
    """A reader of the persistent index, as it was when each query runs (WAL: a sync's batches appear as they
    commit). Queries may be asked from several threads."""

    def __init__(self, path: Path, con: sqlite3.Connection) -> None:
        self.path = path
        self.con = con
        st = os.stat(path)
        self.file = (st.st_dev, st.st_ino)
        self.segments = generation.Reader(con, segments_dir(path))
        self._reading = threading.Lock()

    @classmethod
    def open(cls, store: Store, *, create: bool = True) -> FullText | None:
        """The index of ``store``'s root (created empty if ``create``); None when there is none and none may be
        made (a cache directory that cannot be written). A damaged file is discarded and started afresh."""
        path = cache_path(store)
        try:
            return cls(path, _connect(path, create=create))
        except FileNotFoundError:
            return None
        except (sqlite3.Error, OSError) as exc:
            if not create or (isinstance(exc, sqlite3.Error) and busy(exc)):
                return None
        try:
            discard(store)
            return cls(path, _connect(path, create=True))
        except (sqlite3.Error, OSError):
            return None

    def current(self) -> bool:
        """False once the file was discarded or replaced (a scope marked sensitive elsewhere): reopen."""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.file

    def close(self) -> None:
        self.con.close()

    def highest(self) -> int:
        """The highest id a memory has had here (ids are never reused): the size of a table by id."""
        row = self.con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'docs'").fetchone()
        return int(row[0]) if row else 0

    def stamp(self) -> str | None:
        """The stamp of the root the last full sync saw (see :func:`engram.store.search.lookup.stamp`)."""
        row = self.con.execute("SELECT value FROM meta WHERE key = ?", (STAMP,)).fetchone()
        return str(row[0]) if row else None

    def tags(self) -> Iterator[tuple[int, str]]:
        """``(id, tags)`` of every memory with tags (lowercased, separated by TAG_SEPARATOR)."""
        yield from self.con.execute("SELECT id, tags FROM docs WHERE tags != ''")

    def snapshot(self) -> dict[str, bytes | mmap.mmap] | None:
        """What :meth:`keep` kept, by name, its files mapped; None when there is none (or it cannot be read now:
        one kept by an older engram, in the database itself, is written again as files by the next keep)."""
        try:
            kept = {str(name): bytes(data) for name, data in self.con.execute("SELECT name, data FROM snapshot")}
            names = json.loads(kept["files"])
            found = {name: _mapped(rows_dir(self.path) / f"{kept['generation'].decode()}.{name}") for name in names}
        except (sqlite3.Error, KeyError, ValueError, TypeError, AttributeError, OSError):
            return None
        return found | {"scopes": kept["scopes"]}

    def forget(self) -> None:
        """Drop the kept snapshot (it could not be read); its files go with the next keep's sweep."""
        with contextlib.suppress(sqlite3.Error):
            self.con.execute("DELETE FROM snapshot")

    def keep(self, blobs: dict[str, bytes], sensitive: Callable[[], set[str]]) -> dict[str, bytes | mmap.mmap] | None:
        """Keep the search's rows (``blobs``, with the JSON list of their scopes under ``scopes``) as files beside
        the index, unless the same are kept already; returns them as :meth:`snapshot` does. The files are written
        and flushed before the snapshot naming them commits, and inside that transaction the sensitive scopes are
        asked again (``sensitive``): rows of a scope marked sensitive meanwhile are scrubbed, not kept. The
        generation kept before stays (an index being replaced may still read it) and older ones are scrubbed.
        Returns None, keeping nothing, when the index is busy, was replaced, or its directory cannot be written."""
        files = {name: _digest(data) for name, data in sorted(blobs.items()) if name != "scopes"}
        listed = json.dumps(files).encode()
        try:
            kept = dict(self.con.execute("SELECT name, data FROM snapshot WHERE name IN ('files', 'generation')"))
        except sqlite3.Error:
            return None
        if kept.get("files") == listed and (found := self.snapshot()) is not None:
            return found
        earlier = bytes(kept.get("generation", b"")).decode()
        directory, name = rows_dir(self.path), secrets.token_hex(8)
        paths = [directory / f"{name}.{part}" for part in files]
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            for path, part in zip(paths, files, strict=True):
                write_atomic(path, blobs[part], mode=0o600, durable=False)
            flush_written(paths)
            fsync_dir(directory)
            with _immediate(self.con) as con:
                if not self.current() or set(json.loads(blobs["scopes"])) & sensitive():
                    raise _Abandoned
                con.execute("DELETE FROM snapshot")
                rows = [("generation", name.encode()), ("files", listed), ("scopes", blobs["scopes"])]
                con.executemany("INSERT INTO snapshot (name, data) VALUES (?, ?)", rows)
        except (sqlite3.Error, OSError, _Abandoned):
            for path in paths:
                scrub(path)
            return None
        scrub_except(directory, {name, earlier} - {""})  # older generations: no index reads them now
        return self.snapshot()

    def warm(self, position: np.ndarray, rows: int) -> tuple[int, np.ndarray] | None:
        """Open the segments, with the tables of rows a search index (``position``: id -> row, of ``rows``) flags
        through, and read what their lookups read most into the kernel's cache (for the worker that loads the
        search; a key typed meanwhile is answered, as the reading is done without the lock); returns what they
        cover (as :meth:`flag_heads` does), None without segments of heads."""
        covered, opened = None, []
        with contextlib.suppress(sqlite3.Error), self._reading:
            self.segments.refresh()
            self.segments.tabulate(position, rows)
            opened = [s for s in (self.segments.segments, self.segments.heads) if s is not None]
            if self.segments.heads is not None:
                covered = self.segments.covered, self.segments.alive
        for segments in opened:
            segments.read_ahead()
        return covered

    def release(self) -> None:
        """Let go of the segments' pages queries touched (see :meth:`Segment.release`): for a console idle, so a
        query running now (another index's) leaves it to the next idle moment rather than make it wait."""
        if self._reading.acquire(blocking=False):
            try:
                self.segments.release()
            finally:
                self._reading.release()

    def flag(self, term: str, position: np.ndarray, flags: np.ndarray) -> None:
        """Flag the rows (``position``: id -> row, -1 for none) of the memories whose head, tags or body contain
        ``term``; ``flags`` has a byte more than there are rows, where ids of no row go. The segments answer for
        the memories they cover (they match bytes: a term of any length), FTS5 for those above. The segments and
        FTS5 are asked again if a sync committed meanwhile (a fold moves what each answers for). A damaged or
        discarded file answers nothing rather than failing a keystroke; the next look reopens it."""
        try:
            with self._reading:
                for _ in range(3):
                    flags[:] = 0
                    (version,) = self.con.execute("PRAGMA data_version").fetchone()
                    self.segments.refresh()
                    self.segments.flag(term, position, flags)
                    above = np.concatenate(list(self._above(term, self.segments.covered)))
                    if self.con.execute("PRAGMA data_version").fetchone() == (version,):
                        break
        except sqlite3.Error:
            flags[:] = 0
            return
        rows = position[above[above < len(position)]]  # ids it took in after the rows were listed have none
        flags[rows[rows >= 0]] = 1

    def _above(self, term: str, covered: int) -> Iterator[np.ndarray]:
        """The ids above the segments' ``covered`` holding ``term``: from FTS5, and by a look at each row where FTS5
        cannot answer: the rows between the segments and FTS5 (segments that could not be opened: slow, but never
        wrong, until the next sync builds them again), and, for a term under three characters (a two-character
        CJK word, which no trigram holds), every row above the segments (fewer than ``generation.FOLD_FROM`` or a
        ``FOLD_SHARE``-th of the memories, whichever is more)."""
        start = _fts_from(self.con)
        scan = "SELECT group_concat(id) FROM docs WHERE id > ? AND id <= ? AND (instr(head, ?) OR instr(body, ?))"
        if len(term) >= 3:
            query = "SELECT group_concat(rowid) FROM fts WHERE fts MATCH ? AND rowid > ?"
            yield parse_rows(self.con.execute(query, (phrase(term), max(covered, start))).fetchone()[0])
            if covered < start:
                yield parse_rows(self.con.execute(scan, (covered, start, term, term)).fetchone()[0])
        else:
            yield parse_rows(self.con.execute(scan, (covered, 1 << 62, term, term)).fetchone()[0])

    def flag_heads(self, needle: str, position: np.ndarray, flags: np.ndarray) -> tuple[int, np.ndarray] | None:
        """As :meth:`flag`, the memories up to the segments' highest id whose head holds ``needle`` (any length);
        returns that id and which ids up to it are alive (the caller scans the heads of the others). None, nothing
        flagged, when there are no segments of heads (the caller scans every head)."""
        try:
            with self._reading:
                self.segments.refresh()
                if self.segments.flag_heads(needle, position, flags):
                    return self.segments.covered, self.segments.alive
        except sqlite3.Error:
            flags[:] = 0
        return None


@dataclass
class SyncResult:
    """What a sync did."""

    read: int = 0  # files read (new or changed)
    touched: int = 0  # files whose fingerprint moved but whose bytes did not
    removed: int = 0  # rows of memories gone, moved to a sensitive scope or encrypted
    unreadable: list[str] = field(default_factory=list)  # files that could not be read or parsed
    discarded: bool = False  # the file held a sensitive scope's text and was overwritten and built again

    @property
    def changed(self) -> bool:
        return bool(self.read or self.removed or self.discarded)


@dataclass(frozen=True)
class _Source:
    """A memory as index.db lists it, with what the index needs of it."""

    slug: str
    scope: str
    path: str
    head: str
    listing: str


def _sources(
    store: Store, sensitive: set[str], where: str, args: tuple[object, ...]
) -> tuple[dict[str, _Source], list[str]]:
    """The memories of plain scopes stored as ``.md`` among the rows of memories ``where`` picks, with their heads;
    and the slugs of every row it picked, in its order."""
    found = {}
    slugs = []
    query = f"SELECT slug, title, scope_hash, body_path, {', '.join(_LISTED)} FROM memories m {where}"
    for slug, title, scope, path, *listed in store.index.db.execute_sql(query, args):
        slugs.append(slug)
        if scope not in sensitive and path.endswith(".md"):
            found[slug] = _Source(slug, scope, path, head_text(title, listed[1], slug), "\x1f".join(listed))
    return found, slugs


def _known(con: sqlite3.Connection, where: str, args: tuple[object, ...]) -> dict[str, _Known]:
    """The index's rows ``where`` picks, by slug."""
    query = f"SELECT slug, id, path, size, mtime_ns, digest, head, listing FROM docs {where}"
    return {slug: _Known(*row) for slug, *row in con.execute(query, args)}


def _json(values: Collection[str]) -> str:
    """Values for ``json_each``: one parameter for any number of slugs or scopes."""
    return json.dumps(sorted(values))


def sync(
    store: Store,
    only: Collection[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    stamp: str | None = None,
) -> SyncResult:
    """Bring the index in step with index.db and the files: every memory, or those of ``only`` (the change
    feed's slugs, or the memories :func:`engram.store.search.lookup.moved` names). Files are stat-ed; only those
    whose fingerprint moved are read. ``stamp``, the root's as it was when the sync began, is recorded by a full
    sync, and by a partial one given it (see :mod:`engram.store.search.lookup`); a partial one without it leaves
    the last. ``progress`` is told ``(memories compared, memories)``, then, when the sync makes segments, ``(memories
    in order, memories to fold)`` (see :func:`engram.store.search.generation.fold`). Raises :class:`StoreError`
    when the index cannot be written (another process syncing it holds the lock too long): try again later."""
    path = cache_path(store)
    result = SyncResult()
    try:
        con = _open_for_sync(store, path, result)
        with closing(con):
            full = result.discarded or only is None
            if full:
                _defer_if_empty(con)
            _sync(store, con, None if full else only, progress, result)
            folded = False
            if full or not deferred(con):  # a build under way or cut short is finished, and folded, by a full sync
                directory = segments_dir(path)
                folded = generation.fold(con, directory, store.sensitive_scopes, _follow_segments, progress)
                if not folded and deferred(con):  # nothing to fold: the rows deferred go to FTS5
                    with _immediate(con):
                        _follow_segments(con, _fts_from(con))
            _merge_if_many(con, result)
            if full or stamp is not None:
                with _immediate(con):
                    con.execute("DELETE FROM meta WHERE key = ?", (STAMP,))
                    if stamp is not None:
                        con.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (STAMP, stamp))
            if folded or result.changed:
                _shrink_log(con)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"{path}: the search index cannot be brought up to date now ({exc})") from None
    return result


def _shrink_log(con: sqlite3.Connection) -> None:
    """Copy the WAL into the file and empty it. SQLite leaves a WAL as long as its longest transaction until the
    last connection closes, and a console holds one open all session: after the first build of 20,000 memories
    that was 36 MB beside a 45 MB index, kept for nothing. It waits for readers inside a query (briefly); one that
    outlasts the timeout leaves the WAL as it is, to the next sync."""
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()


def _defer_if_empty(con: sqlite3.Connection) -> None:
    """A full sync of an empty index (its first build, a rebuild) writes ``docs`` without FTS5 following them: the
    fold that follows makes segments of them all, and FTS5 is filled in its transaction from the rows above those,
    few or none (:func:`_follow_segments`). Following each row had cost a build three times FTS5's work (every
    batch's transaction left FTS5 a segment to merge) of filling it from every row at the end. The mark that defers
    it is committed before the first row, so a build cut short leaves it: the next full sync finishes the job (and
    ``check`` does not count the rows FTS5 lacks meanwhile as damage). Rows another process writes or deletes
    meanwhile are deferred alike."""
    if not con.execute("SELECT 1 FROM docs LIMIT 1").fetchone():
        con.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, '1')", (DEFERRED,))


def deferred(con: sqlite3.Connection) -> bool:
    """Whether FTS5 waits for a build's fill (see :func:`_defer_if_empty`)."""
    return con.execute("SELECT 1 FROM meta WHERE key = ?", (DEFERRED,)).fetchone() is not None


def _fts_from(con: sqlite3.Connection) -> int:
    """The id above which FTS5 indexes the rows (the segments cover those up to it)."""
    return int(con.execute(f"SELECT {_ABOVE}").fetchone()[0])


def _merge_if_many(con: sqlite3.Connection, result: SyncResult) -> None:
    """Merge the trigram index into one b-tree (FTS5's ``optimize``) after a sync that wrote many rows: batches
    leave dozens of segments, and a phrase query reads each one (a long phrase then took about three times as
    long). A few rows at a time, against the rows FTS5 holds, are left to FTS5's own merging, and so is a
    fold's fill (one transaction)."""
    written = result.read + result.touched + result.removed
    if written >= OPTIMIZE_FROM or (written and written * 10 >= _followed(con)):
        con.execute("INSERT INTO fts (fts) VALUES ('optimize')")


def _followed(con: sqlite3.Connection) -> int:
    """How many rows FTS5 indexes: those above the segments (counting every row had cost a change-feed sync at a
    million memories up to a second, a scan of one of the table's indexes)."""
    return int(con.execute("SELECT count(*) FROM tail").fetchone()[0])


def _open_for_sync(store: Store, path: Path, result: SyncResult) -> sqlite3.Connection:
    """The index for writing: a file that is not this index, or that holds a sensitive scope's text, is
    overwritten with zeros, unlinked and started afresh (then every memory is read, whatever ``only`` said)."""
    try:
        con = _connect(path, create=True)
        if not _holds_sensitive(con, store.sensitive_scopes()):
            return con
        con.close()
    except sqlite3.DatabaseError as exc:
        if busy(exc):
            raise  # held by another sync: not damage

    discard(store)
    result.discarded = True
    return _connect(path, create=True)


def purge(store: Store) -> bool:
    """If the index holds text of a scope now sensitive, overwrite it with zeros and unlink it (the next sync
    builds it again); True if it did. Called as soon as engram marks a scope sensitive, before its files are
    encrypted, so the index never outlives the scope's plaintext."""
    path = cache_path(store)
    try:
        with closing(_connect(path, create=False)) as con:
            if not _holds_sensitive(con, store.sensitive_scopes()):
                return False
    except FileNotFoundError:
        return False
    except (sqlite3.Error, OSError):
        pass  # not readable as the index: nothing to keep
    discard(store)
    return True


def rebuild(store: Store, progress: Callable[[int, int], None] | None = None) -> SyncResult:
    """Overwrite the index with zeros, unlink it and build it again from the plain scopes' files (``engram
    repair`` of a damaged index, ``engram rebuild-index``)."""
    discard(store)
    return sync(store, progress=progress)


def _holds_sensitive(con: sqlite3.Connection, sensitive: set[str]) -> bool:
    if not sensitive:
        return False
    query = "SELECT 1 FROM docs WHERE scope IN (SELECT value FROM json_each(?)) OR path NOT LIKE '%.md' LIMIT 1"
    kept = _kept_scopes(con)
    try:
        segments = generation.manifest(con)
    except generation.DamagedManifest:
        return True
    held = (kept or set()) | (segments.scopes if segments else set())
    return con.execute(query, (_json(sensitive),)).fetchone() is not None or kept is None or bool(held & sensitive)


def _kept_scopes(con: sqlite3.Connection) -> set[str] | None:
    """The scopes of the rows the search's snapshot holds; None when that cannot be read (it may hold anything)."""
    row = con.execute("SELECT data FROM snapshot WHERE name = 'scopes'").fetchone()
    try:
        return {str(scope) for scope in json.loads(row[0])} if row else set()
    except (ValueError, TypeError):
        return None


@dataclass(frozen=True)
class _Known:
    """A memory's row in the index, as far as a sync compares it."""

    id: int
    path: str
    size: int
    mtime_ns: int
    digest: str
    head: str
    listing: str | None


@dataclass(frozen=True)
class _Stale:
    """A memory whose file's fingerprint moved since its row (or that has none yet)."""

    source: _Source
    known: _Known | None
    size: int
    mtime_ns: int


def _sync(
    store: Store,
    con: sqlite3.Connection,
    only: Collection[str] | None,
    progress: Callable[[int, int], None] | None,
    result: SyncResult,
) -> None:
    """Compare memories and rows a slice of SLICE slugs at a time (in slug order, in both databases), so that what
    is held stays that of a slice whatever the root's size; the slugs of ``only`` in one slice."""
    sensitive = store.sensitive_scopes()
    if only is not None:
        among = ("WHERE slug IN (SELECT value FROM json_each(?))", (_json(only),))
        sources, _ = _sources(store, sensitive, *among)
        _compare(store, con, sources, _known(con, *among), result)
        return
    total = int(store.index.db.execute_sql("SELECT count(*) FROM memories").fetchone()[0])
    after, done = "", 0
    while True:
        sources, picked = _sources(store, sensitive, "WHERE slug > ? ORDER BY slug LIMIT ?", (after, SLICE))
        if len(picked) == SLICE:  # the index's rows up to the slice's last slug
            known = _known(con, "WHERE slug > ? AND slug <= ?", (after, picked[-1]))
        else:  # the last slice: every row left
            known = _known(con, "WHERE slug > ?", (after,))
        _compare(store, con, sources, known, result)
        done += len(picked)
        if progress is not None:
            progress(done, total)
        if len(picked) < SLICE:
            return
        after = picked[-1]


def _compare(
    store: Store, con: sqlite3.Connection, sources: dict[str, _Source], known: dict[str, _Known], result: SyncResult
) -> None:
    """Write the memories whose file's fingerprint moved, and remove the rows of memories gone; a row whose file did
    not move takes the memory's listing where it differs."""
    gone = [known[slug].id for slug in known.keys() - sources.keys()]
    work: list[_Stale] = []
    relisted: list[tuple[str, int]] = []
    root = str(store.layout.root)
    for source in sources.values():
        row = known.get(source.slug)
        try:
            st = os.lstat(os.path.join(root, source.path))
        except OSError:
            if row is not None:
                gone.append(row.id)
            continue
        if row is None or (row.path, row.size, row.mtime_ns, row.head) != (
            source.path,
            st.st_size,
            st.st_mtime_ns,
            source.head,
        ):
            work.append(_Stale(source, row, st.st_size, st.st_mtime_ns))
        elif row.listing != source.listing:
            relisted.append((source.listing, row.id))
    # read by threads ahead of the batches, the kernel asked for the pages further ahead: one file at a time, in
    # slug order (all over the folders), a cold page cache gave a million memories' build under 1 MB/s
    entries = [FileEntry(item.source.path, item.source.scope, "", False) for item in work]
    with closing(read_ahead(store.layout, entries)) as reads:
        for start in range(0, len(work), BATCH):
            part = work[start : start + BATCH]
            _write(store, con, [(item, stored) for item, (_, stored) in zip(part, reads, strict=False)], [], result)
    _write(store, con, [], gone, result, relisted)


def _write(
    store: Store,
    con: sqlite3.Connection,
    work: list[tuple[_Stale, Callable[[], bytes]]],
    gone: list[int],
    result: SyncResult,
    relisted: Collection[tuple[str, int]] = (),
) -> None:
    """Take the batch's files (read outside the transaction: each call returns its bytes or raises why not) and
    write their rows; a memory whose scope became sensitive meanwhile is left out. A file whose bytes did not
    change keeps its text (only its fingerprint and head are written)."""
    writes: list[tuple[_Stale, str, tuple[str, str] | None]] = []  # (memory, digest, (tags, text) if read)
    for item, stored in work:
        try:
            data = stored()
        except (StoreError, OSError) as exc:
            result.unreadable.append(f"{item.source.path}: {exc}")
            continue
        digest = _digest(data)
        if item.known is not None and (item.known.digest, item.known.path) == (digest, item.source.path):
            writes.append((item, digest, None))
            result.touched += 1
            continue
        try:
            tags, body = searched_parts(data, item.source.path)
        except StoreError as exc:
            result.unreadable.append(f"{item.source.path}: {exc}")
            continue
        tags = [tag.lower() for tag in tags]  # a tag may hold spaces: kept apart by TAG_SEPARATOR
        writes.append((item, digest, (TAG_SEPARATOR.join(tags), f"{' '.join(tags)} {body.lower()}")))
        result.read += 1
        if result.read % 50 == 0:
            time.sleep(0.001)  # a console's sync: let the thread that answers the keyboard have the interpreter
    sensitive = store.sensitive_scopes()
    with _immediate(con):
        for item, digest, text in writes:
            source = item.source
            if source.scope in sensitive:
                continue
            row = {"slug": source.slug, "scope": source.scope, "path": source.path, "size": item.size}
            row |= {"mtime_ns": item.mtime_ns, "digest": digest, "head": source.head, "listing": source.listing}
            known = item.known
            if text is None and known is not None and known.head == source.head and known.path == source.path:
                con.execute(
                    "UPDATE docs SET size = :size, mtime_ns = :mtime_ns, digest = :digest, listing = :listing "
                    "WHERE id = :id",
                    row | {"id": known.id},
                )
                continue
            if text is None and known is not None:  # the same bytes under another head or path
                text = con.execute("SELECT tags, body FROM docs WHERE id = ?", (known.id,)).fetchone()
            assert text is not None  # only a known memory's file is taken in unread
            if known is not None:  # a memory's text changes under a new id: a segment's copy of the old is dead
                con.execute("DELETE FROM docs WHERE id = ?", (known.id,))
            con.execute(
                "INSERT INTO docs (slug, scope, path, size, mtime_ns, digest, tags, head, body, listing) "
                "VALUES (:slug, :scope, :path, :size, :mtime_ns, :digest, :tags, :head, :body, :listing)",
                row | {"tags": text[0], "body": text[1]},
            )
        con.executemany("UPDATE docs SET listing = ? WHERE id = ?", relisted)
        con.executemany("DELETE FROM docs WHERE id = ?", ((i,) for i in gone))
        result.removed += len(gone)


def _verify_rows(con: sqlite3.Connection, directory: Path) -> str | None:
    """Why the kept rows' files are not what the snapshot names (missing, replaced, or changed since their
    digests were taken); None when they are, or when none are kept."""
    kept = dict(con.execute("SELECT name, data FROM snapshot WHERE name IN ('files', 'generation')"))
    if "files" not in kept:
        return None
    try:
        files, name = json.loads(kept["files"]), bytes(kept["generation"]).decode()
        for part, digest in files.items():
            if _digest(_mapped(directory / f"{name}.{part}")) != digest:
                return f"kept search rows: {part} changed since it was written"
    except (KeyError, ValueError, TypeError, AttributeError, OSError) as exc:
        return f"kept search rows: {exc}"
    return None


@dataclass
class Verdict:
    """What ``engram check`` says of the index."""

    path: str
    exists: bool = False
    memories: int = 0
    stale: int = 0  # rows whose file moved since (the next sync takes them in: not drift)
    deferred: bool = False  # FTS5 waits for a build's fill (the next full sync does it: not drift)
    damaged: str | None = None  # why SQLite or FTS5 refuses it
    sensitive: int = 0  # rows of a sensitive scope or an encrypted file: must never be there


def verify(store: Store) -> Verdict:
    """Check the index without changing it: SQLite's and FTS5's own integrity checks (FTS5's is asked as an
    INSERT, so the file is opened for writing, though nothing is written), no row of a sensitive scope, and how
    many rows are behind their files (stat only)."""
    return verifier(store)()


def verifier(store: Store) -> Callable[[], Verdict]:
    """:func:`verify` as a call that touches neither the store nor its index: ``check`` runs it on a thread of
    its own beside its read of the files (SQLite lets go of the interpreter while it checks)."""
    return functools.partial(_verify, cache_path(store), store.sensitive_scopes(), str(store.layout.root))


def _verify(path: Path, sensitive: set[str], root: str) -> Verdict:
    verdict = Verdict(str(path), exists=path.exists())
    if not verdict.exists:
        return verdict
    try:
        con = sqlite3.connect(path, timeout=BUSY_TIMEOUT)
    except sqlite3.Error as exc:
        verdict.damaged = str(exc)
        return verdict
    with closing(con):
        try:
            (ok,) = con.execute("PRAGMA quick_check").fetchone()
            if ok != "ok":
                verdict.damaged = ok
                return verdict
            schema = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if schema is None or schema[0] != SCHEMA:
                verdict.damaged = f"schema {schema[0] if schema else 'missing'}, not {SCHEMA}"
                return verdict
            verdict.deferred = deferred(con)
            if not verdict.deferred:  # FTS5 lacks the rows of a build under way (or cut short): not damage
                con.execute("INSERT INTO fts (fts, rank) VALUES ('integrity-check', 1)")
            kept = _kept_scopes(con)
            verdict.sensitive += 1 if kept is None else len(kept & sensitive)  # a snapshot's scope counts as one
            try:
                segments = generation.manifest(con)
            except generation.DamagedManifest as exc:
                verdict.damaged = str(exc)
                return verdict
            covered = segments.covered if segments is not None else 0
            if not verdict.deferred and _fts_from(con) != covered:  # memories neither answers for, or both
                verdict.damaged = f"FTS5 indexes the memories above id {_fts_from(con)}, the segments up to {covered}"
                return verdict
            verdict.damaged = _verify_rows(con, rows_dir(path))
            if verdict.damaged:
                return verdict
            if segments is not None:
                verdict.sensitive += len(segments.scopes & sensitive)  # as a snapshot's
                verdict.damaged = verify_segments(segments_dir(path), segments.files, segments.format)
                if verdict.damaged:
                    return verdict
            for scope, rel, size, mtime in con.execute("SELECT scope, path, size, mtime_ns FROM docs"):
                verdict.memories += 1
                if scope in sensitive or not rel.endswith(".md"):
                    verdict.sensitive += 1
                try:
                    st = os.lstat(os.path.join(root, rel))
                except OSError:
                    verdict.stale += 1
                    continue
                verdict.stale += (st.st_size, st.st_mtime_ns) != (size, mtime)
        except sqlite3.Error as exc:
            verdict.damaged = str(exc)
    return verdict
