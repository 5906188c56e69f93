"""The numpy pieces of the search: bitsets (a Python int, one bit per memory, bit 0 the newest), the vectorised
scan of every head for short terms, and an in-memory trigram index for the memories the persistent one does not
hold (sensitive scopes, unlocked; memories it has not taken in yet; every memory when there is no cache).

Per keystroke no Python loop runs once per memory: SQLite gathers a phrase query's row numbers into one string,
numpy parses it and scatters the rows into a bitset."""

from __future__ import annotations

import sqlite3
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Protocol, runtime_checkable

import numpy as np

from engram.store.index import TEMP_IN_MEMORY
from engram.store.search.rows import Column, Spliced, Strings, needle_bytes
from engram.store.search.segments import SEGMENT_DOCS, Segment, Segments

SCANS_REMEMBERED = 4  # needles whose starts a scan keeps for the next key
SCAN_REMEMBERED_MOST = 2_000_000  # ... each of at most this many starts (8 MB)
SEGMENTED_FROM = 8 << 20  # bytes of heads from which those held in memory get segments: below, a scan is as quick


@runtime_checkable
class Matcher(Protocol):
    """What each in-memory matcher of the search answers: the positions (rows of the search index) of the
    memories whose text holds ``needle``, in no promised order, repeats allowed (:func:`bits` takes either).

    :class:`Words` and :class:`SplicedWords` scan heads (title, triggers, slug) byte by byte, :class:`Heads` adds
    segments of the heads held in memory, :class:`MemoryTrigrams` looks up tags and bodies held in memory. The
    persistent index answers the same question for the memories it holds, through
    :meth:`engram.store.search.fulltext.FullText.flag`, which flags an array by id instead (its ids are not
    positions)."""

    def rows(self, needle: str) -> np.ndarray: ...


def body_term(text: str) -> bool:
    """Is a text term looked for in bodies too, or only in titles, triggers and slugs? Three characters or more,
    as a trigram index holds; and two of a wide script (Chinese, Japanese, Korean), where two characters are a
    word (灰度, 部署, 배포) rather than the noise two letters are inside a body. Wide characters carry no case, so
    where no trigram answers them a plain substring test finds exactly what the index would."""
    return len(text) >= 3 or (len(text) == 2 and all(unicodedata.east_asian_width(ch) == "W" for ch in text))


def phrase(term: str) -> str:
    """``term`` as an FTS5 phrase: a trigram index matches a phrase of three characters or more exactly as a
    substring."""
    return '"' + term.replace('"', '""') + '"'


def parse_rows(found: str | None) -> np.ndarray:
    """The row numbers SQLite's ``group_concat`` joined with commas."""
    return np.fromstring(found, dtype=np.int64, sep=",") if found else np.empty(0, dtype=np.int64)


def bits(rows: Iterable[int] | np.ndarray, size: int) -> int:
    """The bitset with bit ``r`` set for each of ``rows`` (numpy scatters and packs them: no Python loop)."""
    flags = np.zeros(size, dtype=np.uint8)
    flags[np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.int64)] = 1
    return packed(flags)


def packed(flags: np.ndarray) -> int:
    """The bitset with bit ``r`` set where ``flags[r]`` is."""
    return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little")


