"""Searching memories as a person types: an in-memory index over the index.db rows, enriched with bodies and
tags read from the plaintext files in the background.

Nothing here is written to disk: the full-text index is an SQLite FTS5 trigram table in memory, so bodies of
sensitive scopes (searchable only after an unlock) never reach a file. Every term of a query becomes a bitset
(a Python int, one bit per memory, bit 0 the newest): field values have theirs precomputed, text terms of three
or more characters come from the trigram index, shorter ones and ``^prefix``, ``suffix$``, ``^word$`` from a
scan of titles, triggers and slugs (a one- or two-letter match inside a body is noise). Terms are cached, so a
query typed one key at a time recomputes only the term being typed; AND, OR and NOT are single int operations.

Per keystroke, no Python loop runs once per memory: the trigram index answers from the two rarest trigrams of a
term and SQLite checks the candidates' text itself, handing back one string of row numbers; short scans compare
all titles at once as one numpy array; numpy turns row numbers into a bitset (docs/performance.md has figures).
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import fuzz, process

from engram.store.errors import StoreError
from engram.store.index import Memory
from engram.store.query import Query, QuerySyntaxError, Term, parse
from engram.store.service import Store

RANK_LIMIT = 1_000  # rank (rapidfuzz) when at most this many match; beyond, head matches first, newest first
REFINE = 20_000  # a term one key longer than a cached one with at most this many hits filters those in Python
REFINE_HEADS = 5_000  # ranking checks the heads of at most this many hits one by one (uncached, so kept small)
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
    # each hit's rapidfuzz weighted ratio against its title (0-100) when the query was ranked that way (up to
    # RANK_LIMIT hits with text terms), else None: newest first, title matches ahead
    scores: list[float | None] = field(default_factory=list)


class SearchIndex:
    """Every memory's searchable text and fields, newest first, with a bitset per field value."""

    def __init__(self) -> None:
        self.rows: list[Hit] = []
        self.titles: list[str] = []  # lowercased, for ranking
        self.head: list[str] = []  # title, triggers and slug, lowercased
        self.text: list[str] = []  # head, then tags and body once enriched
        self.words = _Words([])  # heads as " word word … ": ^prefix is " pre", suffix$ "fix ", ^word$ " word "
        self.fts: _Trigrams | None = None  # in memory only: heads at load, everything after enrich()
        self.head_fts: _Trigrams | None = None
        self.values: dict[str, dict[str, int]] = {"type": {}, "scope": {}, "state": {}, "source": {}, "tag": {}}
        self.by_slug: dict[str, int] = {}
        self.tags: dict[int, list[str]] = {}  # row -> its file's tags, once enriched
        self.enriched = False
        self._cache: OrderedDict[tuple[str, str, str], int] = OrderedDict()

    @property
    def everything(self) -> int:
        return (1 << len(self.rows)) - 1

    @classmethod
    def load(cls, store: Store) -> SearchIndex:
        """Titles, triggers and fields from index.db (fast: no file is read)."""
        index = cls()
        head = index.head
        triggers: dict[str, list[str]] = {}
        for slug, trigger in store.index.db.execute_sql("SELECT slug, trigger FROM triggers"):
            triggers.setdefault(slug, []).append(trigger)
        rows = store.index.db.execute_sql(
            "SELECT slug, title, type, scope_hash, decay_state, source, created_at, body_path FROM memories "
            "ORDER BY created_at DESC"
        )
        fields: dict[str, dict[str, list[int]]] = {name: {} for name in index.values}
        for n, (slug, title, mtype, scope, decay, source, created, path) in enumerate(rows):
            index.by_slug[slug] = n
            index.rows.append(Hit(slug, title, mtype, scope, decay, source, created, path.endswith(".md.enc")))
            index.titles.append(title.lower())
            head.append(" ".join([title, *triggers.get(slug, ()), slug]).lower())
            index.text.append(head[-1])
            for name, value in (("type", mtype), ("scope", scope), ("state", decay), ("source", source)):
                fields[name].setdefault(value.lower(), []).append(n)
        index.values = {
            name: {v: _bits(ix, len(index.rows)) for v, ix in by_value.items()} for name, by_value in fields.items()
        }
        index.words = _Words(head)
        index.head_fts = _Trigrams(head)
        index.fts = index.head_fts  # enrich() replaces it with everything
        return index

    def enrich(
        self,
        store: Store,
        progress: Callable[[int, int], None] | None = None,
        carry: SearchIndex | None = None,
        changed: Collection[str] = (),
    ) -> int:
        """Add bodies and tags from the files this process may read (plaintext, or unlocked); returns how many
        files were read. With ``carry`` (an enriched index of the same store), the bodies and tags of memories
        not in ``changed`` are taken from it instead of their files.

        Meant for a background worker: until it finishes, searches cover titles, triggers and slugs."""
        done = 0
        paths = {m.slug: m.body_path for m in Memory.select(Memory.slug, Memory.body_path)}
        for n, (slug, i) in enumerate(list(self.by_slug.items()), 1):
            kept = carry.by_slug.get(slug) if carry is not None and slug not in changed else None
            if kept is not None and carry is not None:
                self.text[i] = carry.text[kept]
                if kept in carry.tags:
                    self.tags[i] = carry.tags[kept]
                continue
            path = paths.get(slug)
            if path is None or (self.rows[i].encrypted and not store.keys.can_open(self.rows[i].scope_hash)):
                continue
            try:
                doc = store.read_doc(store.safe_relpath(path))
            except (StoreError, OSError):
                continue
            self.text[i] = f"{self.text[i]} {' '.join(doc.frontmatter.tags)} {doc.body}".lower()
            if doc.frontmatter.tags:
                self.tags[i] = [tag.lower() for tag in doc.frontmatter.tags]
            done += 1
            if done % 50 == 0:
                time.sleep(0.001)  # let the thread that answers the keyboard have the interpreter
            if progress is not None and n % 1000 == 0:
                progress(n, len(self.rows))
        tags: dict[str, list[int]] = {}
        for i, names in self.tags.items():
            for tag in names:
                tags.setdefault(tag, []).append(i)
        fts = _Trigrams(self.text)
        self.values["tag"] = {t: _bits(ix, len(self.rows)) for t, ix in tags.items()}
        self.fts, self.enriched = fts, True
        self._cache.clear()
        return done

    def refreshed(self, store: Store, changed: Collection[str]) -> SearchIndex:
        """The index of the store as it is now, for a console told that the memories ``changed`` changed: rows
        and fields from index.db again (quick, no file read), and, if this index was enriched, bodies and tags
        carried over for every other memory and read from the files of those that changed. This index keeps
        answering until the new one is ready."""
        fresh = SearchIndex.load(store)
        if self.enriched:
            fresh.enrich(store, carry=self, changed=changed)
        return fresh

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
        scores: dict[int, float] = {}
        ranked = self._rank(query, found, limit, scores)
        return SearchResult(
            [self.rows[i] for i in ranked],
            found.bit_count(),
            words=query.positive_text(),
            scores=[scores.get(i) for i in ranked],
        )

    def _key(self, term: Term) -> tuple[str, str, str]:
        return ("fts" if self._uses_fts(term) else "scan", term.kind, term.text)

    def _term(self, term: Term) -> int:
        bits = self._positive(term)
        return self.everything & ~bits if term.negate else bits

    def _positive(self, term: Term) -> int:
        """The term's hits, cached: a term one key longer than a cached one with few hits filters those."""
        t = term.text
        if term.field is not None:  # a value prefix: the union of the few values that start with it
            bits = 0
            for value, value_bits in self.values[term.field].items():
                if value.startswith(t):
                    bits |= value_bits
            return bits
        key = self._key(term)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        parent = self._cache.get((key[0], term.kind, t[:-1])) if key[0] == "fts" else None
        if parent is not None and parent.bit_count() <= REFINE:  # typing on: keep the parent's hits that still match
            bits = self._verify(t, parent, self.text)
        elif key[0] == "fts":
            assert self.fts is not None
            bits = _bits(self.fts.rows(t), len(self.rows))
        else:
            needle = " ".join(t.split())
            needle = {"prefix": f" {needle}", "suffix": f"{needle} ", "equal": f" {needle} "}.get(term.kind, needle)
            bits = _bits(self.words.rows(needle), len(self.rows))
        self._cache[key] = bits
        if len(self._cache) > CACHE:
            self._cache.popitem(last=False)
        return bits

    def _uses_fts(self, term: Term) -> bool:
        return term.kind in ("substring", "exact") and len(term.text) >= 3 and self.fts is not None

    def _rank(self, query: Query, found: int, limit: int, scored_as: dict[int, float]) -> list[int]:
        """The best ``limit`` of ``found``: memories whose title, triggers or slug answer every part of the query
        come first. Up to RANK_LIMIT hits are ordered by rapidfuzz's weighted ratio against the title (put in
        ``scored_as`` by row); a larger set stays newest first within each part, and only the page asked for is
        ever listed."""
        groups = [terms for g in query.groups if (terms := [t for t in g if not t.negate and t.field is None])]
        if not groups:
            return _indexes(found, limit).tolist()
        in_head = self.everything
        for terms in groups:
            either = 0
            for term in terms:
                either |= self._head_bits(term, found)
            in_head &= either
        if found.bit_count() > RANK_LIMIT:
            first = _indexes(found & in_head, limit).tolist()
            return first + _indexes(found & ~in_head, limit - len(first)).tolist()
        candidates = _indexes(found, RANK_LIMIT).tolist()
        scored = process.extract(
            " ".join(query.positive_text()), [self.titles[i] for i in candidates], scorer=fuzz.WRatio, limit=None
        )
        scores = {k: score for _, score, k in scored}
        order = sorted(range(len(candidates)), key=lambda k: (not (in_head >> candidates[k]) & 1, -scores[k]))
        scored_as.update((candidates[k], round(float(scores[k]), 1)) for k in order[:limit])
        return [candidates[k] for k in order[:limit]]

    def _verify(self, t: str, candidates: int, texts: list[str]) -> int:
        """Those of ``candidates`` (at most REFINE) whose text contains ``t``."""
        return _bits([i for i in _indexes(candidates, REFINE).tolist() if t in texts[i]], len(self.rows))

    def _head_bits(self, term: Term, found: int) -> int:
        """Where, among ``found``, a text term matches the title, triggers or slug (not only the body): a few
        thousand heads are quicker to check one by one than a phrase query over all of them."""
        if not self._uses_fts(term) or self.fts is self.head_fts:
            return self._positive(term)
        if found.bit_count() <= REFINE_HEADS:
            return self._verify(term.text, found, self.head)
        key = ("head", term.kind, term.text)
        if key not in self._cache:
            assert self.head_fts is not None
            self._cache[key] = _bits(self.head_fts.rows(term.text), len(self.rows))
        return self._cache[key]


