"""How a segment's offsets are put in order, and where they go as they are.

Every offset of a segment's text is ordered by the ORDER bytes from it, ties by offset (see
:mod:`engram.store.search.segments`). The offsets and the memory each is in are six bytes per byte of text: held
whole while they were sorted, with the sort's own keys and indices beside them, a build from nothing of
md20k's one segment peaked near three hundred MB for 25 MB of text. So the offsets are ordered a group at a time,
and a group ordered is put where it stays (an :class:`Out`: the segment's file, or an array for a segment held in
memory) before the next is read. A build then holds the text, a table of the memory at every STRIDE bytes and
one group's work, which a group's size bounds, not the segment's.

The groups are runs of leading byte pairs (the top of the first eight bytes, so one group's offsets all order
before the next's) of at most GROUP_SIZE offsets together, or one run larger than that alone. Offsets are dealt
to their group a CHUNK at a time, in offset order, into the group's span of the out; each group is then read
back, sorted by its second eight bytes and then, stably, by its first, and written over its span with the memory
of each.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

import numpy as np

PREFIX = 8  # bytes of each mark: the first half of the key offsets are ordered by
ORDER = 16  # bytes from each offset that order them: a needle this long or shorter is one range of them
MARK_EVERY = 64  # the marks hold the prefix of every this many ordered offsets
STRIDE = 16  # the memory at every this many bytes of text is kept while ordering (see DocOf)
GROUP_SIZE = 1 << 17  # offsets ordered at once, at most (or one larger run of a pair): 30-40 bytes each while sorted
CHUNK = 1 << 18  # offsets dealt to their groups at once


class Out(Protocol):
    """Where ordered offsets (``uint32``), or the memory of each (``uint16``), go: ``put`` writes items from
    ``first`` on; ``take`` reads items ``first`` to ``last`` back."""

    def put(self, first: int, values: np.ndarray) -> None: ...

    def take(self, first: int, last: int) -> np.ndarray: ...


class Held:
    """An :class:`Out` in memory: the array a segment held in memory keeps."""

    def __init__(self, count: int, dtype: type[np.generic]) -> None:
        self.array = np.empty(count, dtype=dtype)

    def put(self, first: int, values: np.ndarray) -> None:
        self.array[first : first + len(values)] = values

    def take(self, first: int, last: int) -> np.ndarray:
        return self.array[first:last]


class NpyFile:
    """An :class:`Out` that is a flat ``.npy`` file, written in place with ``pwrite`` (the header as ``np.save``
    writes it): what it holds stays in the kernel's cache, none of it this process's memory, where a mapped file's
    written pages would count as the process's own."""

    def __init__(self, path: os.PathLike[str], dtype: type[np.generic], count: int) -> None:
        self.dtype = np.dtype(dtype)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": (count,)}
        with os.fdopen(os.dup(self.fd), "wb") as fh:
            np.lib.format.write_array_header_1_0(fh, header)
            self.start = fh.tell()
        if count:
            os.ftruncate(self.fd, self.start + count * self.dtype.itemsize)

    def put(self, first: int, values: np.ndarray) -> None:
        view = np.ascontiguousarray(values, dtype=self.dtype).data.cast("B")
        at = self.start + first * self.dtype.itemsize
        while view:
            written = os.pwrite(self.fd, view, at)
            view, at = view[written:], at + written

    def take(self, first: int, last: int) -> np.ndarray:
        values = np.empty(last - first, dtype=self.dtype)
        view, at = values.data.cast("B"), self.start + first * self.dtype.itemsize
        while view:
            read = os.preadv(self.fd, [view], at)
            if not read:
                raise OSError(f"{self.fd}: shorter than written")
            view, at = view[read:], at + read
        return values

    def __enter__(self) -> NpyFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        """fsync (once written whole) and close the file."""
        try:
            if kind is None:
                os.fsync(self.fd)
        finally:
            os.close(self.fd)


