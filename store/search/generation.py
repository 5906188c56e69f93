"""Which segments the persistent index has, and how memories get into them.

The manifest (a row of the index's ``meta`` table) names the segment files, their arrays' digests, the scopes
whose text they hold and the highest id they cover. A memory above ``covered`` is answered by FTS5, which holds
only those (the transaction that commits a manifest moves FTS5 on with it); a memory whose row was deleted (its
file changed, so its text came back under a new id; or it went) is in the ``dead`` table and its segment copy is
ignored. An index whose segments cannot be opened answers the memories they covered by a scan of its rows (slow,
but never wrong) until the next sync builds them again.

A sync folds the memories above ``covered`` into new segments once there are enough of them, and builds every
segment again once many of their memories are dead. Files are written and fsynced before the manifest naming
them commits; files no manifest names (an older generation, or one a crash left) are scrubbed, as the index's
own pages are: they hold text of plain scopes, and such a scope may be marked sensitive later.
"""

from __future__ import annotations

import itertools
import json
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engram.store.search.segments import (
    FORMAT,
    MAPPED_MOST,
    SEGMENT_DOCS,
    Gathered,
    Gathering,
    Segment,
    Segments,
    head_of,
    mapped_resident,
    text_of,
)
from engram.store.write.atomic import fsync_dir, scrub_except

FOLD_FROM = 2_000  # memories beyond the segments from which a sync folds them in (fewer: FTS5 answers quickly)
FOLD_SHARE = 50  # ... or one memory in this many, whichever is more
DEAD_SHARE = 10  # segments are built again once one memory in this many of theirs is dead


@dataclass(frozen=True)
class Manifest:
    covered: int = 0  # the highest id the segments hold
    parts: dict[str, dict[str, str]] = field(default_factory=dict)  # segment name -> array -> digest
    heads: dict[str, dict[str, str]] = field(default_factory=dict)  # the same memories' heads alone
    scopes: frozenset[str] = frozenset()  # the scopes whose text the segments hold
    format: int = FORMAT  # how the segments' arrays are laid out (an older one is built again, not read)

    def after(self, earlier: Manifest) -> Manifest:
        """These segments folded in after ``earlier``'s."""
        parts, heads, scopes = earlier.parts | self.parts, earlier.heads | self.heads, earlier.scopes | self.scopes
        return Manifest(self.covered, parts, heads, scopes)

    def dumps(self) -> str:
        named = {"covered": self.covered, "parts": self.parts, "heads": self.heads, "scopes": sorted(self.scopes)}
        return json.dumps({"format": self.format, **named})

    @property
    def files(self) -> dict[str, dict[str, str]]:
        return self.parts | self.heads


class DamagedManifest(ValueError):
    """The manifest cannot be read: the segments may hold anything."""


def manifest(con: sqlite3.Connection) -> Manifest | None:
    """The index's manifest, None when it has no segments; raises :class:`DamagedManifest`."""
    row = con.execute("SELECT value FROM meta WHERE key = 'segments'").fetchone()
    if row is None:
        return None
    try:
        data = json.loads(row[0])
        parts, heads = (
            {str(name): {str(a): str(d) for a, d in arrays.items()} for name, arrays in data.get(kind, {}).items()}
            for kind in ("parts", "heads")
        )
        scopes = frozenset(str(scope) for scope in data["scopes"])
        return Manifest(int(data["covered"]), parts, heads, scopes, int(data.get("format", 1)))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise DamagedManifest(f"segment manifest: {exc}") from None


