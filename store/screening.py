"""The poisoning screen applied to a root: pending promotions as they wait in the queue, and the long-term
memories memoryd already keeps (it approves proposals of a high DURA average unseen, so poisoned text can be
there before anyone looked). The screen itself is pure (:mod:`engram.store.screen`); this module reads what it
screens, and never reads a sensitive memory it has no key for."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from peewee import fn

from engram.store import screen_cache
from engram.store.allowlist import allowed_hosts
from engram.store.columns import parse_json_list
from engram.store.domain import OPEN_STATUSES, MemoryType
from engram.store.drift.examine import examined
from engram.store.drift.scan import FileEntry
from engram.store.errors import StoreError
from engram.store.frontmatter import MemoryDoc
from engram.store.lazy import lazy_module
from engram.store.models import Memory, Promotion, tuples
from engram.store.screen import CLEAN, Item, ScreenedText, Screening
from engram.store.screen.verdict import context_signals
from engram.store.service import Store, chunked

if TYPE_CHECKING:
    from engram.store.screen import screen as screener
else:
    screener = lazy_module("engram.store.screen.screen")  # the rules: compiled for a text not kept as clean


@dataclass(frozen=True)
class Screened:
    """One item screened: a pending promotion (``id``) or a memory (``slug``)."""

    kind: str  # "promotion" or "memory"
    key: str  # the promotion's id, or the memory's slug
    title: str
    scope_hash: str
    screening: Screening

    def as_json(self) -> dict[str, object]:
        name = "id" if self.kind == "promotion" else "slug"
        value: object = int(self.key) if self.kind == "promotion" else self.key
        return {name: value, "kind": self.kind, "scope": self.scope_hash, **self.screening.as_json()}


def promotion_item(
    title: str, body: str, triggers: str, reasoning: str | None, source: str = "", signals: Sequence[str] = ()
) -> Item:
    """What the screen reads of a promotion row (memoryd keeps its triggers as a JSON list)."""
    return Item(
        title=title or "",
        body=body or "",
        triggers=[str(t) for t in parse_json_list(triggers)],
        reasoning=reasoning or "",
        source=source,
        signals=tuple(signals),
    )


def screened_doc(doc: MemoryDoc, relpath: str) -> Screening:
    """The screen of a memory file's content."""
    return screener.screen(_memory_item(doc))


def screened_text(kept: str, doc: MemoryDoc, relpath: str) -> ScreenedText:
    """The screen of a memory file's content, passed over when the cache of clean texts at ``kept`` holds it (run
    by worker processes: a module-level function, handed the cache's path)."""
    item = _memory_item(doc)
    key = screen_cache.text_key(item)
    if key is not None and key in screen_cache.kept_in(kept):
        return ScreenedText(Screening(CLEAN, signals=context_signals(item)), None)
    found = screener.screen(item)
    return ScreenedText(found, None if found.findings else key)


def _memory_item(doc: MemoryDoc) -> Item:
    front = doc.frontmatter
    return Item(title=front.title or "", body=doc.body, triggers=list(front.triggers), source=front.source)


def screen_promotion(
    store: Store,
    promotion: Promotion,
    *,
    title: str | None = None,
    body: str | None = None,
    triggers: list[str] | None = None,
) -> Screening:
    """The screening of ``promotion`` (with ``title``, ``body`` or ``triggers`` as edited, where given) as the
    queue shows it: its text, its context signals and the allowlist, so that the queue's lane, the detail's and
    the one an approval checks are the same."""
    row = (
        promotion.id,
        promotion.proposed_title if title is None else title,
        promotion.proposed_body if body is None else body,
        promotion.proposed_triggers if triggers is None else json.dumps(triggers),
        promotion.reasoning,
        promotion.scope_hash,
        promotion.source_session_slug,
        promotion.created_at,
    )
    return next(_screened_rows(store, [row]))[1]


BURST = 5  # proposals from one session on one day beyond which each of them carries a signal


