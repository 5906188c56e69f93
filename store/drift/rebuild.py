"""``engram rebuild-index``: make the memories and triggers tables match the files again.

Unlike memoryd's rebuild (which recreates index.db and so wipes promotions, the graph, sensitive scope
registrations and index-only decay state), this rewrites only the rows the files own: decay and recall figures
the index knows better are kept, encrypted files whose key is not at hand keep their rows, and rows that
promotions still hang off are never deleted (that would cascade them away). An index.db that is not a database
at all is moved aside, never deleted, and a new one is built.

It streams: files are read and parsed a batch at a time (those of plain scopes by worker processes, the others
here, where their keys are), and each batch's rows are written in a transaction of their own, so what is held is
a batch's rows and one set of the slugs written, whatever the root's size (holding every file's row until one
write took 2.4 GB at 1M), and memoryd's writers, whose busy timeout is SQLite's 5 s, never wait on engram for
longer than a batch. The rows of files gone are removed last, with the rebuild's one audit event. A rebuild cut
short leaves rows that each match their file; running it again finishes it.
"""

from __future__ import annotations

import heapq
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from engram.store.drift.examine import Bad, Failed, examined
from engram.store.drift.scan import FileEntry, appeared_since, read_ahead, walk
from engram.store.errors import BadMemoryFile, DecryptionFailed, KeyUnavailable, StoreError
from engram.store.frontmatter import parse
from engram.store.models import Memory, Trigger
from engram.store.paths import RootLayout, resolve_data_root
from engram.store.search import fulltext
from engram.store.service import Store, chunked
from engram.store.write.change import Change, IndexEntry, index_entry

BATCH = 5000
"""Files whose rows go in one transaction: half a second of the write lock at most here, a few MB held."""


@dataclass
class RebuildResult:
    indexed: int = 0
    kept_locked: int = 0
    removed: int = 0
    kept_for_promotions: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: reason"
    searchable: int | None = None  # files read into engram's search index by its sync; None when it cannot be


def set_aside_if_corrupt(index_path: Path) -> str | None:
    """If index.db is not an SQLite database, rename it (and its WAL files) aside; returns the new name. Only a
    regular file is opened to see: SQLite would wait forever on a FIFO's first read."""
    if not index_path.exists() and not index_path.is_symlink():
        return None
    if not _is_database(index_path):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = index_path.with_name(f"index.db.corrupt-{stamp}")
        os.replace(index_path, aside)
        for suffix in ("-wal", "-shm"):
            side = index_path.with_name(index_path.name + suffix)
            if side.exists():
                os.replace(side, aside.with_name(aside.name + suffix))
        return aside.name
    return None


