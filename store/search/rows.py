"""Every memory's listed fields in a few flat arrays, newest first: what the search index holds per memory.

A Python object per memory (a tuple, a string per column) cost most of the index's load and of its memory at a
million memories. Here a column of strings is one UTF-8 buffer with the end of each string (:class:`Strings`), a
field with few distinct values (type, scope, decay state, source) is a small integer per memory plus the list
of its values, and a memory is made into a :class:`Hit` only when a query shows it.

The arrays are also what engram keeps of them between runs (``blobs``/``from_blobs``): the console answers from
them at once while the rows are read again from index.db in the background. Once read, the rows of plain scopes
are those kept files, mapped, with the others (sensitive scopes, encrypted files) in memory beside them
(:class:`Spliced`): at a million memories the text columns are 200 MB, and a page of the files counts as the
console's memory only while something reads it.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Union

import numpy as np


def needle_bytes(needle: str) -> bytes:
    """A search term as the bytes it is looked for as. A lone surrogate (a paste can put one in the box) becomes
    bytes valid UTF-8 never holds: it matches nothing rather than raising."""
    return needle.encode("utf-8", "surrogatepass")


FIELDS = ("type", "scope", "state", "source")  # the fields a query filters on (``type:fact``), in listing order
_STRINGS = ("slugs", "titles", "created", "heads")
TAKEN = 32_768  # strings gathered at a time by Strings.take (about 3 MB of heads, 50 MB of index)


@dataclass(frozen=True)
class Hit:
    slug: str
    title: str
    type: str
    scope_hash: str
    decay_state: str
    source: str
    created_at: str
    encrypted: bool


class Strings:
    """A column of strings as one UTF-8 buffer (bytes, or a kept file where it is mapped) and the end of each
    string in it."""

    def __init__(self, data: bytes | mmap.mmap, ends: np.ndarray) -> None:
        self.data = data
        self.ends = ends

    @classmethod
    def of(cls, values: Iterable[str]) -> Strings:
        encoded = [value.encode() for value in values]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        return cls(b"".join(encoded), np.cumsum(lengths))

    @classmethod
    def joined(cls, parts: Sequence[Strings]) -> Strings:
        """The columns of ``parts`` one after the other."""
        offsets = np.cumsum([0] + [len(part.data) for part in parts], dtype=np.int64)[:-1]
        ends = [part.ends + offset for part, offset in zip(parts, offsets, strict=True)]
        return cls(b"".join(part.data for part in parts), np.concatenate(ends) if ends else np.zeros(0, np.int64))

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate(([0], self.ends[:-1])).astype(np.int64)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, n: int) -> str:
        return self.data[int(self.ends[n - 1]) if n else 0 : int(self.ends[n])].decode(errors="replace")

    def pick(self, rows: Sequence[int]) -> list[str]:
        """The strings of ``rows`` (a few hundred shown hits: one numpy gather of their ends, no scalar lookups).
        Bytes that are not UTF-8 (a kept file changed under its map) show as U+FFFD rather than fail a keystroke."""
        return [self.data[a:b].decode(errors="replace") for a, b in self._bounds(rows)]

    def check(self) -> None:
        """Raise ``ValueError`` unless every string lies inside the buffer, in order."""
        if len(self.ends) and (int(self.ends[-1]) != len(self.data) or int(self.ends[0]) < 0):
            raise ValueError("string ends outside their buffer")
        if len(self.ends) > 1 and bool((self.ends[1:] < self.ends[:-1]).any()):
            raise ValueError("string ends out of order")

    def find(self, needle: str, rows: Sequence[int]) -> list[int]:
        """Those of ``rows`` whose string, less its last character (the NUL ending each head), contains
        ``needle`` (a search of the buffer between their ends: no string is made). A lone surrogate in ``needle``
        (pasted text) encodes to bytes valid UTF-8 never holds, so it is found nowhere, as in the strings."""
        find, pattern = self.data.find, needle_bytes(needle)
        return [n for n, (a, b) in zip(rows, self._bounds(rows), strict=True) if find(pattern, a, b - 1) >= 0]

    def _bounds(self, rows: Sequence[int]) -> list[tuple[int, int]]:
        """Where the strings of ``rows`` start and end in the buffer."""
        at = np.asarray(rows, dtype=np.int64)
        if not len(at):
            return []
        return list(zip(np.where(at > 0, self.ends[at - 1], 0).tolist(), self.ends[at].tolist(), strict=True))

    def take(self, rows: np.ndarray) -> Strings:
        """The strings of ``rows``, in that order: gathered by numpy, no loop per string, TAKEN rows at a time (the
        gather reads through an index of every byte, 16 bytes each: a million heads at once took 1.1 GB)."""
        starts = self.starts[rows]
        lengths = self.ends[rows] - starts
        ends = np.cumsum(lengths)
        data, taken = np.frombuffer(self.data, dtype=np.uint8), np.empty(int(ends[-1]) if len(ends) else 0, np.uint8)
        for first in range(0, len(rows), TAKEN):
            part = slice(first, first + TAKEN)
            begin, last = int(ends[first] - lengths[first]), int(ends[part][-1])
            moved = np.repeat(starts[part] - (ends[part] - lengths[part]), lengths[part])  # from where it is taken
            taken[begin:last] = data[np.arange(begin, last, dtype=np.int64) + moved]
        return Strings(taken.tobytes(), ends)


class Splice:
    """How the rows of two parts interleave: ``inside[n]`` says whether row ``n`` is the first part's (the kept
    rows of plain scopes), and ``rows`` lists each part's rows, ascending (a part's row ``k`` is row
    ``rows[part][k]`` of the whole)."""

    def __init__(self, inside: np.ndarray) -> None:
        self.inside = inside
        self.rows = (np.flatnonzero(inside).astype(np.int32), np.flatnonzero(~inside).astype(np.int32))
        self.local = np.empty(len(inside), dtype=np.int32)  # row -> its row in its part
        for part in self.rows:
            self.local[part] = np.arange(len(part), dtype=np.int32)

    def split(self, rows: Sequence[int] | np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """For each part: where in ``rows`` its rows are, and their rows in the part."""
        at = np.asarray(rows, dtype=np.int64)
        inside = self.inside[at]
        return tuple((where, self.local[at[where]]) for where in (np.flatnonzero(inside), np.flatnonzero(~inside)))


class Spliced:
    """A column whose rows are those of two columns interleaved as a :class:`Splice` says: the kept rows of plain
    scopes, mapped from engram's cache, and the rest, in memory. It answers as one :class:`Strings` would."""

    def __init__(self, parts: tuple[Strings, Strings], splice: Splice) -> None:
        self.parts = parts
        self.splice = splice

    def __len__(self) -> int:
        return len(self.splice.inside)

    def __getitem__(self, n: int) -> str:
        return self.parts[0 if self.splice.inside[n] else 1][int(self.splice.local[n])]

    def pick(self, rows: Sequence[int]) -> list[str]:
        found = [""] * len(rows)
        for part, (where, local) in zip(self.parts, self.splice.split(rows), strict=True):
            for k, value in zip(where.tolist(), part.pick(local.tolist()), strict=True):
                found[k] = value
        return found

    def find(self, needle: str, rows: Sequence[int]) -> list[int]:
        found: list[int] = []
        for part, whole, (_, local) in zip(self.parts, self.splice.rows, self.splice.split(rows), strict=True):
            found += whole[part.find(needle, local.tolist())].tolist()
        return found

    def take(self, rows: np.ndarray) -> Strings:
        """The strings of ``rows`` (ascending). All of one part's rows are that part itself, not a copy: the
        search's rows not in the persistent index are, as a rule, those held in memory."""
        (first, local), (second, other) = self.splice.split(rows)
        for part, mine, others in zip(self.parts, (first, second), (second, first), strict=True):
            if not len(others) and len(mine) == len(part):
                return part
        taken = [self.parts[0].take(local), self.parts[1].take(other)]
        order = np.empty(len(first) + len(second), dtype=np.int64)
        order[first], order[second] = np.arange(len(first)), np.arange(len(first), len(order))
        return Strings.joined(taken).take(order)