class Signals:
    """Context the screen weighs beside a promotion's text (never deciding alone): a title proposed again after a
    person rejected it, and a burst of proposals from one session on one day. Read for the promotions about to
    be screened: only their titles and their sessions are looked up, so a batch costs in proportion to itself,
    not to the root's every promotion."""

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        titles = sorted({(row[1] or "").strip().lower() for row in rows})
        sessions = sorted({row[6] for row in rows})
        lowered = fn.lower(fn.trim(Promotion.proposed_title))
        self.rejected = {
            title
            for part in chunked(titles, 500)
            for (title,) in tuples(
                Promotion.select(lowered).where(Promotion.status == "rejected", lowered.in_(part)).distinct()
            )
        }
        day = fn.substr(Promotion.created_at, 1, 10)
        self.bursts = {
            (session, date): count
            for part in chunked(sessions, 500)
            for session, date, count in tuples(
                Promotion.select(Promotion.source_session_slug, day, fn.count(Promotion.id))
                .where(Promotion.status.in_(OPEN_STATUSES), Promotion.source_session_slug.in_(part))
                .group_by(Promotion.source_session_slug, day)
                .having(fn.count(Promotion.id) > BURST)
            )
        }

    def of(self, title: str, session: str, created_at: str) -> list[str]:
        found = []
        if (title or "").strip().lower() in self.rejected:
            found.append("proposed again after a person rejected the same title")
        count = self.bursts.get((session, (created_at or "")[:10]))
        if count:
            found.append(f"one of {count} proposals from its session that day")
        return found


# what the screen reads of a promotion row, and what it says where: id, title, body, triggers, reasoning, scope,
# session, created
PROMOTION_COLUMNS = (
    Promotion.id,
    Promotion.proposed_title,
    Promotion.proposed_body,
    Promotion.proposed_triggers,
    Promotion.reasoning,
    Promotion.scope_hash,
    Promotion.source_session_slug,
    Promotion.created_at,
)


SCREEN_BATCH = 200  # promotions screened between two writes of the texts found clean


def _screened_rows(store: Store, rows: Sequence[tuple[Any, ...]]) -> Iterator[tuple[tuple[Any, ...], Screening]]:
    """Each promotion row of :data:`PROMOTION_COLUMNS` with its screening: its text, its context signals and the
    allowlist. A text kept as clean (see :mod:`engram.store.screen_cache`) is not screened again; the rules are
    compiled only for a text that is not."""
    signals, allowed = Signals(rows), allowed_hosts(store)
    for batch in chunked(list(rows), SCREEN_BATCH):
        items = [
            promotion_item(title, body, triggers, reasoning, signals=signals.of(title, session, created))
            for _, title, body, triggers, reasoning, _, session, created in batch
        ]
        keys = list(map(screen_cache.text_key, items))
        clean = screen_cache.known_clean(store, keys)
        found = [
            Screening(CLEAN, signals=context_signals(item)) if key in clean else screener.screen(item, allowed)
            for item, key in zip(items, keys, strict=True)
        ]
        screen_cache.keep_clean(
            store, (key for key, verdict in zip(keys, found, strict=True) if key not in clean and not verdict.findings)
        )
        yield from zip(batch, found, strict=True)


def pending_screens(store: Store, ids: Sequence[int]) -> dict[int, Screening]:
    """The screening of each pending promotion of ``ids``."""
    out: dict[int, Screening] = {}
    for batch in chunked(list(ids), 500):
        query = Promotion.select(*PROMOTION_COLUMNS).where(Promotion.id.in_(batch), Promotion.status.in_(OPEN_STATUSES))
        out.update((row[0], found) for row, found in _screened_rows(store, list(tuples(query))))
    return out


@dataclass
class Tally:
    """What a screen of a root covered: counts by kind and lane, and the memories it could not read."""

    promotions: int = 0
    memories: int = 0
    locked: int = 0  # memories of sensitive scopes without a key: not read
    unreadable: int = 0  # damaged or missing files (``engram check`` reports them)

    def add(self, item: Screened) -> None:
        if item.kind == "promotion":
            self.promotions += 1
        else:
            self.memories += 1


