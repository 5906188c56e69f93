"""Searching memories as a person types: an in-memory index over the index.db rows, enriched with bodies and
tags read from the plaintext files in the background.

Nothing here is written to disk: the full-text index is an SQLite FTS5 trigram table in memory, so bodies of
sensitive scopes (searchable only after an unlock) never reach a file. Every term of a query becomes a bitset
(a Python int, one bit per memory, bit 0 the newest): field values have theirs precomputed, text terms of three
or more characters come from the trigram index, shorter ones and ``^prefix``, ``suffix$``, ``^word$`` from a
scan of titles, triggers and slugs (a one- or two-letter match inside a body is noise). Terms are cached, so a
query typed one key at a time recomputes only the term being typed; AND, OR and NOT are single int operations.
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from store.errors import StoreError
from store.index import Memory
from store.query import Query, QuerySyntaxError, Term, parse
from store.service import Store

RANK_LIMIT = 1_000  # rank (rapidfuzz) when at most this many match; beyond, head matches first, newest first
CACHE = 256  # term bitsets kept (a 100k-memory bitset is 12.5 KB)


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


@dataclass
class SearchResult:
    hits: list[Hit]
    total: int
    error: str | None = None
    words: list[str] = field(default_factory=list)  # the typed text to highlight in results


class SearchIndex:
    """Every memory's searchable text and fields, newest first, with a bitset per field value."""

    def __init__(self) -> None:
        self.rows: list[Hit] = []
        self.titles: list[str] = []  # lowercased, for ranking
        self.head: list[str] = []  # title, triggers and slug, lowercased
        self.spaced: list[str] = []  # " word word … ": ^prefix is " pre", suffix$ "fix ", ^word$ " word "
        self.text: list[str] = []  # head, then tags and body once enriched
        self.fts: sqlite3.Connection | None = None  # in memory only: heads at load, everything after enrich()
        self.head_fts: sqlite3.Connection | None = None
        self.values: dict[str, dict[str, int]] = {"type": {}, "scope": {}, "state": {}, "source": {}, "tag": {}}
        self.by_slug: dict[str, int] = {}
        self.enriched = False
        self._cache: OrderedDict[tuple[str, str, str], int] = OrderedDict()

    @property
    def everything(self) -> int:
        return (1 << len(self.rows)) - 1

    @classmethod
    def load(cls, store: Store) -> SearchIndex:
        """Titles, triggers and fields from index.db (fast: no file is read)."""
        index = cls()
        triggers: dict[str, list[str]] = {}
        for slug, trigger in store.index.db.execute_sql("SELECT slug, trigger FROM triggers"):
            triggers.setdefault(slug, []).append(trigger)
        rows = store.index.db.execute_sql(
            "SELECT slug, title, type, scope_hash, decay_state, source, created_at, body_path FROM memories "
            "ORDER BY created_at DESC")
        fields: dict[str, dict[str, list[int]]] = {name: {} for name in index.values}
        for n, (slug, title, mtype, scope, decay, source, created, path) in enumerate(rows):
            index.by_slug[slug] = n
            index.rows.append(Hit(slug, title, mtype, scope, decay, source, created, path.endswith(".md.enc")))
            index.titles.append(title.lower())
            index.head.append(" ".join([title, *triggers.get(slug, ()), slug]).lower())
            index.text.append(index.head[-1])
            index.spaced.append(" " + " ".join(index.head[-1].split()) + " ")
            for name, value in (("type", mtype), ("scope", scope), ("state", decay), ("source", source)):
                fields[name].setdefault(value.lower(), []).append(n)
        index.values = {name: {v: _bits(ix, len(index.rows)) for v, ix in by_value.items()}
                        for name, by_value in fields.items()}
        index.head_fts = _trigram_index(index.head)
        index.fts = index.head_fts  # enrich() replaces it with everything
        return index

    def enrich(self, store: Store, progress: Callable[[int, int], None] | None = None) -> int:
        """Add bodies and tags from the files this process may read (plaintext, or unlocked); returns how many.

        Meant for a background worker: until it finishes, searches cover titles, triggers and slugs."""
        done = 0
        tags: dict[str, list[int]] = {}
        paths = {m.slug: m.body_path for m in Memory.select(Memory.slug, Memory.body_path)}
        for n, (slug, i) in enumerate(list(self.by_slug.items()), 1):
            path = paths.get(slug)
            if path is None or (self.rows[i].encrypted and not store.keys.can_open(self.rows[i].scope_hash)):
                continue
            try:
                doc = store.read_doc(store.safe_relpath(path))
            except (StoreError, OSError):
                continue
            self.text[i] = f"{self.text[i]} {' '.join(doc.frontmatter.tags)} {doc.body}".lower()
            for tag in doc.frontmatter.tags:
                tags.setdefault(tag.lower(), []).append(i)
            done += 1
            if n % 50 == 0:
                time.sleep(0.001)  # let the thread that answers the keyboard have the interpreter
            if progress is not None and n % 1000 == 0:
                progress(n, len(self.rows))
        fts = _trigram_index(self.text)
        self.values["tag"] = {t: _bits(ix, len(self.rows)) for t, ix in tags.items()}
        self.fts, self.enriched = fts, True
        self._cache.clear()
        return done

    def search(self, text: str, limit: int = 500) -> SearchResult:
        """The best ``limit`` hits for ``text`` (newest first for an empty query), and how many matched."""
        try:
            query = parse(text)
        except QuerySyntaxError as exc:
            return SearchResult([], 0, str(exc))
        found = self.everything
        for group in query.groups:
            either = 0
            for term in group:
                either |= self._term(term)
            found &= either
        ranked = self._rank(query, found, limit)
        return SearchResult([self.rows[i] for i in ranked], found.bit_count(), words=query.positive_text())

    def _term(self, term: Term) -> int:
        bits = self._positive(term)
        return self.everything & ~bits if term.negate else bits

    def _positive(self, term: Term) -> int:
        t = term.text
        if term.field is not None:  # a value prefix: the union of the few values that start with it
            bits = 0
            for value, value_bits in self.values[term.field].items():
                if value.startswith(t):
                    bits |= value_bits
            return bits
        key = ("fts" if self._uses_fts(term) else "scan", term.kind, t)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        if key[0] == "fts":
            bits = _bits(_trigram_hits(self.fts, t), len(self.rows))
        elif term.kind in ("substring", "exact"):
            bits = _flags_to_bits(bytes(t in h for h in self.head))
        else:
            needle = {"prefix": f" {t}", "suffix": f"{t} "}.get(term.kind, f" {t} ")
            bits = _flags_to_bits(bytes(needle in h for h in self.spaced))
        self._cache[key] = bits
        if len(self._cache) > CACHE:
            self._cache.popitem(last=False)
        return bits

    def _uses_fts(self, term: Term) -> bool:
        return term.kind in ("substring", "exact") and len(term.text) >= 3 and self.fts is not None

    def _rank(self, query: Query, found: int, limit: int) -> list[int]:
        """The best ``limit`` of ``found``: memories whose title, triggers or slug answer every part of the query
        come first. Up to RANK_LIMIT hits are ordered by rapidfuzz's weighted ratio against the title; a larger set
        stays newest first within each part, and only the page asked for is ever listed."""
        groups = [terms for g in query.groups if (terms := [t for t in g if not t.negate and t.field is None])]
        if not groups:
            return list(_indexes(found, limit))
        in_head = self.everything
        for terms in groups:
            either = 0
            for term in terms:
                either |= self._head_bits(term)
            in_head &= either
        if found.bit_count() > RANK_LIMIT:
            first = list(_indexes(found & in_head, limit))
            return first + list(_indexes(found & ~in_head, limit - len(first)))
        candidates = list(_indexes(found, RANK_LIMIT))
        scored = process.extract(" ".join(query.positive_text()), [self.titles[i] for i in candidates],
                                 scorer=fuzz.WRatio, limit=None)
        scores = {k: score for _, score, k in scored}
        order = sorted(range(len(candidates)), key=lambda k: (not (in_head >> candidates[k]) & 1, -scores[k]))
        return [candidates[k] for k in order[:limit]]

    def _head_bits(self, term: Term) -> int:
        """Where a text term matches the title, triggers or slug (not only the body)."""
        if not self._uses_fts(term) or self.fts is self.head_fts:
            return self._positive(term)
        key = ("head", term.kind, term.text)
        if key not in self._cache:
            self._cache[key] = _bits(_trigram_hits(self.head_fts, term.text), len(self.rows))
        return self._cache[key]


