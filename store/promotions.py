"""The promotion queue: proposals of durable memories distilled from sessions, approved or rejected by a person.

Approval does what memoryd's does, safely: it writes ``promoted-<id>-<source slug>.md`` first, then flips the
status and sets ``decided_at`` in the same transaction as the new index row, refuses rows that are not
pending, and applies ``proposed_supersedes`` (memoryd ignores them).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from engram.store import coexist, secrets
from engram.store.columns import parse_json_list
from engram.store.domain import OPEN_STATUSES, DecayState, MemoryType, PromotionStatus
from engram.store.errors import BadInput, Conflict, NotFound, Quarantined, StoreError
from engram.store.frontmatter import Frontmatter, MemoryDoc, field_problem
from engram.store.models import Memory, Promotion, PromotionNote, SupersedesChain, Trigger
from engram.store.sensitive import keyproof, reasons
from engram.store.service import Store
from engram.store.write.change import Change

if TYPE_CHECKING:
    from engram.store.screen import Screening

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


def promoted_slug(promotion: Promotion) -> str:
    return slug_promoted_from(promotion.id, promotion.source_session_slug)


def slug_promoted_from(promotion_id: int, source_session_slug: str) -> str:
    """The slug memoryd gives the memory it writes when it approves a promotion."""
    return f"promoted-{promotion_id}-{source_session_slug}"


def promoted_type(promotion: Promotion) -> MemoryType:
    """memoryd defaults to ``decision`` for a proposed type it does not know (e.g. ``insight``)."""
    try:
        return MemoryType(promotion.proposed_type)
    except ValueError:
        return MemoryType.DECISION


@dataclass(frozen=True)
class Edits:
    """What a person changed before approving; None keeps the proposal's value."""

    title: str | None = None
    type: MemoryType | None = None
    triggers: list[str] | None = None
    body: str | None = None


def promoted_doc(promotion: Promotion, now: datetime, edits: Edits = Edits()) -> MemoryDoc:
    """The memory file an approval writes, as memoryd writes it (with the person's edits, if any). A promotion
    row no memory can come from (a scope or slug climbing out of its directory, a bad date) is refused whole."""
    try:
        fm = _promoted_frontmatter(promotion, now, edits)
    except ValidationError as exc:
        raise BadInput(
            f"promotion #{promotion.id} cannot become a memory: {field_problem(exc)}; nothing changed"
        ) from None
    return MemoryDoc(frontmatter=fm, body=edits.body if edits.body is not None else promotion.proposed_body)


def proposed_triggers(promotion: Promotion) -> list[str]:
    return [str(t) for t in parse_json_list(promotion.proposed_triggers)]


def _promoted_frontmatter(promotion: Promotion, now: datetime, edits: Edits) -> Frontmatter:
    return Frontmatter(
        title=edits.title if edits.title is not None else promotion.proposed_title,
        slug=promoted_slug(promotion),
        type=edits.type or promoted_type(promotion),
        scope_hash=promotion.scope_hash,
        triggers=edits.triggers if edits.triggers is not None else proposed_triggers(promotion),
        source="promotion",
        created_at=now,
        promoted_from=promotion.source_session_slug,
        supersedes=[s for s in parse_json_list(promotion.proposed_supersedes) if isinstance(s, str)],
    )


def propose(store: Store, proposal: Proposal) -> int:
    """Queue a proposal as a pending promotion (importers and the demo use this)."""
    if Memory.get_or_none(Memory.slug == proposal.source_session_slug) is None:
        raise NotFound(f"no session memory {proposal.source_session_slug!r} to promote from")
    details: dict[str, Any] = {"type": proposal.type.value, "title": proposal.title}

    def index_update() -> None:  # the event names the promotion it made, so a reader can look its title up
        details["promotion_id"] = Promotion.insert(**promotion_values(proposal, store.now().isoformat())).execute()

    store.apply(
        Change(
            "promotion_proposed",
            proposal.source_session_slug,
            proposal.scope_hash,
            details,
            index_update=index_update,
        )
    )
    return int(details["promotion_id"])


