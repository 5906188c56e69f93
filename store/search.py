"""Searching memories as a person types: an in-memory index over the index.db rows, enriched with bodies and
tags read from the plaintext files in the background.

Nothing here is written to disk: the full-text index is an SQLite FTS5 trigram table in memory, so bodies of
sensitive scopes (searchable only after an unlock) never reach a file. Each keystroke parses the query
(:mod:`store.query`); text terms of three or more characters are answered by the trigram index over everything;
shorter ones, and ``^prefix``, ``suffix$`` and ``^word$``, look at titles, triggers and slugs only (a one- or
two-letter match inside a body is noise, and scanning every body for it costs more than a keystroke may).
When a query extends the previous one, only the previous hits are filtered again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from store.errors import StoreError
from store.index import Memory
from store.query import Query, QuerySyntaxError, Term, parse
from store.service import Store

RANK_LIMIT = 1_000  # rank (rapidfuzz) when at most this many match; beyond, title hits first, newest first


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
    """The rows of every memory, with lowercased text per field for fast substring tests."""

    def __init__(self) -> None:
        self.rows: list[Hit] = []
        self.titles: list[str] = []  # lowercased, for ranking
        self.head: list[str] = []  # title, triggers and slug, lowercased
        self.spaced: list[str] = []  # " word word … ": ^prefix is " pre", suffix$ "fix ", ^word$ " word "
        self.text: list[str] = []  # head, then tags and body once enriched
        self.fts: sqlite3.Connection | None = None  # in memory only: heads at load, everything after enrich()
        self.fields: dict[str, list[str]] = {"type": [], "scope": [], "state": [], "source": []}
        self.tags: list[str] = []  # " tag tag … " per memory, for tag: prefix tests
        self.by_slug: dict[str, int] = {}
        self.enriched = False
        self._last: tuple[Query, list[int]] | None = None

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
        for slug, title, mtype, scope, decay, source, created, path in rows:
            index.by_slug[slug] = len(index.rows)
            index.rows.append(Hit(slug, title, mtype, scope, decay, source, created, path.endswith(".md.enc")))
            index.titles.append(title.lower())
            index.head.append(" ".join([title, *triggers.get(slug, ()), slug]).lower())
            index.text.append(index.head[-1])
            index.spaced.append(" " + " ".join(index.head[-1].split()) + " ")
            index.fields["type"].append(mtype)
            index.fields["scope"].append(scope)
            index.fields["state"].append(decay)
            index.fields["source"].append(source.lower())
            index.tags.append(" ")
        index.fts = _trigram_index(index.head)  # heads now; enrich() replaces it with everything
        return index

    def enrich(self, store: Store, progress: Callable[[int, int], None] | None = None) -> int:
        """Add bodies and tags from the files this process may read (plaintext, or unlocked); returns how many.

        Meant for a background worker: until it finishes, searches cover titles, triggers and slugs."""
        done = 0
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
            self.tags[i] = " " + " ".join(t.lower() for t in doc.frontmatter.tags) + " "
            done += 1
            if progress is not None and n % 1000 == 0:
                progress(n, len(self.rows))
        self.fts = _trigram_index(self.text)
        self.enriched = True
        self._last = None
        return done

    def search(self, text: str, limit: int = 500) -> SearchResult:
        """The best ``limit`` hits for ``text`` (newest first for an empty query), and how many matched."""
        try:
            query = parse(text)
        except QuerySyntaxError as exc:
            return SearchResult([], 0, str(exc))
        candidates = self._narrowing(query)
        found = self._filter(query, candidates)
        self._last = (query, found)
        ranked = self._rank(query, found, limit)
        return SearchResult([self.rows[i] for i in ranked], len(found), words=query.positive_text())

    def _narrowing(self, query: Query) -> list[int] | None:
        """The previous hits, when ``query`` can only match a subset of them (it adds to the previous one)."""
        if self._last is None:
            return None
        previous, hits = self._last
        if not previous.groups or len(query.groups) < len(previous.groups):
            return None
        for old, new in zip(previous.groups, query.groups):
            if old == new:
                continue
            if len(old) == 1 and len(new) == 1 and _narrows(old[0], new[0]):
                continue
            return None
        return hits

    def _filter(self, query: Query, pool: list[int] | None) -> list[int]:
        """AND of OR-groups, one group at a time over what the previous groups left (``None``: everything)."""
        found = pool
        for group in query.groups:
            if len(group) == 1:
                found = self._term_hits(group[0], found)
            else:  # OR: one membership pass keeps the newest-first order without sorting a big union
                union: set[int] = set()
                for term in group:
                    union.update(self._term_hits(term, found))
                found = sorted(union) if found is None else [i for i in found if i in union]
        return list(range(len(self.rows))) if found is None else found

    def _term_hits(self, term: Term, pool: list[int] | None) -> list[int]:
        """Indexes in ``pool`` (or all) that ``term`` matches: one tight comprehension per case, since this is
        the per-keystroke path over every memory."""
        t, neg = term.text, term.negate
        if term.field is not None and term.field != "tag":
            values = self.fields[term.field]
            if pool is None:
                return [i for i, v in enumerate(values) if v.startswith(t) != neg]
            return [i for i in pool if values[i].startswith(t) != neg]
        if term.field is None and term.kind in ("substring", "exact"):
            if self.fts is not None and len(t) >= 3:
                ids = _trigram_hits(self.fts, t)
                if pool is None:
                    return [i for i in range(len(self.rows)) if i not in ids] if neg else sorted(ids)
                return [i for i in pool if (i in ids) != neg]
            text = self.head if len(t) < 3 else self.text
            if pool is None:
                return [i for i, h in enumerate(text) if (t in h) != neg]
            return [i for i in pool if (t in text[i]) != neg]
        if term.field == "tag":
            tags, needle = self.tags, f" {t}"
            if pool is None:
                return [i for i, h in enumerate(tags) if (needle in h) != neg]
            return [i for i in pool if (needle in tags[i]) != neg]
        # prefix / suffix / whole word, on the words of the head (title, triggers, slug)
        needle = {"prefix": f" {t}", "suffix": f"{t} "}.get(term.kind, f" {t} ")
        spaced = self.spaced
        if pool is None:
            return [i for i, h in enumerate(spaced) if (needle in h) != neg]
        return [i for i in pool if (needle in spaced[i]) != neg]

    def _rank(self, query: Query, found: list[int], limit: int) -> list[int]:
        """The best ``limit`` of ``found``: titles that answer every part of the query (any term of an OR) before
        the rest. Up to RANK_LIMIT hits are ordered by rapidfuzz's weighted ratio against the title; a larger set
        stays newest first within each part and is walked only as far as it takes to fill ``limit``."""
        groups = [words for g in query.groups if (words := [t.text for t in g if not t.negate and t.field is None])]
        if not groups:
            return found[:limit]
        titles = self.titles

        def in_title(i: int) -> bool:
            return all(any(t in titles[i] for t in words) for words in groups)

        if len(found) > RANK_LIMIT:
            first: list[int] = []
            rest: list[int] = []
            for i in found:
                if in_title(i):
                    first.append(i)
                    if len(first) == limit:
                        break
                elif len(rest) < limit:
                    rest.append(i)
            return (first + rest)[:limit]
        scored = process.extract(" ".join(query.positive_text()), [titles[i] for i in found], scorer=fuzz.WRatio,
                                 limit=None)
        scores = {k: score for _, score, k in scored}
        order = sorted(range(len(found)), key=lambda k: (not in_title(found[k]), -scores[k]))
        return [found[k] for k in order[:limit]]


def _trigram_index(texts: list[str]) -> sqlite3.Connection:
    """An FTS5 trigram index of ``texts`` (rowid = position), in this process's memory only."""
    con = sqlite3.connect(":memory:", check_same_thread=False)
    con.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='trigram')")
    con.executemany("INSERT INTO docs (rowid, text) VALUES (?, ?)", enumerate(texts))
    con.commit()
    return con


def _trigram_hits(con: sqlite3.Connection, term: str) -> set[int]:
    """Positions whose text contains ``term`` (a phrase query: trigram FTS matches substrings exactly)."""
    phrase = '"' + term.replace('"', '""') + '"'
    return {row for (row,) in con.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (phrase,))}


def _narrows(old: Term, new: Term) -> bool:
    """Every record ``new`` matches, ``old`` matched too (the person typed more of the same term)."""
    if old.negate or new.negate or old.field != new.field or old.kind != new.kind:
        return False
    if old.field is None and len(old.text) < 3 <= len(new.text):
        return False  # short terms look at titles only; from three letters on, bodies too
    if old.kind in ("substring", "exact"):
        return old.text in new.text
    if old.kind == "prefix" or old.field is not None:
        return new.text.startswith(old.text)
    if old.kind == "suffix":
        return new.text.endswith(old.text)
    return False
