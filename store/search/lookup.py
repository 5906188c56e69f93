"""One query, asked once: ``engram search`` answers from the persistent index without reading every memory's row.

The console loads every memory's row into a :class:`~engram.store.search.index.SearchIndex` because a person
types many queries against it. A script asks one, in a process of its own, so here the query's terms are first
asked of the persistent index alone (its segments and FTS5 answer for the memories of plain scopes); only the
rows of the memories they name, and of the memories it does not answer for (sensitive scopes, encrypted files,
files it could not read) whose heads hold a term of every AND-group of text terms, are read from index.db, and
the same ``SearchIndex`` answers over those. Of the memories it does not answer for, only an unlocked scope's
encrypted files are searched by their bodies: they are read whatever their heads hold. A memory left out matches
no term of some AND-group, so it could not have been a hit: the hits, their order and the total are the whole
index's. A query no term narrows (only negations, only fields, empty) reads every row, as the console does.

Bringing the persistent index up to date is skipped when no memory's text can have changed since the last sync:
the :func:`stamp` of the root (what index.db records of its memories, the audit log, the folders memory files live
in) is the one that sync left. When it moved, only the memories :func:`moved` names are compared with their files:
those whose listing in index.db is not the one their row was built from (memoryd moves ``updated_at`` or its
fingerprint with every save and update), those whose folder changed (a file added, renamed over or removed), and
the rows of memories gone; a stamp that says nothing of which (another index.db, the sensitive scopes changed,
none kept) has every memory file compared. A file rewritten in place by hand, touching none of them, is read again
by the next sync of every file (the console's start, ``engram check``, or ``engram search --rescan``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable

import numpy as np

from engram.store import fences
from engram.store.errors import StoreError
from engram.store.index import TEMP_IN_MEMORY
from engram.store.query import Query, QuerySyntaxError, Term, parse
from engram.store.search.fulltext import LISTING, SCHEMA, FullText, deferred, sync
from engram.store.search.index import SearchIndex, SearchResult, findable, head_needle, uses_fts
from engram.store.search.rows import Hit, needle_bytes
from engram.store.service import Store
from engram.store.write.change import Change

Progress = Callable[[int, int], None]


class Lookup:
    """The persistent index of one root, opened for a query or a few (see the module's docstring): bring it up to
    date, then ask. Without one (no cache directory to keep it in), every row and readable file is read, as the
    console does without it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.fulltext = FullText.open(store)

    def __enter__(self) -> Lookup:
        return self

    def __exit__(self, *_: object) -> None:
        if self.fulltext is not None:
            self.fulltext.close()

    def refresh(self, *, rescan: bool = False, progress: Progress | None = None) -> bool:
        """Sync the persistent index unless nothing moved since the last full sync (``rescan``: sync anyway);
        True when a sync ran."""
        return self.fulltext is not None and bring_up_to_date(self.store, self.fulltext, rescan, progress)

    def search(self, text: str, limit: int, progress: Progress | None = None) -> SearchResult:
        """The best ``limit`` hits for ``text``, as the console's search would list them; ``progress`` is told how
        the reading of bodies of unlocked sensitive scopes goes."""
        try:
            query = parse(text)
        except QuerySyntaxError as exc:
            return SearchResult([], 0, str(exc))
        only = None if self.fulltext is None else candidates(self.fulltext, query)
        test = None if only is None else head_test(query)
        index = SearchIndex.load(self.store, self.fulltext, only=only, head_test=test)
        index.enrich(self.store, progress)
        return index.search(text, limit)

    def body(self, hit: Hit) -> str | None:
        """A hit's body, for its snippet; None for a locked scope or a file that cannot be read now (the hit
        stands on its title). Reading an unlocked sensitive memory is audited, as opening it in the console is.
        The body is cut from the file's text without parsing its frontmatter (the hit came from index.db)."""
        store = self.store
        if hit.encrypted and not store.keys.can_open(hit.scope_hash):
            return None
        try:
            row = store.memory(hit.slug)
            relpath = store.safe_relpath(row.body_path)
            parts = fences.split(store.read_bytes(relpath).decode("utf-8", "replace"))
        except (StoreError, OSError):
            return None
        if relpath.endswith(".md.enc"):
            store.apply(Change("sensitive_viewed", hit.slug, row.scope_hash, {"path": relpath}))
        return None if isinstance(parts, str) else parts.body


MOVED_MOST = 20_000  # memories compared one by one at most; beyond, every memory is (in slices: see fulltext.SLICE)


def bring_up_to_date(store: Store, fulltext: FullText, rescan: bool = False, progress: Progress | None = None) -> bool:
    """Sync the persistent index with the root unless its stamp says the last sync saw the root as it is; True when
    a sync ran. ``rescan`` compares every memory's file. The stamp is taken before the sync: a change made while it
    runs moves the next one."""
    now = stamp(store)
    before = fulltext.stamp()
    if not rescan and before == now:
        return False
    only = None if rescan else moved(store, fulltext, before, now)
    sync(store, only=only, progress=progress, stamp=now)
    return True


def moved(store: Store, fulltext: FullText, before: str | None, now: str) -> list[str] | None:
    """The slugs of the memories whose row may be behind, from the stamp the last sync left (``before``) to the
    root's (``now``): see the module's docstring. None where every memory must be compared: no stamp of this kind
    kept, another index.db, other sensitive scopes or schema, a build of the index cut short, more than MOVED_MOST
    of them, or an index SQLite cannot read now."""
    try:
        then = json.loads(before or "")
    except ValueError:
        return None
    parts = json.loads(now)
    if not isinstance(then, dict) or any(then.get(key) != parts[key] for key in _WHOLE):
        return None
    if deferred(fulltext.con):  # a build cut short: a full sync finishes it (FTS5 lacks the rows it wrote)
        return None
    root = str(store.layout.root)
    folders = tuple(
        os.path.relpath(key.removeprefix(_FOLDER), root) + "/"
        for key in then.keys() | parts.keys()
        if key.startswith(_FOLDER) and then.get(key) != parts.get(key)
    )
    con = store.index.reader()
    try:
        con.execute(TEMP_IN_MEMORY)
        con.execute("ATTACH DATABASE ? AS persistent", (f"file:{fulltext.path}?mode=ro",))
        con.create_function("engram_in_moved", 1, lambda path: str(path).startswith(folders), deterministic=True)
        found = con.execute(
            "SELECT m.slug FROM main.memories m LEFT JOIN persistent.docs d ON d.slug = m.slug "
            "WHERE substr(m.body_path, -3) = '.md' AND m.scope_hash NOT IN (SELECT value FROM json_each(?)) "
            f"AND ({'engram_in_moved(m.body_path) OR ' if folders else ''}d.listing IS NOT {LISTING}) "
            "UNION SELECT d.slug FROM persistent.docs d LEFT JOIN main.memories m ON m.slug = d.slug "
            "WHERE m.body_path IS NOT d.path OR m.scope_hash IS NOT d.scope "
            f"LIMIT {MOVED_MOST + 1}",
            (json.dumps(sorted(store.sensitive_scopes())),),
        )
        slugs = [slug for (slug,) in found]
    except sqlite3.Error:
        return None  # the full sync says what is wrong, or discards a damaged index and builds it again
    finally:
        con.close()
    return None if len(slugs) > MOVED_MOST else slugs


_WHOLE = ("schema", "index", "sensitive")  # stamp parts whose change has every memory compared
_FOLDER = "folder:"  # the stamp's part of a folder memory files live in, by its path


def stamp(store: Store) -> str:
    """What says whether the memories' searched text can have changed, without reading every row or stat-ing every
    file (memoryd rewrites index.db all day for recalls and decay, which change no text), as JSON: its parts say
    which folders moved (see :func:`moved`).

    - index.db's identity (memoryd's rebuild-index makes a new file) and, of its rows, the count, the newest
      creation and update (memoryd's ``mem_update`` stamps the time it rewrites a memory), the total length of
      titles and paths, and the count of triggers;
    - the audit log's size (every write engram makes appends an event);
    - the time of every scope's folder and type folder (a file added, renamed over or removed changes it);
    - the sensitive scopes, and the schema the persistent index is built to."""
    layout = store.layout

    def seen(path: str) -> list[int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return [st.st_ino, st.st_size, st.st_mtime_ns]

    db = store.index.db
    rows = db.execute_sql(
        "SELECT count(*), max(updated_at), max(created_at), total(length(title)), total(length(body_path)) "
        "FROM memories"
    ).fetchone()
    parts: dict[str, object] = {
        "schema": SCHEMA,
        "index": _inode(str(store.index.path)),
        "rows": list(rows),
        "triggers": db.execute_sql("SELECT count(*) FROM triggers").fetchone()[0],
        "audit": (seen(str(layout.audit_path)) or [0, -1])[1],
        "sensitive": sorted(store.sensitive_scopes()),
    }
    scopes = layout.scopes_dir
    parts["scopes"] = seen(str(scopes))
    for scope in _folders(str(scopes)):
        parts[_FOLDER + scope] = seen(scope)
        for folder in _folders(scope):
            parts[_FOLDER + folder] = seen(folder)
    return json.dumps(parts, sort_keys=True)


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _folders(path: str) -> list[str]:
    try:
        with os.scandir(path) as entries:
            return sorted(e.path for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def candidates(fulltext: FullText, query: Query) -> np.ndarray | None:
    """The ids of the persistent index that can answer ``query``: of every AND-group whose terms the index can
    answer alone, the memories matching one of its terms. None when no group narrows it (read every row)."""
    size = fulltext.highest() + 1
    itself = np.arange(size, dtype=np.int64)  # id -> "row": the flags come back by id
    wanted: np.ndarray | None = None
    for group in query.groups:
        either = np.zeros(size + 1, dtype=np.uint8)
        for term in group:
            flags = _flags(fulltext, term, itself)
            if flags is None:
                break
            either |= flags
        else:
            wanted = either if wanted is None else wanted & either
    return None if wanted is None else np.flatnonzero(wanted[:-1])


def head_test(query: Query) -> Callable[[str], bool] | None:
    """What a memory searched by its head alone (one the persistent index does not answer for, whose body the
    search does not read) must hold to match ``query``: for every AND-group of text terms, a term's text in its
    head, as :class:`~engram.store.search.index.SearchIndex` scans heads for it. None when no group is of text
    terms alone (a negation or a field in each): any head may match."""
    groups = [
        [term.text if uses_fts(term) else head_needle(term) for term in group if findable(term.text)]
        for group in query.groups
        if not any(term.negate or term.field is not None for term in group)
    ]
    if not groups:
        return None

    def holds(head: str) -> bool:
        return all(any(needle and needle in head for needle in needles) for needles in groups)

    return holds


def _flags(fulltext: FullText, term: Term, itself: np.ndarray) -> np.ndarray | None:
    """A byte per id (and one for none) flagging the memories the term can match, as ``SearchIndex`` matches
    it; None for a term the persistent index cannot narrow (a negation, a field)."""
    if term.negate or term.field is not None:
        return None
    flags = np.zeros(len(itself) + 1, dtype=np.uint8)
    if not findable(term.text):
        return flags
    if uses_fts(term):
        fulltext.flag(term.text, itself, flags)
        return flags
    needle = head_needle(term)
    answer = fulltext.flag_heads(needle, itself, flags) if len(needle_bytes(needle)) > 1 else None
    if answer is None:  # no segments of heads: only a scan of every head answers
        return None
    covered, alive = answer  # the ids above ``covered``, and the dead below, are scanned by SearchIndex
    flags[covered + 1 : len(itself)] = 1
    below = min(len(alive), len(itself))
    flags[:below][~alive[:below]] = 1
    return flags
