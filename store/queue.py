"""The review queue as the console shows it: pending promotions, sorted and filtered, and one in detail."""

from __future__ import annotations

import difflib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from peewee import fn

from engram.store import queue_scores
from engram.store.columns import Repeats, dura_average, dura_of, dura_scores, parse_json_list, shared
from engram.store.domain import OPEN_STATUSES
from engram.store.errors import StoreError
from engram.store.models import Memory, Promotion, PromotionNote, table_of, tuples
from engram.store.query import Query, matches, parse
from engram.store.secrets import Finding, kinds_in, scan
from engram.store.sensitive import reasons
from engram.store.service import Store, chunked

if TYPE_CHECKING:
    from engram.store.screen import Screening
    from engram.store.similar import Clusters

SORTS = ("dura_avg", "dura_min", "D", "U", "R", "A", "created", "scope", "type")
DURA_LABELS = {"D": "Durability", "U": "Uniqueness", "R": "Retrievability", "A": "Authority"}  # memoryd's four


@dataclass(frozen=True, slots=True)
class QueueItem:
    id: int
    title: str
    type: str
    scope_hash: str
    dura: dict[str, float]
    created_at: str
    triggers: tuple[str, ...]
    deferred: bool
    defer_reason: str | None
    sensitive: bool

    @property
    def dura_avg(self) -> float:
        return dura_average(self.dura)

    @property
    def dura_min(self) -> float:
        return min((self.dura[k] for k in DURA_LABELS if k in self.dura), default=0.0)


def pending_queue(
    store: Store, sort: str = "dura_avg", query: Query = Query(), clusters: Clusters | None = None
) -> list[QueueItem]:
    """Pending promotions matching ``query``, best first by ``sort``; deferred ones always sink to the end.
    ``clusters`` answers ``dup:`` (found here when not given: a second or two on a large root)."""
    if sort not in SORTS:
        raise StoreError(f"unknown sort {sort!r} (one of {', '.join(SORTS)})")
    notes = (
        {n.promotion_id: n for n in PromotionNote.select().where(PromotionNote.deferred_at.is_null(False))}
        if store.index.has(PromotionNote)
        else {}
    )
    sensitive = store.sensitive_scopes()
    sources = dict(tuples(Memory.select(Memory.slug, Memory.source))) if not query.empty else {}
    now = store.now()
    snoozed = set(snoozed_ids(store))
    items, repeats = [], Repeats()
    columns = [
        Promotion.id,
        Promotion.proposed_title,
        Promotion.proposed_type,
        Promotion.scope_hash,
        Promotion.dura_score,
        Promotion.created_at,
        Promotion.proposed_triggers,
        Promotion.source_session_slug,
    ]
    if not query.empty:  # bodies are most of a promotion's bytes: read only to filter by them
        columns += [Promotion.proposed_body, Promotion.reasoning]
    asked = {term.field for group in query.groups for term in group}
    if "dup" in asked and clusters is None:
        from engram.store.similar import Similarity  # numpy and rapidfuzz: not for the console's first frame

        clusters = Similarity.build(store).clusters()
    screens = _screens(store) if "screen" in asked else None
    for pid, title, ptype, scope, dura, created, triggers, session, *text in tuples(
        Promotion.select(*columns).where(Promotion.status.in_(OPEN_STATUSES))
    ):
        if pid in snoozed:
            continue  # out of the queue until its time (see snooze)
        note = notes.get(pid)
        item = _item((pid, title, ptype, scope, dura, created, triggers), note, sensitive, repeats)
        if query.empty:
            items.append(item)
            continue
        fields = _fields(item, sources.get(session, ""), now)
        if "secret" in asked:  # scanned only when asked: a pattern pass per promotion
            kinds = [kind.lower() for kind in kinds_in(item.title, *item.triggers, text[0] or "")]
            fields["secret"] = ["yes", *kinds] if kinds else ["no"]
        if screens is not None and pid in screens:
            found = screens[pid]
            fields["screen"] = [found.lane, *sorted({f.category for f in found.findings})]
        if clusters is not None:
            fields["dup"] = clusters.kinds(pid)
        if matches(query, _haystack(item, text[0]), fields):
            items.append(item)
    items.sort(key=_sort_key(sort))
    items.sort(key=lambda i: i.deferred)  # stable: deferred sink, each part keeps the chosen order
    return items


