"""Sorted-offset segments: how the persistent index finds a body term at keyboard speed.

FTS5 answers a phrase by merging the position lists of all its trigrams in every memory holding them: 13 ms for
``idempotency`` over 75,000 bodies, ten times that over a million, however many keys of the word were typed
before. A segment keeps, for up to SEGMENT_DOCS memories, their text as one buffer (each memory's head, a NUL,
its tags and body, a NUL; lowercased UTF-8, as the index stores it) and every offset of it, ordered by the PREFIX
bytes that follow each (a suffix array cut at eight bytes), with the memory each offset is in. The occurrences of
a needle of up to eight bytes are then one range of those offsets, found by two binary searches; their memories
are the same range of a 16-bit array, read in order. (Checking a broad term's million candidates byte by byte
against the text cost a cache and TLB miss each: 13 ms a byte at a million memories.) A longer needle is found in
the range of its first eight bytes, its other bytes compared at each, and one typed a key further among the
occurrences of the one before. A match of UTF-8 bytes is a match of characters, and no needle holds a NUL, so
no match spans two memories or a head and a body. A segment of the same memories' heads alone answers what is
looked for in heads only: needles of one or two bytes, prefixes and suffixes, and whether a hit matched in its
head.

Segments are ``.npy`` files beside the index, memory-mapped: only the pages a query touches are read, and
:meth:`Segment.release` lets go of them once typing stops. They hold text of plain scopes only, as the index
does, and are scrubbed with it.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

SEGMENT_DOCS = 40_000  # memories per segment (at most 65,536: ``docs`` is 16-bit): ~22 MB of text, built in ~4 s
ARRAYS = ("ids", "ends", "text", "positions", "docs", "marks")
FORMAT = 2  # the manifest's word for these arrays: segments of another format are built again
PREFIX = 8  # bytes from each offset that order ``positions``: a needle this long or shorter is one range of them
MARK_EVERY = 64  # ``marks`` holds the prefix of every this many offsets: a lookup then reads six from the text
MAPPED_MOST = 1 << 30  # resident pages of mapped files past which a query lets go of the segments' (see unmap)
REMEMBERED = 8  # needles longer than PREFIX whose occurrences are kept for the next key
REMEMBERED_MOST = 6_000_000  # ... holding at most this many occurrences in all (36 MB)


class Hits(NamedTuple):
    """Where a needle occurs in a segment (offsets, in no particular order), and the memory (its number there) of
    each."""

    at: np.ndarray
    doc: np.ndarray


@dataclass(frozen=True)
class Segment:
    ids: np.ndarray  # int64: the index's id of each memory, ascending
    ends: np.ndarray  # int64: where each memory's text ends in ``text``
    text: np.ndarray  # uint8: head NUL body NUL of each memory
    positions: np.ndarray  # uint32: every offset of the text, ordered by the PREFIX bytes from it (NULs past the end)
    docs: np.ndarray  # uint16: the memory (its number here) each of ``positions`` is in
    marks: np.ndarray  # uint64: the PREFIX bytes (big-endian) from every MARK_EVERY-th of ``positions``
    maps: tuple[mmap.mmap, ...] = ()  # the files' maps, for a segment opened from them

    @classmethod
    def build(cls, ids: Sequence[int], texts: Iterable[bytes]) -> Segment:
        parts = list(texts)
        text = np.frombuffer(b"".join(parts), dtype=np.uint8)
        ends = np.cumsum([len(part) for part in parts], dtype=np.int64)
        del parts
        return cls.of(ids, text, ends)

    @classmethod
    def of(cls, ids: Sequence[int] | np.ndarray, text: np.ndarray, ends: np.ndarray) -> Segment:
        """The segment of memories ``ids`` whose texts, one after another, are ``text``, each ending at ``ends``."""
        if len(text) >= 1 << 32 or len(ends) > 1 << 16:
            raise ValueError("a segment holds under 4 GiB of text (32-bit offsets) in at most 65,536 memories")
        after = np.concatenate((text, np.zeros(PREFIX - 1, dtype=np.uint8)))
        prefixes = _prefixes(after, len(text))
        order = np.argsort(prefixes, kind="stable")  # ties by offset: the same text always gives the same files
        marks = prefixes[order[::MARK_EVERY]]
        del prefixes, after
        lengths = np.diff(ends, prepend=0)
        docs = np.repeat(np.arange(len(ends), dtype=np.uint16), lengths)[order]
        return cls(np.asarray(ids, dtype=np.int64), ends, text, order.astype(np.uint32), docs, marks)

    def save(self, stem: Path) -> dict[str, str]:
        """Write the arrays as ``<stem>.<name>.npy``, each fsynced; returns their digests by name."""
        digests = {}
        for name in ARRAYS:
            array = getattr(self, name)
            path = stem.with_name(f"{stem.name}.{name}.npy")
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
                np.save(fh, array, allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())
            digests[name] = digest(array)
        return digests

    @classmethod
    def open(cls, stem: Path) -> Segment:
        """The arrays of ``stem`` memory-mapped. Raises ``OSError`` or ``ValueError`` for missing or malformed
        files (the caller answers from FTS5 alone)."""
        maps = {name: _mapped(stem.with_name(f"{stem.name}.{name}.npy")) for name in ARRAYS}
        segment = cls(**{name: array for name, (array, _) in maps.items()}, maps=tuple(m for _, m in maps.values()))
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
        for name, kind in kinds.items():
            array = getattr(self, name)
            if array.dtype != kind or array.ndim != 1:
                raise ValueError(f"segment array {name}: {array.dtype}, {array.ndim} dimensions")
        if len(self.ids) != len(self.ends) or not len(self.text) == len(self.positions) == len(self.docs):
            raise ValueError("segment arrays of unequal lengths")
        if len(self.ends) and int(self.ends[-1]) != len(self.text):
            raise ValueError("segment text shorter than its memories")
        if len(self.marks) != -(-len(self.positions) // MARK_EVERY):
            raise ValueError("segment marks do not match its offsets")

    def find(self, key: bytes) -> Hits:
        """Where ``key`` (UTF-8, no NUL) occurs: the range of ``positions`` its first PREFIX bytes begin, and for a
        longer key the rest of its bytes compared at each."""
        head = key[:PREFIX]
        low = int.from_bytes(head.ljust(PREFIX, b"\0"), "big")
        past = int.from_bytes(head.ljust(PREFIX, b"\xff"), "big") + 1  # UTF-8 never holds 0xff: no overflow
        first, last = self._range(low, past)
        hits = Hits(self.positions[first:last], self.docs[first:last])
        return self.extend(hits, key, PREFIX) if len(key) > PREFIX else hits

    def _range(self, low: int, past: int) -> tuple[int, int]:
        """The offsets whose prefixes are at least ``low`` and below ``past``: ``marks`` narrow each end to
        MARK_EVERY offsets, among which a binary search reads six prefixes from the text (a keystroke makes a
        lookup in every segment: few pages touched, as few page faults)."""
        bounds = np.searchsorted(self.marks, np.array([low, past], dtype=np.uint64)).tolist()
        return self._bound(low, bounds[0]), self._bound(past, bounds[1])

    def _bound(self, value: int, mark: int) -> int:
        """The first offset whose prefix is at least ``value``, given the first mark that is (``mark``): a binary
        search of the MARK_EVERY offsets before it (one read), six prefixes read from the text. A prefix running
        past the text is padded with NULs, as the prefixes were ordered."""
        first = max(mark - 1, 0) * MARK_EVERY
        window = self.positions[first : min(mark * MARK_EVERY, len(self.positions))].tolist()
        text, low, high = self.text, 0, len(window)
        while low < high:
            middle = (low + high) // 2
            at = window[middle]
            if int.from_bytes(text[at : at + PREFIX].tobytes().ljust(PREFIX, b"\0"), "big") < value:
                low = middle + 1
            else:
                high = middle
        return first + low

    def extend(self, hits: Hits, key: bytes, known: int) -> Hits:
        """Where ``key`` occurs, given where its first ``known`` bytes do (``hits``): their memories are carried
        along, not looked up again."""
        if len(key) > len(self.text):
            return Hits(hits.at[:0], hits.doc[:0])
        fit = hits.at <= len(self.text) - len(key)
        at, doc = hits.at[fit], hits.doc[fit]
        pattern = np.frombuffer(key, dtype=np.uint8)
        for j in range(known, len(key)):
            same = self.text[at + np.uint32(j)] == pattern[j]
            at, doc = at[same], doc[same]
        return Hits(at, doc)

    def ids_of(self, hits: Hits) -> np.ndarray:
        """The ids of the memories of ``hits``."""
        if not len(hits.doc):
            return _NOWHERE
        present = np.zeros(len(self.ids), dtype=bool)
        present[hits.doc.astype(np.intp)] = True  # cast first: twice as quick as numpy casting while it indexes
        return self.ids[np.flatnonzero(present)]  # a gather of the few: quicker than a mask over them all


def _prefixes(after: np.ndarray, count: int) -> np.ndarray:
    """The PREFIX bytes from each of the first ``count`` offsets of ``after`` as big-endian numbers, so that
    numbers order as the bytes do (``after`` holds PREFIX - 1 NULs past them)."""
    return np.ndarray((count,), dtype=">u8", buffer=after, strides=(1,)).astype(np.uint64)


_NOWHERE = np.empty(0, dtype=np.int64)


def _mapped(path: Path) -> tuple[np.ndarray, mmap.mmap]:
    """The array of a ``.npy`` file, read where the file is mapped (its header read as numpy reads it), and the
    map. Raises ``OSError`` or ``ValueError``."""
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in readers:
            raise ValueError(f"{path.name}: .npy format {version}")
        shape, fortran, dtype = readers[version](fh)
        offset = fh.tell()
        if fortran or len(shape) != 1 or dtype.hasobject:
            raise ValueError(f"{path.name}: not a flat array")
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if offset + shape[0] * dtype.itemsize > len(mapped):
        raise ValueError(f"{path.name}: shorter than its header says")
    return np.frombuffer(mapped, dtype=dtype, count=shape[0], offset=offset), mapped


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
        self._found: OrderedDict[bytes, tuple[list[Hits], np.ndarray]] = OrderedDict()  # hits per segment, ids
        self._lock = threading.Lock()

    @classmethod
    def open(cls, directory: Path, names: Sequence[str]) -> Segments:
        return cls([Segment.open(directory / name) for name in names])

    def release(self) -> None:
        self.forget()
        self.unmap()

    def unmap(self) -> None:
        """Let go of the pages queries mapped in (see :meth:`Segment.release`)."""
        for part in self.parts:
            part.release()

    def matching(self, needle: str) -> np.ndarray:
        """The ids (ascending) of the memories whose text contains ``needle`` (no NUL in it). A needle longer than
        PREFIX typed a key at a time is found among the occurrences of the one before it, and a key that left
        them all in place has their ids. (Segments are searched one after another: a lookup is mostly the
        interpreter's work, which threads would only take turns at.)"""
        key = needle.encode()
        with self._lock:
            before = next((key[:n] for n in range(len(key), PREFIX - 1, -1) if key[:n] in self._found), None)
            ids: np.ndarray | None = None
            if before is None:
                found = [part.find(key) for part in self.parts]
            else:
                self._found.move_to_end(before)
                last, ids = self._found[before]
                found = [part.extend(hits, key, len(before)) for part, hits in zip(self.parts, last, strict=True)]
                if [len(h.at) for h in found] != [len(h.at) for h in last]:
                    ids = None
            if ids is None:
                ids = np.concatenate([part.ids_of(h) for part, h in zip(self.parts, found, strict=True)] or [_NOWHERE])
            if len(key) >= PREFIX:  # a shorter needle is two lookups a segment: nothing to keep
                self._found[key] = (found, ids)
                while len(self._found) > REMEMBERED or self._remembered() > REMEMBERED_MOST:
                    self._found.popitem(last=False)
        return ids

    def _remembered(self) -> int:
        return sum(len(hits.at) for found, _ in self._found.values() for hits in found)

    def forget(self) -> None:
        """Drop the occurrences kept for the next key (a console idle: they are tens of MB at 1M)."""
        with self._lock:
            self._found.clear()


def mapped_resident() -> int | None:
    """Bytes of this process's resident memory that are pages of mapped files (Linux's ``RssFile``), None where
    the system does not say. A page fault in a mapped file maps the pages around it too (64 KB, or a whole large
    folio of the page cache): the few hundred reads of a keystroke, all over the segments, soon count most of a
    million memories' segments (3.2 GB; the bench's queries map 880 MB of them) as the console's memory."""
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
                values, _ = _mapped(directory / f"{name}.{array}.npy")
                if digest(values) != expected:
                    return f"segment {name}: {array} is not what was written"
        except (OSError, ValueError) as exc:
            return f"segment {name}: {exc}"
    return None
