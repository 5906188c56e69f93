"""``engram rebuild-index``: make the memories and triggers tables match the files again.

Unlike memoryd's rebuild (which recreates index.db and so wipes promotions, the graph, sensitive scope
registrations and index-only decay state), this rewrites only the rows the files own, in one transaction:
decay and recall figures the index knows better are kept, encrypted files whose key is not at hand keep
their rows, and rows that promotions still hang off are never deleted (that would cascade them away).
An index.db that is not a database at all is moved aside, never deleted, and a new one is built.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from engram.store.drift.scan import FileEntry, read_ahead, walk
from engram.store.errors import BadMemoryFile, DecryptionFailed, KeyUnavailable, StoreError
from engram.store.frontmatter import parse
from engram.store.index import Memory, Promotion, Trigger
from engram.store.paths import RootLayout, resolve_data_root
from engram.store.search import fulltext
from engram.store.service import Change, IndexEntry, Store, index_entry


@dataclass
class RebuildResult:
    indexed: int = 0
    kept_locked: int = 0
    removed: int = 0
    kept_for_promotions: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: reason"
    searchable: int | None = None  # memories in engram's search index, built again; None when it cannot be


def set_aside_if_corrupt(index_path: Path) -> str | None:
    """If index.db is not an SQLite database, rename it (and its WAL files) aside; returns the new name."""
    if not index_path.exists():
        return None
    try:
        con = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
        return None
    except sqlite3.DatabaseError:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = index_path.with_name(f"index.db.corrupt-{stamp}")
        os.replace(index_path, aside)
        for suffix in ("-wal", "-shm"):
            side = index_path.with_name(index_path.name + suffix)
            if side.exists():
                os.replace(side, aside.with_name(aside.name + suffix))
        return aside.name


def open_for_rebuild(root: str | os.PathLike[str] | None, actor: str) -> tuple[Store, str | None]:
    """Open a root for rebuilding, first moving aside an index.db that is not a database at all."""
    layout = RootLayout(resolve_data_root(root))
    aside = set_aside_if_corrupt(layout.index_path)
    return Store.open(layout.root, actor=actor, create=True), aside


def _read_entries(
    store: Store,
    files: list[FileEntry],
    existing: dict[str, str],
    locked: set[str],
    result: RebuildResult,
    progress: Callable[[int, int], None] | None,
) -> dict[str, IndexEntry]:
    """Slug -> what its file puts in the index; the first file in path order wins. Only that is kept of each
    file: its body is not needed once its fingerprint is taken, and 100k bodies held at once cost hundreds of
    MB. Files without a key go to ``locked``, unreadable ones to ``result.skipped``."""
    entries: dict[str, IndexEntry] = {}
    for done, (entry, stored) in enumerate(read_ahead(store.layout, files), 1):  # read by threads ahead of here
        if progress is not None:
            progress(done, len(files))
        try:
            doc = parse(store.opened(entry.relpath, stored())[1], entry.relpath)
        except FileNotFoundError:  # moved since the walk (memoryd's sweep): its row is kept as it is, as a locked
            locked.add(entry.relpath)  # file's is (the row memoryd updated names where it went)
            continue
        except KeyUnavailable:
            locked.add(entry.relpath)
            continue
        except (BadMemoryFile, DecryptionFailed) as exc:
            result.skipped.append(str(exc))
            continue
        slug = doc.frontmatter.slug
        if slug in entries:
            # Two files, one slug: the file the index already points at keeps it; `engram repair` re-slugs
            # the other.
            if existing.get(entry.relpath) == slug:
                entries[slug], loser = index_entry(doc, entry.relpath), entries[slug].relpath
            else:
                loser = entry.relpath
            result.skipped.append(f"{loser}: slug {slug} already used by {entries[slug].relpath}")
            continue
        entries[slug] = index_entry(doc, entry.relpath)
    return entries


def rebuild_index(store: Store, progress: Callable[[int, int], None] | None = None) -> RebuildResult:
    """Re-read every file and rewrite the rows they own; one transaction, one audit event."""
    result = RebuildResult()
    files = [e for e in walk(store.layout) if isinstance(e, FileEntry)]
    locked: set[str] = set()
    existing = {m.body_path: m.slug for m in Memory.select(Memory.body_path, Memory.slug)}
    entries = _read_entries(store, files, existing, locked, result, progress)
    referenced = {p.source_session_slug for p in Promotion.select(Promotion.source_session_slug).distinct()}

    def index_update() -> None:
        keep = {existing[rel] for rel in locked if rel in existing}
        result.kept_locked = len(keep)
        upserts = []
        for item in entries.values():
            squatter = existing.get(item.relpath)
            if squatter is not None and squatter != item.slug:
                if squatter in referenced:
                    result.skipped.append(f"{item.relpath}: its old row {squatter} still has promotions")
                    continue
                Memory.delete().where(Memory.slug == squatter).execute()
            upserts.append(item)
        store.upsert_index_entries(upserts, keep_runtime=True)
        result.indexed = len(upserts)
        stale = [m.slug for m in Memory.select(Memory.slug) if m.slug not in entries and m.slug not in keep]
        for slug in stale:
            if slug in referenced:
                result.kept_for_promotions.append(slug)
                continue
            Trigger.delete().where(Trigger.slug == slug).execute()
            Memory.delete().where(Memory.slug == slug).execute()
            result.removed += 1

    store.apply(
        Change(
            "index_rebuilt",
            None,
            None,
            {"files": len(files), "skipped": len(result.skipped), "locked": len(locked)},
            index_update=index_update,
        )
    )
    try:
        result.searchable = fulltext.rebuild(store, progress).read
    except StoreError:
        pass  # a cache that cannot be written now: the console's next sync builds it
    return result