def pending_findings(store: Store, ids: Sequence[int]) -> dict[int, list[tuple[str, Finding]]]:
    """Secret-looking strings and personal data in the title, triggers and body of the pending promotions ``ids``,
    by id and field (promotions with none are left out): what a person should see before one becomes a memory."""
    found: dict[int, list[tuple[str, Finding]]] = {}
    columns = (Promotion.id, Promotion.proposed_title, Promotion.proposed_triggers, Promotion.proposed_body)
    for batch in chunked(list(ids), 500):
        query = Promotion.select(*columns).where(Promotion.id.in_(batch), Promotion.status.in_(OPEN_STATUSES))
        for pid, title, triggers, body in tuples(query):
            fields = (("title", title or ""), ("triggers", " ".join(map(str, parse_json_list(triggers)))))
            hits = [(name, f) for name, text in (*fields, ("body", body or "")) for f in scan(text)]
            if hits:
                found[pid] = hits
    return found


def first_page(store: Store, sort: str, limit: int) -> tuple[list[QueueItem], int]:
    """The first ``limit`` items of :func:`pending_queue` without a filter, and how many promotions are pending,
    with the order worked out by SQLite: the console's first frame waits for it, and building every pending
    promotion in Python took a third of a second there (40,000 pending on a large root). A DURA order takes each
    score from those the last full read kept (:mod:`engram.store.queue_scores`) and parses only the JSON of the
    others. memoryd's columns are hand-editable text, and SQLite's JSON is not Python's in every corner (``NaN``,
    JSON5, a repeated key), nor is a kept score the one edited since: the order can then differ, until
    :func:`pending_queue`'s, which follows at once, replaces it. The page's rows are read only once its ids are
    known, so that ordering reads no more of each pending row than its score."""
    if sort not in SORTS:
        raise StoreError(f"unknown sort {sort!r} (one of {', '.join(SORTS)})")
    deferred, snoozed = json.dumps(_deferred_ids(store)), snoozed_ids(store)
    asleep = json.dumps(snoozed)
    try:
        if sort not in _BY_SCORE:
            raise LookupError(sort)
        with queue_scores.with_kept(store) as con:
            order = con.execute(_order_sql(sort, kept=True), (deferred, asleep, limit)).fetchall()
    except (LookupError, sqlite3.Error, OSError):
        order = store.index.db.execute_sql(_order_sql(sort, kept=False), (deferred, asleep, limit)).fetchall()
    columns = "id, proposed_title, proposed_type, scope_hash, dura_score, created_at, proposed_triggers"
    marks = ", ".join("?" * len(order))
    rows = {
        row[0]: row
        for row in store.index.db.execute_sql(
            f"SELECT {columns} FROM {table_of(Promotion)} WHERE id IN ({marks})", [pid for pid, _ in order]
        )
    }
    total = Promotion.select().where(Promotion.status.in_(OPEN_STATUSES), Promotion.id.not_in(snoozed)).count()
    notes = _deferred_notes(store, [pid for pid, deferred in order if deferred])
    sensitive = store.sensitive_scopes()
    repeats = Repeats()
    return [
        _item(rows[pid], notes.get(pid) if deferred else None, sensitive, repeats)
        for pid, deferred in order
        if pid in rows  # deleted between the two reads (by another process): the full read follows
    ], total


def _order_sql(sort: str, kept: bool) -> str:
    """The query of the first page's ids and whether each is deferred (its parameters: the deferred ids and the
    snoozed ids as JSON lists, and how many), by ``sort``; with ``kept``, the scores of ``kept.scores`` stand for
    the JSON of the promotions they hold."""
    scores = ", ".join(f"{_score_sql(key, kept)} AS {key}" for key in DURA_LABELS)
    joined = "LEFT JOIN kept.scores k ON k.id = p.id " if kept else ""
    return (
        "SELECT id, deferred FROM (SELECT p.id, p.scope_hash, p.created_at, p.proposed_type, "
        f"p.id IN (SELECT value FROM json_each(?)) AS deferred, {scores} FROM {table_of(Promotion)} p {joined}"
        f"WHERE p.status IN ('pending', 'quarantined') AND p.id NOT IN (SELECT value FROM json_each(?))) "
        f"ORDER BY deferred, {_ORDER_SQL[sort]}, id LIMIT ?"
    )


def snoozed_ids(store: Store) -> list[int]:
    """The promotions snoozed until a time still to come: out of the queue (memoryd still sees them pending)."""
    if not _snoozing(store):
        return []
    now = store.now().isoformat()
    query = PromotionNote.select(PromotionNote.promotion_id).where(PromotionNote.snoozed_until > now)
    return [pid for (pid,) in tuples(query)]