class Kept:
    """The cache of clean texts while a root is screened: where the workers read it, and the texts found clean
    meanwhile, written a batch at a time."""

    BATCH = 500

    def __init__(self, store: Store) -> None:
        self.store, self.path, self.new = store, str(screen_cache.cache_path(store)), list[bytes]()

    def took(self, screened: ScreenedText) -> Screening:
        if screened.clean_key is not None:
            self.new.append(screened.clean_key)
            if len(self.new) >= self.BATCH:
                self.flush()
        return screened.screening

    def flush(self) -> None:
        screen_cache.keep_clean(self.store, self.new)
        self.new = []


def screen_root(
    store: Store,
    since: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    tally: Tally | None = None,
) -> Iterator[Screened]:
    """Every pending promotion, then every long-term memory (session captures are the raw material, not what is
    injected), created at or after ``since`` (an ISO date or time), screened. Memories of locked sensitive
    scopes are counted in ``tally``, not read."""
    tally = tally if tally is not None else Tally()
    promotions = Promotion.select(*PROMOTION_COLUMNS).where(Promotion.status.in_(OPEN_STATUSES))
    memories = Memory.select(Memory.slug, Memory.title, Memory.scope_hash, Memory.body_path, Memory.source).where(
        Memory.type != MemoryType.SESSION.value
    )
    if since:
        promotions = promotions.where(Promotion.created_at >= since)
        memories = memories.where(Memory.created_at >= since)
    pending = list(tuples(promotions.order_by(Promotion.id)))
    kept = list(tuples(memories.order_by(Memory.created_at)))
    total = len(pending) + len(kept)
    promoted = (
        Screened("promotion", str(pid), title or "", scope, found)
        for (pid, title, *_, scope, _, _), found in _screened_rows(store, pending)
    )
    for done, item in enumerate(itertools.chain(promoted, _screened_memories(store, kept, tally)), 1):
        if item is not None:
            tally.add(item)
            yield item
        if progress and done % 200 == 0:
            progress(done, total)
    if progress:
        progress(total, total)


def _screened_memories(store: Store, rows: list[tuple[Any, ...]], tally: Tally) -> Iterator[Screened | None]:
    """Each memory of ``rows`` (slug, title, scope, path, source) screened; None for one not read (counted in
    ``tally``: locked, or unreadable)."""
    sensitive, allowed, clean = store.sensitive_scopes(), allowed_hosts(store), Kept(store)
    plain = [m for m in rows if m[2] not in sensitive]
    held = [m for m in rows if m[2] in sensitive]
    # plain files are read, parsed and screened by worker processes (one a core, from a few thousand files); the
    # text of a sensitive scope never leaves this process
    entries = [FileEntry(m[3], m[2], m[3].split("/")[2] if m[3].count("/") >= 3 else "", False) for m in plain]
    make = functools.partial(screened_text, clean.path)
    try:
        for (slug, title, scope, _, _), (_, outcome) in zip(plain, examined(store.layout, entries, make), strict=True):
            if not isinstance(outcome, ScreenedText):
                tally.unreadable += 1
                yield None
                continue
            yield Screened("memory", slug, title, scope, screener.relaxed(clean.took(outcome), allowed))
        for slug, title, scope, body_path, _ in held:
            if not store.keys.can_open(scope):
                tally.locked += 1
                yield None
                continue
            try:
                doc = store.read_doc(store.safe_relpath(body_path))
            except (StoreError, OSError, ValueError):
                tally.unreadable += 1
                yield None
                continue
            found = screener.relaxed(clean.took(screened_text(clean.path, doc, body_path)), allowed)
            yield Screened("memory", slug, doc.frontmatter.title or title, scope, found)
    finally:
        clean.flush()
        screen_cache.forget_kept()