Column = Union[Strings, Spliced]  # noqa: UP007  (an alias evaluated at run time)


class Rows:
    """Every memory's listed fields, newest first; row ``n`` is bit ``n`` of the search's bitsets.

    ``heads`` holds each memory's title, triggers and slug, lowercased, whitespace-normalised and padded, each
    ended by a NUL (``" word word \\0"``): the buffer the scan of short terms runs over as it is. ``doc`` is the
    memory's id in the persistent index, -1 where that index may not answer for it (sensitive, encrypted, or not
    taken in yet). ``maps`` are the kept files the columns are read from, if any."""

    def __init__(
        self,
        strings: Mapping[str, Column],
        codes: dict[str, np.ndarray],
        names: dict[str, list[str]],
        encrypted: np.ndarray,
        doc: np.ndarray,
        maps: tuple[mmap.mmap, ...] = (),
    ) -> None:
        self.slugs, self.titles, self.created, self.heads = (strings[name] for name in _STRINGS)
        self.codes = codes
        self.names = names
        self.encrypted = encrypted
        self.doc = doc
        self.maps = maps

    def __len__(self) -> int:
        return len(self.slugs)

    def __getitem__(self, n: int) -> Hit:
        return self.hits([n])[0]

    def hits(self, rows: Sequence[int]) -> list[Hit]:
        """The hits of ``rows``, made a column at a time."""
        slugs, titles, created = (column.pick(rows) for column in (self.slugs, self.titles, self.created))
        at = np.asarray(rows, dtype=np.int64)
        fields = [[self.names[f][k] for k in self.codes[f][at].tolist()] for f in FIELDS]
        flags = self.encrypted[at].tolist()
        return list(map(Hit, slugs, titles, *fields, created, flags))

    def head(self, n: int) -> str:
        """Row ``n``'s title, triggers and slug as ``heads`` holds them (padded with a space each side)."""
        return self.heads[n][:-1]

    @cached_property
    def by_slug(self) -> dict[str, int]:
        """slug -> row, built on first use (the console's first answers never need it)."""
        return {self.slugs[n]: n for n in range(len(self))}

    def release(self) -> None:
        """Let go of the pages of the kept files that were read (see :meth:`Segment.release`)."""
        for mapped in self.maps:
            mapped.madvise(mmap.MADV_DONTNEED)

    def prefetch(self) -> None:
        """Ask the kernel to read the kept files into its cache ahead of the first queries. It reads them in the
        background, and they count as this process's memory only where a query reads them, as before. Right after
        a boot, the first keys read them a page at a time: ten times slower than with them read ahead."""
        for mapped in self.maps:
            mapped.madvise(mmap.MADV_WILLNEED)

    def spliced(self, kept: Rows, inside: np.ndarray) -> Rows:
        """These rows with the text of those ``inside`` read from ``kept`` (the same rows, in the same order, as
        :meth:`from_blobs` maps them), the others' copied out: what stays in memory is the rest, and the fields'
        small arrays. Raises ``ValueError`` when ``kept`` does not have as many rows."""
        if len(kept) != int(np.count_nonzero(inside)) or len(inside) != len(self):
            raise ValueError("kept rows that are not these")
        splice, rest = Splice(inside), np.flatnonzero(~inside)
        strings = {name: Spliced((getattr(kept, name), getattr(self, name).take(rest)), splice) for name in _STRINGS}
        return Rows(strings, self.codes, self.names, self.encrypted, self.doc, kept.maps)

    def take(self, rows: np.ndarray) -> Rows:
        """The rows ``rows`` (ascending), in a compact copy."""
        strings = {name: getattr(self, name).take(rows) for name in _STRINGS}
        codes = {f: self.codes[f][rows] for f in FIELDS}
        return Rows(strings, codes, self.names, self.encrypted[rows], self.doc[rows])

    @classmethod
    def joined(cls, parts: Sequence[Rows], names: dict[str, list[str]]) -> Rows:
        """The rows of ``parts`` one after the other, whose fields all number their values as ``names`` does
        (:class:`Builder`)."""
        strings = {name: Strings.joined([getattr(part, name) for part in parts]) for name in _STRINGS}
        codes = {f: _concat([part.codes[f] for part in parts], _code_type(len(names[f]))) for f in FIELDS}
        encrypted = _concat([part.encrypted for part in parts], np.bool_)
        return cls(strings, codes, names, encrypted, _ids(_concat([part.doc for part in parts], np.int64)))

    def blobs(self) -> dict[str, bytes]:
        """The rows (made by :meth:`take` or :class:`Builder`) as named byte strings, to be kept and read back by
        :meth:`from_blobs`."""
        found = {f"{name}.data": bytes(_strings(getattr(self, name)).data) for name in _STRINGS}
        found |= {f"{name}.ends": _strings(getattr(self, name)).ends.astype(np.int64).tobytes() for name in _STRINGS}
        found |= {f"codes.{f}": self.codes[f].astype(np.int32).tobytes() for f in FIELDS}
        found["names"] = json.dumps(self.names).encode()
        found["encrypted"] = self.encrypted.astype(np.bool_).tobytes()
        found["doc"] = self.doc.astype(np.int64).tobytes()
        return found

    @classmethod
    def from_blobs(cls, blobs: Mapping[str, bytes | mmap.mmap]) -> Rows:
        """The rows :meth:`blobs` gave: their text read where it is (bytes, or kept files mapped: nothing is
        copied), their fields' small arrays copied into memory. Raises ``KeyError`` or ``ValueError`` for blobs
        that are not such rows."""
        strings: dict[str, Column] = {
            name: Strings(blobs[f"{name}.data"], np.frombuffer(blobs[f"{name}.ends"], dtype=np.int64))
            for name in _STRINGS
        }
        names = json.loads(bytes(blobs["names"]))
        codes = {f: np.frombuffer(blobs[f"codes.{f}"], dtype=np.int32) for f in FIELDS}
        encrypted = np.frombuffer(blobs["encrypted"], dtype=np.bool_).copy()
        doc = _ids(np.frombuffer(blobs["doc"], dtype=np.int64))
        maps = tuple(blob for blob in blobs.values() if isinstance(blob, mmap.mmap))
        rows = cls(strings, codes, names, encrypted, doc, maps)
        for column in strings.values():
            _strings(column).check()
        lengths = [len(column) for column in strings.values()] + [len(column) for column in codes.values()]
        if any(n != len(rows) for n in (*lengths, len(rows.encrypted), len(rows.doc))):
            raise ValueError("columns of different lengths")
        if any(len(codes[f]) and (codes[f].min() < 0 or codes[f].max() >= len(names[f])) for f in FIELDS):
            raise ValueError("a value number out of range")
        rows.codes = {f: codes[f].astype(_code_type(len(names[f]))) for f in FIELDS}
        return rows