def _is_database(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return False
    return True


def open_for_rebuild(root: str | os.PathLike[str] | None, actor: str) -> tuple[Store, str | None]:
    """Open a root for rebuilding, first moving aside an index.db that is not a database at all."""
    layout = RootLayout(resolve_data_root(root))
    aside = set_aside_if_corrupt(layout.index_path)
    return Store.open(layout.root, actor=actor, create=True), aside


Read = tuple[FileEntry, IndexEntry | None]
"""A file and what it puts in the index; None: its row is kept as it is (no key for it, or moved since the walk)."""


@dataclass
class _Rebuild:
    """What a rebuild carries from one batch to the next."""

    store: Store
    result: RebuildResult
    written: set[str] = field(default_factory=set)  # slugs whose rows this rebuild wrote
    kept: set[str] = field(default_factory=set)  # slugs of rows kept as they are (their files could not be read)
    passed_over: set[str] = field(default_factory=set)  # paths of files read and not indexed (unparsable, clashing)
    vacated: dict[str, str] = field(default_factory=dict)  # path -> slug of a row this rebuild moved away from it
    locked: int = 0  # files whose key is not at hand, or moved since the walk

    def skip(self, path: str, line: str) -> None:
        """``path``'s file is not indexed; ``line`` says why (its path first)."""
        self.result.skipped.append(line)
        self.passed_over.add(path)


def rebuild_index(store: Store, progress: Callable[[int, int], None] | None = None) -> RebuildResult:
    """Re-read every file and rewrite the rows they own, a batch at a time; then remove the rows of files gone,
    with the rebuild's audit event."""
    result = RebuildResult()
    _rebuild_rows(store, result, progress)
    try:  # the files did not change: a sync reads only those it lacks (all, for an index damaged or gone)
        result.searchable = fulltext.sync(store, progress=progress).read
    except StoreError:
        pass  # a cache that cannot be written now: the console's next sync builds it
    return result


def _rebuild_rows(store: Store, result: RebuildResult, progress: Callable[[int, int], None] | None) -> None:
    """The rebuild of index.db's rows, with its audit event. What it read is let go on return, before the search
    index is built (from nothing, its peak)."""
    files = [e for e in walk(store.layout) if isinstance(e, FileEntry)]
    state = _Rebuild(store, result)
    with store.index.read_ahead():  # rows are looked up a batch of files at a time
        for batch in chunked(_read(store, files, state, progress), BATCH):
            with store.index.transaction():
                _write(state, batch)
    store.apply(
        Change(
            "index_rebuilt",
            None,
            None,
            {"files": len(files), "skipped": len(result.skipped), "locked": state.locked},
            index_update=lambda: _remove_gone(state),
        )
    )
    result.kept_locked = len(state.kept)


def _read(
    store: Store, files: list[FileEntry], state: _Rebuild, progress: Callable[[int, int], None] | None
) -> Iterator[Read]:
    """Every file with what it puts in the index, in the walk's order: those of plain scopes parsed by
    :func:`examined`'s workers, the others (encrypted, or of a sensitive scope) decrypted and parsed here, both
    read ahead at once. Unreadable files go to ``state``'s skipped."""
    sensitive = store.sensitive_scopes()
    plain = [(at, e) for at, e in enumerate(files) if not e.encrypted and e.scope_hash not in sensitive]
    kept = [(at, e) for at, e in enumerate(files) if e.encrypted or e.scope_hash in sensitive]
    with (
        closing(examined(store.layout, [e for _, e in plain], index_entry)) as examining,
        closing(read_ahead(store.layout, [e for _, e in kept])) as reading,
    ):
        merged = heapq.merge(
            ((at, got) for (at, _), got in zip(plain, examining, strict=False)),
            ((at, got) for (at, _), got in zip(kept, reading, strict=False)),
            key=lambda item: item[0],
        )
        for done, (_, (entry, outcome)) in enumerate(merged, 1):
            if progress is not None:
                progress(done, len(files))
            if callable(outcome):
                read = _opened(store, entry, outcome, state)
            elif isinstance(outcome, Bad):
                state.skip(entry.relpath, str(BadMemoryFile(entry.relpath, outcome.reason)))
                continue
            elif isinstance(outcome, Failed):
                raise StoreError(outcome.error)
            else:
                read = entry, outcome
            if read is not None:
                yield read


def _opened(store: Store, entry: FileEntry, stored: Callable[[], bytes], state: _Rebuild) -> Read | None:
    """A file of a sensitive scope (or an encrypted one), decrypted and parsed here."""
    try:
        doc = parse(store.opened(entry.relpath, stored())[1], entry.relpath)
    except (FileNotFoundError, KeyUnavailable):  # moved since the walk (memoryd's sweep), or no key: its row is
        return entry, None  # kept as it is (the row memoryd updated names where a moved file went)
    except (BadMemoryFile, DecryptionFailed) as exc:
        state.skip(entry.relpath, str(exc))
        return None
    return entry, index_entry(doc, entry.relpath)


def _write(state: _Rebuild, batch: Sequence[Read]) -> None:
    """One batch's rows, in its own transaction. The first file of a slug in the walk's order keeps it, unless the
    index pointed at a later one; a row in the way of a file's (its path under another slug) is removed, unless
    promotions hang off it."""
    store = state.store
    at_path = dict(
        store.index.lookup(
            "SELECT body_path, slug FROM memories WHERE body_path IN ({})", [e.relpath for e, _ in batch]
        )
    )
    chosen: dict[str, IndexEntry] = {}
    for entry, item in batch:
        before = at_path.get(entry.relpath) or state.vacated.get(entry.relpath)  # the row there before the rebuild
        if item is None:
            state.locked += 1
            if before is not None:
                state.kept.add(before)
            continue
        slug = item.slug
        if slug in chosen or slug in state.written:
            earlier = chosen[slug].relpath if slug in chosen else _path_of(store, slug)
            if before == slug:  # the index already points at this file: it keeps the slug; `engram repair`
                chosen[slug], loser, winner = item, earlier, item.relpath  # re-slugs the other
            else:
                loser, winner = item.relpath, earlier
            state.skip(loser, f"{loser}: slug {slug} already used by {winner}")
            continue
        chosen[slug] = item
    for slug, item in list(chosen.items()):
        squatter = at_path.get(item.relpath)
        if squatter is None or squatter == slug:
            continue
        if _referenced(store, [squatter]):
            state.skip(item.relpath, f"{item.relpath}: its old row {squatter} still has promotions")
            del chosen[slug]
            continue
        Memory.delete().where(Memory.slug == squatter).execute()
    elsewhere = [slug for slug, item in chosen.items() if at_path.get(item.relpath) != slug]  # new, or moving
    moving = store.index.lookup("SELECT slug, body_path FROM memories WHERE slug IN ({})", elsewhere)
    state.vacated.update({path: slug for slug, path in moving if path != chosen[slug].relpath})
    store.upsert_index_entries(list(chosen.values()), keep_runtime=True)
    state.written.update(chosen)
    state.result.indexed = len(state.written)  # a slug an earlier batch wrote, taken by a later file, counts once


def _remove_gone(state: _Rebuild) -> None:
    """Remove the rows no file was found for: not those of files kept as they are, nor those promotions hang off,
    nor those of a memory memoryd wrote while the rebuild ran (its file was not there when the walk passed)."""
    store, result = state.store, state.result
    gone = [
        (slug, path)
        for slug, path in store.index.db.execute_sql("SELECT slug, body_path FROM memories")
        if slug not in state.written and slug not in state.kept
    ]
    referenced = _referenced(store, [slug for slug, _ in gone])
    for slug, path in gone:
        if slug in referenced:
            result.kept_for_promotions.append(slug)
        elif path in state.passed_over or not appeared_since(store.layout, path):
            Trigger.delete().where(Trigger.slug == slug).execute()
            Memory.delete().where(Memory.slug == slug).execute()
            result.removed += 1


def _referenced(store: Store, slugs: list[str]) -> set[str]:
    """Of ``slugs``, those promotions name as their source session: one pass over the promotions (nothing indexes
    their sources), whatever the number of slugs."""
    if not slugs:
        return set()
    wanted = set(slugs)
    query = "SELECT DISTINCT source_session_slug FROM promotions"
    return {slug for (slug,) in store.index.db.execute_sql(query) if slug in wanted}


def _path_of(store: Store, slug: str) -> str:
    """Where the row of a slug this rebuild wrote points now (memoryd may have removed it since)."""
    row = Memory.get_or_none(Memory.slug == slug)
    return row.body_path if row is not None else f"a file of {slug}'s removed since"
