"""Keeping a root's history current: engram's changes as they are written, everyone else's when they are seen.

The write path hands over each change's files once it is complete (:meth:`Keeper.record_change`), with its audit
events, so the revision says who and why. memoryd (its saves, ``mem_update``, ``merge_memories``, ``sync
import``) and a person's editor write without engram: :meth:`Keeper.catch_up` compares the files on disk with the
newest revision and records what differs as seen changed. A small table of each file's size, time and blob id
(``seen.db`` in the repository's folder) makes that comparison a ``stat`` per unchanged file.

Plaintext of a sensitive scope never enters the repository, and what entered before the scope was marked
sensitive is taken out again: the plaintext files a change scrubs, and every plaintext revision of a scope that
is sensitive now (:meth:`Keeper.forget_plaintext`), are purged from every revision.
"""

from __future__ import annotations

import functools
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from engram.store.drift.scan import FileEntry, walk
from engram.store.errors import StoreError
from engram.store.history.attribution import memoryd_events
from engram.store.history.repo import (
    Content,
    HistoryError,
    HistoryRepo,
    Message,
    Stored,
    blob_id,
    history_dir,
    is_memory_file,
)
from engram.store.paths import RootLayout
from engram.store.write.atomic import read_regular

T = TypeVar("T")
SEEN = "outside-engram"  # the author of a revision engram saw rather than wrote
_SEEN_SCHEMA = """
CREATE TABLE IF NOT EXISTS seen (path TEXT PRIMARY KEY, size INT, mtime INT, blob TEXT);
CREATE TABLE IF NOT EXISTS plain_scopes (scope TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


def _locked(method: Callable[..., T]) -> Callable[..., T]:
    """One keeper method at a time: the console's workers record from several threads, and two revisions made
    from the same newest one would each move the branch, one losing the other."""

    @functools.wraps(method)
    def run(keeper: Keeper, *args: Any, **kwargs: Any) -> T:
        with keeper.lock:
            return method(keeper, *args, **kwargs)

    return run


class Keeper:
    """The history of one root: its repository (opened on first use) and what engram last saw of each file."""

    def __init__(self, layout: RootLayout, state_dir: Path) -> None:
        self.layout = layout
        self.state_dir = state_dir
        self.path = history_dir(state_dir, layout.root)
        self._repo: HistoryRepo | None = None
        self._db: sqlite3.Connection | None = None
        self.lock = threading.RLock()  # see _locked
        self._deferred: set[str] | None = None  # see purging_once

    @property
    def repo(self) -> HistoryRepo:
        if self._repo is None:
            self._repo = HistoryRepo(self.path)
        return self._repo

    @_locked
    def adopt(self, old_root: Path, copied: bool) -> bool:
        """A root moved or copied from ``old_root`` (its audit checkpoint adopted): its history comes along, moved
        with it, or copied for a copy (whose past is the original's). A root here with a history of its own
        keeps it. Returns whether one was adopted."""
        old = history_dir(self.state_dir, old_root)
        if self.path.exists() or not (old / "HEAD").exists():
            return False
        self.close()
        self._repo = None
        if copied:
            shutil.copytree(old, self.path)
        else:
            old.rename(self.path)
        return True

    # ------------------------------------------------------------------ recording

    @_locked
    def record_change(
        self, events: list[dict[str, Any]], paths: Iterable[str], scrubbed: Iterable[str], when: datetime
    ) -> str | None:
        """A revision of the memory files among ``paths`` as they are on disk now (a file gone is removed),
        described by the change's audit ``events``; then the plaintext files ``scrubbed`` leave every revision."""
        files = {p: self._read(p) for p in dict.fromkeys(paths) if is_memory_file(p)}
        revision = self.record(files, _message(events), str(events[0].get("actor") or "engram"), when)
        doomed = {p for p in scrubbed if is_memory_file(p) and p.split("/")[1] in self._plain_scopes()}
        if self._deferred is not None:
            self._deferred |= doomed
        elif doomed:
            self.purge(lambda path, _blob: path in doomed)
        return revision

    @contextmanager
    def purging_once(self) -> Iterator[None]:
        """Within: the plaintext the changes scrub leaves the history once, at the end. A conversion's batches
        would each rewrite every revision; cut short, what is left is purged by the next catch-up (the scope is
        sensitive by then)."""
        self._deferred = set()
        try:
            yield
        finally:
            doomed, self._deferred = self._deferred, None
            if doomed:
                try:
                    self.purge(lambda path, _blob: path in doomed)
                except (StoreError, OSError):
                    pass  # the next catch-up's forget_plaintext takes them out

    @_locked
    def before_change(self, paths: Iterable[str], what: str, when: datetime, summary: str = "") -> str | None:
        """Before engram overwrites or removes files: any among ``paths`` the history has not seen as they are now
        (never recorded, or changed by someone else since) is recorded first, so the version engram replaces is
        kept even when no catch-up ran since memoryd wrote it."""
        files: dict[str, bytes | None] = {}
        wanted = [p for p in dict.fromkeys(paths) if is_memory_file(p)]
        if not wanted:
            return None
        with self._seen() as db:
            marks = ",".join("?" * len(wanted))
            seen = {
                r[0]: (r[1], r[2])
                for r in db.execute(f"SELECT path, size, mtime FROM seen WHERE path IN ({marks})", wanted)
            }
        for rel in wanted:
            try:
                st = os.stat(self.layout.root / rel, follow_symlinks=False)
            except OSError:
                continue
            if seen.get(rel) != (st.st_size, st.st_mtime_ns):
                try:
                    files[rel] = self._read(rel)
                except HistoryError:
                    continue
        found = f"{_files(len(files))} as engram found {'it' if len(files) == 1 else 'them'}"
        summary = f"{summary}: {found}" if summary else f"Seen before {what}: {found}"
        return self.record(files, Message(summary, (("Seen", when.isoformat()),)), SEEN, when)

    @_locked
    def record(self, files: dict[str, Content], message: Message, author: str, when: datetime) -> str | None:
        """One revision of ``files``, and what was seen of them noted. A crash between the two leaves the table
        unmirrored, and the next catch-up reads the tree again."""
        if not files:
            return None
        mirrored = self._mirrored()
        self._set_mirrored(False)
        revision = self.repo.record(files, message, author, when)
        self._remember(files)
        self._set_mirrored(mirrored)
        return revision

    @_locked
    def record_set_aside(self, relpath: str, local: bytes, source: str, conflict: str, when: datetime) -> None:
        """A local version a sync set aside, as a revision of the file it was, then the file in place as it is
        again: the history keeps both before the set-aside copy is removed."""
        trailers = (("Conflict", conflict), ("Seen", when.isoformat()))
        self.record({relpath: local}, Message(f"Set aside by {source}: the local version", trailers), SEEN, when)
        self.record({relpath: self._read(relpath)}, Message(f"In place after {source}", trailers), SEEN, when)

    @_locked
    def catch_up(
        self, sensitive: set[str], when: datetime, progress: Callable[[int, int], None] | None = None
    ) -> list[str]:
        """Record every memory file that differs from the newest revision (added, changed or removed), as one
        revision seen changed outside engram. Plaintext in a sensitive scope is never read (``check`` reports
        it). Returns the relpaths recorded."""
        self.forget_plaintext(sensitive)
        known, seen, whole = self._known()
        entries = [e for e in walk(self.layout) if isinstance(e, FileEntry)]
        changed: dict[str, Content] = {}  # blobs stored as read: a first look held every file's bytes at once
        refreshed: list[tuple[str, int, int, str]] = []  # read, and found as recorded: its stat noted
        for n, entry in enumerate(entries, 1):
            if progress is not None and n % 1000 == 0:
                progress(n, len(entries))
            rel = entry.relpath
            if not entry.encrypted and entry.scope_hash in sensitive:
                continue
            try:
                st = os.stat(self.layout.root / rel, follow_symlinks=False)
                if seen.get(rel) == (st.st_size, st.st_mtime_ns, known.get(rel)):
                    continue
                data = self._read(rel)
            except (OSError, HistoryError):
                if rel in known:  # a symlink or FIFO where a memory was: check reports it, history keeps it
                    refreshed.append((rel, -1, -1, known[rel]))
                continue
            blob = blob_id(data) if data is not None else None
            if blob is not None and blob == known.get(rel):
                refreshed.append((rel, st.st_size, st.st_mtime_ns, blob))
            elif data is not None:
                changed[rel] = self.repo.store(data)
        on_disk = {e.relpath for e in entries}
        changed.update(dict.fromkeys((rel for rel in known if rel not in on_disk), None))
        with self._seen() as db:
            db.executemany("INSERT OR REPLACE INTO seen VALUES (?, ?, ?, ?)", refreshed)
        told = self._memoryd_events({p.split("/")[1] for p in changed})
        if changed:
            trailers = (("Seen", when.isoformat()), *(("Memoryd-Event", event) for event in told))
            self.record(changed, Message(_seen_summary(changed, known), trailers), SEEN, when)
        if whole:
            self._set_mirrored(True)
        return sorted(changed)

    @_locked
    def catch_up_paths(self, paths: list[str], sensitive: set[str], when: datetime) -> list[str]:
        """:meth:`catch_up` of a few files (the change feed's), without walking the root."""
        wanted = [p for p in paths if is_memory_file(p) and (p.endswith(".md.enc") or p.split("/")[1] not in sensitive)]
        seen = self.before_change(wanted, "", when, summary="Seen changed outside engram (memoryd or another writer)")
        return sorted(wanted) if seen is not None else []

    def _plain_scopes(self) -> set[str]:
        """The scopes a plaintext file was ever recorded in: only those can have plaintext to purge."""
        with self._seen() as db:
            return {row[0] for row in db.execute("SELECT scope FROM plain_scopes")}

    def _memoryd_events(self, scopes: set[str]) -> list[str]:
        """memoryd's audit events of ``scopes`` since the last look (see :mod:`.attribution`)."""
        with self._seen() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'audit_offset'").fetchone()
        told, offset = memoryd_events(self.layout.audit_path, int(row[0]) if row else None, scopes)
        with self._seen() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('audit_offset', ?)", (str(offset),))
        return told

    def _known(self) -> tuple[dict[str, str], dict[str, tuple[int, int, str]], bool]:
        """Each recorded file's blob, what was last seen of each file, and whether the tree had to be read (the
        table of what was seen mirrors the newest revision, unless a revision was cut short by a crash)."""
        with self._seen() as db:
            seen = {r[0]: (r[1], r[2], r[3]) for r in db.execute("SELECT path, size, mtime, blob FROM seen")}
        if self._mirrored():
            return {path: row[2] for path, row in seen.items()}, seen, False
        return self.repo.files(), seen, True

    @_locked
    def forget_plaintext(self, sensitive: set[str]) -> set[str]:
        """Purge every plaintext revision of the scopes in ``sensitive`` that ever had one recorded."""
        plain = self._plain_scopes() & sensitive
        if not plain:
            return set()
        removed = self.purge(lambda path, _blob: path.endswith(".md") and path.split("/")[1] in plain)
        with self._seen() as db:
            db.executemany("DELETE FROM plain_scopes WHERE scope = ?", [(s,) for s in plain])
        return removed

    @_locked
    def purge(self, doomed: Callable[[str, str], bool]) -> set[str]:
        """Remove the files ``doomed(relpath, blob)`` names from every revision (see :meth:`HistoryRepo.purge`)."""
        removed = self.repo.purge(doomed)
        if removed:
            with self._seen() as db:
                marks = ",".join("?" * len(removed))
                db.execute(f"DELETE FROM seen WHERE blob IN ({marks})", sorted(removed))
        return removed

    # ------------------------------------------------------------------ inside

    def _read(self, relpath: str) -> bytes | None:
        try:
            return read_regular(self.layout.inside(relpath))
        except FileNotFoundError:
            return None
        except (OSError, StoreError) as exc:
            raise HistoryError(f"{relpath}: not recorded in the history: {exc}") from exc

    def _remember(self, files: dict[str, Content]) -> None:
        rows, gone, plain = [], [], set()
        for rel, data in files.items():
            if data is None:
                gone.append((rel,))
                continue
            try:
                st = os.stat(self.layout.root / rel, follow_symlinks=False)
            except OSError:
                continue
            rows.append((rel, st.st_size, st.st_mtime_ns, data.blob if isinstance(data, Stored) else blob_id(data)))
            if rel.endswith(".md"):
                plain.add(rel.split("/")[1])
        with self._seen() as db:
            db.executemany("INSERT OR REPLACE INTO seen VALUES (?, ?, ?, ?)", rows)
            db.executemany("DELETE FROM seen WHERE path = ?", gone)
            db.executemany("INSERT OR IGNORE INTO plain_scopes VALUES (?)", [(s,) for s in plain])

    def _mirrored(self) -> bool:
        with self._seen() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'mirrored'").fetchone()
        return row is not None and row[0] == "1"

    def _set_mirrored(self, value: bool) -> None:
        with self._seen() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('mirrored', ?)", ("1" if value else "0",))

    @contextmanager
    def _seen(self) -> Iterator[sqlite3.Connection]:
        """A transaction on ``seen.db``: one connection per keeper. It is a cache of what the repository holds
        (lost, the next catch-up reads the tree again), so it is not synced to disk on every commit."""
        try:
            if self._db is None:
                self.path.mkdir(parents=True, exist_ok=True)  # the repository's folder; git needs it only to write
                self._db = sqlite3.connect(self.path / "seen.db", check_same_thread=False)
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = OFF")
                self._db.executescript(_SEEN_SCHEMA)
            with self._db:
                yield self._db
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path / 'seen.db'}: {exc}") from exc

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _seen_summary(changed: dict[str, Content], known: dict[str, str]) -> str:
    counts = {
        "changed": sum(1 for p, d in changed.items() if d is not None and p in known),
        "first recorded": sum(1 for p, d in changed.items() if d is not None and p not in known),
        "removed": sum(1 for d in changed.values() if d is None),
    }
    told = ", ".join(f"{_files(n)} {what}" for what, n in counts.items() if n)
    return f"Seen outside engram (memoryd or another writer): {told}"


def _files(count: int) -> str:
    return f"{count} file" if count == 1 else f"{count} files"


def _message(events: list[dict[str, Any]]) -> Message:
    """A change's revision described by its audit events: the first line says what, the trailers the rest."""
    first = events[0]
    if len(events) == 1:
        summary = " ".join(str(part) for part in (first["event_type"], first.get("target_id")) if part)
    else:
        kinds = sorted({str(e["event_type"]) for e in events})
        summary = f"{len(events)} changes: {', '.join(kinds)}"
    trailers = [("Actor", str(first.get("actor") or "engram"))]
    for event in events[:200]:
        trailers.append(("Event", f"{event['event_type']} {event.get('target_id') or '-'} op {_op(event)}"))
    return Message(summary, tuple(trailers))


def _op(event: dict[str, Any]) -> str:
    details = event.get("details") or {}
    return str(details.get("op_id", "-")) if isinstance(details, dict) else "-"