def _bits(rows: Iterable[int] | np.ndarray, size: int) -> int:
    """The bitset with bit ``r`` set for each of ``rows`` (numpy scatters and packs them: no Python loop)."""
    flags = np.zeros(size, dtype=np.uint8)
    flags[np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.int64)] = 1
    return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little")


def _indexes(bits: int, limit: int) -> np.ndarray:
    """The set bits of ``bits``, lowest (newest memory) first, at most ``limit`` of them."""
    if limit <= 0 or not bits:
        return np.empty(0, dtype=np.int64)
    data = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(data, bitorder="little"))[:limit]


class _Trigrams:
    """An FTS5 trigram index of some texts (rowid = position), in this process's memory only."""

    def __init__(self, texts: list[str]) -> None:
        self.con = sqlite3.connect(":memory:", check_same_thread=False)
        self.con.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='trigram')")
        self.con.executemany("INSERT INTO docs (rowid, text) VALUES (?, ?)", enumerate(texts))
        self.con.commit()

    def rows(self, term: str) -> np.ndarray:
        """Positions whose text contains ``term`` (three characters or more): a phrase query (trigram FTS matches
        substrings exactly), its row numbers gathered into one string by SQLite and parsed by numpy."""
        (found,) = self.con.execute(
            "SELECT group_concat(rowid) FROM docs WHERE docs MATCH ?", ('"' + term.replace('"', '""') + '"',)
        ).fetchone()
        return np.fromstring(found, dtype=np.int64, sep=",") if found else np.empty(0, dtype=np.int64)