def _bits(indexes: Iterable[int], size: int) -> int:
    """The bitset with the given bits set (built in a bytearray: one pass, no big-int arithmetic per bit)."""
    buf = bytearray((size + 7) // 8)
    for i in indexes:
        buf[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(buf, "little")


_ZERO_ONE = bytes.maketrans(b"\x00\x01", b"01")


def _flags_to_bits(flags: bytes) -> int:
    """A bitset from one 0/1 byte per memory: C-speed (translate, reverse, parse base 2), no loop per bit."""
    return int(flags.translate(_ZERO_ONE)[::-1], 2) if flags else 0


def _indexes(bits: int, limit: int) -> Iterator[int]:
    """The set bits of ``bits``, lowest (newest memory) first, at most ``limit`` of them."""
    if limit <= 0 or not bits:
        return
    data = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    count = 0
    for byte_index, byte in enumerate(data):
        if byte:
            base = byte_index << 3
            for bit in range(8):
                if byte >> bit & 1:
                    yield base + bit
                    count += 1
                    if count == limit:
                        return


def _trigram_index(texts: list[str]) -> sqlite3.Connection:
    """An FTS5 trigram index of ``texts`` (rowid = position), in this process's memory only."""
    con = sqlite3.connect(":memory:", check_same_thread=False)
    con.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='trigram')")
    con.executemany("INSERT INTO docs (rowid, text) VALUES (?, ?)", enumerate(texts))
    con.commit()
    return con


def _trigram_hits(con: sqlite3.Connection, term: str) -> Iterator[int]:
    """Positions whose text contains ``term`` (a phrase query: trigram FTS matches substrings exactly)."""
    phrase = '"' + term.replace('"', '""') + '"'
    return (row for (row,) in con.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (phrase,)))
