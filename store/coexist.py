"""What memoryd's ``rebuild-index`` takes away, found and given back.

memoryd's rebuild deletes index.db and builds it again from the ``.md`` files only: ``.md.enc`` rows, promotions
and ``sensitive_scopes`` are gone (memoryd's next save into a scope it no longer knows is sensitive would be
plaintext). engram notices (its identity is missing from the new index.db, see :class:`engram.store.index.Index`),
keeps treating the scopes it knew as sensitive, registers them again before its own first write (see
:func:`keep_registered`), and ``engram repair`` restores, from engram.db's copies, the
registrations (and their markers), the promotions (ids kept where free), and finally the identity; the
encrypted files are indexed again by the ordinary ``enc_without_row`` repair, which needs their keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engram.store.errors import StoreError
from engram.store.models import Imported, Memory, Promotion, PromotionNote, SealedPromotion, tuples
from engram.store.sensitive.crypto import decrypt, encrypt
from engram.store.sensitive.registration import register_again, unregistered_scopes
from engram.store.service import Store
from engram.store.write.change import Change

PROMOTION_COLUMNS = (
    "id",
    "source_session_slug",
    "proposed_type",
    "proposed_title",
    "proposed_body",
    "proposed_triggers",
    "dura_score",
    "reasoning",
    "proposed_supersedes",
    "scope_hash",
    "status",
    "created_at",
    "decided_at",
)


def keep_registered(store: Store) -> Store:
    """``store``, set to register the scopes engram knew as sensitive again before its first write once it
    notices memoryd's rebuild-index, each audited (``sensitive_scope_restored``), as ``repair`` would: memoryd's
    next save into a scope missing from ``sensitive_scopes`` would be plaintext. The rest of what the rebuild
    took waits for ``repair``. Whatever opens a store to act on it (the command line, the console) sets it."""
    store.after_rebuild.append(lambda: register_sensitive_again(store))
    return store


def register_sensitive_again(store: Store) -> list[str]:
    """Register again every scope engram's copy names as sensitive and index.db, rebuilt, no longer does."""
    return [register_again(store, scope) for scope in unregistered_scopes(store, [])]


def sealing(store: Store, promotion_id: int, index_update: Callable[[], object]) -> Callable[[], None]:
    """A decision's index update, followed by :func:`seal_promotion` of what it left."""

    def update() -> None:
        index_update()
        seal_promotion(store, promotion_id)

    return update


def seal_promotion(store: Store, promotion_id: int) -> None:
    """Inside a decision's transaction: keep a promotion of a sensitive scope, as the decision leaves it, sealed
    under the scope's key. engram keeps no plaintext copy of those (see ``MIRRORED``), so without this memoryd's
    rebuild-index would erase the decision for good. Only under a key proven this session: a typo'd passphrase
    must not seal what nobody can open again (the decision is then named from the audit log alone)."""
    row = Promotion.get_or_none(Promotion.id == promotion_id)
    if row is None or row.scope_hash not in store.sensitive_scopes() or not store.keys.proven(row.scope_hash):
        return
    values = {column: getattr(row, column) for column in PROMOTION_COLUMNS}
    sealed = encrypt(json.dumps(values).encode("utf-8"), store.keys.key_for(row.scope_hash), row.scope_hash)
    SealedPromotion.replace(
        id=row.id, scope_hash=row.scope_hash, status=row.status, decided_at=row.decided_at, sealed=sealed
    ).execute()


def seal_scope(store: Store, scope_hash: str) -> None:
    """Inside the transaction that marks ``scope_hash`` sensitive (its key proven): seal each of its decided
    promotions. The marking drops engram's plain copy of them (see ``Index``'s triggers); without this, a
    decision made while the scope was plain would be lost to memoryd's next rebuild-index."""
    decided = Promotion.select(Promotion.id).where(
        (Promotion.scope_hash == scope_hash) & (Promotion.status != "pending")
    )
    for (promotion_id,) in tuples(decided):
        seal_promotion(store, promotion_id)


@dataclass(frozen=True)
class SealedLost:
    """A sealed promotion index.db lost whose scope's key is not at hand: named, put back once unlocked."""

    id: int
    scope_hash: str
    status: str
    decided_at: str | None


