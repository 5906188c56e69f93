"""Sorted-offset segments: how the persistent index finds a body term at keyboard speed.

FTS5 answers a phrase by merging the position lists of all its trigrams in every memory holding them: a cost that
grows with the memories, however many keys of the word were typed before. A segment keeps, for up to SEGMENT_DOCS
memories, their text as one buffer (each memory's head, a NUL, its tags and body, a NUL; lowercased UTF-8, as the
index stores it) and every offset of it, ordered by the ORDER bytes that follow each (a suffix array cut at sixteen
bytes), with the memory each offset is in. The occurrences of a needle of up to sixteen bytes are then one range of
those offsets: ``marks`` (the first eight bytes of every 64th) and two binary searches find the range of its first
eight bytes, two more the range of the next eight within it; their memories are the same range of a 16-bit array,
read in order. (Checking a broad term's million candidates byte by byte against the text cost a cache and TLB miss
each, per byte of the needle; with offsets ordered by eight bytes only, a word of nine to sixteen letters still read
the text at each occurrence of its first eight, mapping a page for most of them.) A longer needle is found in the
range of its first sixteen bytes, its other bytes compared at each, and one typed a key further among the
occurrences of the one before. A match of UTF-8 bytes is a match of characters, and no needle holds a NUL, so no
match spans two memories or a head and a body. A segment of the same memories' heads alone answers what is looked
for in heads only: needles of one or two bytes, prefixes and suffixes, and whether a hit matched in its head.

Segments are ``.npy`` files beside the index. A lookup reads what it needs of them with ``pread`` (see
:class:`Probes`); they are also memory-mapped, for what reads a whole array (verification, the offsets of a long
needle), and :meth:`Segment.release` lets go of those pages once typing stops. They hold text of plain scopes
only, as the index does, and are scrubbed with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np

from engram.store.search.ordering import MARK_EVERY, ORDER, PREFIX, DocOf, Held, NpyFile, order
from engram.store.search.rows import needle_bytes

SEGMENT_DOCS = 40_000  # memories per segment (at most 65,536: ``docs`` is 16-bit): ~22 MB of text
ARRAYS = ("ids", "ends", "text", "positions", "docs", "marks")
FORMAT = 3  # the manifest's word for these arrays: segments of another format are built again
READ = ("text", "positions", "docs", "marks")  # what lookups read with pread (see Probes), not where it is mapped
AHEAD = ("text", "marks")  # what Segments.read_ahead reads through: where a lookup's binary searches read most
MAPPED_MOST = 1 << 30  # resident pages of mapped files past which a query lets go of the segments' (see unmap)
REMEMBERED = 8  # needles longer than ORDER whose occurrences are kept for the next key
REMEMBERED_MOST = 6_000_000  # ... holding at most this many occurrences in all (36 MB)


class Hits(NamedTuple):
    """Where a needle occurs in a segment (offsets, in no particular order), and the memory (its number there) of
    each."""

    at: np.ndarray
    doc: np.ndarray


class Gathered(NamedTuple):
    """A segment's memories' texts one after another with ORDER - 1 NULs past them (``after``, as the ordering
    reads them), and where each ends."""

    after: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, texts: Iterable[bytes]) -> Gathered:
        gathering = Gathering()
        for text in texts:
            gathering.add(text)
        return gathering.done()

    @property
    def text(self) -> np.ndarray:
        return self.after[: len(self.after) - (ORDER - 1)]


class Gathering:
    """Texts gathered into one buffer as they come, where a list of them and their join held the text three
    times (and the rows they are made from, once more)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._ends: list[int] = []

    def add(self, text: bytes) -> None:
        self._buffer += text
        self._ends.append(len(self._buffer))

    def done(self) -> Gathered:
        self._buffer += bytes(ORDER - 1)
        return Gathered(np.frombuffer(self._buffer, dtype=np.uint8), np.array(self._ends, dtype=np.int64))


