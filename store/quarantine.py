"""Quarantine: keeping what the poisoning screen found out of memoryd's reach, reversibly, through the one write
path. A pending promotion is held (status ``quarantined``) until a person decides it; a stored memory is kept
out of what memoryd injects into agent sessions and returns from its searches.

memoryd's session-start injection, its search and its timeline all leave out memories whose ``decay_state`` is
``soft-forgotten``, and its rebuild-index reads that state from the file's frontmatter, so the state survives a
rebuild; memoryd's own decay sweep never brings a memory back from it. A quarantined memory is therefore
soft-forgotten in its frontmatter and the index, and engram.db records that the state is engram's quarantine
(not decay), with the state ``release`` restores and the screen's findings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engram.store.domain import DecayState, PromotionStatus
from engram.store.errors import Conflict
from engram.store.memories import with_state
from engram.store.models import Promotion, QuarantinedMemory
from engram.store.service import Store
from engram.store.write.change import Change

if TYPE_CHECKING:
    from engram.store.screen import Screening


@dataclass(frozen=True)
class Held:
    slug: str
    was: str  # the decay state its release restores
    rules: list[str]
    at: str


def quarantine(store: Store, slug: str, rules: list[str] | None = None) -> Held:
    """Quarantine memory ``slug``: soft-forgotten in its file and the index, recorded as engram's quarantine (one
    ``memory_quarantined`` event, naming the screen's rule ids). ``rules`` default to what the screen finds in
    it now (none, for a memory a person quarantines on their own judgement)."""
    if store.index.has(QuarantinedMemory) and QuarantinedMemory.get_or_none(QuarantinedMemory.slug == slug):
        raise Conflict(f"{slug} is already in quarantine (engram release {slug} brings it back)")
    change = with_state(store, slug, DecayState.SOFT_FORGOTTEN)
    if rules is None:
        from engram.store.screening import screened_doc  # the screen's rules compile on first use

        rules = screened_doc(change.doc, change.removal).rules
    held = Held(slug, change.before, rules, store.now().isoformat())

    def index_update() -> None:
        store.upsert_memory_row(change.doc, change.write.relpath)  # the decay state with it (as set_decay)
        QuarantinedMemory.insert(slug=slug, was=held.was, rules=json.dumps(rules), at=held.at).execute()

    store.apply(
        Change(
            "memory_quarantined",
            slug,
            change.scope_hash,
            {"from": held.was, "rules": rules},
            writes=[change.write],
            index_update=index_update,
            removals=[change.removal],
        )
    )
    return held


def release(store: Store, slug: str) -> str:
    """Bring memory ``slug`` back from engram's quarantine, to the decay state it had (one ``memory_released``
    event). Returns that state."""
    record = (
        QuarantinedMemory.get_or_none(QuarantinedMemory.slug == slug) if store.index.has(QuarantinedMemory) else None
    )
    if record is None:
        raise Conflict(f"{slug} is not in engram's quarantine")
    state = DecayState(record.was) if record.was in DecayState._value2member_map_ else DecayState.ALIVE
    change = with_state(store, slug, state)

    def index_update() -> None:
        store.upsert_memory_row(change.doc, change.write.relpath)
        QuarantinedMemory.delete().where(QuarantinedMemory.slug == slug).execute()

    store.apply(
        Change(
            "memory_released",
            slug,
            change.scope_hash,
            {"to": state.value},
            writes=[change.write],
            index_update=index_update,
            removals=[change.removal],
        )
    )
    return state.value


def held_memories(store: Store) -> list[Held]:
    """Every memory in engram's quarantine, oldest first."""
    if not store.index.has(QuarantinedMemory):
        return []
    return [
        Held(r.slug, r.was, [str(x) for x in json.loads(r.rules or "[]")], r.at)
        for r in QuarantinedMemory.select().order_by(QuarantinedMemory.at)
    ]


def hold_promotion(store: Store, promotion_id: int, rules: list[str]) -> None:
    """Move a pending promotion the screen put in quarantine out of memoryd's reach: status ``quarantined``, which
    memoryd's review tools and its session-start injection (which pastes pending titles) do not read, and its
    own reject leaves alone. It stays undecided in engram's queue (one ``promotion_quarantined`` event, naming
    the rule ids)."""
    row = Promotion.get_or_none(Promotion.id == promotion_id)
    if row is None or row.status != PromotionStatus.PENDING:
        raise Conflict(f"promotion #{promotion_id} is not pending: nothing to hold")

    def index_update() -> None:
        Promotion.update(status=PromotionStatus.QUARANTINED.value).where(Promotion.id == promotion_id).execute()

    def still_pending() -> None:
        now = Promotion.get_or_none(Promotion.id == promotion_id)
        if now is None or now.status != PromotionStatus.PENDING:
            raise Conflict(f"promotion #{promotion_id} was decided meanwhile (memoryd?): not held")

    store.apply(
        Change(
            "promotion_quarantined",
            str(promotion_id),
            row.scope_hash,
            {"promotion_id": promotion_id, "rules": rules},
            index_update=index_update,
            precondition=still_pending,
        )
    )


def hold_quarantined(store: Store, screened: dict[int, Screening]) -> list[int]:
    """Hold (:func:`hold_promotion`) each still-pending promotion of ``screened`` in the quarantine lane; the ids
    held. One memoryd decided meanwhile is left as memoryd left it."""
    held = []
    for pid, found in screened.items():
        if found.lane != "quarantine":
            continue
        try:
            hold_promotion(store, pid, found.rules)
        except Conflict:
            continue
        held.append(pid)
    return held
