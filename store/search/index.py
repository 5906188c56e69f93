"""The console's search index: every memory's fields as bitsets, its head (title, triggers, slug) for short terms
and ranking, and its text through two trigram indexes: engram's persistent one (``fulltext``, memories of plain
scopes, on disk, up to date at open) and one in this process's memory for the rest (heads of what the persistent
one does not hold yet, and bodies of sensitive scopes while they are unlocked, which never reach a file).

Every term of a query becomes a bitset (a Python int, one bit per memory, bit 0 the newest): field values have
theirs precomputed, text terms of three or more characters come from the trigram indexes, shorter ones and
``^prefix``, ``suffix$``, ``^word$`` from a scan of titles, triggers and slugs (a one- or two-letter match inside
a body is noise). Terms are cached, so a query typed one key at a time recomputes only the term being typed;
AND, OR and NOT are single int operations (docs/performance.md has figures).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

from engram.store.errors import StoreError
from engram.store.index import Memory
from engram.store.query import Query, QuerySyntaxError, Term, parse
from engram.store.search.arrays import MemoryTrigrams, Words, bits, indexes, parse_rows
from engram.store.search.fulltext import TAG_SEPARATOR, TRIGGERS, FullText, head_text, sync
from engram.store.service import Store

RANK_LIMIT = 1_000  # rank (rapidfuzz) when at most this many match; beyond, head matches first, newest first
REFINE_HEADS = 5_000  # ranking checks the heads of at most this many hits one by one (uncached, so kept small)
Document = tuple[int, str, str]  # the persistent index's id, slug and scope of a memory
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


class Rows:
    """Every memory's listed fields, a tuple per column as SQLite returned them: a :class:`Hit` is made only for
    the hits a query shows (an object per memory was a third of the index's load, and of its memory)."""

    def __init__(self, columns: Sequence[Sequence[Any]] = ((),) * 8) -> None:
        self.slugs, self.titles, self.types, self.scopes, self.states, self.sources, self.created, self.encrypted = (
            tuple(column) for column in columns
        )

    def __len__(self) -> int:
        return len(self.slugs)

    def __getitem__(self, n: int) -> Hit:
        return Hit(
            self.slugs[n],
            self.titles[n],
            self.types[n],
            self.scopes[n],
            self.states[n],
            self.sources[n],
            self.created[n],
            bool(self.encrypted[n]),
        )


class SearchIndex:
    """Every memory's searchable text and fields, newest first, with a bitset per field value."""

    def __init__(self, fulltext: FullText | None = None) -> None:
        self.rows = Rows()
        self.head: tuple[str, ...] = ()  # title, triggers and slug, lowercased
        self.words = Words([])  # heads as " word word … ": ^prefix is " pre", suffix$ "fix ", ^word$ " word "
        self.values: dict[str, dict[str, int]] = {"type": {}, "scope": {}, "state": {}, "source": {}}
        self.by_slug: dict[str, int] = {}
        self.fulltext = fulltext  # the persistent index, None where there is none (a cache that cannot be written)
        self.position = np.full(0, -1, dtype=np.int64)  # persistent index id -> row, -1 for a row it may not answer
        self.covered = np.zeros(0, dtype=bool)  # rows whose text the persistent index holds
        self.memory = MemoryTrigrams({}, {})  # the other rows: heads, and bodies once enriched
        self.bodies: dict[int, str] = {}  # row -> tags and body, for rows not covered, once enriched
        self.tags: dict[int, list[str]] = {}  # row -> tags, for rows not covered, once enriched
        self.enriched = False
        self._tags: dict[str, int] | None = None  # tag -> bitset, built on the first tag: term
        self._cache: OrderedDict[tuple[str, str, str], int] = OrderedDict()

    @property
    def everything(self) -> int:
        return (1 << len(self.rows)) - 1

    @property
    def searching(self) -> str:
        """What a query looks at now, for the console's status line."""
        if self.enriched:
            return "titles, triggers, bodies, tags"
        if self.fulltext is not None:
            return "titles, triggers, bodies, tags (sensitive bodies loading)"
        return "titles and triggers (bodies loading)"

    @classmethod
    def load(cls, store: Store, fulltext: FullText | None = None) -> SearchIndex:
        """Titles, triggers and fields from index.db (no memory file is read), and the bodies of plain scopes
        at once through ``fulltext``, the persistent index, as up to date as its last sync."""
        index = cls(fulltext)
        sensitive = store.sensitive_scopes()
        fetched = store.index.db.execute_sql(  # NOT INDEXED: a scan and a sort, a third quicker than the index
            "SELECT slug, title, type, scope_hash, decay_state, source, created_at, body_path LIKE '%.md.enc', "
            f"{TRIGGERS} FROM memories m NOT INDEXED ORDER BY created_at DESC"
        ).fetchall()
        *columns, triggers = zip(*fetched, strict=True) if fetched else ((),) * 9
        del fetched
        index.rows = rows = Rows(columns)
        index.by_slug = dict(zip(rows.slugs, range(len(rows)), strict=True))
        index.head = tuple(map(head_text, rows.titles, triggers, rows.slugs))  # of strings: the collector skips it
        index.values = {
            "type": _value_bits(rows.types),
            "scope": _value_bits(rows.scopes),
            "state": _value_bits(rows.states),
            "source": _value_bits(rows.sources),
        }
        index.words = Words(index.head)
        index.covered = np.zeros(len(rows), dtype=bool)
        if fulltext is not None:
            index._cover(list(fulltext.documents()), sensitive)
        index.memory = MemoryTrigrams({i: index.head[i] for i in np.flatnonzero(~index.covered).tolist()}, {})
        return index

    def _cover(self, documents: list[Document], sensitive: set[str]) -> None:
        """Map the persistent index's ids (its ``documents``) to rows; a row of a sensitive scope is never
        answered from it."""
        rows = list(map(self.by_slug.get, (slug for _, slug, _ in documents)))
        encrypted = self.rows.encrypted
        kept = [
            (doc_id, n)
            for (doc_id, _, scope), n in zip(documents, rows, strict=True)
            if n is not None and scope not in sensitive and not encrypted[n]
        ]
        ids, positions = [doc_id for doc_id, _ in kept], [n for _, n in kept]
        self.position = np.full(max(ids, default=-1) + 1, -1, dtype=np.int64)
        self.position[ids] = positions
        self.covered[positions] = True

    def prepare(self) -> None:
        """What the first ``tag:`` term would otherwise build while a person types (80 ms at 100k memories): for the
        worker that loaded the index, once the index answers."""
        self._tag_bits()

    def enrich(
        self,
        store: Store,
        progress: Callable[[int, int], None] | None = None,
        carry: SearchIndex | None = None,
        changed: Collection[str] = (),
    ) -> int:
        """Add bodies and tags of the rows the persistent index does not cover, from the files this process may
        read (plaintext, or unlocked; with a persistent index, only unlocked sensitive scopes: it takes in the
        plain ones itself); returns how many files were read. With ``carry`` (an enriched index of the same
        store), the bodies of memories not in ``changed`` are taken from it instead of their files.

        Meant for a background worker: until it finishes, those rows are searched by their heads."""
        done = 0
        paths = {m.slug: m.body_path for m in Memory.select(Memory.slug, Memory.body_path)}
        todo = np.flatnonzero(~self.covered).tolist()
        for n, i in enumerate(todo, 1):
            hit = self.rows[i]
            kept = carry.by_slug.get(hit.slug) if carry is not None and hit.slug not in changed else None
            if kept is not None and carry is not None and kept in carry.bodies:
                self.bodies[i] = carry.bodies[kept]
                if kept in carry.tags:
                    self.tags[i] = carry.tags[kept]
                continue
            path = paths.get(hit.slug)
            readable = store.keys.can_open(hit.scope_hash) if hit.encrypted else self.fulltext is None
            if path is None or not readable:
                continue
            try:
                doc = store.read_doc(store.safe_relpath(path))
            except (StoreError, OSError):
                continue
            self.bodies[i] = f"{' '.join(doc.frontmatter.tags)} {doc.body}".lower()
            if doc.frontmatter.tags:
                self.tags[i] = [tag.lower() for tag in doc.frontmatter.tags]
            done += 1
            if done % 50 == 0:
                time.sleep(0.001)  # let the thread that answers the keyboard have the interpreter
            if progress is not None and n % 1000 == 0:
                progress(n, len(todo))
        self.memory = MemoryTrigrams({i: self.head[i] for i in todo}, self.bodies)
        self.enriched = True
        self._tags = None
        self._cache.clear()
        return done

    def refreshed(self, store: Store, changed: Collection[str]) -> SearchIndex:
        """The index of the store as it is now, for a console told that the memories ``changed`` changed: the
        persistent index takes them in, rows and fields come from index.db again (quick, no file read), and, if
        this index was enriched, the bodies it read are carried over for every other memory. A persistent index
        discarded meanwhile (a scope marked sensitive) is opened and built again. This index keeps answering
        until the new one is ready."""
        fulltext = self.fulltext
        try:
            if fulltext is not None and not fulltext.current():
                fulltext = FullText.open(store)
                if fulltext is not None:
                    sync(store)
            elif fulltext is not None and changed:
                sync(store, only=changed)
        except StoreError:
            pass  # the persistent index is busy: the next look takes the changes in (the sync is by fingerprint)
        fresh = SearchIndex.load(store, fulltext)
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

    def _term(self, term: Term) -> int:
        found = self._positive(term)
        return self.everything & ~found if term.negate else found

    def _positive(self, term: Term) -> int:
        """The term's hits, cached."""
        t = term.text
        if term.field is not None:  # a value prefix: the union of the few values that start with it
            found = 0
            for value, value_bits in (self._tag_bits() if term.field == "tag" else self.values[term.field]).items():
                if value.startswith(t):
                    found |= value_bits
            return found
        key = ("fts" if self._uses_fts(term) else "scan", term.kind, t)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        if key[0] == "fts":
            found = self._text_bits(t, head_only=False)
        else:
            needle = " ".join(t.split())
            needle = {"prefix": f" {needle}", "suffix": f"{needle} ", "equal": f" {needle} "}.get(term.kind, needle)
            found = bits(self.words.rows(needle), len(self.rows))
        self._remember(key, found)
        return found

    def _remember(self, key: tuple[str, str, str], found: int) -> None:
        self._cache[key] = found
        if len(self._cache) > CACHE:
            self._cache.popitem(last=False)

    def _text_bits(self, t: str, head_only: bool) -> int:
        """Rows whose text (or head) contains ``t``: the persistent index for the rows it covers, the in-memory
        one for the others."""
        found = self.memory.rows(t, head_only)
        if self.fulltext is not None and len(self.position):
            ids = parse_rows(self.fulltext.matching(t, head_only))
            ids = ids[ids < len(self.position)]  # rows it took in after this index was loaded
            rows = self.position[ids]
            found = np.concatenate((found, rows[rows >= 0]))
        return bits(found, len(self.rows))

    def _tag_bits(self) -> dict[str, int]:
        """tag -> bitset, from the persistent index's rows and the enriched others (built once, on the first
        ``tag:`` term: most sessions never use one)."""
        if self._tags is None:
            rows: dict[str, list[int]] = {}
            if self.fulltext is not None and len(self.position):
                for doc_id, joined in self.fulltext.tags():
                    n = self.position[doc_id] if doc_id < len(self.position) else -1
                    for tag in joined.split(TAG_SEPARATOR) if n >= 0 else ():
                        rows.setdefault(tag, []).append(int(n))
            for n, names in self.tags.items():
                for tag in names:
                    rows.setdefault(tag, []).append(n)
            self._tags = {tag: bits(ix, len(self.rows)) for tag, ix in rows.items()}
        return self._tags

    @staticmethod
    def _uses_fts(term: Term) -> bool:
        return term.kind in ("substring", "exact") and len(term.text) >= 3

    def _rank(self, query: Query, found: int, limit: int, scored_as: dict[int, float]) -> list[int]:
        """The best ``limit`` of ``found``: memories whose title, triggers or slug answer every part of the query
        come first. Up to RANK_LIMIT hits are ordered by rapidfuzz's weighted ratio against the title (put in
        ``scored_as`` by row); a larger set stays newest first within each part, and only the page asked for is
        ever listed."""
        groups = [terms for g in query.groups if (terms := [t for t in g if not t.negate and t.field is None])]
        if not groups:
            return indexes(found, limit).tolist()
        in_head = self.everything
        for terms in groups:
            either = 0
            for term in terms:
                either |= self._head_bits(term, found)
            in_head &= either
        if found.bit_count() > RANK_LIMIT:
            first = indexes(found & in_head, limit).tolist()
            return first + indexes(found & ~in_head, limit - len(first)).tolist()
        candidates = indexes(found, RANK_LIMIT).tolist()
        scored = process.extract(
            " ".join(query.positive_text()),
            [self.rows.titles[i].lower() for i in candidates],
            scorer=fuzz.WRatio,
            limit=None,
        )
        scores = {k: score for _, score, k in scored}
        order = sorted(range(len(candidates)), key=lambda k: (not (in_head >> candidates[k]) & 1, -scores[k]))
        scored_as.update((candidates[k], round(float(scores[k]), 1)) for k in order[:limit])
        return [candidates[k] for k in order[:limit]]

    def _head_bits(self, term: Term, found: int) -> int:
        """Where, among ``found``, a text term matches the title, triggers or slug (not only the body): a few
        thousand heads are quicker to check one by one than a phrase query over all of them."""
        if not self._uses_fts(term):
            return self._positive(term)
        if found.bit_count() <= REFINE_HEADS:
            return bits([i for i in indexes(found, REFINE_HEADS).tolist() if term.text in self.head[i]], len(self.rows))
        key = ("head", term.kind, term.text)
        if key not in self._cache:  # the scan of every head is quicker than a column query of the trigram indexes
            single_spaced = " ".join(term.text.split()) == term.text
            found_in_head = (
                bits(self.words.rows(term.text), len(self.rows))
                if single_spaced
                else self._text_bits(term.text, head_only=True)
            )
            self._remember(key, found_in_head)
        return self._cache[key]


def _value_bits(values: Sequence[str]) -> dict[str, int]:
    """value (lowercased) -> the bitset of the rows holding it: each row's value numbered through a dict of the
    few distinct ones (no string is lowercased or compared per row), numpy sorts the rows by number once, and
    each value's rows are one slice of that order."""
    if not values:
        return {}
    distinct = list(dict.fromkeys(values))
    names = sorted({v.lower() for v in distinct})
    number = {name: i for i, name in enumerate(names)}
    numbered = {v: number[v.lower()] for v in distinct}
    which = np.fromiter(map(numbered.__getitem__, values), dtype=np.int64, count=len(values))
    order = np.argsort(which, kind="stable")
    counts = np.bincount(which, minlength=len(names))
    starts = np.cumsum(counts) - counts
    return {name: bits(order[a : a + n], len(values)) for name, a, n in zip(names, starts, counts, strict=True)}


def snippet(text: str, words: list[str], width: int = 120) -> str:
    """About ``width`` characters of ``text`` around the first of ``words`` it contains (case-insensitive), on
    one line; the start of the text when it contains none."""
    flat = " ".join(text.split())
    lowered = flat.lower()
    at = min((i for w in words if w and (i := lowered.find(w.lower())) >= 0), default=0)
    start = max(0, at - width // 3)
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")
