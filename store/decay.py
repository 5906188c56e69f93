"""Decay: how memories fade, as memoryd's sweep decides it, and what a person can do about one.

memoryd's rule (one step per run): age = now - (last_recalled_at or created_at), a naive time read as UTC;
alive with a ttl and age > ttl -> dim; dim and age > 30 days -> soft-forgotten; soft-forgotten and age > 90
days -> the file moves to ``forgotten/``. Engram plans a sweep first (a dry run a person can read), then applies
that plan in batches through the write path, writing the state into the frontmatter as well as the index.
memoryd's two slips are fixed: a recall revives a dim memory, and a file already in ``forgotten/`` is never
counted or moved again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from engram.store.domain import DECAY_LISTS, FORGOTTEN_DIR, DecayState
from engram.store.errors import BadInput
from engram.store.frontmatter import MemoryDoc
from engram.store.models import Memory, tuples
from engram.store.service import Store
from engram.store.write.change import Change, FileWrite

DIM_AFTER = timedelta(days=30)
MOVE_AFTER = timedelta(days=90)
BATCH = 50
MOVED = "forgotten"  # a fourth state, shown apart: soft-forgotten and moved to forgotten/ by a sweep


@dataclass(frozen=True)
class Step:
    """One memory's next decay step."""

    slug: str
    title: str
    scope_hash: str
    before: str
    after: str
    move: bool  # to forgotten/
    age_days: int


def state_of(row: Memory) -> str:
    return MOVED if f"/{FORGOTTEN_DIR}/" in row.body_path else row.decay_state


def distribution(store: Store) -> dict[tuple[str, str], Counter[str]]:
    """Decay states per (scope, type), with files already moved to ``forgotten/`` as their own state."""
    found: dict[tuple[str, str], Counter[str]] = {}
    for scope, mtype, state, path in tuples(
        Memory.select(Memory.scope_hash, Memory.type, Memory.decay_state, Memory.body_path)
    ):
        moved = f"/{FORGOTTEN_DIR}/" in path
        found.setdefault((scope, mtype), Counter())[MOVED if moved else state] += 1
    return found


@dataclass(frozen=True)
class Entry:
    slug: str
    title: str
    scope_hash: str
    state: str
    ttl_days: int | None
    expires: str | None  # the day a ttl runs out (from the last recall, else creation)
    last_recalled_at: str | None
    recall_count: int


def listing(store: Store, kind: str, days: int = 14, now: datetime | None = None, limit: int = 500) -> list[Entry]:
    """``expiring``: alive with a ttl running out within ``days``, soonest first; ``dim`` / ``soft-forgotten``:
    memories in that state (not yet moved); ``recalled``: most recently recalled first."""
    if kind not in DECAY_LISTS:
        raise BadInput(f"no list {kind!r} (lists: {', '.join(DECAY_LISTS)})")
    now = _aware(now or store.now())
    query = Memory.select().where(~Memory.body_path.contains(f"/{FORGOTTEN_DIR}/"))
    if kind == "recalled":
        rows = query.where(Memory.last_recalled_at.is_null(False)).order_by(Memory.last_recalled_at.desc())
    elif kind == "expiring":
        rows = query.where((Memory.decay_state == DecayState.ALIVE.value) & Memory.ttl_days.is_null(False))
    else:
        rows = query.where(Memory.decay_state == kind).order_by(Memory.created_at)
    found = []
    for row in rows:
        start = _aware(_parse(row.last_recalled_at) or _parse(row.created_at) or now)
        expires = start + timedelta(days=row.ttl_days) if row.ttl_days is not None else None
        if kind == "expiring" and (expires is None or expires > now + timedelta(days=days)):
            continue
        found.append(
            Entry(
                row.slug,
                row.title,
                row.scope_hash,
                state_of(row),
                row.ttl_days,
                expires.date().isoformat() if expires else None,
                row.last_recalled_at,
                row.recall_count or 0,
            )
        )
    if kind == "expiring":
        found.sort(key=lambda e: e.expires or "")
    return found[:limit]


