"""index.db: peewee models of memoryd's tables, opening with migrations, read-only for unknown schemas.

The index is rebuildable from the Markdown files, but not all of it: promotions, the graph, sensitive scope
registrations and (for memoryd-written roots) decay state live only here, so nothing in engram drops it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from peewee import (
    AutoField, CompositeKey, FloatField, IntegerField, IntegrityError, Model, OperationalError, SqliteDatabase,
    TextField,
)

from migrations import migration_files
from store.errors import Conflict, DatabaseLocked, StoreError

BUSY_TIMEOUT_MS = 5000


class _Base(Model):
    class Meta:
        legacy_table_names = False


class Memory(_Base):
    slug = TextField(primary_key=True)
    type = TextField()
    scope_hash = TextField()
    title = TextField()
    source = TextField()
    created_at = TextField()
    updated_at = TextField(null=True)
    ttl_days = IntegerField(null=True)
    decay_state = TextField(default="alive")
    last_recalled_at = TextField(null=True)
    recall_count = IntegerField(default=0)
    fingerprint = TextField()
    body_path = TextField(unique=True)
    scope_sensitive = IntegerField(default=0)

    class Meta:
        table_name = "memories"


class Trigger(_Base):
    slug = TextField()
    trigger = TextField()

    class Meta:
        table_name = "triggers"
        primary_key = CompositeKey("slug", "trigger")


class Promotion(_Base):
    id = AutoField()
    source_session_slug = TextField()
    proposed_type = TextField()
    proposed_title = TextField()
    proposed_body = TextField()
    proposed_triggers = TextField()
    dura_score = TextField()
    reasoning = TextField(null=True)
    proposed_supersedes = TextField(default="[]")
    scope_hash = TextField()
    status = TextField(default="pending")
    created_at = TextField()
    decided_at = TextField(null=True)

    class Meta:
        table_name = "promotions"


class SensitiveScope(_Base):
    """memoryd's code writes ``(scope_hash, scope_root, marked_at)``; its docs show ``key_source`` instead.
    Read it through :func:`sensitive_scope_rows`, which takes whichever columns the table has."""

    scope_hash = TextField(primary_key=True)
    scope_root = TextField()
    marked_at = TextField()

    class Meta:
        table_name = "sensitive_scopes"


class Entity(_Base):
    id = TextField(primary_key=True)
    name = TextField()
    type = TextField()
    aliases = TextField(null=True)
    context = TextField(null=True)
    first_seen_at = TextField()
    last_seen_at = TextField()
    mention_count = IntegerField(default=1)
    scope_hash = TextField(null=True)
    decay_state = TextField(default="fresh")

    class Meta:
        table_name = "entities"


class Relation(_Base):
    id = AutoField()
    subject_id = TextField()
    subject_kind = TextField()
    predicate = TextField()
    object_id = TextField()
    object_kind = TextField()
    source_memory_id = TextField(null=True)
    scope_hash = TextField(null=True)
    confidence = FloatField(null=True)
    created_at = TextField()
    superseded_at = TextField(null=True)

    class Meta:
        table_name = "relations"


class SupersedesChain(_Base):
    newer_memory_id = TextField()
    older_memory_id = TextField()
    entity_id = TextField(null=True)
    confidence = FloatField()
    decided_at = TextField()
    decided_by = TextField()
    reason = TextField(null=True)

    class Meta:
        table_name = "supersedes_chain"
        primary_key = CompositeKey("newer_memory_id", "older_memory_id")


class ProfileVersion(_Base):
    id = AutoField()
    version_num = IntegerField(unique=True)
    written_at = TextField()
    trigger = TextField()
    content_md = TextField()
    diff_from_prev = TextField(null=True)
    change_summary = TextField(null=True)
    sources_count = IntegerField(null=True)
    sources_window_start = TextField(null=True)
    sources_window_end = TextField(null=True)

    class Meta:
        table_name = "profile_versions"


class TriggerStat(_Base):
    trigger = TextField()
    scope_hash = TextField(default="_global")
    day = TextField()
    hits = IntegerField(default=1)

    class Meta:
        table_name = "trigger_stats"
        primary_key = CompositeKey("trigger", "scope_hash", "day")


class ProfileChangeReport(_Base):
    id = AutoField()
    period = TextField(unique=True)
    generated_at = TextField()
    content_md = TextField()
    versions_count = IntegerField(null=True)
    supersedes_count = IntegerField(null=True)
    entities_added = IntegerField(null=True)
    entities_dropped = IntegerField(null=True)

    class Meta:
        table_name = "profile_change_reports"


class AuditOutbox(_Base):
    op_id = TextField(primary_key=True)
    event = TextField()
    created_at = TextField()

    class Meta:
        table_name = "engram_audit_outbox"


class PromotionNote(_Base):
    promotion_id = IntegerField(primary_key=True)
    deferred_at = TextField(null=True)
    defer_reason = TextField(null=True)
    reject_reason = TextField(null=True)
    merged_into = TextField(null=True)

    class Meta:
        table_name = "engram_promotion_notes"


class Binding(_Base):
    slug = TextField(primary_key=True)
    scope_hash = TextField()
    version = IntegerField()
    updated_at = TextField(null=True)
    file_mac = TextField()
    content_mac = TextField()
    bound_at = TextField()

    class Meta:
        table_name = "engram_binding"


class Rekey(_Base):
    scope_hash = TextField(primary_key=True)
    started_at = TextField()
    new_source = TextField()

    class Meta:
        table_name = "engram_rekey"


class ScopeLabel(_Base):
    scope_hash = TextField(primary_key=True)
    label = TextField()
    set_at = TextField()

    class Meta:
        table_name = "engram_scope_labels"


class Imported(_Base):
    """What an importer brought in (migration 105): a second run skips every ``source_key`` found here."""

    source_key = TextField(primary_key=True)
    system = TextField()
    kind = TextField()
    memory_slug = TextField(null=True)
    promotion_id = IntegerField(null=True)
    origin = TextField()
    imported_at = TextField()

    class Meta:
        table_name = "engram_imports"


MODELS = (Memory, Trigger, Promotion, SensitiveScope, Entity, Relation, SupersedesChain, ProfileVersion,
          TriggerStat, ProfileChangeReport, AuditOutbox, PromotionNote, Binding, Rekey, ScopeLabel, Imported)


class Index:
    """An open index.db. Binds the models to it (peewee binds per process: one open root at a time)."""

    def __init__(self, path: Path, db: SqliteDatabase, read_only_reason: str | None) -> None:
        self.path = path
        self.db = db
        self.read_only_reason = read_only_reason
        self._tables: set[str] | None = None

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    @classmethod
    def open(cls, path: Path, create: bool = True) -> Index:
        """Open (creating and migrating if allowed) the index; unknown newer migrations mean read-only."""
        if not path.exists() and not create:
            raise StoreError(f"{path}: no index.db (run `engram rebuild-index` to create one from the files)")
        unknown = _unknown_migrations(path) if path.exists() else []
        if unknown:
            db = _connect(f"file:{path}?mode=ro", uri=True)
            reason = (f"index.db has migrations engram does not know ({', '.join(unknown)}): "
                      "it was written by a newer memoryd or engram, so engram opened it read-only")
        else:
            db = _connect(str(path), uri=False)
            reason = None
            _apply_migrations(db)
        db.bind(MODELS, bind_refs=False, bind_backrefs=False)
        return cls(path, db, reason)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; a lock held past the busy timeout becomes :class:`DatabaseLocked`."""
        try:
            with self.db.atomic("IMMEDIATE"):
                yield
        except IntegrityError as exc:
            raise Conflict(f"index.db refused the change ({exc}); nothing was committed") from None
        except OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise DatabaseLocked(
                    f"{self.path}: locked by another process for more than {BUSY_TIMEOUT_MS // 1000} s") from None
            raise

    def has(self, model: type[Model]) -> bool:
        """Whether the model's table exists (engram's own are missing from a read-only memoryd root). Asked on
        every write, so the answer is kept: tables only appear when the index is opened (migrations)."""
        if self._tables is None:
            self._tables = set(self.db.get_tables())
        return model._meta.table_name in self._tables

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.db.execute_sql(f"PRAGMA table_info({table})")]

    def sensitive_scope_rows(self) -> list[dict[str, str | None]]:
        """Rows of ``sensitive_scopes`` in whichever of memoryd's two shapes the table has."""
        cols = self.columns("sensitive_scopes")
        wanted = [c for c in ("scope_hash", "scope_root", "marked_at", "key_source") if c in cols]
        cursor = self.db.execute_sql(f"SELECT {', '.join(wanted)} FROM sensitive_scopes")
        return [dict(zip(wanted, row)) for row in cursor]


