"""Positional trigram segments: how the persistent index finds a body term at keyboard speed.

FTS5 answers a phrase by merging the position lists of all its trigrams in every memory holding them: 13 ms for
``idempotency`` over 75,000 bodies, ten times that over a million, however many keys of the word were typed
before. A segment keeps, for up to SEGMENT_DOCS memories, their text as one buffer (each memory's head, a NUL,
its tags and body, a NUL; lowercased UTF-8, as the index stores it) and where every byte trigram of it occurs,
sorted by trigram. A term is found from the occurrences of its rarest trigram, each checked against the buffer
byte by byte in numpy; a term typed one key further is found among the occurrences of the term before it, one
comparison each, so a word costs little more than its first three letters. A match of UTF-8 bytes is a match of
characters, and no term holds a NUL, so no match spans two memories or a head and a body. A segment of the same
memories' heads alone answers what is looked for in heads only: needles of one or two bytes (the offsets of the
trigrams they begin, one slice), prefixes and suffixes, and whether a hit matched in its head.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np

SEGMENT_DOCS = 20_000  # memories per segment: ~9 MB of text, built in about a second with ~150 MB at its peak
ARRAYS = ("ids", "ends", "text", "positions", "keys", "starts")
BLOCK_BITS = 6  # blocks of 64 bytes: a memory is at least a NUL or two, so a block holds few ends
REMEMBERED = 8  # terms whose occurrences are kept for the next key
REMEMBERED_MOST = 6_000_000  # ... holding at most this many occurrences in all (48 MB; a broad term at 1M: 1.5M)


class Hits(NamedTuple):
    """Where a needle occurs in a segment (ascending offsets), and the memory (its number there) of each."""

    at: np.ndarray
    doc: np.ndarray


@dataclass(frozen=True)
class Segment:
    ids: np.ndarray  # int64: the index's id of each memory, ascending
    ends: np.ndarray  # int64: where each memory's text ends in ``text``
    text: np.ndarray  # uint8: head NUL body NUL of each memory
    positions: np.ndarray  # uint32: every trigram's offsets, by trigram then offset
    keys: np.ndarray  # uint32: the trigrams present (three bytes as a number), ascending
    starts: np.ndarray  # int64: where each key's offsets start in ``positions`` (and the end)
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
        if len(text) >= 1 << 32:
            raise ValueError("a segment's text must stay under 4 GiB (offsets are 32-bit)")
        count = len(text)  # a trigram starts at every byte: the last two end in NULs past the text
        after = np.concatenate((text, np.zeros(2, dtype=np.uint8)))
        # trigram << 32 | offset, sorted: by trigram, then by offset. Built in place to bound the peak.
        packed = np.arange(count, dtype=np.uint64)
        byte = np.empty(count, dtype=np.uint64)  # one scratch array for the three bytes
        for shift, window in ((48, after[:count]), (40, after[1 : count + 1]), (32, after[2 : count + 2])):
            np.copyto(byte, window)
            byte <<= np.uint64(shift)
            packed |= byte
        del byte, after
        packed.sort()
        trigrams = (packed >> np.uint64(32)).astype(np.uint32)
        positions = packed.astype(np.uint32)  # the low 32 bits
        del packed
        first = np.flatnonzero(np.diff(trigrams)) + 1
        starts = np.concatenate(([0], first, [count])).astype(np.int64) if count else np.zeros(1, dtype=np.int64)
        keys = trigrams[starts[:-1]] if count else np.empty(0, dtype=np.uint32)
        return cls(np.asarray(ids, dtype=np.int64), ends, text, positions, keys, starts)

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
        kinds = {"ids": np.int64, "ends": np.int64, "text": np.uint8, "positions": np.uint32, "keys": np.uint32}
        kinds["starts"] = np.int64
        for name, kind in kinds.items():
            array = getattr(self, name)
            if array.dtype != kind or array.ndim != 1:
                raise ValueError(f"segment array {name}: {array.dtype}, {array.ndim} dimensions")
        if len(self.ids) != len(self.ends) or len(self.starts) != len(self.keys) + 1:
            raise ValueError("segment arrays of unequal lengths")
        if len(self.ends) and int(self.ends[-1]) != len(self.text):
            raise ValueError("segment text shorter than its memories")
        if int(self.starts[-1]) != len(self.positions):
            raise ValueError("segment offsets shorter than its trigrams")

    def find(self, pattern: np.ndarray) -> np.ndarray:
        """Where ``pattern`` (three bytes or more) occurs: the rarest of its trigrams gives the candidates, the
        other bytes are compared at each."""
        size = len(pattern)
        wide = pattern.astype(np.uint32)
        trigrams = (wide[:-2] << 16) | (wide[1:-1] << 8) | wide[2:]
        k = np.searchsorted(self.keys, trigrams)
        if not len(self.keys) or (k >= len(self.keys)).any() or (self.keys[k] != trigrams).any():
            return _NOWHERE
        counts = self.starts[k + 1] - self.starts[k]
        anchor = int(np.argmin(counts))
        offsets = self.positions[int(self.starts[k[anchor]]) : int(self.starts[k[anchor] + 1])]  # ascending
        first = int(np.searchsorted(offsets, anchor))  # where the whole pattern fits in the text
        last = int(np.searchsorted(offsets, len(self.text) - size + anchor, side="right"))
        at = offsets[first:last]
        if size > 3:
            at = at - np.uint32(anchor)  # offsets of 32 bits: half the memory of what a search keeps
            for j in range(size):
                if not anchor <= j < anchor + 3:
                    at = at[self.text[at + j] == pattern[j]]
        return at

    def find_short(self, pattern: np.ndarray) -> np.ndarray:
        """Where a pattern of one or two bytes occurs: the offsets of every trigram it begins, one slice of
        ``positions`` (its keys are neighbours), put back in order."""
        low = int(pattern[0]) << 16 | (int(pattern[1]) << 8 if len(pattern) > 1 else 0)
        first, last = np.searchsorted(self.keys, [low, low + (1 << 8 if len(pattern) > 1 else 1 << 16)])
        return np.sort(self.positions[int(self.starts[first]) : int(self.starts[last])])

    def extend(self, hits: Hits, pattern: np.ndarray, known: int) -> Hits:
        """Where ``pattern`` occurs, given where its first ``known`` bytes do (``hits``): their memories are
        carried along, not looked up again."""
        fit = int(np.searchsorted(hits.at, len(self.text) - len(pattern), side="right"))
        at, doc = hits.at[:fit], hits.doc[:fit]
        for j in range(known, len(pattern)):
            same = self.text[at + j] == pattern[j]
            at, doc = at[same], doc[same]
        return Hits(at, doc)

    @cached_property
    def ends32(self) -> np.ndarray:
        """``ends`` as the offsets' type: searchsorted then casts neither."""
        return self.ends.astype(np.uint32)

    def hits(self, at: np.ndarray) -> Hits:
        return Hits(at, self.docs_of(at))

    def ids_of(self, hits: Hits) -> np.ndarray:
        """The ids of the memories of ``hits``."""
        present = np.zeros(len(self.ids), dtype=bool)
        present[hits.doc] = True
        return self.ids[present]

    def docs_of(self, at: np.ndarray) -> np.ndarray:
        """The memory (its number here) of each offset: the one where its block of BLOCK bytes starts, moved on
        past each end the block holds (twice as quick as a binary search of every offset)."""
        doc = self.block_docs[at >> BLOCK_BITS]
        while True:
            over = self.ends32[doc] <= at
            if not over.any():
                return doc
            doc += over

    @cached_property
    def block_docs(self) -> np.ndarray:
        """The memory each block of BLOCK bytes of the text starts in (made on first use: 2 ms a segment)."""
        starts = np.arange(0, len(self.text) + 1, 1 << BLOCK_BITS, dtype=np.int64)
        return np.searchsorted(self.ends, starts, side="right").astype(np.int32)


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
        for part in self.parts:
            part.release()

    def warm(self) -> None:
        """Make what the first query would (each segment's table of blocks: 2 ms a segment)."""
        for part in self.parts:
            part.block_docs  # noqa: B018

    def matching(self, needle: str) -> np.ndarray:
        """The ids (ascending) of the memories whose text contains ``needle`` (no NUL in it). The segments are
        searched in two halves at once: numpy lets go of the interpreter while it compares and looks up. A key
        that left every occurrence of the needle before it in place (a rare word, typed on) has its ids."""
        key = needle.encode()
        pattern = np.frombuffer(key, dtype=np.uint8)
        with self._lock:
            before = next((key[:n] for n in range(len(key), 0, -1) if key[:n] in self._found), None)
            last, last_ids = self._found[before] if before is not None else ([], None)
            if before is not None:
                self._found.move_to_end(before)

            def search(half: range) -> list[Hits]:
                if before is not None:
                    return [self.parts[n].extend(last[n], pattern, len(before)) for n in half]
                if len(pattern) >= 3:
                    return [self.parts[n].hits(self.parts[n].find(pattern)) for n in half]
                return [self.parts[n].hits(self.parts[n].find_short(pattern)) for n in half]

            def ids_of(half: range) -> list[np.ndarray]:
                return [self.parts[n].ids_of(found[n]) for n in half]

            halves = [range(0, len(self.parts) // 2), range(len(self.parts) // 2, len(self.parts))]
            found = [hits for part in _POOL.map(search, halves) for hits in part]
            if last_ids is not None and [len(h.at) for h in found] == [len(h.at) for h in last]:
                ids = last_ids
            else:
                ids = np.concatenate([i for part in _POOL.map(ids_of, halves) for i in part] or [_NOWHERE])
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


_POOL = ThreadPoolExecutor(2, thread_name_prefix="segments")


def verify(directory: Path, manifest: Mapping[str, Mapping[str, str]]) -> str | None:
    """Why the segments of ``manifest`` (name -> array -> digest) are not what was written, or None."""
    for name, digests in manifest.items():
        try:
            segment = Segment.open(directory / name)
        except (OSError, ValueError) as exc:
            return f"segment {name}: {exc}"
        for array, expected in digests.items():
            if digest(getattr(segment, array)) != expected:
                return f"segment {name}: {array} is not what was written"
    return None
