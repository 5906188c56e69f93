"""index.db and engram.db opened: the models bound to them, migrations applied, read-only for unknown schemas.

The index is rebuildable from the Markdown files, but not all of it: promotions, the graph, sensitive scope
registrations and (for memoryd-written roots) decay state live only here, so nothing in engram drops it.
"""

from __future__ import annotations

import operator
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from peewee import (
    IntegrityError,
    Model,
    OperationalError,
    SqliteDatabase,
)

from engram.migrations import ENGRAM_PREFIX
from engram.store import bound
from engram.store.errors import Conflict, ReadOnlyStore, StoreError
from engram.store.migrate import (
    BUSY_TIMEOUT_MS,
    apply_migrations,
    locked_or,
    migrate,
    read_only_query,
    unknown_migrations,
)
from engram.store.models import (
    IndexIdentity,
    Memory,
    Promotion,
    RootRecord,
    Trigger,
    table_of,
)

CHECKPOINT_WAIT_MS = 250  # how long a redaction's checkpoint waits for another process's readers (see overwriting)
# On every connection engram opens: SQLite's sorts, temporary tables and statement journals stay in memory. Left
# to the default, a sort too large for the page cache goes to files in /var/tmp (the console's read of every
# memory, newest first, put a million titles, triggers and slugs there, sensitive scopes' included).
TEMP_IN_MEMORY = "PRAGMA temp_store = MEMORY"
LOOKUP_VALUES = 500  # values bound in one lookup statement (SQLite's limit is far above)
BULK_CACHE_KIB = 64 * 1024  # a bulk write's page cache: see Index.bulk_cache


ENGRAM_DB = "engram.db"
OWN_IN_INDEX = ("engram_outbox_guard", "engram_identity", "engram_binding_guard")  # engram's, kept in index.db
# memoryd's tables engram keeps copies of in engram.db, with the rows a copy leaves out: promotions of sensitive
# scopes stay only where memoryd put them, so engram never writes their text anywhere new.
MIRRORED = {
    "sensitive_scopes": ("engram_sensitive_scopes", ""),
    "promotions": ("engram_promotions", "scope_hash NOT IN (SELECT scope_hash FROM main.sensitive_scopes)"),
}


