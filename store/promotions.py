"""The promotion queue: proposals of durable memories distilled from sessions, approved or rejected by a person.

Approval does what memoryd's does, safely: it writes ``promoted-<id>-<source slug>.md`` first, then flips the
status and sets ``decided_at`` in the same transaction as the new index row, refuses rows that are not
pending, and applies ``proposed_supersedes`` (memoryd ignores them).
"""

from __future__ import annotations

import json
from datetime import datetime
from dataclasses import dataclass
from typing import Any

from store.domain import MemoryType, PromotionStatus
from store.errors import Conflict, NotFound
from store.frontmatter import Frontmatter, MemoryDoc
from store.index import Memory, Promotion, SupersedesChain
from store.service import Change, Store

DURA_KEYS = ("D", "U", "R", "A")


@dataclass(frozen=True)
class Proposal:
    """What an agent (or an importer) proposes for promotion."""

    source_session_slug: str
    type: MemoryType
    title: str
    body: str
    triggers: list[str]
    dura: dict[str, float]
    reasoning: str | None
    scope_hash: str
    supersedes: tuple[str, ...] = ()


def parse_json_list(text: str | None) -> list[Any]:
    """A JSON array column; anything else reads as empty (memoryd's columns are hand-editable text)."""
    try:
        value = json.loads(text or "[]")
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def dura_of(promotion: Promotion) -> dict[str, float]:
    """DURA scores as floats; memoryd writes ints at times and may add keys."""
    try:
        raw = json.loads(promotion.dura_score or "{}")
    except json.JSONDecodeError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: float(v) for k, v in raw.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def promoted_slug(promotion: Promotion) -> str:
    return f"promoted-{promotion.id}-{promotion.source_session_slug}"


def promoted_type(promotion: Promotion) -> MemoryType:
    """memoryd defaults to ``decision`` for a proposed type it does not know (e.g. ``insight``)."""
    try:
        return MemoryType(promotion.proposed_type)
    except ValueError:
        return MemoryType.DECISION


def promoted_doc(promotion: Promotion, now: datetime) -> MemoryDoc:
    """The memory file an approval writes, as memoryd writes it."""
    fm = Frontmatter(
        title=promotion.proposed_title, slug=promoted_slug(promotion), type=promoted_type(promotion),
        scope_hash=promotion.scope_hash,
        triggers=[str(t) for t in parse_json_list(promotion.proposed_triggers)],
        source="promotion", created_at=now, promoted_from=promotion.source_session_slug,
        supersedes=[s for s in parse_json_list(promotion.proposed_supersedes) if isinstance(s, str)],
    )
    return MemoryDoc(frontmatter=fm, body=promotion.proposed_body)


def propose(store: Store, proposal: Proposal) -> int:
    """Queue a proposal as a pending promotion (importers and the demo use this)."""
    if Memory.get_or_none(Memory.slug == proposal.source_session_slug) is None:
        raise NotFound(f"no session memory {proposal.source_session_slug!r} to promote from")
    created: dict[str, int] = {}

    def index_update() -> None:
        created["id"] = Promotion.insert(**promotion_values(proposal, store.now().isoformat())).execute()

    store.apply(Change("promotion_proposed", proposal.source_session_slug, proposal.scope_hash,
                       {"type": proposal.type.value, "title": proposal.title}, index_update=index_update))
    return created["id"]


def promotion_values(proposal: Proposal, created_at: str) -> dict[str, Any]:
    """The promotions row for a proposal, JSON written as memoryd writes it (ASCII escapes)."""
    return dict(
        source_session_slug=proposal.source_session_slug, proposed_type=proposal.type.value,
        proposed_title=proposal.title, proposed_body=proposal.body,
        proposed_triggers=json.dumps(list(proposal.triggers)), dura_score=json.dumps(proposal.dura),
        reasoning=proposal.reasoning, proposed_supersedes=json.dumps(list(proposal.supersedes)),
        scope_hash=proposal.scope_hash, status=PromotionStatus.PENDING.value, created_at=created_at,
    )


def _pending(promotion_id: int) -> Promotion:
    promotion = Promotion.get_or_none(Promotion.id == promotion_id)
    if promotion is None:
        raise NotFound(f"no promotion #{promotion_id}")
    if promotion.status != PromotionStatus.PENDING:
        raise Conflict(f"promotion #{promotion_id} is already {promotion.status}")
    return promotion


def approve(store: Store, promotion_id: int) -> str:
    """Approve a pending promotion: write its memory, then mark it approved. Returns the new slug."""
    promotion = _pending(promotion_id)
    return write_promoted(store, promotion, "promotion_approved")


def write_promoted(store: Store, promotion: Promotion, event_type: str) -> str:
    """Write a promotion's memory and mark it approved (also used by repair for approvals memoryd left unwritten)."""
    doc = promoted_doc(promotion, store.now())
    slug = doc.frontmatter.slug
    write = store.memory_write(doc)
    supersedes = [s for s in doc.frontmatter.supersedes if Memory.get_or_none(Memory.slug == s) is not None]
    now = store.now().isoformat()

    def index_update() -> None:
        store.upsert_memory_row(doc, write.relpath)
        Promotion.update(status=PromotionStatus.APPROVED.value, decided_at=promotion.decided_at or now).where(
            Promotion.id == promotion.id).execute()
        for older in supersedes:
            SupersedesChain.insert(
                newer_memory_id=slug, older_memory_id=older, entity_id=None, confidence=1.0, decided_at=now,
                decided_by="user", reason=f"approved promotion #{promotion.id}",
            ).on_conflict_replace().execute()

    store.apply(Change(event_type, slug, promotion.scope_hash,
                       {"promotion_id": promotion.id, "supersedes": supersedes},
                       writes=[write], index_update=index_update))
    return slug


def reject(store: Store, promotion_id: int, reason: str | None = None) -> None:
    """Reject a pending promotion; nothing is written but the status, ``decided_at`` and the audit event."""
    promotion = _pending(promotion_id)

    def index_update() -> None:
        Promotion.update(status=PromotionStatus.REJECTED.value, decided_at=store.now().isoformat()).where(
            Promotion.id == promotion_id).execute()

    store.apply(Change("promotion_rejected", str(promotion_id), promotion.scope_hash,
                       {"source_session_slug": promotion.source_session_slug, "reason": reason},
                       index_update=index_update))
