"""The console's search index: every memory's fields as bitsets, its head (title, triggers, slug) for short terms
and ranking, and its text through engram's persistent trigram index (``fulltext``, memories of plain scopes, on
disk, up to date at open); for the rest, a scan of their heads and, once read, a trigram index of their bodies in
this process's memory (bodies of sensitive scopes while they are unlocked, which never reach a file).

Every term of a query becomes a bitset (a Python int, one bit per memory, bit 0 the newest): field values have
theirs precomputed, text terms of three or more characters (or two CJK characters, a word: ``arrays.body_term``)
come from the trigram indexes, shorter ones and ``^prefix``, ``suffix$``, ``^word$`` from a scan of titles,
triggers and slugs (a one- or two-letter match inside a body is noise). Terms are cached, so a query typed one
key at a time recomputes only the term being typed; AND, OR and NOT are single int operations
(docs/performance.md has figures).
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from engram.store import heap
from engram.store.errors import StoreError
from engram.store.index import TEMP_IN_MEMORY
from engram.store.query import Query, QuerySyntaxError, Term, parse
from engram.store.search.arrays import Heads, MemoryTrigrams, bits, body_term, indexes, packed, scan
from engram.store.search.fulltext import TAG_SEPARATOR, TRIGGERS, FullText, head_text, searched_parts, sync
from engram.store.search.rows import FIELDS, Builder, Hit, Rows, needle_bytes
from engram.store.service import Store

RANK_LIMIT = 1_000  # rank (rapidfuzz) when at most this many match; beyond, head matches first, newest first
REFINE_HEADS = 1_000
"""Ranking checks the heads of at most this many hits one by one (uncached); more are answered by the term's head
bits, worked out once and kept for the next keys. At 5,000, a query of a few thousand hits checked them all again
on every key (bench_console's queries at 100k: p95 more than twice as long)."""
CACHE = 256  # term bitsets kept (a 100k-memory bitset is 12.5 KB)
CHUNK = 20_000  # rows of index.db made compact at a time
LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"  # one-key terms prepare() answers ahead


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
    """Every memory's searchable text and fields, newest first, with bitsets for field values and terms.

    ``partial`` marks an index answered from what engram kept of the last one (:meth:`cached`): the rows of plain
    scopes as they were then, with their bodies from the persistent index as it is now. The rows of sensitive
    scopes, and what index.db changed since, come with the full read (:meth:`load`) that follows it."""

    def __init__(self, rows: Rows, fulltext: FullText | None = None, partial: bool = False) -> None:
        self.rows = rows
        self.words = scan(rows.heads)
        self.fulltext = fulltext  # the persistent index, None where there is none (a cache that cannot be written)
        self.partial = partial
        self.covered = rows.doc >= 0 if fulltext is not None else np.zeros(len(rows), dtype=bool)
        covered = np.flatnonzero(self.covered)
        self.position = np.full(int(rows.doc.max(initial=-1)) + 1, -1, dtype=np.int32)  # persistent id -> row
        self.position[rows.doc[covered]] = covered
        self.loose = np.flatnonzero(~self.covered)  # the rows the persistent index does not answer for
        self.loose_heads = Heads(rows.heads.take(self.loose))
        self.memory = MemoryTrigrams({})  # bodies of loose rows, once enriched
        self.bodies: dict[int, str] = {}  # row -> tags and body, for rows not covered, once enriched
        self.tags: dict[int, list[str]] = {}  # row -> tags, for rows not covered, once enriched
        self.enriched = False
        self._values: dict[str, dict[str, int]] = {}  # field -> value (lowercased) -> bitset, built on first use
        self._tags: dict[str, int] | None = None  # tag -> bitset, built on the first tag: term
        self._cache: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self._searching = threading.Lock()
        self._outside: tuple[np.ndarray, np.ndarray, Heads] | None = None  # see _unsegmented

    @property
    def everything(self) -> int:
        return (1 << len(self.rows)) - 1

    @property
    def searching(self) -> str:
        """What a query looks at now, for the console's status line."""
        if self.partial:
            return "plain scopes (the rest loading)"
        if self.enriched:
            return "titles, triggers, bodies, tags"
        if self.fulltext is not None:
            return "all but sensitive bodies (loading)"
        return "titles and triggers (bodies loading)"

    @classmethod
    def load(
        cls,
        store: Store,
        fulltext: FullText | None = None,
        keep: bool = False,
        only: np.ndarray | None = None,
        head_test: Callable[[str], bool] | None = None,
    ) -> SearchIndex:
        """Titles, triggers and fields of every memory from index.db (no memory file is read), and the bodies of
        plain scopes at once through ``fulltext``, the persistent index, as up to date as its last sync. Rows are
        read a chunk at a time and made compact before the next.

        With ``keep`` (the console), the rows of plain scopes are kept beside the persistent index, for
        :meth:`cached` at the next open, and read from there where they are mapped: only the others stay in this
        process's memory (see :meth:`_kept`).

        With ``only`` (ids in ``fulltext``), the index holds the memories of those ids and every memory the
        persistent index does not answer for: a query whose hits are all among them is answered as by the whole
        index (see :mod:`engram.store.search.lookup`), without a row read for the others. With ``head_test`` too (a
        test of a head that every hit among those others passes), those others are read only where it passes or
        their bodies are searched (an unlocked sensitive scope's encrypted files): the rest are searched by their
        heads alone, and could not have been hits."""
        sensitive = store.sensitive_scopes()
        try:
            rows = _read_rows(store, fulltext, only, sensitive, lenient=False, head_test=head_test)
        except sqlite3.OperationalError as exc:
            if head_test is None and not str(exc).startswith(_UNDECODABLE):
                raise
            # a row's text that is not UTF-8 cannot be handed to ``head_test`` either: every such row is then read
            rows = _read_rows(store, fulltext, only, sensitive, lenient=True)
        if keep and fulltext is not None:
            rows = cls._kept(store, fulltext, rows)
        heap.give_back()  # the read's chunks and ids: 250 MB resident at 1M (600 MB to 350 MB)
        return cls(rows, fulltext)

    @classmethod
    def cached(cls, store: Store, fulltext: FullText) -> SearchIndex | None:
        """The index as the last :meth:`load` with ``keep`` left it (rows of plain scopes only, read where their
        files are mapped), answering at once while :meth:`load` reads index.db; None when there is none, or it
        holds a scope sensitive now."""
        blobs = fulltext.snapshot()
        if blobs is None:
            return None
        try:
            rows = Rows.from_blobs(blobs)
            scopes = set(json.loads(bytes(blobs["scopes"])))
        except (KeyError, ValueError, TypeError):
            fulltext.forget()  # damaged: the next keep writes it again
            return None
        return None if scopes & store.sensitive_scopes() else cls(rows, fulltext, partial=True)

    @staticmethod
    def _kept(store: Store, fulltext: FullText, rows: Rows) -> Rows:
        """``rows`` with those of plain scopes read from the files they are kept in (written now unless the same
        rows are kept already; nothing of a sensitive scope, or of an encrypted file, is written); ``rows`` as
        they are when the files cannot be written or read."""
        sensitive = store.sensitive_scopes()
        hidden = [k for k, scope in enumerate(rows.names["scope"]) if scope in sensitive]
        inside = ~np.isin(rows.codes["scope"], hidden) & ~rows.encrypted
        plain = rows.take(np.flatnonzero(inside))
        scopes = sorted({plain.names["scope"][k] for k in np.unique(plain.codes["scope"]).tolist()})
        mapped = fulltext.keep(plain.blobs() | {"scopes": json.dumps(scopes).encode()}, store.sensitive_scopes)
        del plain
        if mapped is None:
            return rows
        try:
            return rows.spliced(Rows.from_blobs(mapped), inside)
        except (KeyError, ValueError, TypeError):
            fulltext.forget()  # changed under us: the next open writes them again
            return rows

    def prepare(self) -> None:
        """What the first field, ``tag:`` or short term would otherwise build while a person types (the tags, the
        scan's byte counts, each letter's answer): for the worker that loaded the
        index, once the index answers. The kept files the rows are read from are read ahead first, and let go of
        last: the letters' scans read every head where it is mapped (75 MB at 1M, and as much again for the index
        that replaces this one), which counted as the console's memory until a person typed and stopped, or the
        kernel took the pages back. They stay in its cache, and the few a query reads are mapped again."""
        self.rows.prefetch()
        _ranker()  # not on the UI thread at the first ranked query
        self._tag_bits()
        for name in FIELDS:
            self._field_bits(name)
        self.words.counts  # noqa: B018  (the scan's byte counts, computed on first use)
        self.loose_heads.prepare()
        if self.fulltext is not None and (coverage := self.fulltext.warm(self.position, len(self.rows))) is not None:
            self._unsegmented(*coverage)[1].prepare()
        for letter in LETTERS:  # a query's first key: a scan of every head, done here once
            with self._searching:  # a key typed meanwhile waits for one letter at most
                self._positive(Term(letter))
        self.words.forget()  # what the letters' scans kept for a next key no one typed
        self.rows.release()
        heap.give_back()  # the scans' and builds' temporaries: 150 MB at 1M

    def release(self) -> None:
        """For a console idle: let go of the pages of the persistent index's files that searching mapped in (a
        broad term touches most of them: 110 MB at 100k memories, 850 MB at 1M), and of the occurrences kept to
        narrow the next key. Both count as the console's resident memory until then. A search running now
        (the UI thread must not wait for it) leaves it to the next idle moment."""
        if not self._searching.acquire(blocking=False):
            return
        try:
            self.words.forget()
            self.loose_heads.forget()
            if self._outside is not None:
                self._outside[2].forget()
            if self.fulltext is not None:
                self.fulltext.release()
            self.rows.release()
            heap.give_back()
        finally:
            self._searching.release()

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
        todo = np.flatnonzero(~self.covered)
        if carry is None:  # only the rows this process may read: a locked scope's are not even listed
            todo = todo[self._readable(store, todo)]
        paths = _body_paths(store, self.rows.slugs.pick(todo.tolist()))
        for n, i in enumerate(todo.tolist(), 1):
            hit = self.rows[i]
            kept = carry.rows.by_slug.get(hit.slug) if carry is not None and hit.slug not in changed else None
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
                relpath = store.safe_relpath(path)
                tags, body = searched_parts(store.read_bytes(relpath), relpath)
            except (StoreError, OSError):
                continue
            self.bodies[i] = f"{' '.join(tags)} {body}".lower()
            if tags:
                self.tags[i] = [tag.lower() for tag in tags]
            done += 1
            if done % 50 == 0:
                time.sleep(0.001)  # let the thread that answers the keyboard have the interpreter
            if progress is not None and n % 1000 == 0:
                progress(n, len(todo))
        self.memory = MemoryTrigrams(self.bodies)
        self.enriched = True
        self._tags = None
        self._cache.clear()
        return done

    def _readable(self, store: Store, rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` (none the persistent index covers) :meth:`enrich` reads: an encrypted file whose scope
        is unlocked; a plain one only without a persistent index (it takes in the plain ones itself)."""
        unlocked = np.array([store.keys.can_open(scope) for scope in self.rows.names["scope"]], dtype=bool)
        encrypted = self.rows.encrypted[rows]
        return np.where(encrypted, unlocked[self.rows.codes["scope"][rows]], self.fulltext is None)

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
        fresh = SearchIndex.load(store, fulltext, keep=True)
        if self.enriched:
            fresh.enrich(store, carry=self, changed=changed)
        return fresh

    def search(self, text: str, limit: int = 500) -> SearchResult:
        """The best ``limit`` hits for ``text`` (newest first for an empty query), and how many matched. One query
        at a time (a console searching in a worker may start the next before the last is done: they share the
        cache of term bitsets)."""
        with self._searching:
            return self._search(text, limit)

    def _search(self, text: str, limit: int) -> SearchResult:
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
            self.rows.hits(ranked),
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
            values = self._tag_bits() if term.field == "tag" else self._field_bits(term.field)
            for value, value_bits in values.items():
                if value.startswith(t):
                    found |= value_bits
            return found
        if not findable(t):
            return 0
        key = ("fts" if uses_fts(term) else "scan", term.kind, t)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        if key[0] == "fts":
            found = self._text_bits(t)
        else:
            found = self._heads_holding(head_needle(term))
        self._remember(key, found)
        return found

    def _remember(self, key: tuple[str, str, str], found: int) -> None:
        self._cache[key] = found
        if len(self._cache) > CACHE:
            self._cache.popitem(last=False)

    def _text_bits(self, t: str) -> int:
        """Rows whose head, tags or body contain ``t``: the persistent index for the rows it covers; for the
        others, a scan of their heads and the in-memory index of the bodies read."""
        flags = self._flags()
        if self.fulltext is not None and len(self.position):
            self.fulltext.flag(t, self.position, flags)
        flags[self.loose[self.loose_heads.rows(t)]] = 1
        flags[self.memory.rows(t)] = 1
        return packed(flags[:-1])

    def _flags(self) -> np.ndarray:
        """A byte per row, and one more where memories the index has no row for are flagged."""
        return np.zeros(len(self.rows) + 1, dtype=np.uint8)

    def _field_bits(self, name: str) -> dict[str, int]:
        """value (lowercased) -> bitset of a field, built on its first use."""
        if name not in self._values:
            self._values[name] = _value_bits(self.rows.codes[name], self.rows.names[name])
        return self._values[name]

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
        fuzz, process = _ranker()
        scored = process.extract(
            " ".join(query.positive_text()),
            [title.lower() for title in self.rows.titles.pick(candidates)],
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
        if not uses_fts(term):
            return self._positive(term)
        t = term.text
        key = ("head", term.kind, t)
        if key not in self._cache:
            if found.bit_count() <= REFINE_HEADS:
                return bits(self.rows.heads.find(t, indexes(found, REFINE_HEADS).tolist()), len(self.rows))
            self._remember(key, self._heads_holding(t))
        return self._cache[key]

    def _heads_holding(self, needle: str) -> int:
        """Rows whose head holds ``needle``, as a bitset: the persistent index's segments of heads answer for the
        memories they cover, and the heads of the others are scanned. One byte is scanned in every head (a range
        of its segments would be a tenth of every offset), as is everything without such segments."""
        flags = self._flags()
        answer = None
        if self.fulltext is not None and len(needle_bytes(needle)) > 1:
            answer = self.fulltext.flag_heads(needle, self.position, flags)
        if answer is None:
            flags[self.words.rows(needle)] = 1
        else:
            others, scan = self._unsegmented(*answer)
            flags[others[scan.rows(needle)]] = 1
        return packed(flags[:-1])

    def _unsegmented(self, covered: int, alive: np.ndarray) -> tuple[np.ndarray, Heads]:
        """The rows the segments do not answer for (no id in the persistent index, above ``covered``, or dead),
        and a scan of their heads; made again when the segments changed. Asked only with a persistent index."""
        if self._outside is None or self._outside[0] is not alive:
            doc = self.rows.doc
            inside = (doc >= 0) & (doc <= covered)
            inside[inside] = alive[doc[inside]]
            rows = np.flatnonzero(~inside)
            same = np.array_equal(rows, self.loose)  # as a rule: the rows with no id in the persistent index
            self._outside = (alive, rows, self.loose_heads if same else Heads(self.rows.heads.take(rows)))
        return self._outside[1], self._outside[2]


# the listed columns as text whatever a damaged index.db holds in them (a number, a blob, nothing)
_SLUG, _TITLE, _TYPE, _SCOPE, _STATE, _SOURCE, _CREATED = (
    f"coalesce(CAST(m.{column} AS TEXT), '')"
    for column in ("slug", "title", "type", "scope_hash", "decay_state", "source", "created_at")
)
_LISTED = ", ".join((_SLUG, _TITLE, _TYPE, _SCOPE, _STATE, _SOURCE, _CREATED))


def _loose_test(store: Store, head_test: Callable[[str], bool]) -> Callable[[int, str, str, str, str], bool]:
    """Is a memory the persistent index does not answer for read, as :meth:`SearchIndex.load` asks with
    ``head_test``? Its head is built as the rows' is, so the test sees what the search would scan."""

    @functools.cache
    def opens(scope: str) -> bool:
        return store.keys.can_open(scope)

    def read(encrypted: int, scope: str, title: str, triggers: str, slug: str) -> bool:
        return bool(encrypted) and opens(scope) or head_test(head_text(title, triggers, slug))

    return read


_UNDECODABLE = "Could not decode to UTF-8"  # sqlite3's error for text that is not UTF-8


def _lenient(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _read_rows(
    store: Store,
    fulltext: FullText | None,
    only: np.ndarray | None,
    sensitive: Collection[str],
    *,
    lenient: bool,
    head_test: Callable[[str], bool] | None = None,
) -> Rows:
    """The rows :meth:`SearchIndex.load` reads, made compact a chunk at a time. ``lenient`` decodes a damaged
    row's text as far as it reads; it is a function called for every column, so it is asked for only once a read
    without it met such a row."""
    builder = Builder()
    with _listing(store, fulltext, only, sensitive, lenient, head_test) as cursor:
        while chunk := cursor.fetchmany(CHUNK):
            slugs, titles, types, scopes, states, sources, created, encrypted, triggers, ids = zip(*chunk, strict=True)
            del chunk
            heads = [head + "\0" for head in map(head_text, titles, triggers, slugs)]
            docs = [
                -1 if enc or scope in sensitive else doc for doc, scope, enc in zip(ids, scopes, encrypted, strict=True)
            ]
            builder.add(slugs, titles, (types, scopes, states, sources), created, encrypted, heads, docs)
    return builder.rows()


@contextmanager
def _listing(
    store: Store,
    fulltext: FullText | None,
    only: np.ndarray | None = None,
    sensitive: Collection[str] = (),
    lenient: bool = False,
    head_test: Callable[[str], bool] | None = None,
) -> Iterator[sqlite3.Cursor]:
    """Every memory's listed columns, newest first, with its id in the persistent index (-1 where it has none): on a
    read-only connection of its own to index.db, the persistent index attached read-only, so that SQLite joins the
    two by the index of its slugs alone (a dict of them was 250 MB of small objects at a million memories, whose
    pages the heap kept long after among the console's; the rows themselves hold the bodies, 3 GB to read). That
    index holds no memory of a scope sensitive when it was opened (``FullText.open`` discards it otherwise), and
    marking a scope sensitive discards it too: a row of a sensitive scope is left out by its own scope.

    With ``only`` (ids in the persistent index), the rows of those ids and of every memory it does not answer
    for: none there, of a ``sensitive`` scope, or encrypted; with ``head_test`` as well, of those memories only the
    ones whose head passes it or whose file is encrypted in a scope this process can open."""
    con = store.index.reader()
    if lenient:
        con.text_factory = _lenient  # a damaged row's text is searched as far as it reads
    try:
        con.execute(TEMP_IN_MEMORY)
        kept, where, args = "-1", "", tuple(sensitive)
        if fulltext is not None:
            con.execute("ATTACH DATABASE ? AS persistent", (f"file:{fulltext.path}?mode=ro",))
            kept = "coalesce(d.id, -1)"
        if fulltext is not None and only is not None:
            con.execute("CREATE TEMP TABLE wanted (id INTEGER PRIMARY KEY)")
            con.executemany("INSERT INTO temp.wanted (id) VALUES (?)", ((int(i),) for i in only))
            loose = f"(d.id IS NULL OR m.body_path LIKE '%.md.enc' OR m.scope_hash IN ({', '.join('?' * len(args))}))"
            if head_test is not None:
                con.create_function("engram_read_loose", 5, _loose_test(store, head_test), deterministic=True)
                loose += f" AND engram_read_loose(m.body_path LIKE '%.md.enc', {_SCOPE}, {_TITLE}, {TRIGGERS}, {_SLUG})"
            where = f"WHERE d.id IN (SELECT id FROM temp.wanted) OR ({loose}) "
        yield con.execute(  # in the order of memoryd's index of creation times: no sort of a million rows
            f"SELECT {_LISTED}, m.body_path LIKE '%.md.enc', {TRIGGERS}, {kept} FROM main.memories m "
            + ("LEFT JOIN persistent.docs d ON d.slug = m.slug " if fulltext is not None else "")
            + where
            + "ORDER BY m.created_at DESC",
            args if where else (),
        )
    finally:
        con.close()


def _body_paths(store: Store, slugs: Sequence[str]) -> dict[str, str]:
    """slug -> body_path from index.db, of ``slugs`` only (a few hundred asked at a time)."""
    found: dict[str, str] = {}
    for at in range(0, len(slugs), 500):
        part = slugs[at : at + 500]
        query = f"SELECT slug, body_path FROM memories WHERE slug IN ({', '.join('?' * len(part))})"
        found.update(store.index.db.execute_sql(query, part).fetchall())
    return found


def _ranker() -> tuple[ModuleType, ModuleType]:
    """rapidfuzz's ``fuzz`` and ``process``, imported by the first query ranked by title: a one-shot broad query
    (``engram search`` of a common word) never ranks, and does not wait for the import."""
    from rapidfuzz import fuzz, process

    return fuzz, process


def uses_fts(term: Term) -> bool:
    """Is a text term looked for in heads, tags and bodies (through the trigram indexes), or in heads alone?"""
    return term.kind in ("substring", "exact") and body_term(term.text)


def head_needle(term: Term) -> str:
    """What a heads-only text term looks for in a head (``padded``: words between single spaces): ``^word``
    starts a word, ``word$`` ends one."""
    needle = " ".join(term.text.split())
    return {"prefix": f" {needle}", "suffix": f"{needle} ", "equal": f" {needle} "}.get(term.kind, needle)


def findable(text: str) -> bool:
    """Can ``text`` occur in a memory? Not with a NUL (it ends each head in the scanned buffer, and FTS5 takes no
    NUL in a phrase) nor with a lone surrogate (stored text is valid UTF-8, and SQLite cannot be asked for one).
    Such a term matches nothing, and the search answers rather than failing on what a paste put in the box."""
    return "\0" not in text and not any("\ud800" <= ch <= "\udfff" for ch in text)


def _value_bits(codes: np.ndarray, names: Sequence[str]) -> dict[str, int]:
    """value (lowercased) -> the bitset of the rows holding it: the values' numbers are mapped to those of their
    lowercased names (values differing only in case are one), numpy sorts the rows by number once, and each
    value's rows are one slice of that order."""
    lowered = sorted({name.lower() for name in names})
    number = {name: k for k, name in enumerate(lowered)}
    which = np.asarray([number[name.lower()] for name in names], dtype=np.int64)[codes] if len(codes) else codes
    order = np.argsort(which, kind="stable")
    counts = np.bincount(which, minlength=len(lowered))
    starts = np.cumsum(counts) - counts
    return {name: bits(order[a : a + n], len(codes)) for name, a, n in zip(lowered, starts, counts, strict=True) if n}


_LINE_MARK = re.compile(r"^[ \t]*(?:#{1,6}|[-*+>]|\d+[.)])[ \t]+", re.MULTILINE)


def snippet(text: str, words: list[str], width: int = 120) -> str:
    """About ``width`` characters of ``text`` around the first of ``words`` it contains (case-insensitive), on
    one line; the start of the text when it contains none. Markdown's line marks (headings, list bullets,
    quotes) are left out: on one line they read as noise."""
    flat = " ".join(_LINE_MARK.sub("", text).split())
    lowered = flat.lower()
    at = min((i for w in words if w and (i := lowered.find(w.lower())) >= 0), default=0)
    start = max(0, at - width // 3)
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")