class Index:
    """An open index.db with engram.db attached as ``engram``. The models answer for it while it is the last one
    opened (see :mod:`engram.store.bound`).

    Opening writes nothing: engram.db is created, migrations applied, engram's identity written and the copies
    of memoryd's tables brought in step only by :meth:`writable`, before the first write. Until then a root
    without engram.db reads engram's tables from an empty in-memory database.
    """

    def __init__(self, path: Path, db: _Database, read_only_reason: str | None) -> None:
        self.path = path
        self.engram_path = path.with_name(ENGRAM_DB)
        self.db = db
        self.read_only_reason = read_only_reason
        self.rebuilt = False  # index.db was rebuilt or replaced since engram last wrote (see :meth:`claim_identity`)
        self._writable = False
        self._tables: set[str] | None = None
        self._found_at: tuple[object, int, int] | None = None  # where the identity was last found (_lost_in_place)
        self._memory_keeper: sqlite3.Connection | None = None
        self._keepers: list[sqlite3.Connection] = []  # a stand-in's own in-memory database (see stand_in)
        self._reader = f"file:{path}?mode=ro"  # what a connection of a reader's own opens (see reader)
        db.watch(path)

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    def reader(self) -> sqlite3.Connection:
        """A read-only connection of its own to what this index reads: index.db, or a stand-in's empty database
        (the file at ``path`` may not even exist then). For a long read that must not hold the store's
        connection, and may attach other databases beside it."""
        return sqlite3.connect(self._reader, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)

    @classmethod
    def open(cls, path: Path, create: bool = True, read_only: str | None = None) -> Index:
        """Open the index (creating an empty one if allowed) with engram.db attached (created and migrated on a
        writable root: it is engram's own file). Unknown newer migrations in either database, or ``read_only``
        (the reason), open both read-only; engram's tables then come from engram.db if there is one, else from
        an empty in-memory stand-in."""
        engram_path = path.with_name(ENGRAM_DB)
        _regular_or_absent(path)
        _regular_or_absent(engram_path)
        fixed = _root_read_only(path.parent)  # a read-only file system or folder: nothing will change under us
        read_only = read_only or fixed
        if not path.exists() or _empty_file(path):  # SQLite takes an empty file for an empty database, as memoryd does
            if fixed:
                raise StoreError(f"{path}: no index.db, and {fixed}")
            if not create:
                raise StoreError(f"{path}: no index.db (run `engram rebuild-index` to create one from the files)")
            if read_only is None:
                migrate(path, engram=False)
        unknown = unknown_migrations(path, fixed is not None) + (
            unknown_migrations(engram_path, fixed is not None) if engram_path.is_file() else []
        )
        if unknown:
            read_only = (
                f"the data root has migrations engram does not know ({', '.join(unknown)}): it was "
                "written by a newer memoryd or engram, so engram opened it read-only"
            )
        ro = read_only_query(path, fixed is not None) if read_only else ""
        db = _connect(f"file:{path}{ro}")
        missing = _missing_schema(db)
        if missing:
            db.close()
            raise StoreError(
                f"{path}: {missing} (damaged, or not memoryd's); `engram rebuild-index` can recreate it from the files"
            )
        index = cls(path, db, read_only)
        if read_only is None:
            migrate(engram_path, engram=True)
        if engram_path.is_file():
            ro = read_only_query(engram_path, fixed is not None) if read_only else ""
            _attach(db, f"file:{engram_path}{ro}")
        else:
            index._attach_empty()
        if _legacy_tables(db):
            index._copy_legacy_tables()
            if read_only is None:
                index._drop_legacy_tables()
        bound.bind(db)
        index.rebuilt = index._identity_lost()
        return index

    @classmethod
    def stand_in(cls, path: Path, reason: str) -> Index:
        """An empty index with memoryd's schema, in memory and read-only (``reason``), in place of an index.db
        that cannot be opened at all (not a database, a directory, damaged beyond reading): the console opens on
        it and says why, rather than not opening. Nothing is ever written through it."""
        name = f"file:engram-stand-in-{uuid.uuid4().hex}?mode=memory&cache=shared"
        keeper = sqlite3.connect(name, uri=True, check_same_thread=False)
        apply_migrations(keeper, engram=False)
        index = cls(path, _connect(name), reason)
        index.db.watched = None  # the file at ``path`` is not what this reads: its replacement is no news here
        index._reader = name
        index._keepers.append(keeper)
        index._attach_empty()
        bound.bind(index.db)
        return index

    def close(self) -> None:
        bound.release(self.db)
        self.db.close()
        if self._memory_keeper is not None:
            self._memory_keeper.close()
        for keeper in self._keepers:
            keeper.close()

    def _attach_empty(self) -> None:
        """engram's tables, empty, in a private in-memory database (kept alive by its own connection)."""
        name = f"file:engram-{uuid.uuid4().hex}?mode=memory&cache=shared"
        self._memory_keeper = sqlite3.connect(name, uri=True, check_same_thread=False)
        apply_migrations(self._memory_keeper, engram=True)
        _attach(self.db, name)

    def _copy_legacy_tables(self) -> None:
        """engram 0.1 kept its tables in index.db: their rows are copied into engram's (rows engram.db has are
        kept), in a transaction of engram.db's own."""
        with self.db.atomic():
            for table in _legacy_tables(self.db):
                columns = ", ".join(c for c in self.columns(table, "main") if c in self.columns(table, "engram"))
                self.db.execute_sql(
                    f"INSERT OR IGNORE INTO engram.{table} ({columns}) SELECT {columns} FROM main.{table}"
                )

    def _drop_legacy_tables(self) -> None:
        """Once copied (committed first: a crash in between leaves both, and the next open copies again)."""
        with self.db.atomic():
            for table in _legacy_tables(self.db):
                self.db.execute_sql(f"DROP TABLE main.{table}")
            self.db.execute_sql(f"DELETE FROM main._schema_migrations WHERE filename LIKE '%{ENGRAM_PREFIX}%'")

    def writable(self) -> None:
        """Make the root ready for engram's writes, once: memoryd's migrations where index.db lacks them, the
        identity and the outbox and binding twins in index.db, and engram's copies of memoryd's tables brought in
        step and kept so by temporary triggers. Raises :class:`ReadOnlyStore` on a read-only root."""
        if self.read_only:
            raise ReadOnlyStore(self.read_only_reason or "store is read-only")
        self.follow()  # a replaced index.db is a new one to prepare
        if self._writable:
            return
        try:
            migrate(self.path, engram=False)
            self.db.execute_sql(
                "CREATE TABLE IF NOT EXISTS main.engram_outbox_guard "
                "(op_id TEXT PRIMARY KEY, event TEXT NOT NULL, created_at TEXT NOT NULL)"
            )
            self.db.execute_sql(
                "CREATE TABLE IF NOT EXISTS main.engram_identity (root_id TEXT PRIMARY KEY, written_at TEXT NOT NULL)"
            )
            self.db.execute_sql(
                "CREATE TABLE IF NOT EXISTS main.engram_binding_guard (slug TEXT PRIMARY KEY, scope_hash TEXT NOT "
                "NULL, version INTEGER NOT NULL, updated_at TEXT, file_mac TEXT NOT NULL, content_mac TEXT NOT NULL, "
                "bound_at TEXT NOT NULL)"
            )
            # the screen's burst signal counts a session's open proposals on every approval: memoryd's schema
            # indexes promotions by status alone, so without this each count read every pending row
            self.db.execute_sql(
                "CREATE INDEX IF NOT EXISTS main.engram_promotions_by_session "
                "ON promotions (source_session_slug, created_at)"
            )
        except OperationalError as exc:
            raise locked_or(exc, self.path) from None
        self._tables = None
        # One transaction, so one file: memoryd's rebuild-index unlinks index.db without taking any lock, and a
        # rebuild landing between a look at the identity and the copy would have the copies follow an index that
        # lost every promotion (and the identity be written into a file without its table).
        with self.transaction(prepare=False):
            self.rebuilt = self._identity_lost()
            if not self.rebuilt:
                self.write_identity()
            self._bring_copies_in_step()
        self._keep_copies()
        self._writable = True

    def claim_identity(self) -> None:
        """Record the root's identity in both databases (a new one if engram.db has none): from now on this
        index.db is the one engram knows, and a rebuilt or replaced one is told apart by its absence."""
        with self.transaction(prepare=False):
            self.write_identity()

    def write_identity(self) -> None:
        """:meth:`claim_identity`'s writes, inside a transaction the caller holds."""
        stamp = datetime.now(UTC).isoformat()
        record = RootRecord.select().first()
        if record is None:
            known = IndexIdentity.select().first()
            record = RootRecord.create(root_id=known.root_id if known else uuid.uuid4().hex, created_at=stamp)
        IndexIdentity.delete().where(IndexIdentity.root_id != record.root_id).execute()
        IndexIdentity.insert(root_id=record.root_id, written_at=stamp).on_conflict_ignore().execute()
        self.rebuilt = False

    def _identity_lost(self) -> bool:
        if not self.has(RootRecord):
            return False
        record = RootRecord.select().first()
        if record is None:
            return False
        if not self.has(IndexIdentity):
            return True
        return IndexIdentity.get_or_none(IndexIdentity.root_id == record.root_id) is None

    def _bring_copies_in_step(self) -> None:
        """engram's copies of memoryd's tables made equal to index.db's, while it is the index engram knows (not
        after a rebuild: then the copies hold what memoryd lost). Inside :meth:`writable`'s transaction."""
        if self.rebuilt:
            return
        for table, (copy, keep) in MIRRORED.items():
            names = ", ".join(self._copied_columns(table, copy))
            where = f"WHERE {keep}" if keep else ""
            self.db.execute_sql(f"DELETE FROM engram.{copy}")
            self.db.execute_sql(f"INSERT INTO engram.{copy} ({names}) SELECT {names} FROM main.{table} {where}")

    def _copied_columns(self, table: str, copy: str) -> list[str]:
        return [c for c in self.columns(table, "main") if c in self.columns(copy, "engram")]

    def _keep_copies(self) -> None:
        """Keep engram's copies of memoryd's tables in step with temporary triggers on this connection: every
        change engram makes is copied in its own transaction. Changes memoryd makes are copied at the next
        :meth:`writable`. (SQLite allows no schema name on a trigger's target: the copies' names exist only in
        engram.db.)"""
        for table, (copy, keep) in MIRRORED.items():
            columns = self._copied_columns(table, copy)
            names = ", ".join(columns)
            when = f"WHEN NEW.{keep}" if keep else ""
            new = ", ".join(f"NEW.{c}" for c in columns)
            key = columns[0]
            for op in ("INSERT", "UPDATE"):
                self.db.run_per_connection(
                    f"CREATE TEMP TRIGGER IF NOT EXISTS engram_copy_{table}_{op.lower()} AFTER {op} ON main.{table} "
                    f"{when} BEGIN INSERT OR REPLACE INTO {copy} ({names}) VALUES ({new}); END"
                )
            self.db.run_per_connection(
                f"CREATE TEMP TRIGGER IF NOT EXISTS engram_copy_{table}_delete AFTER DELETE ON main.{table} "
                f"BEGIN DELETE FROM {copy} WHERE {key} = OLD.{key}; END"
            )
        # a scope marked sensitive takes its promotions' text out of engram's copy
        self.db.run_per_connection(
            "CREATE TEMP TRIGGER IF NOT EXISTS engram_copy_sensitive_drops_text AFTER INSERT ON main.sensitive_scopes "
            "BEGIN DELETE FROM engram_promotions WHERE scope_hash = NEW.scope_hash; END"
        )

    def follow(self) -> bool:
        """Whether index.db was replaced under the open connections since the last call (memoryd's
        ``rebuild-index`` unlinks it and writes a new file). The connections themselves move to the new file at
        their next query (see :class:`_Database`); this runs the identity check again, so a rebuilt index is
        told apart (``rebuilt``: engram's copies of what memoryd lost count again, and ``check`` lists it)
        instead of engram reading, or writing into, a deleted file. Cheap: one ``stat``."""
        self.db.reopen_if_stale()
        if not self.db.replaced and not self._lost_in_place():
            return False
        self.db.replaced = False
        self._tables = None
        self._writable = False
        self.rebuilt = self._identity_lost()
        return True

    def _lost_in_place(self) -> bool:
        """A rebuilt index.db under the same inode number (the old file's, freed once no connection held it, is
        the first the file system hands out again): told by engram's identity missing from it. Asked only of an
        index that had it.

        A write asks this several times; it looks again only when the connection is another one, or another
        connection committed to either database since the identity was last found (SQLite's ``data_version``,
        which this connection's own commits never move): a new file comes with a new connection, and a file
        emptied in place with a commit of memoryd's."""
        if self.rebuilt or self.read_only:
            return False
        seen = self._versions()
        if seen is not None and seen == self._found_at:
            return False
        self._tables = None
        lost = self._identity_lost()
        self._found_at = None if lost else seen
        return lost

    def _versions(self) -> tuple[object, int, int] | None:
        """This thread's connection and the ``data_version`` of both databases on it; None if it cannot tell."""
        try:
            connection = self.db.connection()
            main, engram = connection.execute(
                "SELECT m.data_version, e.data_version FROM main.pragma_data_version m, engram.pragma_data_version e"
            ).fetchone()
        except (sqlite3.Error, OperationalError):
            return None
        return connection, main, engram

    def release(self) -> None:
        """Close this thread's connection while it is idle (it reopens at the next query). memoryd's
        rebuild-index unlinks index.db but leaves its ``-wal`` and ``-shm``: while any connection holds the old
        database open, its WAL survives, and the new index.db memoryd creates beside it comes out malformed.
        With no connection of engram's open, the last one to close (memoryd's) checkpoints and removes the WAL,
        so a long-running engram calls this whenever it is idle."""
        if not self.db.is_closed() and not self.db.in_transaction():
            self.db.close()

    @contextmanager
    def overwriting(self) -> Iterator[None]:
        """Within: what this thread's changes delete or rewrite is overwritten with zeros in the database files
        (SQLite's ``secure_delete``); after: the write-ahead logs are checkpointed and truncated. A redacted value
        is then left in no file engram writes: not in a page's free space, not in an old frame of the log (where
        memoryd's own write of it also sat). A reader holding a log open (memoryd) can keep it from being
        truncated until the next checkpoint."""
        self.writable()  # engram.db attached, so that engram's copy of a row is overwritten too
        schemas = [name for _, name, _ in self.db.execute_sql("PRAGMA database_list").fetchall() if name != "temp"]
        for schema in schemas:
            self.db.execute_sql(f"PRAGMA {schema}.secure_delete = ON")
        try:
            yield
        finally:
            # The change is committed: a log a reader holds (memoryd) is not waited for past a moment (its old frames
            # are then overwritten as SQLite reuses the log), and never makes the change fail.
            self.db.execute_sql(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            try:
                for schema in schemas:
                    self.db.execute_sql(f"PRAGMA {schema}.secure_delete = OFF")
                    with suppress(OperationalError):
                        self.db.execute_sql(f"PRAGMA {schema}.wal_checkpoint(TRUNCATE)")
            finally:
                self.db.execute_sql(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def lookup(self, sql: str, values: list[Any]) -> list[Any]:
        """``sql``'s rows for ``values``, bound :data:`LOOKUP_VALUES` at a time in its ``IN ({})``: a whole-root
        pass looks rows up a batch of files at a time instead of holding them all (written here, not built by
        peewee, whose building of 500 values took as long as SQLite's answer)."""
        rows: list[Any] = []
        for start in range(0, len(values), LOOKUP_VALUES):
            part = values[start : start + LOOKUP_VALUES]
            rows += self.db.execute_sql(sql.format(", ".join("?" * len(part))), part).fetchall()
        return rows

    @contextmanager
    def read_ahead(self) -> Iterator[None]:
        """Within: a thread asks the kernel to read index.db into its page cache, front to back, a slice at a time
        (``POSIX_FADV_WILLNEED``, which waits for no page). A whole-root pass (``check``, ``rebuild-index``) looks
        rows up a batch of files at a time, by path and then by slug: on a cold cache (after a boot, or once other
        work pushed the file out) each of those lookups was a random read of the file, a million of them for a
        million memories, where reading the whole file in order takes a fraction of that. On a warm cache it
        finds every page there and ends at once. Left early, it stops after its slice."""
        stop = threading.Event()
        thread = threading.Thread(target=_hint_file, args=(self.path, stop), name="engram-index-ahead", daemon=True)
        if hasattr(os, "posix_fadvise"):
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread.is_alive():
                thread.join()

    @contextmanager
    def bulk_cache(self) -> Iterator[None]:
        """Within: this thread's connection keeps up to :data:`BULK_CACHE_KIB` of pages instead of SQLite's 2 MB.
        The demo's build puts rows into every one of memoryd's indexes (by slug, body path, fingerprint, creation
        time; a relation's subject, object, predicate) at places all over their B-trees, and with the small cache
        a page is written out to the log and read back many times over: the demo's raw inserts take a third less
        time with 64 MB. (An import of 10,000 sessions and a rebuild at 100k gained
        nothing measurable with it, and keep the default.) Restored after, so a long-running process holds no more
        than before."""
        (kib,) = self.db.execute_sql("PRAGMA cache_size").fetchone()
        self.db.execute_sql(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        try:
            yield
        finally:
            self.db.execute_sql(f"PRAGMA cache_size = {int(kib)}")

    @contextmanager
    def transaction(self, prepare: bool = True) -> Iterator[None]:
        """One write transaction; a lock held past the busy timeout becomes :class:`DatabaseLocked`."""
        if prepare:
            self.writable()
            self.db.setup_connection()
        try:
            with self.db.atomic("IMMEDIATE"):
                yield
        except IntegrityError as exc:
            raise Conflict(f"index.db refused the change ({exc}); nothing was committed") from None
        except OperationalError as exc:
            raise locked_or(exc, self.path) from None

    def has(self, model: type[Model]) -> bool:
        """Whether the model's table exists (a memoryd root engram never wrote has none of engram's). Asked on
        every write, so the answer is kept until :meth:`writable` changes what is attached, or a query notices
        that index.db was replaced (no ``stat`` of its own: it is asked once per file in whole-root loops)."""
        if self.db.replaced:
            self.follow()
        if self._tables is None:
            self._tables = {
                f"{schema}.{name}"
                for schema in ("main", "engram")
                for (name,) in self.db.execute_sql(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table'")
            }
        return f"{model._meta.schema or 'main'}.{model._meta.table_name}" in self._tables

    def columns(self, table: str, schema: str = "main") -> list[str]:
        return [r[1] for r in self.db.execute_sql(f"PRAGMA {schema}.table_info({table})")]

    def sensitive_scope_rows(self) -> list[dict[str, str | None]]:
        """Rows of ``sensitive_scopes`` in whichever of memoryd's two shapes the table has; after memoryd rebuilt
        index.db (and until ``engram repair`` restores them), engram's copy of the rows it lost as well."""
        self.follow()
        cols = self.columns("sensitive_scopes")
        wanted = [c for c in ("scope_hash", "scope_root", "marked_at", "key_source") if c in cols]
        cursor = self.db.execute_sql(f"SELECT {', '.join(wanted)} FROM main.sensitive_scopes")
        rows = [dict(zip(wanted, row, strict=True)) for row in cursor]
        if self.rebuilt:
            known = {r["scope_hash"] for r in rows}
            rows += [r for r in self.sensitive_copy() if r["scope_hash"] not in known]
        return rows

    def sensitive_copy(self) -> list[dict[str, str | None]]:
        """engram's copy of ``sensitive_scopes`` (see :data:`MIRRORED`)."""
        if "engram.engram_sensitive_scopes" not in (self._tables or set()) and not self._has_table(
            "engram", "engram_sensitive_scopes"
        ):
            return []
        cursor = self.db.execute_sql(
            "SELECT scope_hash, scope_root, marked_at, key_source FROM engram.engram_sensitive_scopes"
        )
        return [dict(zip(("scope_hash", "scope_root", "marked_at", "key_source"), row, strict=True)) for row in cursor]

    def _has_table(self, schema: str, table: str) -> bool:
        return (
            self.db.execute_sql(
                f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            is not None
        )


@contextmanager
def as_peewee_errors() -> Iterator[None]:
    """For statements run on a raw sqlite3 cursor (bulk ``executemany``): their errors raised as peewee's, as
    every other statement raises them, so a write transaction turns them into Conflict or DatabaseLocked."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise IntegrityError(*exc.args) from exc
    except sqlite3.OperationalError as exc:
        raise OperationalError(*exc.args) from exc


def insert_rows(db: SqliteDatabase, model: type[Model], rows: Sequence[dict[str, Any]]) -> None:
    """``model.insert_many(rows).execute()`` for rows of plain values, as one ``executemany``: peewee builds the SQL
    of every value, which took longer than SQLite's writing them. Fields with a conversion of their own
    (``db_value``) are not for this."""
    if rows:
        names = list(rows[0])
        insert_values(db, model, names, [tuple(row[name] for name in names) for row in rows])


def insert_values(
    db: SqliteDatabase, model: type[Model], names: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """:func:`insert_rows` for rows already made as tuples of ``names``' values: a demo root's millions of
    relations, which cost a dict each to make and a tuple each again here."""
    if not rows:
        return
    fields = model._meta.fields
    columns = ", ".join(fields[name].column_name for name in names)
    sql = f"INSERT INTO {table_of(model)} ({columns}) VALUES ({', '.join('?' * len(names))})"
    with as_peewee_errors():
        db.cursor().executemany(sql, rows)


READ_AHEAD_SLICE = 32 << 20  # bytes of index.db asked for at a time by Index.read_ahead


def _hint_file(path: Path, stop: threading.Event) -> None:
    """Ask the kernel for the pages of ``path``, READ_AHEAD_SLICE at a time, until the end or ``stop``. A file that
    cannot be opened is left to SQLite, which says what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        for start in range(0, size, READ_AHEAD_SLICE):
            if stop.is_set():
                return
            os.posix_fadvise(fd, start, READ_AHEAD_SLICE, os.POSIX_FADV_WILLNEED)
    except OSError:
        return
    finally:
        os.close(fd)


class _LenientConnection(sqlite3.Connection):
    """Text another writer stored as bytes that are not UTF-8 (an agent's proposal, a damaged page) would fail
    every query that reads its row, so ``list``, ``check``, ``repair`` and the console could not run at all; it
    is read with U+FFFD in place of the bad bytes instead."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.text_factory = operator.methodcaller("decode", "utf-8", "replace")


class _Database(SqliteDatabase):
    """peewee opens a connection per thread (the console's workers read in threads): each one gets engram.db
    attached (peewee's ``attach``) and, before it writes, engram's temporary triggers (``per_connection``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, factory=_LenientConnection, **kwargs)  # sqlite3.connect's, passed on by peewee
        self.local = threading.local()  # this thread's connection: its generation and what it has set up
        self.per_connection: list[str] = []  # idempotent statements (CREATE TEMP TRIGGER IF NOT EXISTS)
        self.generation = 0  # raised when the file under the path was replaced: connections of older ones reopen
        self.watched: Path | None = None
        self.file_id: tuple[int, int] | None = None
        self.replaced = False  # set when a replacement is noticed, cleared by Index.follow

    def watch(self, path: Path) -> None:
        """Follow the file at ``path``: when another file takes its place, connections move to it."""
        self.watched, self.file_id = path, file_id(path)

    def connect(self, reuse_if_open: bool = False) -> bool:
        opened = super().connect(reuse_if_open)
        self.local.generation = self.generation
        return opened

    def connection(self) -> Any:
        self.reopen_if_stale()
        return super().connection()

    def cursor(self, named_cursor: Any = None) -> Any:
        self.reopen_if_stale()
        return super().cursor(named_cursor)

    def reopen_if_stale(self) -> None:
        """Before each query: if another file took the watched path's place (one ``stat``), raise the generation
        and flag it for :meth:`Index.follow`; a connection of an older generation is closed (outside a
        transaction) so the query opens the file now there. A connection left on the old file reads a deleted
        database, or a malformed one once memoryd's new file shares its WAL."""
        current = file_id(self.watched) if self.watched is not None else None
        if current is not None and current != self.file_id:
            self.file_id, self.replaced = current, True
            self.generation += 1
        if (
            not self.is_closed()
            and getattr(self.local, "generation", 0) != self.generation
            and not self.in_transaction()
        ):
            self.close()

    def run_per_connection(self, sql: str) -> None:
        """Run ``sql`` now and on every connection of this database (see :meth:`setup_connection`)."""
        if sql not in self.per_connection:  # a root followed to a new index.db registers its triggers again
            self.per_connection.append(sql)
        self.setup_connection()

    def setup_connection(self) -> None:
        """Run on this thread's connection whatever :meth:`run_per_connection` registered after it was opened."""
        conn = self.connection()
        seen, done = getattr(self.local, "setup", (None, 0))  # thread-local, as the connection is
        if seen is not conn:
            done = 0
        for sql in self.per_connection[done:]:
            conn.execute(sql)
        self.local.setup = (conn, len(self.per_connection))


def file_id(path: Path) -> tuple[int, int] | None:
    """Which file is at ``path`` (device and inode), None where there is none: tells a replaced file from the one
    that was there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _connect(target: str) -> _Database:
    db = _Database(
        target,
        uri=True,
        pragmas={"busy_timeout": BUSY_TIMEOUT_MS, "foreign_keys": 1, "temp_store": "memory"},  # see TEMP_IN_MEMORY
        check_same_thread=False,
    )
    try:
        db.connect()
        db.execute_sql("SELECT count(*) FROM sqlite_master").fetchone()
    except OperationalError as exc:
        raise StoreError(f"{target}: cannot open index ({exc})") from None
    except Exception as exc:  # sqlite3.DatabaseError: "file is not a database"
        raise StoreError(f"{target}: not an SQLite database ({exc}); `engram rebuild-index` can recreate it") from None
    return db


def _regular_or_absent(path: Path) -> None:
    """SQLite opens whatever is at a database's path: a FIFO there would hang the first read forever. (A symlink
    to a database is followed, as memoryd follows it.)"""
    if path.exists() and not path.is_file():
        raise StoreError(f"{path}: not a regular file (a FIFO, device or directory), so not a database")


def _empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


# memoryd's tables every reader of the root needs, with every column engram reads of them
_CORE = (Memory, Trigger, Promotion)


def _missing_schema(db: SqliteDatabase) -> str | None:
    """What of memoryd's core tables index.db lacks, or None: one without them would fail at the first query of
    every command and pane, with a message about SQL rather than about the file."""
    for model in _CORE:
        table = model._meta.table_name
        have = {r[1] for r in db.execute_sql(f"PRAGMA main.table_info({table})")}
        if not have:
            return f"index.db has no {table} table"
        lacking = sorted(f.column_name for f in model._meta.sorted_fields if f.column_name not in have)
        if lacking:
            return f"index.db's {table} table lacks {', '.join(lacking)}"
    return None


def _attach(db: SqliteDatabase, target: str) -> None:
    try:
        db.attach(target, "engram")
        db.execute_sql("SELECT count(*) FROM engram.sqlite_master").fetchone()
    except Exception as exc:  # sqlite3.DatabaseError: "file is not a database"
        raise StoreError(f"{target}: engram's database cannot be read ({exc})") from None


def _legacy_tables(db: SqliteDatabase) -> list[str]:
    """engram's tables inside index.db itself, where engram 0.1 kept them."""
    return [
        name
        for (name,) in db.execute_sql(
            "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name LIKE 'engram\\_%' ESCAPE '\\' "
            f"AND name NOT IN ({', '.join(repr(name) for name in OWN_IN_INDEX)})"
        )
    ]


def _root_read_only(folder: Path) -> str | None:
    """Why the data root cannot be written (a read-only file system, or no permission), or None."""
    try:
        mounted_ro = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return None  # no folder yet: opening says what is wrong
    if mounted_ro or not os.access(folder, os.W_OK):
        why = "on a read-only file system" if mounted_ro else "not writable by this user"
        return f"the data root {folder} is {why}: engram opened it read-only, so nothing can be decided or repaired"
    return None
