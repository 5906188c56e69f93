"""What changed in a data root since the last look: the change feed that lets a console open beside memoryd see
memoryd's captures, decisions, audit lines and rebuilds as they happen.

Asking is cheap first and thorough second. A :class:`Token` (SQLite's ``data_version`` on this connection, and
the size, time and identity of index.db, engram.db, their WAL files and the audit log) says whether anything can
have changed: a handful of ``stat`` calls and one pragma, cheap enough to ask every second. Only when the token
moved are the rows compared with the snapshot of the last look, to say which promotions are new or decided,
which memories were added, changed or removed, and how many audit lines were appended. The snapshot keeps one
integer per row (a hash of the columns a pane shows), never a title or a body.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from peewee import DatabaseError

from engram.store.errors import StoreError
from engram.store.index import Memory, Promotion, tuples
from engram.store.service import Store

K = TypeVar("K", int, str)
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
        self._promotions = self._promotion_rows()
        self._memories = self._memory_rows()
        self._audit = _stat(store.layout.audit_path)
        self._replaced = False  # a replacement noticed by a poll that then failed: the next one says it

    def poll(self) -> Changes | None:
        """None when the token has not moved (the cheap answer); else what changed, possibly nothing visible
        (a write that changed no row a pane shows). A database busy or half rebuilt is a :class:`StoreError`:
        ask again later."""
        try:
            return self._poll()
        except DatabaseError as exc:
            raise StoreError(f"{self.store.index.path}: cannot look for changes now ({exc})") from None

    def _poll(self) -> Changes | None:
        self._replaced |= self.store.index.follow()  # kept until a poll succeeds: a rebuild is never unsaid
        token = self._token()
        if token == self.token and not self._replaced:
            return None
        promotions, memories = self._promotion_rows(), self._memory_rows()
        self.token = token
        changes = Changes(index_replaced=self._replaced)
        self._replaced = False
        changes.promotions = _changed(self._promotions, promotions)
        changes.memories = _changed(self._memories, memories)
        self._promotions, self._memories = promotions, memories
        changes.audit_lines, changes.audit_rewritten = self._audit_appended()
        return changes

    def _token(self) -> Token:
        layout, index = self.store.layout, self.store.index
        version = index.db.execute_sql("PRAGMA main.data_version").fetchone()[0]
        paths = (index.path, _wal(index.path), index.engram_path, _wal(index.engram_path), layout.audit_path)
        return Token(version, tuple(_stat(p) for p in paths))

    def _audit_appended(self) -> tuple[int, bool]:
        """Lines appended since the last look, counted in the new bytes only; a shorter or other file is a
        rewrite."""
        before, now = self._audit, _stat(self.store.layout.audit_path)
        self._audit = now
        if before == now:
            return 0, False
        if before is None or now is None or before[:2] != now[:2] or now[2] < before[2]:
            return 0, True
        with self.store.layout.audit_path.open("rb") as fh:
            fh.seek(before[2])
            return fh.read(now[2] - before[2]).count(b"\n"), False

    def _promotion_rows(self) -> dict[int, int]:
        query = tuples(Promotion.select(Promotion.id, Promotion.status, Promotion.decided_at))
        return {pid: hash((status, decided)) for pid, status, decided in query}

    def _memory_rows(self) -> dict[str, int]:
        query = tuples(
            Memory.select(
                Memory.slug,
                Memory.body_path,
                Memory.title,
                Memory.updated_at,
                Memory.decay_state,
                Memory.fingerprint,
                Memory.recall_count,
                Memory.last_recalled_at,
            )
        )
        return {row[0]: hash(row[1:]) for row in query}


def _changed(before: dict[K, int], after: dict[K, int]) -> set[K]:
    """Keys added, removed, or whose hash differs."""
    return {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _stat(path: Path) -> _FileState:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