class Builder:
    """Rows read a chunk at a time (a chunk of tuples is dropped once made compact, so a million rows never stand
    as Python objects at once), with each field's values numbered alike across chunks."""

    def __init__(self) -> None:
        self.numbers: dict[str, dict[str, int]] = {f: {} for f in FIELDS}
        self.parts: list[Rows] = []

    def add(
        self,
        slugs: Sequence[str],
        titles: Sequence[str],
        fields: Sequence[Sequence[str]],
        created: Sequence[str],
        encrypted: Sequence[int],
        heads: Sequence[str],
        doc: Sequence[int],
    ) -> None:
        codes = {f: self._number(f, values) for f, values in zip(FIELDS, fields, strict=True)}
        strings = dict(zip(_STRINGS, map(Strings.of, (slugs, titles, created, heads)), strict=True))
        flags, ids = np.asarray(encrypted, dtype=np.bool_), np.asarray(doc, np.int64)
        self.parts.append(Rows(strings, codes, {}, flags, ids))  # the values' names: the builder's, at the end

    def _number(self, field: str, values: Sequence[str]) -> np.ndarray:
        number = self.numbers[field]
        for value in dict.fromkeys(values):
            number.setdefault(value, len(number))
        return np.fromiter(map(number.__getitem__, values), dtype=np.int32, count=len(values))

    def rows(self) -> Rows:
        return Rows.joined(self.parts, {f: list(self.numbers[f]) for f in FIELDS})


def padded(text: str) -> str:
    """``text`` whitespace-normalised with a space each side, as heads are searched (``" word word "``: ``^pre``
    is ``" pre"``, ``fix$`` is ``"fix "``); a NUL becomes a space (it separates the heads in ``Rows.heads``)."""
    return " " + " ".join(text.replace("\0", " ").split()) + " "


def _strings(column: Column) -> Strings:
    if not isinstance(column, Strings):
        raise TypeError("only rows made compact are kept, not rows read from kept files")
    return column


def _code_type(values: int) -> type:
    """The smallest integer type that numbers ``values`` values (a million rows of four fields: 4 MB, not 16)."""
    return np.int8 if values <= 128 else np.int16 if values <= 32_768 else np.int32


def _ids(doc: np.ndarray) -> np.ndarray:
    """The persistent index's ids (-1 for none) in int32 while they fit, as they do short of two billion rows
    written: 4 MB at a million memories, not 8. Always a copy (``doc`` may be read-only bytes)."""
    fits = not len(doc) or int(doc.max()) < 2**31
    return doc.astype(np.int32 if fits else np.int64)


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)