def plan_sweep(store: Store, now: datetime | None = None) -> list[Step]:
    """What one run of memoryd's sweep would change, without changing anything."""
    now = _aware(now or store.now())
    steps = []
    for row in Memory.select().where(~Memory.body_path.contains(f"/{FORGOTTEN_DIR}/")):
        age = now - _aware(_parse(row.last_recalled_at) or _parse(row.created_at) or now)
        state, after, move = row.decay_state, None, False
        if state == DecayState.ALIVE and row.ttl_days is not None and age > timedelta(days=row.ttl_days):
            after = DecayState.DIM.value
        elif state == DecayState.DIM and age > DIM_AFTER:
            after = DecayState.SOFT_FORGOTTEN.value
        elif state == DecayState.SOFT_FORGOTTEN and age > MOVE_AFTER:
            after, move = DecayState.SOFT_FORGOTTEN.value, True
        if after is not None:
            steps.append(Step(row.slug, row.title, row.scope_hash, state, MOVED if move else after, move, age.days))
    return steps


def apply_sweep(store: Store, steps: list[Step], progress: Callable[[int, int], None] | None = None) -> int:
    """Carry out a planned sweep, ``BATCH`` memories per audited change (``decay_swept``); returns how many."""
    done = 0
    for start in range(0, len(steps), BATCH):
        batch = steps[start : start + BATCH]
        _rewrite_many(
            store,
            [(s.slug, _to_state(s), s.move) for s in batch],
            "decay_swept",
            {"steps": [{"slug": s.slug, "from": s.before, "to": s.after} for s in batch]},
        )
        done += len(batch)
        if progress is not None:
            progress(done, len(steps))
    return done


def revive(store: Store, slug: str) -> None:
    """Back to alive, the recall stamped now (a file in ``forgotten/`` comes back to its type dir)."""
    _rewrite_many(store, [(slug, DecayState.ALIVE, False)], "memory_revived", {}, recall=True)


def record_recall(store: Store, slug: str) -> None:
    """An agent recalled the memory: count it, stamp it, and (unlike memoryd) revive it if it was dim."""
    row = store.memory(slug)
    state = DecayState.ALIVE if row.decay_state == DecayState.DIM else DecayState(row.decay_state)
    _rewrite_many(store, [(slug, state, f"/{FORGOTTEN_DIR}/" in row.body_path)], "memory_recalled", {}, recall=True)


def set_ttl(store: Store, slug: str, ttl_days: int | None) -> None:
    """A ttl in days, or None to pin the memory (it never dims by age)."""
    if ttl_days is not None and ttl_days <= 0:
        raise BadInput("a ttl is a positive number of days (or none, to pin)")
    row = store.memory(slug)
    _rewrite_many(
        store,
        [(slug, DecayState(row.decay_state), f"/{FORGOTTEN_DIR}/" in row.body_path)],
        "ttl_set" if ttl_days else "memory_pinned",
        {"ttl_days": ttl_days},
        ttl=(ttl_days,),
    )


def forget_now(store: Store, slug: str) -> None:
    """Soft-forgotten and moved to ``forgotten/`` at once, as a sweep would after 90 days."""
    _rewrite_many(store, [(slug, DecayState.SOFT_FORGOTTEN, True)], "memory_forgotten", {})


def _rewrite_many(
    store: Store,
    items: list[tuple[str, DecayState, bool]],
    event: str,
    details: dict,
    *,
    recall: bool = False,
    ttl: tuple[int | None] | None = None,
) -> None:
    """Write each memory's new state (and recall or ttl) into its file, in its type dir or ``forgotten/``,
    and the index, as one change."""
    writes: list[tuple[FileWrite, MemoryDoc, str]] = []
    scope = None
    for slug, state, forgotten in items:
        row = store.memory(slug)
        rel = store.safe_relpath(row.body_path)
        doc = store.read_doc(rel)
        changes: dict = {"decay_state": state}
        if recall:
            changes.update(
                last_recalled_at=store.now(), recall_count=max(row.recall_count or 0, doc.frontmatter.recall_count) + 1
            )
        if ttl is not None:
            changes["ttl_days"] = ttl[0]
        new_doc = MemoryDoc(frontmatter=doc.frontmatter.replace(**changes), body=doc.body)
        writes.append((store.memory_write(new_doc, forgotten=forgotten), new_doc, rel))
        scope = row.scope_hash if scope is None or scope == row.scope_hash else None

    def update() -> None:
        store.upsert_memory_rows([(doc, w.relpath) for w, doc, _ in writes])

    store.apply(
        Change(
            event,
            items[0][0] if len(items) == 1 else None,
            scope,
            {**details, "count": len(items)} if len(items) > 1 else details,
            writes=[w for w, _, _ in writes],
            index_update=update,
            removals=[rel for w, _, rel in writes if w.relpath != rel],
        )
    )


def _to_state(step: Step) -> DecayState:
    return DecayState.SOFT_FORGOTTEN if step.move else DecayState(step.after)


def _parse(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