def fold(
    con: sqlite3.Connection,
    directory: Path,
    sensitive: Callable[[], set[str]],
    covering: Callable[[sqlite3.Connection, int], None],
    progress: Callable[[int, int], None] | None = None,
) -> bool:
    """Fold the memories the segments do not cover into new ones when there are enough of them, or build every
    segment again when none exist, cannot be opened, or many of theirs are dead; True if it wrote any. The scopes
    marked sensitive are asked again before the manifest commits (``sensitive``): if the text read holds one, the
    new files are scrubbed and nothing is kept. ``covering(con, covered)`` is called in the manifest's transaction
    with the highest id the segments now cover (FTS5 lets go of the rows up to it there). ``progress`` is told
    ``(memories in order, memories to fold)`` as the segments are written: a build from nothing spends longer
    on them than on reading the files."""
    try:
        known = manifest(con)
    except DamagedManifest:
        known = None
    total = int(con.execute("SELECT count(*) FROM docs").fetchone()[0])
    fresh = (
        known is None
        or known.format != FORMAT  # an older layout: every segment is built again
        or not _openable(directory, known)  # files gone or cut short: FTS5 no longer holds their memories
        or len(known.heads) != len(known.parts)  # written before heads had segments of their own
        or _dead(con, known.covered) * DEAD_SHARE > total
        or len(known.parts) > total // SEGMENT_DOCS + 8  # many small folds: one pass over each costs a keystroke
    )
    start = 0 if fresh or known is None else known.covered
    if not total or (not fresh and _above(con, start) < max(FOLD_FROM, total // FOLD_SHARE)):
        return False
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    con.execute("BEGIN")  # one snapshot to read from; deletions after it are dead rows after ``seen``
    try:
        (seen,) = con.execute("SELECT coalesce(max(seq), 0) FROM dead").fetchone()
        written = _write_segments(con, directory, start, progress)
    finally:
        con.execute("COMMIT")
    if not written.parts:
        return False
    fsync_dir(directory)
    new = written if fresh or known is None else written.after(known)
    scopes = set(new.scopes)
    con.execute("BEGIN IMMEDIATE")
    try:
        if scopes & sensitive():  # marked meanwhile: the next sync wipes the whole index, segments first here
            con.execute("ROLLBACK")
            sweep(directory, None)
            return False
        con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('segments', ?)", (new.dumps(),))
        if fresh:
            con.execute("DELETE FROM dead WHERE seq <= ?", (seen,))  # ids the new segments never read
        covering(con, new.covered)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    sweep(directory, new)
    return True


def _write_segments(
    con: sqlite3.Connection, directory: Path, start: int, progress: Callable[[int, int], None] | None
) -> Manifest:
    """Segments of the memories above id ``start``, SEGMENT_DOCS at a time, and of their heads alone."""
    parts: dict[str, dict[str, str]] = {}
    heads: dict[str, dict[str, str]] = {}
    scopes: set[str] = set()
    covered = start
    total, done = _above(con, start), 0
    query = "SELECT id, scope, head, body FROM docs WHERE id > ? ORDER BY id"
    rows = iter(con.execute(query, (start,)))
    while True:  # a row at a time into the segment's text: the rows' strings are never held all at once
        ids: list[int] = []
        texts = Gathering()
        for id_, scope, head, body in itertools.islice(rows, SEGMENT_DOCS):
            ids.append(id_)
            scopes.add(scope)
            texts.add(text_of(head, body))
        if not ids:
            break
        name = secrets.token_hex(8)
        gathered = texts.done()
        del texts
        advance = None
        if progress is not None:  # the memories of a segment count as the bytes of its text are put in order
            advance = _advancing(progress, done, len(ids), len(gathered.text), total)
        parts[name] = Segment.write(directory / name, ids, gathered, advance)
        del gathered
        heads_of = con.execute("SELECT head FROM docs WHERE id >= ? AND id <= ? ORDER BY id", (ids[0], ids[-1]))
        heads[f"{name}-heads"] = Segment.write(
            directory / f"{name}-heads", ids, Gathered.of(head_of(h) for (h,) in heads_of)
        )
        covered, done = ids[-1], done + len(ids)
    return Manifest(covered, parts, heads, frozenset(scopes))


def _advancing(
    progress: Callable[[int, int], None], before: int, memories: int, size: int, total: int
) -> Callable[[int], None]:
    """``progress`` told of ``memories`` more in order (after ``before``, of ``total``) as ``size`` bytes are."""
    return lambda ordered: progress(before + memories * ordered // max(size, 1), total)


def _openable(directory: Path, known: Manifest) -> bool:
    """Whether the segments ``known`` names open (each array within its file); their digests are ``check``'s."""
    try:
        for names in (known.parts, known.heads):
            Segments.open(directory, list(names))
    except (OSError, ValueError):
        return False
    return True


def _dead(con: sqlite3.Connection, covered: int) -> int:
    return int(con.execute("SELECT count(DISTINCT id) FROM dead WHERE id <= ?", (covered,)).fetchone()[0])


def _above(con: sqlite3.Connection, covered: int) -> int:
    return int(con.execute("SELECT count(*) FROM docs WHERE id > ?", (covered,)).fetchone()[0])


def sweep(directory: Path, keep: Manifest | None) -> None:
    """Scrub every segment file ``keep`` does not name (all of them for None)."""
    scrub_except(directory, set(keep.files) if keep is not None else set())


class Reader:
    """The segments of an index as its manifest now says, for a connection that reads it: opened again when
    another connection committed (SQLite's ``data_version``), with the ids the ``dead`` table lists."""

    def __init__(self, con: sqlite3.Connection, directory: Path) -> None:
        self.con = con
        self.directory = directory
        self._version: int | None = None
        self._files: dict[str, dict[str, str]] | None = None
        self.segments: Segments | None = None
        self.heads: Segments | None = None
        self.covered = 0
        self.alive = np.ones(0, dtype=bool)
        self._tables: dict[int, tuple[Segments, np.ndarray, np.ndarray, list[np.ndarray]]] = {}  # see _rows

    def refresh(self) -> bool:
        """Follow the manifest and the dead ids; on any failure, answer for nothing (``covered`` 0: the caller
        looks at the rows up to where FTS5 starts). True when what the segments answer for may have changed."""
        (version,) = self.con.execute("PRAGMA data_version").fetchone()
        if version == self._version:
            return False
        self._version = version
        try:
            known = manifest(self.con)
        except DamagedManifest:
            known = None
        if known is not None and known.format != FORMAT:
            known = None  # built again by the next sync's fold; a look at each row answers meanwhile
        if known is not None and known.files != self._files:
            try:
                self.segments = Segments.open(self.directory, list(known.parts))
                self.heads = Segments.open(self.directory, list(known.heads)) if known.heads else None
                self._files = known.files
            except (OSError, ValueError):
                known = None
        if known is None:
            self._files, self.segments, self.heads, self.covered, self.alive = None, None, None, 0, np.ones(0, bool)
            return True
        self.covered = known.covered
        alive = np.ones(known.covered + 1, dtype=bool)
        rows = self.con.execute("SELECT id FROM dead WHERE id <= ?", (known.covered,))
        dead = np.fromiter((i for (i,) in rows), dtype=np.int64)
        alive[dead] = False
        alive[0] = False  # ids start at 1: a zero is a scrubbed file's
        self.alive = alive
        return True

    def release(self) -> None:
        for segments in (self.segments, self.heads):
            if segments is not None:
                segments.release()

    def _bounded(self) -> None:
        """Past MAPPED_MOST of mapped pages, let go of them (the occurrences kept for the next key stay): typing
        maps pages of every segment in, which would count as the console's memory until it idles."""
        resident = mapped_resident()
        if resident is not None and resident > MAPPED_MOST:
            for segments in (self.segments, self.heads):
                if segments is not None:
                    segments.unmap()

    def flag(self, term: str, position: np.ndarray, flags: np.ndarray) -> None:
        """Flag the rows (``position``: id -> row, -1 for none) of the live memories up to ``covered`` whose head
        or body holds ``term`` (three bytes or more); ``flags`` has one more byte than there are rows, where
        memories of no row go."""
        self._flagged(self.segments, term, position, flags)

    def flag_heads(self, needle: str, position: np.ndarray, flags: np.ndarray) -> bool:
        """As :meth:`flag`, for the memories whose head holds ``needle`` (any length); False, nothing flagged,
        without segments of heads."""
        return self._flagged(self.heads, needle, position, flags)

    def tabulate(self, position: np.ndarray, none: int) -> None:
        """Make the tables of rows :meth:`flag` and :meth:`flag_heads` look up (see :meth:`_rows`) for ``position``,
        ahead of the first term: at a million memories they are a noticeable part of a key, which the first key
        of a body term and the first of a head term each paid while a person typed."""
        for segments in (self.segments, self.heads):
            if segments is not None:
                self._rows(segments, position, none)

    def _flagged(self, segments: Segments | None, needle: str, position: np.ndarray, flags: np.ndarray) -> bool:
        """A segments' answer flagged. One whose arrays point outside themselves (a file changed since its digest
        was taken) is dropped with all the others until the manifest changes, what it flagged cleared: a look at
        each row answers meanwhile."""
        if segments is None:
            return False
        try:
            segments.flag(needle, self._rows(segments, position, len(flags) - 1), flags)
        except (IndexError, ValueError):
            self.segments, self.heads, self.covered, self.alive = None, None, 0, np.ones(0, bool)
            flags[:] = 0
            return False
        self._bounded()
        return True

    def _rows(self, segments: Segments, position: np.ndarray, none: int) -> list[np.ndarray]:
        """For each segment, the row of each of its memories (``none`` for a dead one, or one with no row): made
        once for these segments, these dead ids and this mapping of ids to rows (a search index's), 4 bytes a
        memory."""
        kept = self._tables.get(id(segments))
        if kept is not None and kept[0] is segments and kept[1] is position and kept[2] is self.alive:
            return kept[3]
        tables = []
        for part in segments.parts:
            ids, rows = part.ids, np.full(len(part.ids), none, dtype=np.int32)
            known = (ids >= 1) & (ids < min(len(position), len(self.alive)))  # a damaged or scrubbed file's: none
            known[known] = self.alive[ids[known]]
            rows[known] = position[ids[known]]
            rows[rows < 0] = none
            tables.append(rows)
        self._tables = {k: v for k, v in self._tables.items() if v[0] in (self.segments, self.heads)}
        self._tables[id(segments)] = (segments, position, self.alive, tables)
        return tables