class DocOf:
    """The memory (its number in the segment) each offset of a text is in, from a table of the memory at the
    start of every STRIDE bytes and how far into them it ends: at once where no memory is shorter than STRIDE
    bytes (a head rarely is); where one is, moved on past the ends between, a vectorised step at a time. Three
    sixteenths of a byte per byte of text, where the number of each offset is two."""

    def __init__(self, ends: np.ndarray, count: int) -> None:
        self.ends = ends
        strides = -(-count // STRIDE)
        self._first = np.empty(strides, dtype=np.uint16)  # the memory each stride starts in
        self._ends_at = np.empty(strides, dtype=np.uint8)  # where in the stride that memory ends
        step = max(1, CHUNK // STRIDE)  # a CHUNK of text at a time: eight-byte numbers of every stride were four
        for lo in range(0, strides, step):  # times the table's size, briefly
            starts = np.arange(lo, min(lo + step, strides), dtype=np.int64) * STRIDE
            first = np.searchsorted(ends, starts, side="right")
            self._first[lo : lo + len(starts)] = first
            self._ends_at[lo : lo + len(starts)] = (ends[first] - starts).clip(max=STRIDE)
        self._short = bool(len(ends)) and int(np.diff(ends, prepend=0).min()) < STRIDE

    def __call__(self, at: np.ndarray) -> np.ndarray:
        stride = at // STRIDE
        doc = self._first[stride] + (at % STRIDE >= self._ends_at[stride])
        if self._short:  # a stride may hold more ends than the one its table says
            ends, doc = self.ends, doc.astype(np.intp)
            while len(doc) and (past := ends[doc] <= at).any():
                doc += past
        return doc.astype(np.uint16, copy=False)


def order(
    after: np.ndarray,
    count: int,
    positions: Out,
    docs: tuple[Out, DocOf] | None = None,
    group_size: int | None = None,
    advance: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Put every offset below ``count`` in ``positions``, ordered by the ORDER bytes from it (``after`` holds
    ORDER - 1 NULs past them), ties by offset, in groups of ``group_size`` (GROUP_SIZE by default); and with
    ``docs``, the memory of each in its out. ``advance`` is told how many are in order after each group. Returns
    the PREFIX-byte number of every MARK_EVERY-th offset ordered (the segment's marks)."""
    marks = []
    for lo, hi in _dealt(after, count, positions, group_size or GROUP_SIZE):
        at = positions.take(lo, hi)  # the group's offsets, ascending
        at = at[np.argsort(_numbers(after, count, ">u8", PREFIX)[at].astype(np.uint64), kind="stable")]
        firsts = _numbers(after, count, ">u8")[at].astype(np.uint64)
        again = np.argsort(firsts, kind="stable")
        ordered = at[again]
        del at
        positions.put(lo, ordered)
        if docs is not None:
            out, doc_of = docs
            out.put(lo, doc_of(ordered))
        marks.append(firsts[again[(-lo) % MARK_EVERY :: MARK_EVERY]])
        if advance is not None:
            advance(hi)
    return np.concatenate(marks) if marks else np.empty(0, dtype=np.uint64)


def _dealt(after: np.ndarray, count: int, positions: Out, group_size: int) -> list[tuple[int, int]]:
    """Deal every offset below ``count`` to the span of ``positions`` of its group, in offset order; returns the
    groups' spans, in order."""
    leads = _numbers(after, count, ">u2")
    pairs = np.zeros(1 << 16, dtype=np.int64)
    for start in range(0, count, CHUNK):
        pairs += np.bincount(leads[start : start + CHUNK], minlength=1 << 16)
    pair_ends = np.cumsum(pairs)  # where the offsets of each leading pair end, in order
    spans, lasts = [], []
    lo = 0
    while lo < count:
        last = int(np.searchsorted(pair_ends, lo + group_size, side="right")) - 1  # whole runs, within the size
        if last < 0 or pair_ends[last] <= lo:  # the next run alone is larger: a group of its own
            last = int(np.searchsorted(pair_ends, lo, side="right"))
        hi = int(pair_ends[last])
        spans.append((lo, hi))
        lasts.append(last)
        lo = hi
    kind = np.uint16 if len(spans) < 1 << 16 else np.uint32  # a stable sort of 16-bit numbers is a radix sort
    group_of = np.searchsorted(np.array(lasts, dtype=np.int64), np.arange(1 << 16)).astype(kind)
    fill = np.array([lo for lo, _ in spans], dtype=np.int64)
    for start in range(0, count, CHUNK):
        group = group_of[leads[start : start + CHUNK]]
        dealt = (np.argsort(group, kind="stable") + start).astype(np.uint32)  # by group, ascending within each
        sizes = np.bincount(group, minlength=len(spans))
        taken = 0
        for index in np.flatnonzero(sizes).tolist():
            size = int(sizes[index])
            positions.put(int(fill[index]), dealt[taken : taken + size])
            fill[index] += size
            taken += size
    return spans


def _numbers(after: np.ndarray, count: int, dtype: str, skip: int = 0) -> np.ndarray:
    """The ``dtype`` (big-endian) numbers from ``skip`` bytes past each of the first ``count`` offsets of
    ``after``, as a view of its bytes: numbers that order as the bytes do (made native once indexed)."""
    return np.ndarray((count,), dtype=dtype, buffer=after, offset=skip, strides=(1,))