def _connect(target: str, uri: bool) -> SqliteDatabase:
    db = SqliteDatabase(target, uri=uri, pragmas={"busy_timeout": BUSY_TIMEOUT_MS, "foreign_keys": 1},
                        check_same_thread=False)
    try:
        db.connect()
        if not uri:
            db.execute_sql("PRAGMA journal_mode=WAL")
        db.execute_sql("SELECT count(*) FROM sqlite_master").fetchone()
    except OperationalError as exc:
        raise StoreError(f"{target}: cannot open index ({exc})") from None
    except Exception as exc:  # sqlite3.DatabaseError: "file is not a database"
        raise StoreError(f"{target}: not an SQLite database ({exc}); `engram rebuild-index` can recreate it") from None
    return db


def _unknown_migrations(path: Path) -> list[str]:
    known = {name for name, _ in migration_files()}
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            rows = con.execute("SELECT filename FROM _schema_migrations").fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:
        return []  # no _schema_migrations yet: a fresh or pre-migration database
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not an SQLite database ({exc}); `engram rebuild-index` can recreate it") from None
    return sorted(r[0] for r in rows if r[0] not in known)


def _apply_migrations(db: SqliteDatabase) -> None:
    """Apply every shipped migration not yet recorded, each in its own transaction with its record."""
    db.execute_sql("CREATE TABLE IF NOT EXISTS _schema_migrations (filename TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {r[0] for r in db.execute_sql("SELECT filename FROM _schema_migrations")}
    con: sqlite3.Connection = db.connection()
    for name, sql in migration_files():
        if name in done:
            continue
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        try:
            con.executescript(
                "BEGIN IMMEDIATE;\n" + sql + "\nINSERT INTO _schema_migrations (filename, applied_at) "
                f"VALUES ('{name}', '{stamp}');\nCOMMIT;")
        except sqlite3.Error as exc:
            if con.in_transaction:
                con.execute("ROLLBACK")
            if "locked" in str(exc):
                raise DatabaseLocked(f"cannot apply migration {name}: index.db is locked by another process") from None
            raise StoreError(f"migration {name} failed: {exc}") from None