def next_wake(store: Store) -> str | None:
    """When the first snoozed promotion comes back (UTC, ISO), or None: the console reads the queue again then."""
    if not _snoozing(store):
        return None
    now = store.now().isoformat()
    query = PromotionNote.select(fn.MIN(PromotionNote.snoozed_until)).where(PromotionNote.snoozed_until > now)
    return query.scalar()


def _snoozing(store: Store) -> bool:
    """Whether engram.db has the snooze column (migration 109): a read-only root's older engram.db may not."""
    return store.index.has(PromotionNote) and "snoozed_until" in store.index.columns("engram_promotion_notes", "engram")


def _deferred_ids(store: Store) -> list[int]:
    """The promotions engram's notes say are deferred (kept in engram.db, which the first page's ordering may not
    have attached)."""
    if not store.index.has(PromotionNote):
        return []
    query = PromotionNote.select(PromotionNote.promotion_id).where(PromotionNote.deferred_at.is_null(False))
    return [pid for (pid,) in tuples(query)]


def _item(row: Sequence[Any], note: PromotionNote | None, sensitive: set[str], repeats: Repeats) -> QueueItem:
    """A pending promotion as the queue lists it, from its columns (id, title, type, scope, DURA, created,
    triggers) and engram's note on it (present when it is deferred); ``repeats`` are the scores and triggers the
    read's items so far hold (floats and tuples: never equal to one another)."""
    pid, title, ptype, scope, dura, created, triggers = row
    return QueueItem(
        pid,
        shared(title),
        shared(ptype),
        shared(scope),
        dura_scores(dura, repeats),
        shared(created),
        repeats(tuple(shared(str(t)) for t in parse_json_list(triggers))),
        note is not None,
        note.defer_reason if note else None,
        scope in sensitive,
    )


def _score_sql(key: str, kept: bool) -> str:
    """One DURA score as :func:`dura_scores` reads it: a JSON number of an object, as a float; else NULL. With
    ``kept``, the kept score where the promotion has a row in ``kept.scores`` (SQLite's CASE parses no JSON then)."""
    parsed = (
        f"CASE WHEN json_valid(p.dura_score) AND json_type(p.dura_score) = 'object' THEN "
        f"CASE WHEN json_type(p.dura_score, '$.{key}') IN ('integer', 'real') "
        f"THEN CAST(json_extract(p.dura_score, '$.{key}') AS REAL) END END"
    )
    return f"CASE WHEN k.id IS NULL THEN {parsed} ELSE k.{key} END" if kept else parsed


_PRESENT = " + ".join(f"({key} IS NOT NULL)" for key in DURA_LABELS)
_SUM = " + ".join(f"COALESCE({key}, 0.0)" for key in DURA_LABELS)
_LEAST = ", ".join(f"COALESCE({key}, 9e999)" for key in DURA_LABELS)
_ORDER_SQL = {  # each sort of :func:`_sort_key`, in SQL over the scores selected as D, U, R, A
    "dura_avg": f"COALESCE(({_SUM}) / NULLIF({_PRESENT}, 0), 0.0) DESC",
    "dura_min": f"CASE WHEN {_PRESENT} = 0 THEN 0.0 ELSE min({_LEAST}) END DESC",
    **{key: f"COALESCE({key}, 0.0) DESC" for key in DURA_LABELS},
    "created": "created_at",
    "scope": "scope_hash",
    "type": "proposed_type",
}
_BY_SCORE = {"dura_avg", "dura_min", *DURA_LABELS}  # the sorts kept scores can order


def _deferred_notes(store: Store, ids: list[int]) -> dict[int, PromotionNote]:
    if not ids:
        return {}
    return {n.promotion_id: n for n in PromotionNote.select().where(PromotionNote.promotion_id.in_(ids))}


def _screens(store: Store) -> dict[int, Screening]:
    """Every undecided promotion's screening, as the queue's column shows it (read when a filter asks ``screen:``:
    a millisecond a promotion)."""
    from engram.store.screening import pending_screens  # its rules compile in a tenth of a second

    return pending_screens(store, pending_ids(store))


def pending_ids(store: Store) -> list[int]:
    """The ids of pending promotions, oldest first (for shell completion: no row is read beyond its id)."""
    return [
        pid
        for (pid,) in tuples(
            Promotion.select(Promotion.id).where(Promotion.status.in_(OPEN_STATUSES)).order_by(Promotion.id)
        )
    ]


