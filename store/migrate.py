"""Applying the shipped migrations to index.db and engram.db, and asking a file which ones it has that this engram
does not know (a newer engram wrote it: then the root opens read-only).

Each migration runs in its own transaction with the row that records it, in WAL mode as memoryd runs, so a crash
leaves every migration applied and recorded or neither.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from peewee import OperationalError

from engram.migrations import migration_files
from engram.store.errors import DatabaseLocked, StoreError

BUSY_TIMEOUT_MS = 5000


def locked_or(exc: OperationalError, path: Path) -> Exception:
    if "locked" in str(exc) or "busy" in str(exc):
        return DatabaseLocked(f"{path}: locked by another process for more than {BUSY_TIMEOUT_MS // 1000} s")
    return StoreError(f"{path}: {exc}")


def read_only_query(path: Path, fixed: bool) -> str:
    """The URI query opening ``path`` read-only. On a root nothing can write (``fixed``) and with no WAL beside
    it, SQLite is told the file cannot change (``immutable``): it would otherwise want to create the WAL's
    shared-memory file next to it, and fail to open at all."""
    wal = path.with_name(path.name + "-wal")
    return "?mode=ro&immutable=1" if fixed and not wal.exists() else "?mode=ro"


def unknown_migrations(path: Path, fixed: bool = False) -> list[str]:
    known = {name for name, _ in migration_files(engram=False) + migration_files(engram=True)}
    try:
        con = sqlite3.connect(f"file:{path}{read_only_query(path, fixed)}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            rows = con.execute("SELECT filename FROM _schema_migrations").fetchall()
        finally:
            con.close()
    except sqlite3.OperationalError:
        return []  # no _schema_migrations yet: a fresh or pre-migration database
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not an SQLite database ({exc}); `engram rebuild-index` can recreate it") from None
    return sorted(r[0] for r in rows if r[0] not in known)


def migrate(path: Path, engram: bool) -> None:
    """Apply the migrations ``path`` lacks (creating it, 0600 for engram.db), in WAL mode as memoryd runs."""
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        if engram:
            path.chmod(0o600)
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            con.execute("PRAGMA journal_mode=WAL")
        apply_migrations(con, engram)
    except sqlite3.OperationalError as exc:
        raise locked_or(OperationalError(str(exc)), path) from None
    finally:
        con.close()


def apply_migrations(con: sqlite3.Connection, engram: bool) -> None:
    """Apply every shipped migration not yet recorded, each in its own transaction with its record."""
    con.execute("CREATE TABLE IF NOT EXISTS _schema_migrations (filename TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {r[0] for r in con.execute("SELECT filename FROM _schema_migrations")}
    for name, sql in migration_files(engram):
        if name in done:
            continue
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
        try:
            con.executescript(
                "BEGIN IMMEDIATE;\n" + sql + "\nINSERT INTO _schema_migrations (filename, applied_at) "
                f"VALUES ('{name}', '{stamp}');\nCOMMIT;"
            )
        except sqlite3.Error as exc:
            if con.in_transaction:
                con.execute("ROLLBACK")
            if "locked" in str(exc):
                raise DatabaseLocked(f"cannot apply migration {name}: {exc}") from None
            raise StoreError(f"migration {name} failed: {exc}") from None