def promotion_values(proposal: Proposal, created_at: str) -> dict[str, Any]:
    """The promotions row for a proposal, JSON written as memoryd writes it (ASCII escapes)."""
    return dict(
        source_session_slug=proposal.source_session_slug,
        proposed_type=proposal.type.value,
        proposed_title=proposal.title,
        proposed_body=proposal.body,
        proposed_triggers=json.dumps(list(proposal.triggers)),
        dura_score=json.dumps(proposal.dura),
        reasoning=proposal.reasoning,
        proposed_supersedes=json.dumps(list(proposal.supersedes)),
        scope_hash=proposal.scope_hash,
        status=PromotionStatus.PENDING.value,
        created_at=created_at,
    )


def _still_pending(promotion_id: int) -> Callable[[], None]:
    """A :class:`Change` precondition: the promotion is undecided (pending, or held in engram's quarantine) when
    the write transaction starts (memoryd decides promotions without looking at their status, so it may have
    decided this one meanwhile)."""
    return _still_status(promotion_id, *OPEN_STATUSES)


def _still_status(promotion_id: int, *statuses: str) -> Callable[[], None]:
    def check() -> None:
        row = Promotion.get_or_none(Promotion.id == promotion_id)
        if row is None or row.status not in statuses:
            now = "gone" if row is None else row.status
            raise Conflict(
                f"promotion #{promotion_id} was decided meanwhile by another writer (memoryd?): it is "
                f"{now} now; nothing was changed"
            )

    return check


def _pending(store: Store, promotion_id: int) -> Promotion:
    promotion = Promotion.get_or_none(Promotion.id == promotion_id)
    if promotion is None and store.index.rebuilt:
        raise NotFound(
            f"no promotion #{promotion_id} in index.db: memoryd's rebuild-index may have removed it "
            "(`engram repair` restores the promotions engram kept), nothing changed"
        )
    if promotion is None:
        raise NotFound(f"no promotion #{promotion_id}")
    if promotion.status not in OPEN_STATUSES:
        raise Conflict(f"promotion #{promotion_id} is already {promotion.status}")
    return promotion


@dataclass(frozen=True)
class Approved:
    """What an approval did, so it can be undone: the new memory, and the decay states it dimmed."""

    promotion_id: int
    slug: str
    relpath: str
    fingerprint: str  # of the memory as written: undo refuses once someone has changed it
    dimmed: dict[str, str]  # older slug -> its decay state before


@dataclass(frozen=True)
class Rejected:
    promotion_id: int
    reason_dropped: bool = False  # a reason was given, and its sensitive scope's key is not at hand to seal it


@dataclass(frozen=True)
class Deferred:
    promotion_id: int
    before: tuple[str | None, str | None]  # (deferred_at, defer_reason) it had
    reason_dropped: bool = False  # as Rejected's


@dataclass(frozen=True)
class Merged:
    promotion_id: int
    into: str
    before: MemoryDoc  # the target's content before the merge (held in memory only)
    fingerprint: str  # the target's fingerprint after the merge


@dataclass(frozen=True)
class Snoozed:
    promotion_id: int
    before: str | None  # the snoozed_until it had


Decision = Approved | Rejected | Deferred | Merged | Snoozed


def reasons_dropped(decisions: Iterable[Decision]) -> list[int]:
    """The promotions among ``decisions`` whose reason was not kept: their sensitive scope was locked (see
    :mod:`engram.store.sensitive.reasons`), which the person is told."""
    return [d.promotion_id for d in decisions if isinstance(d, Rejected | Deferred) and d.reason_dropped]


def target_scopes(store: Store, promotion_ids: Iterable[int]) -> set[str]:
    """The scopes these promotions would be written into."""
    ids = list(promotion_ids)
    return {p.scope_hash for p in Promotion.select(Promotion.scope_hash).where(Promotion.id.in_(ids))}


def prove_keys(store: Store, promotion_ids: Iterable[int]) -> None:
    """Prove the key of every sensitive scope these promotions would be written into (see
    :mod:`engram.store.sensitive.keyproof`), so a wrong passphrase refuses a batch of approvals before the first,
    not half way through."""
    for scope in sorted(target_scopes(store, promotion_ids) & store.sensitive_scopes()):
        keyproof.prove(store, scope)