def _haystack(item: QueueItem, body: str) -> str:
    return " ".join([item.title, *item.triggers, body]).lower()


def queue_query(text: str) -> Query:
    """The queue's filter: the search syntax with ``dura:`` and ``age:`` comparisons."""
    return parse(text, numeric=True)


def _fields(item: QueueItem, source: str, now: datetime) -> dict[str, list[str]]:
    """``source`` is the source session's (claude-code, codex, ...); ``age`` whole days since it was proposed."""
    try:
        created = datetime.fromisoformat(item.created_at.replace("Z", "+00:00"))
    except (ValueError, TypeError, AttributeError):  # memoryd's created_at is ISO-8601; anything else has no age
        age = []
    else:
        age = [str((now - (created if created.tzinfo else created.replace(tzinfo=UTC))).days)]
    return {
        "type": [item.type],
        "scope": [item.scope_hash],
        "state": ["deferred" if item.deferred else "pending"],
        "tag": [],
        "source": [source.lower()],
        "dura": [str(item.dura_avg)],
        "age": age,
    }


def _sort_key(sort: str):
    if sort == "dura_avg":
        return lambda i: (-i.dura_avg, i.id)
    if sort == "dura_min":
        return lambda i: (-i.dura_min, i.id)
    if sort in DURA_LABELS:
        return lambda i: (-i.dura.get(sort, 0.0), i.id)
    if sort == "created":
        return lambda i: (i.created_at, i.id)
    if sort == "scope":
        return lambda i: (i.scope_hash, i.id)
    return lambda i: (i.type, i.id)


@dataclass
class Superseded:
    slug: str
    title: str
    diff: list[str]  # unified diff, old memory body -> proposed body; empty when the old one is locked
    locked: bool = False


@dataclass
class PromotionDetail:
    id: int
    title: str
    type: str
    scope_hash: str
    status: str
    body: str
    reasoning: str | None
    triggers: list[str]
    dura: dict[str, float]
    created_at: str
    source_session_slug: str
    source_title: str | None
    source_excerpt: str | None  # None for a missing or sensitive session (opening one is audited)
    defer_reason: str | None
    supersedes: list[Superseded] = field(default_factory=list)
    screen: Screening | None = None  # the poisoning screen's lane and findings


def promotion_detail(store: Store, promotion_id: int) -> PromotionDetail:
    """Everything the detail view shows. Reads no sensitive plaintext: encrypted sessions and memories are
    named, not opened (opening one is a deliberate, audited action)."""
    p = Promotion.get_or_none(Promotion.id == promotion_id)
    if p is None:
        raise StoreError(f"no promotion #{promotion_id}")
    note = (
        PromotionNote.get_or_none(PromotionNote.promotion_id == promotion_id)
        if store.index.has(PromotionNote)
        else None
    )
    session = Memory.get_or_none(Memory.slug == p.source_session_slug)
    excerpt = None
    if session is not None and not session.body_path.endswith(".md.enc"):
        try:
            excerpt = store.read_doc(store.safe_relpath(session.body_path)).body[:600]
        except (StoreError, OSError):
            excerpt = None
    detail = PromotionDetail(
        p.id,
        p.proposed_title,
        p.proposed_type,
        p.scope_hash,
        p.status,
        p.proposed_body,
        p.reasoning,
        [str(t) for t in parse_json_list(p.proposed_triggers)],
        dura_of(p),
        p.created_at,
        p.source_session_slug,
        session.title if session else None,
        excerpt,
        reasons.shown(store, p.scope_hash, note.defer_reason) if note else None,
    )
    from engram.store.screening import screen_promotion  # its rules compile in a tenth of a second

    detail.screen = screen_promotion(store, p) if p.status in OPEN_STATUSES else None
    for slug in (s for s in parse_json_list(p.proposed_supersedes) if isinstance(s, str)):
        old = Memory.get_or_none(Memory.slug == slug)
        if old is None:
            continue
        if old.body_path.endswith(".md.enc"):
            detail.supersedes.append(Superseded(slug, old.title, [], locked=True))
            continue
        old_body = store.read_doc(store.safe_relpath(old.body_path)).body
        diff = list(
            difflib.unified_diff(
                old_body.splitlines(),
                p.proposed_body.splitlines(),
                fromfile=slug,
                tofile=f"promotion #{p.id}",
                lineterm="",
            )
        )
        detail.supersedes.append(Superseded(slug, old.title, diff))
    return detail