class _Words:
    """Every memory's title, triggers and slug, whitespace-normalised and padded (" word word "), in one UTF-16
    array with the memories separated by NUL: a needle is found in all of them by a few vectorised comparisons
    (a NUL never occurs in a needle, so no match spans two memories)."""

    def __init__(self, heads: list[str]) -> None:
        spaced = [" " + " ".join(h.replace("\0", " ").split()) + " " for h in heads]
        self.units = np.frombuffer("\0".join(spaced).encode("utf-16-le"), dtype=np.uint16)
        lengths = np.fromiter((len(s.encode("utf-16-le")) // 2 + 1 for s in spaced), dtype=np.int64, count=len(spaced))
        self.starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        self.counts = np.bincount(self.units, minlength=1 << 16)

    def rows(self, needle: str) -> np.ndarray:
        """Positions of the memories whose padded head contains ``needle``; the needle's rarest unit is looked up
        first (a leading space alone would match a million places), then the others only where it was found."""
        pattern = np.frombuffer(needle.encode("utf-16-le"), dtype=np.uint16)
        if not len(pattern) or len(pattern) > len(self.units):
            return np.empty(0, dtype=np.int64)
        anchor = int(np.argmin(self.counts[pattern]))
        at = np.flatnonzero(self.units == pattern[anchor]) - anchor  # where the needle would start
        at = at[(at >= 0) & (at <= len(self.units) - len(pattern))]
        for k in range(len(pattern)):
            if k != anchor:
                at = at[self.units[at + k] == pattern[k]]
        return np.searchsorted(self.starts, at, side="right") - 1  # repeats are harmless to _bits


def snippet(text: str, words: list[str], width: int = 120) -> str:
    """About ``width`` characters of ``text`` around the first of ``words`` it contains (case-insensitive), on
    one line; the start of the text when it contains none."""
    flat = " ".join(text.split())
    lowered = flat.lower()
    at = min((i for w in words if w and (i := lowered.find(w.lower())) >= 0), default=0)
    start = max(0, at - width // 3)
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")