def approve(
    store: Store,
    promotion_id: int,
    edits: Edits = Edits(),
    *,
    redact_secrets: bool = False,
    acknowledged: Collection[str] = (),
) -> Approved:
    """Approve a pending promotion: write its memory (with ``edits``), then mark it approved. ``redact_secrets``
    replaces what looks like a credential or personal data (:mod:`engram.store.secrets`) in the memory and in the
    promotion's own text in index.db, in the same change; the event names the kinds, never the values.

    A memory the poisoning screen puts in quarantine (as it would be written, edits and all) is refused unless
    every rule it found is in ``acknowledged``: a person has seen each finding. The event records the rule ids
    acknowledged, never the text."""
    promotion = _pending(store, promotion_id)
    found = screen_edited(store, promotion, edits)
    if found.lane == "quarantine" and not set(found.rules) <= set(acknowledged):
        raise Quarantined(
            f"#{promotion_id} is in quarantine ({', '.join(found.rules)}): acknowledge each finding to approve it",
            found.rules,
        )
    heard = found.rules if found.lane == "quarantine" else []
    return write_promoted(store, promotion, "promotion_approved", edits, redact_secrets, acknowledged=heard)


def screen_edited(store: Store, promotion: Promotion, edits: Edits = Edits()) -> Screening:
    """The screen of the memory ``promotion`` would become with ``edits``, as the queue screens it (the screen's
    rules are compiled on first use: every command that imports this module does not pay for them)."""
    from engram.store.screening import screen_promotion

    return screen_promotion(store, promotion, title=edits.title, body=edits.body, triggers=edits.triggers)


def _redacted(promotion: Promotion, edits: Edits) -> tuple[Edits, list[str]]:
    """``edits`` with every secret-looking string of the memory's title, triggers and body redacted, and the kinds
    redacted."""
    title = edits.title if edits.title is not None else promotion.proposed_title
    body = edits.body if edits.body is not None else promotion.proposed_body
    triggers = (
        edits.triggers if edits.triggers is not None else [str(t) for t in parse_json_list(promotion.proposed_triggers)]
    )
    kinds = secrets.kinds_in(title, body, *triggers)
    redacted = Edits(secrets.redact(title), edits.type, [secrets.redact(t) for t in triggers], secrets.redact(body))
    return redacted, kinds


def write_promoted(
    store: Store,
    promotion: Promotion,
    event_type: str,
    edits: Edits = Edits(),
    redact_secrets: bool = False,
    *,
    acknowledged: Sequence[str] = (),
) -> Approved:
    """Write a promotion's memory and mark it approved (also used by repair for approvals memoryd left unwritten).

    Each memory it supersedes gets a ``supersedes_chain`` row decided by the user and is dimmed (in its
    frontmatter too), all in the same change.
    """
    edited = [k for k, v in vars(edits).items() if v is not None]
    redacted: list[str] = []
    if redact_secrets:
        edits, redacted = _redacted(promotion, edits)
    doc = promoted_doc(promotion, store.now(), edits)
    slug = doc.frontmatter.slug
    write = store.memory_write(doc)
    now = store.now().isoformat()
    older = [m for s in doc.frontmatter.supersedes if (m := Memory.get_or_none(Memory.slug == s)) is not None]
    dimmed: dict[str, str] = {}
    writes = [write]
    dims: list[tuple[MemoryDoc, str]] = []
    for row in older:
        if row.decay_state != DecayState.ALIVE:
            continue
        rel = store.safe_relpath(row.body_path)
        old_doc = store.read_doc(rel)
        new_old = MemoryDoc(frontmatter=old_doc.frontmatter.replace(decay_state=DecayState.DIM), body=old_doc.body)
        writes.append(store.rewrite(rel, new_old))
        dims.append((new_old, writes[-1].relpath))
        dimmed[row.slug] = row.decay_state

    def index_update() -> None:
        store.upsert_memory_rows([(doc, write.relpath), *dims], keep_runtime=False)
        Promotion.update(status=PromotionStatus.APPROVED.value, decided_at=promotion.decided_at or now).where(
            Promotion.id == promotion.id
        ).execute()
        if redacted:  # the proposal's own text too (engram's copy of the row follows by its trigger)
            Promotion.update(
                proposed_title=secrets.redact(promotion.proposed_title),
                proposed_body=secrets.redact(promotion.proposed_body),
                proposed_triggers=json.dumps(
                    [secrets.redact(str(t)) for t in parse_json_list(promotion.proposed_triggers)]
                ),
            ).where(Promotion.id == promotion.id).execute()
        for row in older:
            SupersedesChain.insert(
                newer_memory_id=slug,
                older_memory_id=row.slug,
                entity_id=None,
                confidence=1.0,
                decided_at=now,
                decided_by="user",
                reason=f"approved promotion #{promotion.id}",
            ).on_conflict_replace().execute()

    details: dict[str, Any] = {"promotion_id": promotion.id, "supersedes": [r.slug for r in older], "dimmed": dimmed}
    if edited:
        details["edited"] = edited
    if redacted:
        details["redacted"] = redacted
    if acknowledged:  # the screen's findings a person saw and approved anyway: rule ids, never the text
        details["acknowledged"] = list(acknowledged)
    # repair writes the memory of a promotion already approved: the status it was planned on is checked again
    change = Change(
        event_type,
        slug,
        promotion.scope_hash,
        details,
        writes=writes,
        index_update=coexist.sealing(store, promotion.id, index_update),
        precondition=_still_status(promotion.id, promotion.status),
    )
    with store.index.overwriting() if redacted else contextlib.nullcontext():
        store.apply(change)
    return Approved(promotion.id, slug, write.relpath, doc.fingerprint, dimmed)