def lost_sealed(store: Store) -> tuple[list[dict[str, Any]], list[SealedLost]]:
    """Sealed promotions index.db lost since a rebuild: opened (their rows), and still locked."""
    if not store.index.rebuilt or not store.index.has(SealedPromotion):
        return [], []
    present = {p.id: p.scope_hash for p in Promotion.select(Promotion.id, Promotion.scope_hash)}
    opened, locked = [], []
    for row in SealedPromotion.select().order_by(SealedPromotion.id):
        if present.get(row.id) == row.scope_hash:
            continue
        if not store.keys.can_open(row.scope_hash):
            locked.append(SealedLost(row.id, row.scope_hash, row.status, row.decided_at))
            continue
        try:  # reading under a wrong key fails to authenticate: it cannot go wrong the way sealing could
            values = json.loads(decrypt(bytes(row.sealed), store.keys.key_for(row.scope_hash), row.scope_hash))
        except (StoreError, ValueError):
            locked.append(SealedLost(row.id, row.scope_hash, row.status, row.decided_at))
            continue
        if present.get(row.id) is None or not _same_proposal(values):
            opened.append(values)
    return opened, locked


def _same_proposal(values: dict[str, Any]) -> bool:
    return (
        Promotion.get_or_none(
            Promotion.source_session_slug == values["source_session_slug"],
            Promotion.created_at == values["created_at"],
            Promotion.proposed_title == values["proposed_title"],
        )
        is not None
    )


def lost_promotions(store: Store) -> list[dict[str, Any]]:
    """Promotions engram's copies hold that index.db lost (only asked after a rebuild: otherwise index.db is the
    truth and the copy follows it): the plain copy's, and the sealed ones whose scope is unlocked (see
    :func:`lost_sealed` for the rest)."""
    if not store.index.rebuilt:
        return []
    present = {
        (p.source_session_slug, p.created_at, p.proposed_title)
        for p in Promotion.select(Promotion.source_session_slug, Promotion.created_at, Promotion.proposed_title)
    }
    names = ", ".join(PROMOTION_COLUMNS)
    rows = [
        dict(zip(PROMOTION_COLUMNS, r, strict=True))
        for r in store.index.db.execute_sql(f"SELECT {names} FROM engram.engram_promotions ORDER BY id")
    ]
    plain = [r for r in rows if (r["source_session_slug"], r["created_at"], r["proposed_title"]) not in present]
    return plain + lost_sealed(store)[0]


def restore_promotions(store: Store) -> str | None:
    """Put lost promotions back, with their ids where those are free (engram's notes and import records point
    at them) and new ids where memoryd has meanwhile used them. A promotion whose source session has no row yet
    (an encrypted session, not indexed until its scope is unlocked) waits for a later repair."""
    lost = lost_promotions(store)
    sessions = (
        {m.slug for m in Memory.select(Memory.slug).where(Memory.slug.in_([r["source_session_slug"] for r in lost]))}
        if lost
        else set()
    )
    ready = [r for r in lost if r["source_session_slug"] in sessions]
    if not ready:
        return None
    moved: dict[int, int] = {}

    def index_update() -> None:
        taken = {p.id for p in Promotion.select(Promotion.id).where(Promotion.id.in_([r["id"] for r in ready]))}
        for row in ready:  # every free id first: a renumbered row must not take an id another row still needs
            if row["id"] not in taken:
                Promotion.insert(**row).execute()
        for row in (r for r in ready if r["id"] in taken):
            new_id = Promotion.insert(**{k: v for k, v in row.items() if k != "id"}).execute()
            moved[row["id"]] = new_id
            store.index.db.execute_sql("DELETE FROM engram.engram_promotions WHERE id = ?", (row["id"],))
            SealedPromotion.delete().where(SealedPromotion.id == row["id"]).execute()
            seal_promotion(store, new_id)
            PromotionNote.update(promotion_id=new_id).where(PromotionNote.promotion_id == row["id"]).execute()
            Imported.update(promotion_id=new_id).where(Imported.promotion_id == row["id"]).execute()

    store.apply(
        Change(
            "promotions_restored",
            None,
            None,
            {
                "count": len(ready),
                "waiting": len(lost) - len(ready),
                "renumbered": {str(k): v for k, v in moved.items()},
            },
            index_update=index_update,
        )
    )
    waiting = f"; {len(lost) - len(ready)} wait for their session's row" if len(lost) > len(ready) else ""
    return f"restored {len(ready)} promotions memoryd's rebuild-index removed{waiting}"


def claim_index(store: Store) -> str | None:
    """Once nothing the rebuild took is missing (registrations, promotions): this index.db is the one engram
    knows from now on, and its copies follow it again."""
    if (
        lost_promotions(store)
        or lost_sealed(store)[1]
        or any(s.why.startswith("sensitive before") for s in unregistered_scopes(store, []))
    ):
        return None
    store.apply(Change("index_rebuild_reconciled", None, None, {}, index_update=store.index.write_identity))
    return "index.db rebuilt by memoryd: everything engram keeps is restored, and it is recorded as known"