def indexes(found: int, limit: int) -> np.ndarray:
    """The set bits of ``found``, lowest (newest memory) first, at most ``limit`` of them."""
    if limit <= 0 or not found:
        return np.empty(0, dtype=np.int64)
    data = np.frombuffer(found.to_bytes((found.bit_length() + 7) // 8, "little"), dtype=np.uint8)
    occupied = np.flatnonzero(data)  # a byte per eight memories: only the first bytes that hold ``limit`` are
    enough = int(np.searchsorted(np.cumsum(_ONES[data[occupied[:limit]]]), limit))  # unpacked, not a million bits
    taken = occupied[: enough + 1]
    flags = np.unpackbits(data[taken], bitorder="little").reshape(-1, 8)
    rows, column = np.nonzero(flags)
    return (taken[rows] * 8 + column)[:limit]


_ONES = np.array([bin(n).count("1") for n in range(256)], dtype=np.int64)  # set bits of each byte value


class MemoryTrigrams:
    """An FTS5 trigram index of the tags and bodies of some memories (rowid = their position in the search
    index), in this process's memory only: bodies that may never be written to disk (sensitive scopes, unlocked),
    or that are not in the persistent index yet. Their heads are scanned as ``Words``: a trigram index of a
    million heads cost more memory than the heads themselves."""

    def __init__(self, bodies: Mapping[int, str]) -> None:
        self.con = sqlite3.connect(":memory:", check_same_thread=False)
        self.con.execute(TEMP_IN_MEMORY)  # its statement journals and sorts hold bodies too
        self.con.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='trigram')")
        self.con.execute("CREATE VIRTUAL TABLE temp.trigrams USING fts5vocab(main, docs, 'row')")
        # each ends in a newline, so that every two characters of it begin a trigram (see rows)
        self.con.executemany("INSERT INTO docs (rowid, body) VALUES (?, ?)", ((n, f"{b}\n") for n, b in bodies.items()))
        self.con.commit()

    def rows(self, needle: str) -> np.ndarray:
        """Positions whose tags or body contain ``needle`` (a :func:`body_term`). A trigram index holds no phrase of
        two characters, but every occurrence of one begins a trigram (a body ends in a newline): the two are
        found as any of the index's trigrams that begin with them, which its list of terms gives in order (a
        look at each body cost ten times more for the sensitive bodies of the 100k demo root)."""
        if len(needle) >= 3:
            query, arg = "SELECT group_concat(rowid) FROM docs WHERE docs MATCH ?", phrase(needle)
        else:
            after = self.con.execute(
                "SELECT term FROM trigrams WHERE term >= ? AND term < ?", (needle, f"{needle}\U0010ffff")
            )
            if not (trigrams := [trigram for (trigram,) in after]):
                return np.empty(0, dtype=np.int64)
            query, arg = "SELECT group_concat(rowid) FROM docs WHERE docs MATCH ?", " OR ".join(map(phrase, trigrams))
        (found,) = self.con.execute(query, (arg,)).fetchone()
        return parse_rows(found)


class Words:
    """Every memory's title, triggers and slug as :attr:`Rows.heads` holds them (" word word \\0" each, UTF-8, one
    buffer): a needle is found in all of them by a few vectorised comparisons (a NUL never occurs in a needle, so
    no match spans two memories; a match of UTF-8 bytes is a match of characters)."""

    def __init__(self, heads: Strings) -> None:
        self.units = np.frombuffer(heads.data, dtype=np.uint8)
        self.ends = heads.ends
        self._found: OrderedDict[bytes, np.ndarray] = OrderedDict()  # needle -> where it starts (uint32)

    @cached_property
    def counts(self) -> np.ndarray:
        return np.bincount(self.units, minlength=256)

    def forget(self) -> None:
        self._found.clear()

    def rows(self, needle: str) -> np.ndarray:
        """Positions of the memories whose padded head contains ``needle`` (with repeats, harmless to bits())."""
        return np.searchsorted(self.ends, self.starts(needle), side="right")

    def starts(self, needle: str) -> np.ndarray:
        """Where ``needle`` starts in the buffer. A needle one key longer than one looked up lately is checked
        only where that one starts; any other is looked up from its rarest byte (a leading space alone would match
        a million places), then its other bytes only where that one was found."""
        key = needle_bytes(needle)
        pattern = np.frombuffer(key, dtype=np.uint8)
        if not len(pattern) or len(pattern) > len(self.units):
            return np.empty(0, dtype=np.int64)
        known = next((key[:n] for n in range(len(key) - 1, 0, -1) if key[:n] in self._found), None)
        if known is not None:
            at = self._found[known].astype(np.int64)
            at = at[at <= len(self.units) - len(pattern)]
            checked = range(len(known), len(pattern))
        else:
            anchor = int(np.argmin(self.counts[pattern]))
            at = np.flatnonzero(self.units == pattern[anchor]) - anchor  # where the needle would start
            at = at[(at >= 0) & (at <= len(self.units) - len(pattern))]
            checked = range(len(pattern))
        for k in checked:
            at = at[self.units[at + k] == pattern[k]]
        if len(at) <= SCAN_REMEMBERED_MOST:
            self._found[key] = at.astype(np.uint32)
            while len(self._found) > SCANS_REMEMBERED:
                self._found.popitem(last=False)
        return at


class SplicedWords:
    """The scan of a :class:`Spliced` column of heads: each part's scanned as :class:`Words` scans one buffer,
    its rows then given as the whole's."""

    def __init__(self, heads: Spliced) -> None:
        self.parts = [Words(part) for part in heads.parts]
        self.whole = heads.splice.rows

    @cached_property
    def counts(self) -> np.ndarray:
        return sum((part.counts for part in self.parts), np.zeros(256, dtype=np.int64))

    def forget(self) -> None:
        for part in self.parts:
            part.forget()

    def rows(self, needle: str) -> np.ndarray:
        return np.concatenate([whole[part.rows(needle)] for part, whole in zip(self.parts, self.whole, strict=True)])


def scan(heads: Column) -> Words | SplicedWords:  # both a Matcher
    """The scan of a column of heads, whichever its kind."""
    return SplicedWords(heads) if isinstance(heads, Spliced) else Words(heads)


class Heads:
    """Heads the persistent index does not answer for (sensitive scopes, encrypted files, memories not taken in
    yet), searched in memory as segments are: a needle of two bytes or more from the range of sorted offsets it
    begins; one byte by the scan of :class:`Words`. Built by the search's loading worker (the sorted offsets, with
    no memory number per byte, see ``Segment.of``); nothing of it reaches
    disk. Fewer heads than :data:`SEGMENTED_FROM` bytes are scanned, needle by needle, as a short needle is:
    segments cost over four bytes per byte of heads, and a scan of a few MB is quick, narrowed by the scan before
    it from the second key of a term on."""

    def __init__(self, heads: Strings) -> None:
        self.words = Words(heads)
        self._segments: Segments | None = None
        self._last: tuple[str, np.ndarray] | None = None  # see rows

    def forget(self) -> None:
        """Drop what the scans kept for the next key (a console idle)."""
        self.words.forget()
        self._last = None
        if self._segments is not None:
            self._segments.forget()

    def prepare(self) -> None:
        if self._segments is None and len(self.words.units) >= SEGMENTED_FROM:
            parts, units, ends = [], self.words.units, self.words.ends
            for first in range(0, len(ends), SEGMENT_DOCS):
                last = min(first + SEGMENT_DOCS, len(ends))
                start = int(ends[first - 1]) if first else 0
                text = units[start : int(ends[last - 1])]
                part = Segment.of(np.arange(first, last), text, ends[first:last] - start, docs=False)
                part.read  # noqa: B018  (its table of the memory at each stride: made here, not at the first key)
                parts.append(part)
            self._segments = Segments(parts)

    def rows(self, needle: str) -> np.ndarray:
        """Positions of the heads holding ``needle`` (ascending, or with repeats from a scan; read-only). Until
        :meth:`prepare` built the segments (a one-off search from the command line never does), a scan. The
        last needle's answer is kept: a body term asks for its heads here, and its ranking asks again for the
        same (twice per keystroke otherwise)."""
        if self._last is not None and self._last[0] == needle:
            return self._last[1]
        if self._segments is None or len(needle_bytes(needle)) < 2:
            found = self.words.rows(needle)
        else:
            found = self._segments.matching(needle)
        found.flags.writeable = False
        self._last = (needle, found)
        return found