def reject(store: Store, promotion_id: int, reason: str | None = None) -> Rejected:
    """Reject a pending promotion; nothing is written but the status, ``decided_at``, the reason and the event."""
    promotion = _pending(store, promotion_id)
    _prove_quietly(store, promotion.scope_hash)
    kept = reasons.kept(store, promotion.scope_hash, reason)

    def index_update() -> None:
        Promotion.update(status=PromotionStatus.REJECTED.value, decided_at=store.now().isoformat()).where(
            Promotion.id == promotion_id
        ).execute()
        if kept:
            _note(promotion_id, reject_reason=kept)

    store.apply(
        Change(
            "promotion_rejected",
            str(promotion_id),
            promotion.scope_hash,
            {"source_session_slug": promotion.source_session_slug, "reason": reason},
            index_update=coexist.sealing(store, promotion_id, index_update),
            kept_rows=_note_of(promotion_id),
            precondition=_still_pending(promotion_id),
        )
    )
    return Rejected(promotion_id, reason_dropped=bool(reason) and not kept)


def defer(store: Store, promotion_id: int, reason: str | None = None) -> Deferred:
    """Put a pending promotion off: it stays pending for memoryd, and sinks in engram's default order."""
    promotion = _pending(store, promotion_id)
    _prove_quietly(store, promotion.scope_hash)
    note = PromotionNote.get_or_none(PromotionNote.promotion_id == promotion_id)
    before = (note.deferred_at, note.defer_reason) if note else (None, None)
    kept = reasons.kept(store, promotion.scope_hash, reason)
    store.apply(
        Change(
            "promotion_deferred",
            str(promotion_id),
            promotion.scope_hash,
            {"reason": reason},
            index_update=coexist.sealing(
                store,
                promotion_id,
                lambda: _note(promotion_id, deferred_at=store.now().isoformat(), defer_reason=kept),
            ),
            kept_rows=_note_of(promotion_id),
            precondition=_still_pending(promotion_id),
        )
    )
    return Deferred(promotion_id, before, reason_dropped=bool(reason) and not kept)


def snooze(store: Store, promotion_id: int, until: datetime) -> Snoozed:
    """Take a pending promotion out of engram's queue until ``until`` (it comes back on its own); memoryd still
    sees it pending."""
    promotion = _pending(store, promotion_id)
    note = PromotionNote.get_or_none(PromotionNote.promotion_id == promotion_id)
    before = note.snoozed_until if note else None
    until = until.astimezone(UTC)  # kept in UTC: the queue compares the text with now's
    store.apply(
        Change(
            "promotion_snoozed",
            str(promotion_id),
            promotion.scope_hash,
            {"until": until.isoformat()},
            index_update=lambda: _note(promotion_id, snoozed_until=until.isoformat()),
            kept_rows=_note_of(promotion_id),
            precondition=_still_pending(promotion_id),
        )
    )
    return Snoozed(promotion_id, before)