@dataclass(frozen=True)
class Segment:
    ids: np.ndarray  # int64: the index's id of each memory, ascending
    ends: np.ndarray  # int64: where each memory's text ends in ``text``
    text: np.ndarray  # uint8: head NUL body NUL of each memory
    positions: np.ndarray  # uint32: every offset of the text, ordered by the ORDER bytes from it (NULs past the end)
    docs: np.ndarray | None  # uint16: the memory (its number here) each of ``positions`` is in; None in a segment
    # held in memory only, which works it out from the offsets instead (see :class:`InMemory`)
    marks: np.ndarray  # uint64: the PREFIX bytes (big-endian) from every MARK_EVERY-th of ``positions``
    maps: tuple[mmap.mmap, ...] = ()  # the files' maps, for a segment opened from them
    probes: Probes | None = None  # reads of the READ files, for a segment opened from them
    typed: Typed = field(default_factory=lambda: Typed(b"", 0, 0), init=False, compare=False, repr=False)  # _ordered

    @classmethod
    def build(cls, ids: Sequence[int], texts: Iterable[bytes]) -> Segment:
        """The segment of memories ``ids`` whose texts are ``texts``, held in memory."""
        gathered = Gathered.of(texts)
        return cls.of(ids, gathered.text, gathered.ends, after=gathered.after)

    @classmethod
    def of(
        cls,
        ids: Sequence[int] | np.ndarray,
        text: np.ndarray,
        ends: np.ndarray,
        docs: bool = True,
        after: np.ndarray | None = None,
    ) -> Segment:
        """The segment of memories ``ids`` whose texts, one after another, are ``text``, each ending at ``ends``
        (``after``: ``text`` and ORDER - 1 NULs past it, where the caller has them). Without ``docs`` (a segment
        never saved), the memory of each offset is not kept but worked out when read: two bytes per byte of text
        less (44 MB of the 240,000 sensitive heads of a million memories)."""
        _check_size(len(text), len(ends))
        if after is None:
            after = np.concatenate((text, np.zeros(ORDER - 1, dtype=np.uint8)))
        positions = Held(len(text), np.uint32)
        kept = Held(len(text), np.uint16) if docs else None
        marks = order(after, len(text), positions, (kept, DocOf(ends, len(text))) if kept is not None else None)
        return cls(np.asarray(ids, dtype=np.int64), ends, text, positions.array, kept.array if kept else None, marks)

    @staticmethod
    def write(
        stem: Path, ids: Sequence[int], gathered: Gathered, advance: Callable[[int], None] | None = None
    ) -> dict[str, str]:
        """Build the segment of memories ``ids`` whose texts ``gathered`` holds straight into its files (as
        :meth:`save` writes them, each fsynced), its offsets and their memories written a group at a time as
        they are ordered (see :mod:`engram.store.search.ordering`; ``advance`` is told how many bytes of the
        text are in order after each group); returns the arrays' digests by name. Holding a built segment's
        offsets and memories whole was six bytes per byte of its text."""
        count, ends = len(gathered.text), gathered.ends
        _check_size(count, len(ends))
        with NpyFile(_file(stem, "positions"), np.uint32, count) as positions:
            with NpyFile(_file(stem, "docs"), np.uint16, count) as docs:
                marks = order(gathered.after, count, positions, (docs, DocOf(ends, count)), advance=advance)
        held = {"ids": np.asarray(ids, dtype=np.int64), "ends": ends, "text": gathered.text, "marks": marks}
        for name, array in held.items():
            _save(_file(stem, name), array)
        digests = {name: digest(array) for name, array in held.items()}
        digests |= {name: file_digest(_file(stem, name)) for name in ("positions", "docs")}  # written, not held
        return {name: digests[name] for name in ARRAYS}

    def save(self, stem: Path) -> dict[str, str]:
        """Write the arrays as ``<stem>.<name>.npy``, each fsynced; returns their digests by name."""
        for name in ARRAYS:
            _save(_file(stem, name), getattr(self, name))
        return {name: digest(getattr(self, name)) for name in ARRAYS}

    @classmethod
    def open(cls, stem: Path) -> Segment:
        """The arrays of ``stem`` memory-mapped. Raises ``OSError`` or ``ValueError`` for missing or malformed
        files (the caller looks at each row instead)."""
        paths = {name: _file(stem, name) for name in ARRAYS}
        maps = {name: _mapped(path) for name, path in paths.items()}
        segment = cls(
            **{name: array for name, (array, _, _) in maps.items()},
            maps=tuple(m for _, m, _ in maps.values()),
            probes=Probes(
                {name: (fd, maps[name][2], maps[name][0].dtype) for name, fd in _opened(paths).items()},
                len(maps["marks"][0]),
            ),
        )
        segment.check_shape()
        return segment

    def release(self) -> None:
        """Let go of the pages of the files queries touched: they stay in the kernel's cache, and the next query
        maps them again (a page fault each), but they no longer count as this process's resident memory."""
        for mapped in self.maps:
            mapped.madvise(mmap.MADV_DONTNEED)

    def check_shape(self) -> None:
        """What must hold for a query never to index out of its arrays (contents are the digests' business)."""
        kinds = {"ids": np.int64, "ends": np.int64, "text": np.uint8, "positions": np.uint32, "docs": np.uint16}
        kinds["marks"] = np.uint64
        arrays = {name: getattr(self, name) for name in kinds}
        for name, kind in kinds.items():
            if arrays[name] is None or arrays[name].dtype != kind or arrays[name].ndim != 1:
                raise ValueError(f"segment array {name}: {getattr(arrays[name], 'dtype', None)}, not flat")
        if len(self.ids) != len(self.ends) or not len(self.text) == len(self.positions) == len(arrays["docs"]):
            raise ValueError("segment arrays of unequal lengths")
        if len(self.ends) and int(self.ends[-1]) != len(self.text):
            raise ValueError("segment text shorter than its memories")
        if len(self.marks) != -(-len(self.positions) // MARK_EVERY):
            raise ValueError("segment marks do not match its offsets")

    def find(self, key: bytes) -> Hits:
        """Where ``key`` (UTF-8, no NUL) occurs: the range of ``positions`` its first ORDER bytes begin (the range
        of its first PREFIX bytes, then of the next PREFIX within it), and for a longer key the rest of its bytes
        compared at each."""
        first, last = self._ordered(key[:ORDER])
        read = self.read.array
        # the offsets are only looked at for a needle as long as the order: another's stay unread where mapped
        hits = Hits(
            read("positions", first, last) if len(key) >= ORDER else self.positions[first:last],
            read("docs", first, last),
        )
        return self.extend(hits, key, ORDER) if len(key) > ORDER else hits

    def _ordered(self, key: bytes) -> tuple[int, int]:
        """The range of ``positions`` whose text begins with ``key`` (at most ORDER bytes). Past PREFIX bytes, a
        key that extends the one looked up last (a word typed a key further) is found inward from the ends of
        that one's range, which it mostly fills: a step or two at each end, where a binary search over the range
        took fifteen (two reads each, in every segment, on every keystroke)."""
        typed = self.typed
        if len(key) > PREFIX and len(typed.key) >= PREFIX and key.startswith(typed.key):
            low, past = _span(key[PREFIX:ORDER])
            first = self._upward(low, typed.first, typed.last)
            last = self._downward(past, first, typed.last)
        else:
            first, last = self._range(*_span(key[:PREFIX]))
            if len(key) > PREFIX and first < last:
                first, last = (self._within(value, first, last) for value in _span(key[PREFIX:ORDER]))
        typed.key, typed.first, typed.last = key, first, last
        return first, last

    def _upward(self, value: int, first: int, last: int) -> int:
        """:meth:`_within` of ``first:last`` (past PREFIX), probed from ``first`` up at growing distances, then a
        binary search of the last distance: two steps for each doubling of the distance to the answer."""
        low, step = first, 1
        while low < last:
            probe = min(low + step, last) - 1
            if self._after(probe) >= value:
                return self._within(value, low, probe)
            low, step = probe + 1, step * 2
        return last

    def _downward(self, value: int, first: int, last: int) -> int:
        """:meth:`_within` of ``first:last`` (past PREFIX), probed from ``last`` down (see :meth:`_upward`)."""
        high, step = last, 1
        while high > first:
            probe = max(high - step, first)
            if self._after(probe) < value:
                return self._within(value, probe + 1, high)
            high, step = probe, step * 2
        return first

    def _after(self, index: int) -> int:
        """The PREFIX bytes past PREFIX from the offset at ``index`` of ``positions``, as a number."""
        return self._prefix(self._positions(index, index + 1)[0] + PREFIX)

    def _range(self, low: int, past: int) -> tuple[int, int]:
        """The offsets whose prefixes are at least ``low`` and below ``past``: ``marks`` narrow each end to
        MARK_EVERY offsets, among which a binary search reads six prefixes from the text (a keystroke makes a
        lookup in every segment: few pages touched, as few page faults)."""
        return self._bound(low, self._mark(low)), self._bound(past, self._mark(past))

    def _mark(self, value: int) -> int:
        """The first mark at least ``value``: the marks of every MARK_EVERY-th mark (kept) narrow it to MARK_EVERY
        marks, read."""
        top = int(np.searchsorted(self.read.tops, np.uint64(value)))
        first = max(top - 1, 0) * MARK_EVERY
        window = self.read.array("marks", first, min(top * MARK_EVERY, len(self.marks)))
        return first + int(np.searchsorted(window, np.uint64(value)))

    def _bound(self, value: int, mark: int) -> int:
        """The first offset whose prefix is at least ``value``, given the first mark that is (``mark``): a binary
        search of the MARK_EVERY offsets before it (one read), six prefixes read from the text. A prefix running
        past the text is padded with NULs, as the prefixes were ordered."""
        first = max(mark - 1, 0) * MARK_EVERY
        window = self._positions(first, min(mark * MARK_EVERY, len(self.positions)))
        low, high = 0, len(window)
        while low < high:
            middle = (low + high) // 2
            if self._prefix(window[middle]) < value:
                low = middle + 1
            else:
                high = middle
        return first + low

    def _within(self, value: int, first: int, last: int) -> int:
        """The first of ``positions[first:last]`` (all alike in their first PREFIX bytes) whose next PREFIX bytes
        are at least ``value``: a binary search reading them from the text (one page a step, few steps)."""
        low, high = first, last
        while low < high:
            middle = (low + high) // 2
            if self._after(middle) < value:
                low = middle + 1
            else:
                high = middle
        return low

    def _positions(self, first: int, last: int) -> list[int]:
        return self.read.array("positions", first, last).tolist()

    def _prefix(self, at: int) -> int:
        """The PREFIX bytes of the text from ``at`` as a number (NULs past its end, as the offsets were ordered)."""
        return int.from_bytes(self.read.text(at, PREFIX).ljust(PREFIX, b"\0"), "big")

    @cached_property
    def read(self) -> Probes | InMemory:
        """How lookups read the arrays: from the files (``probes``), or where a built segment holds them."""
        return self.probes or InMemory(self)

    def extend(self, hits: Hits, key: bytes, known: int) -> Hits:
        """Where ``key`` occurs, given where its first ``known`` bytes (at least ORDER) do (``hits``): those of them
        where each ORDER bytes of the rest of ``key`` occur too, at their distance (each such window one range of
        ``positions``, read in order). The text itself is never read at the hits: a long needle's every candidate
        would map a page of it (a typed path of eighteen bytes mapped 390 MB of a million memories' text)."""
        for offset in sorted({*range(ORDER, len(key) - ORDER, ORDER), len(key) - ORDER}):
            if offset + ORDER <= known or not len(hits.at):
                continue
            first, last = self._ordered(key[offset : offset + ORDER])
            there = np.isin(hits.at.astype(np.int64) + offset, self.read.array("positions", first, last))
            hits = Hits(hits.at[there], hits.doc[there])
        return hits

    def ids_of(self, hits: Hits) -> np.ndarray:
        """The ids of the memories of ``hits``."""
        if not len(hits.doc):
            return _NOWHERE
        present = np.zeros(len(self.ids), dtype=bool)
        present[hits.doc.astype(np.intp)] = True  # cast first: twice as quick as numpy casting while it indexes
        return self.ids[np.flatnonzero(present)]  # a gather of the few: quicker than a mask over them all


@dataclass(slots=True)
class Typed:
    """The key a segment looked up last and the range of ``positions`` it begins: the next key typed extends it."""

    key: bytes
    first: int
    last: int


class Probes:
    """What a lookup reads of a segment's files, read with ``pread`` instead of mapped: a few bytes of text and
    offsets for each step of its binary searches, and the range of memories it found. A page fault in a mapped
    file maps a whole large folio of the page cache (tens of KB here): the two hundred probes of a keystroke over
    a million memories mapped 50 MB of text a word, and typing a while, most of the segments (800 MB) as this
    process's memory. Read, they stay in the kernel's cache only."""

    def __init__(self, files: Mapping[str, tuple[int, int, np.dtype]], marks: int) -> None:
        """Each array's file descriptor (theirs now: closed when these probes are dropped, by whichever thread
        let go of the segment last), where the array begins in it and its type as the file has it; how many
        ``marks`` there are (every MARK_EVERY-th of them is kept: 32 KB a segment)."""
        self._files = files
        weakref.finalize(self, _close_all, [fd for fd, _, _ in files.values()])
        self.tops = self.array("marks", 0, marks)[::MARK_EVERY].copy()

    def text(self, at: int, count: int) -> bytes:
        fd, start, _ = self._files["text"]
        return os.pread(fd, count, start + at)

    def array(self, name: str, first: int, last: int) -> np.ndarray:
        """``name``'s items ``first`` to ``last``, copied."""
        fd, start, kind = self._files[name]
        raw = os.pread(fd, kind.itemsize * (last - first), start + kind.itemsize * first)
        return np.frombuffer(raw, dtype=kind)

    def read_ahead(self, buffer: bytearray) -> int:
        """Read the files of ``AHEAD`` through once, ``buffer`` at a time, for the kernel to keep them in its cache
        (they are not mapped: none of it is this process's memory); returns the bytes read. A file that cannot be
        read is left to the lookups, which raise as they would have."""
        total = 0
        for name in AHEAD:
            fd, at = self._files[name][0], 0
            with contextlib.suppress(OSError):
                while count := os.preadv(fd, [buffer], at):
                    at += count
            total += at
        return total


def _opened(paths: Mapping[str, Path]) -> dict[str, int]:
    """A descriptor of each READ file, or none left open if one cannot be opened."""
    fds: dict[str, int] = {}
    try:
        for name in READ:
            fds[name] = os.open(paths[name], os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        _close_all(list(fds.values()))
        raise
    return fds


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


class InMemory:
    """The reads of :class:`Probes`, from a segment built in memory (its arrays, sliced). A segment built without
    ``docs`` has the memory of each offset read worked out instead, by a :class:`DocOf`: three sixteenths of a
    byte per byte of text, where ``docs`` takes two."""

    def __init__(self, segment: Segment) -> None:
        self._segment = segment
        self.tops = segment.marks[::MARK_EVERY]
        self._doc_of = DocOf(segment.ends, len(segment.text)) if segment.docs is None else None

    def text(self, at: int, count: int) -> bytes:
        return self._segment.text[at : at + count].tobytes()

    def array(self, name: str, first: int, last: int) -> np.ndarray:
        if name == "docs" and self._doc_of is not None:
            return self._doc_of(self._segment.positions[first:last])
        return getattr(self._segment, name)[first:last]


def _check_size(count: int, memories: int) -> None:
    if count >= 1 << 32 or memories > 1 << 16:
        raise ValueError("a segment holds under 4 GiB of text (32-bit offsets) in at most 65,536 memories")


def _file(stem: Path, name: str) -> Path:
    return stem.with_name(f"{stem.name}.{name}.npy")


def _save(path: Path, array: np.ndarray) -> None:
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
        np.save(fh, array, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


def _span(key: bytes) -> tuple[int, int]:
    """The PREFIX-byte numbers of everything that begins with ``key`` (at most PREFIX bytes): from ``key`` padded
    with NULs to past ``key`` padded with 0xff (UTF-8 never holds 0xff: no overflow)."""
    return int.from_bytes(key.ljust(PREFIX, b"\0"), "big"), int.from_bytes(key.ljust(PREFIX, b"\xff"), "big") + 1


_NOWHERE = np.empty(0, dtype=np.int64)


def _mapped(path: Path) -> tuple[np.ndarray, mmap.mmap, int]:
    """The array of a ``.npy`` file, read where the file is mapped (its header read as numpy reads it), the map,
    and where in the file the array begins. Raises ``OSError`` or ``ValueError``."""
    with open(path, "rb") as fh:
        count, dtype, offset = _header(fh, path)
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if offset + count * dtype.itemsize > len(mapped):
        raise ValueError(f"{path.name}: shorter than its header says")
    return np.frombuffer(mapped, dtype=dtype, count=count, offset=offset), mapped, offset


def _header(fh: BinaryIO, path: Path) -> tuple[int, np.dtype, int]:
    """The length and type of a flat ``.npy`` array, and where its bytes begin; ``fh`` is left there."""
    version = np.lib.format.read_magic(fh)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise ValueError(f"{path.name}: .npy format {version}")
    shape, fortran, dtype = readers[version](fh)
    if fortran or len(shape) != 1 or dtype.hasobject:
        raise ValueError(f"{path.name}: not a flat array")
    return shape[0], dtype, fh.tell()


def file_digest(path: Path) -> str:
    """:func:`digest` of the array a ``.npy`` file holds, read a chunk at a time rather than mapped: a check of
    every segment then holds a chunk, where mapping made each file's pages count as the process's memory."""
    found = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        count, dtype, _ = _header(fh, path)
        left = count * dtype.itemsize
        while left and (chunk := fh.read(min(1 << 20, left))):
            found.update(chunk)
            left -= len(chunk)
    if left:
        raise ValueError(f"{path.name}: shorter than its header says")
    return found.hexdigest()


def digest(array: np.ndarray) -> str:
    """The digest of an array's bytes (what the manifest records and ``check`` compares)."""
    return hashlib.blake2b(np.ascontiguousarray(array).view(np.uint8).data, digest_size=16).hexdigest()


def head_of(head: str) -> bytes:
    """A memory's head alone in a segment of heads, ended by a NUL (as the console's rows hold it)."""
    return f"{head}\0".encode()


def text_of(head: str, body: str) -> bytes:
    """A memory's text in a segment: its head and its tags and body, each ended by a NUL."""
    return f"{head}\0{body}\0".encode()


class Segments:
    """The segments of one generation, answering terms; remembers the occurrences of the last few terms, so that
    the next key of a word is found among them. Queries may come from several threads."""

    def __init__(self, parts: Sequence[Segment]) -> None:
        self.parts = list(parts)
        self._found: OrderedDict[bytes, tuple[list[Hits], np.ndarray | None]] = OrderedDict()  # hits per segment, ids
        self._lock = threading.Lock()
        self._read_ahead = False  # see read_ahead

    @classmethod
    def open(cls, directory: Path, names: Sequence[str]) -> Segments:
        return cls([Segment.open(directory / name) for name in names])

    def release(self) -> None:
        self.forget()
        self.unmap()

    def read_ahead(self) -> int:
        """Read the segments' text and marks through once (see :meth:`Probes.read_ahead`); returns the bytes read.
        A lookup reads a few bytes at a time from them, at places no one can tell ahead: each end of a range is
        a mark and six prefixes of the text, in every segment, so a key whose pages are not in the kernel's cache
        (after a boot, or once a kernel has paged out files unread for a while) waited on about 600 reads of the
        disk, one after another, most of them of text and marks. Read through in order, text and marks are a
        sixth of the segments' bytes, a fraction of a second of a local disk; the offsets and memory numbers stay
        on it. Asking the kernel to read them ahead
        (``POSIX_FADV_WILLNEED``) read less than half of them. Done once for these segments (0 after): an open
        prepares the index from the kept rows, then the one read from index.db, seconds apart, over the same
        segments."""
        if self._read_ahead:
            return 0
        self._read_ahead = True
        buffer = bytearray(1 << 22)
        return sum(part.probes.read_ahead(buffer) for part in self.parts if part.probes is not None)

    def unmap(self) -> None:
        """Let go of the pages queries mapped in (see :meth:`Segment.release`)."""
        for part in self.parts:
            part.release()

    def matching(self, needle: str) -> np.ndarray:
        """The ids (ascending) of the memories whose text contains ``needle`` (no NUL in it)."""
        key = needle_bytes(needle)
        with self._lock:
            found, ids = self._occurrences(key)
            if ids is None:
                ids = np.concatenate([part.ids_of(h) for part, h in zip(self.parts, found, strict=True)] or [_NOWHERE])
                if key in self._found:
                    self._found[key] = (found, ids)
        return ids

    def flag(self, needle: str, rows: Sequence[np.ndarray], flags: np.ndarray) -> None:
        """Set ``flags[rows[k][d]]`` for each memory ``d`` of segment ``k`` whose text contains ``needle``: each
        occurrence goes straight to its memory's flag, where ids to look up and map were a scatter, a gather and
        two more passes over them. Where a segment has more occurrences than memories, they are counted by memory
        first and only the memories found are flagged; ``take`` is numpy's quicker gather of the others (figures
        in docs/performance-history.md)."""
        with self._lock:
            found, _ = self._occurrences(needle_bytes(needle))
        for hits, table in zip(found, rows, strict=True):
            if len(hits.doc) > len(table):
                flags[table[np.bincount(hits.doc, minlength=len(table)).astype(bool)]] = 1
            else:
                flags[np.take(table, hits.doc)] = 1

    def _occurrences(self, key: bytes) -> tuple[list[Hits], np.ndarray | None]:
        """Where ``key`` occurs in each segment, and the ids of its memories where they are known already. A
        needle longer than ORDER typed a key at a time is found among the occurrences of the one before it, and a
        key that left them all in place has their ids. (Segments are searched one after another: a lookup is
        mostly the interpreter's work, which threads would only take turns at.) Called with the lock held."""
        before = next((key[:n] for n in range(len(key), ORDER - 1, -1) if key[:n] in self._found), None)
        ids: np.ndarray | None = None
        if before is None:
            found = [part.find(key) for part in self.parts]
        else:
            self._found.move_to_end(before)
            last, ids = self._found[before]
            found = [part.extend(hits, key, len(before)) for part, hits in zip(self.parts, last, strict=True)]
            if [len(h.at) for h in found] != [len(h.at) for h in last]:
                ids = None
        if len(key) >= ORDER:  # a shorter needle is four lookups a segment: nothing to keep
            self._found[key] = (found, ids)
            while len(self._found) > REMEMBERED or self._remembered() > REMEMBERED_MOST:
                self._found.popitem(last=False)
        return found, ids

    def _remembered(self) -> int:
        return sum(len(hits.at) for found, _ in self._found.values() for hits in found)

    def forget(self) -> None:
        """Drop the occurrences kept for the next key (a console idle: they are tens of MB at 1M)."""
        with self._lock:
            self._found.clear()


def mapped_resident() -> int | None:
    """Bytes of this process's resident memory that are pages of mapped files (Linux's ``RssFile``), None where
    the system does not say. A page fault in a mapped file maps the pages around it too (64 KB, or a whole large
    folio of the page cache): whatever still reads the segments where they are mapped (the offsets of needles
    longer than ORDER) counts as the console's memory until released."""
    try:
        with open("/proc/self/status", "rb") as fh:
            status = fh.read()
    except OSError:
        return None
    at = status.find(b"RssFile:")
    return int(status[at + 8 : status.index(b"kB", at)]) << 10 if at >= 0 else None


def verify(directory: Path, manifest: Mapping[str, Mapping[str, str]], layout: int = FORMAT) -> str | None:
    """Why the segments of ``manifest`` (name -> array -> digest) are not what was written, or None. Segments of
    an older ``layout`` (built again by the next sync) are held to their digests only."""
    for name, digests in manifest.items():
        try:
            if layout == FORMAT:
                Segment.open(directory / name)  # shapes a query relies on
            for array, expected in digests.items():
                if file_digest(directory / f"{name}.{array}.npy") != expected:
                    return f"segment {name}: {array} is not what was written"
        except (OSError, ValueError) as exc:
            return f"segment {name}: {exc}"
    return None