def merge(store: Store, promotion_id: int, into_slug: str) -> Merged:
    """Fold a pending promotion into an existing memory: its body is appended under a heading (unless the memory
    already says it), its triggers joined; the promotion becomes ``merged`` (memoryd's readers only look for
    ``pending``)."""
    promotion = _pending(store, promotion_id)
    row = store.memory(into_slug)
    if row.scope_hash != promotion.scope_hash:
        raise Conflict(
            f"{into_slug} is in scope {row.scope_hash}, the promotion in {promotion.scope_hash}: "
            "a merge stays within its scope (it could carry sensitive text out of one)"
        )
    rel = store.safe_relpath(row.body_path)
    before = store.read_doc(rel)
    fm = before.frontmatter
    triggers = list(dict.fromkeys([*fm.triggers, *(str(t) for t in parse_json_list(promotion.proposed_triggers))]))
    body = (
        before.body
        if _holds(before.body, promotion.proposed_body)
        else (
            before.body.rstrip("\n")
            + f"\n\n## {promotion.proposed_title}\n\n"
            + promotion.proposed_body.strip("\n")
            + f"\n\n<!-- merged from promotion #{promotion.id} -->\n"
        )
    )
    after = MemoryDoc(frontmatter=fm.replace(triggers=triggers, updated_at=store.now()), body=body)
    write = store.rewrite(rel, after)

    def index_update() -> None:
        store.upsert_memory_row(after, write.relpath, keep_runtime=True)
        Promotion.update(status="merged", decided_at=store.now().isoformat()).where(
            Promotion.id == promotion_id
        ).execute()
        _note(promotion_id, merged_into=into_slug)

    store.apply(
        Change(
            "memories_merged",
            into_slug,
            promotion.scope_hash,
            {"promotion_id": promotion_id},
            writes=[write],
            index_update=coexist.sealing(store, promotion_id, index_update),
            kept_rows=_note_of(promotion_id),
            removals=[rel],
            precondition=_still_pending(promotion_id),
        )
    )
    return Merged(promotion_id, into_slug, before, after.fingerprint)


def _holds(body: str, text: str) -> bool:
    """Whether ``body`` already says ``text`` (whitespace aside): merging it again would only repeat it (a
    cluster's near-duplicates are often the very same text)."""
    words = " ".join(text.split())
    return bool(words) and words in " ".join(body.split())


def cluster_decider(store: Store, best: int, how: str) -> Callable[[int], Decision]:
    """How each member of a cluster of near-duplicates is decided, ``best`` first: ``reject`` approves the best
    and rejects the others as duplicates of it (the reason names it); ``merge`` approves the best and merges
    the others into the memory that made. Each decision is the one of :func:`approve`, :func:`reject` or
    :func:`merge`, with its own event (and its own undo)."""
    if how not in ("reject", "merge"):
        raise BadInput(f"a cluster's rest is rejected or merged, not {how!r}")
    into: list[str] = []

    def decide(pid: int) -> Decision:
        if pid == best:
            approved = approve(store, pid)
            into[:] = [approved.slug]
            return approved
        if not into:  # the best was decided elsewhere meanwhile: the rest are not duplicates of a memory
            raise StoreError(f"#{best} was not approved here: the rest of its cluster is left as it was")
        if how == "reject":
            return reject(store, pid, f"duplicate of #{best}")
        return merge(store, pid, into[0])

    return decide


def undo(store: Store, decision: Decision) -> None:
    """Reverse a decision made in this session with a compensating change and an ``undo_applied`` event
    (the audit log keeps both). Refused when someone changed the affected memory since."""
    promotion = Promotion.get_or_none(Promotion.id == decision.promotion_id)
    if promotion is None:
        raise NotFound(f"no promotion #{decision.promotion_id}")
    expected = {Approved: "approved", Rejected: "rejected", Deferred: "pending", Merged: "merged", Snoozed: "pending"}[
        type(decision)
    ]
    if promotion.status != expected and not (expected == "pending" and promotion.status in OPEN_STATUSES):
        raise Conflict(f"promotion #{promotion.id} is {promotion.status} now: nothing to undo")
    change = _UNDO[type(decision)](store, decision)
    if change.index_update is not None:
        change.index_update = coexist.sealing(store, promotion.id, change.index_update)
    change.details = {"undid": type(decision).__name__.lower(), "promotion_id": promotion.id, **change.details}
    store.apply(change)


def _prove_quietly(store: Store, scope_hash: str) -> None:
    """A decision that writes no file needs no key, but a decision in a sensitive scope is sealed (see
    :func:`coexist.seal_promotion`) when the key is at hand: prove it if it can be, and go on if it cannot."""
    if scope_hash in store.sensitive_scopes() and store.keys.can_open(scope_hash):
        with contextlib.suppress(StoreError):
            keyproof.prove(store, scope_hash)


def _reopen(promotion_id: int, **note: Any) -> None:
    Promotion.update(status=PromotionStatus.PENDING.value, decided_at=None).where(
        Promotion.id == promotion_id
    ).execute()
    if note:
        _note(promotion_id, **note)


def _unchanged(store: Store, slug: str, fingerprint: str) -> Memory:
    row = store.memory(slug)
    if row.fingerprint != fingerprint:
        raise Conflict(f"{slug} was changed after the decision: undo would lose that change")
    return row


def _undo_approved(store: Store, done: Approved) -> Change:
    _unchanged(store, done.slug, done.fingerprint)
    writes, restored = [], []
    for slug, state in done.dimmed.items():
        row = store.memory(slug)
        rel = store.safe_relpath(row.body_path)
        old = store.read_doc(rel)
        doc = MemoryDoc(frontmatter=old.frontmatter.replace(decay_state=DecayState(state)), body=old.body)
        writes.append(store.rewrite(rel, doc))
        restored.append((doc, writes[-1].relpath))

    def index_update() -> None:
        SupersedesChain.delete().where(SupersedesChain.newer_memory_id == done.slug).execute()
        Trigger.delete().where(Trigger.slug == done.slug).execute()
        Memory.delete().where(Memory.slug == done.slug).execute()
        store.upsert_memory_rows(restored)
        _reopen(done.promotion_id)

    return Change(
        "undo_applied",
        done.slug,
        Promotion.get_by_id(done.promotion_id).scope_hash,
        {"promotion_id": done.promotion_id, "removed": done.relpath, "restored": done.dimmed},
        writes=writes,
        index_update=index_update,
        removals=[done.relpath],
    )


def _undo_rejected(store: Store, done: Rejected) -> Change:
    return Change(
        "undo_applied",
        str(done.promotion_id),
        Promotion.get_by_id(done.promotion_id).scope_hash,
        {},
        index_update=lambda: _reopen(done.promotion_id, reject_reason=None),
        kept_rows=_note_of(done.promotion_id),
    )


def _undo_deferred(store: Store, done: Deferred) -> Change:
    at, reason = done.before
    return Change(
        "undo_applied",
        str(done.promotion_id),
        Promotion.get_by_id(done.promotion_id).scope_hash,
        {},
        index_update=lambda: _note(done.promotion_id, deferred_at=at, defer_reason=reason),
        kept_rows=_note_of(done.promotion_id),
    )


def _undo_merged(store: Store, done: Merged) -> Change:
    row = _unchanged(store, done.into, done.fingerprint)
    rel = store.safe_relpath(row.body_path)
    write = store.rewrite(rel, done.before)

    def index_update() -> None:
        store.upsert_memory_row(done.before, write.relpath, keep_runtime=True)
        _reopen(done.promotion_id, merged_into=None)

    return Change(
        "undo_applied",
        done.into,
        row.scope_hash,
        {"promotion_id": done.promotion_id},
        writes=[write],
        removals=[rel],
        index_update=index_update,
        kept_rows=_note_of(done.promotion_id),
    )


def _undo_snoozed(store: Store, done: Snoozed) -> Change:
    return Change(
        "undo_applied",
        str(done.promotion_id),
        Promotion.get_by_id(done.promotion_id).scope_hash,
        {},
        index_update=lambda: _note(done.promotion_id, snoozed_until=done.before),
        kept_rows=_note_of(done.promotion_id),
    )


_UNDO: dict[type, Callable[[Store, Any], Change]] = {
    Approved: _undo_approved,
    Rejected: _undo_rejected,
    Deferred: _undo_deferred,
    Merged: _undo_merged,
    Snoozed: _undo_snoozed,
}


def _note_of(promotion_id: int) -> tuple[tuple[str, Any], ...]:
    """The note a change on ``promotion_id`` writes, carried in its queued event: a person's reason is in no
    event (only its hash), so a kill between SQLite's two commits would lose it for good (see
    :func:`engram.store.audit.outbox.carry_rows`)."""
    return ((PromotionNote._meta.table_name, promotion_id),)


def _note(promotion_id: int, **fields: Any) -> None:
    """Set fields of engram's note on a promotion (call inside a transaction)."""
    PromotionNote.insert(promotion_id=promotion_id, **fields).on_conflict(
        conflict_target=[PromotionNote.promotion_id], update=fields
    ).execute()
