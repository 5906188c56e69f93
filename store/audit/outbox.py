"""The audit outbox: a change's event is committed in the change's own index transaction, then appended to the
audit log, so a crash between the two loses no event and appends none twice.

Each event sits in two tables until it is appended: engram.db's outbox and its twin in index.db (either may
lose its copy: a crash between the two databases' commits, memoryd's rebuild-index). :func:`flush` appends
every queued event, oldest first, in one locked write by memoryd's rule, deletes them from both tables and
advances the signed checkpoint. A change a crash cut short (files still to retire) is finished before its
event is told, and one whose engram.db part a crash lost is given it back first (:func:`restore_cut`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from peewee import SQL, DatabaseError

from engram.store.audit import chain
from engram.store.errors import StoreError
from engram.store.models import AuditOutbox, OutboxGuard, PromotionNote, QuarantinedMemory, tuples
from engram.store.write import faults, retire

if TYPE_CHECKING:
    from engram.store.service import Store

DELETED_AT_ONCE = 400  # op ids in one DELETE: far below SQLite's bound-variable limit
ROWS = "_rows"  # in a queued event only: engram.db's rows its change wrote (see carry_rows); taken off before appending
# the tables whose rows a queued event may carry (rows of text and numbers, each by its primary key); a row of any
# other table named in an event is ignored, whoever wrote the twin
CARRIED = {model._meta.table_name: model for model in (PromotionNote,)}


def queued(store: Store) -> list[tuple[str, str]]:
    """``(op_id, event)`` of every committed event not yet appended, oldest first, from both tables."""
    rows: dict[str, tuple[str, str]] = {}
    for outbox in (AuditOutbox, OutboxGuard):
        if store.index.has(outbox):
            waiting = outbox.select(outbox.op_id, outbox.event, outbox.created_at)
            for op_id, event, created in tuples(waiting.order_by(outbox.created_at, SQL("rowid"))):
                rows.setdefault(op_id, (created, event))
    ordered = sorted(rows.items(), key=lambda item: item[1][0])  # stable: insertion order within a stamp
    return [(op_id, event) for op_id, (_, event) in ordered]


def restore_cut(store: Store) -> int:
    """Finish engram.db's part of the changes a kill between the two databases' commits cut (SQLite commits
    index.db, then engram.db): their events are only in the twin. Each gets its outbox copy back, with the rows
    of engram.db its event tells: a memory held in quarantine (``from``: the state its release restores) or
    released, and the rows it carried (a promotion's note: a person's reason, a deferral, a snooze). One
    transaction that writes engram.db only, run when a root is opened to act on and before its events are
    appended, so nothing plans a change on what the cut left (a quarantine again would record the soft-forgotten
    state as the one to restore). Bindings have their own twin. Returns how many changes; a locked database is
    left for the next try."""
    if store.read_only or not (store.index.has(OutboxGuard) and store.index.has(AuditOutbox)):
        return 0
    try:
        cut = list(
            tuples(
                OutboxGuard.select(OutboxGuard.op_id, OutboxGuard.event, OutboxGuard.created_at)
                .where(OutboxGuard.op_id.not_in(AuditOutbox.select(AuditOutbox.op_id)))
                .order_by(OutboxGuard.created_at, SQL("rowid"))
            )
        )
        if not cut:
            return 0
        with store.index.transaction(prepare=False):  # engram.db's rows only: index.db stays as it is
            for op_id, raw, created in cut:
                AuditOutbox.insert(op_id=op_id, event=raw, created_at=created).on_conflict_ignore().execute()
                _redo(store, json.loads(raw), created)
    except (StoreError, ValueError, DatabaseError):
        return 0
    return len(cut)


def carry_rows(event: dict[str, Any], kept: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The queued form of ``event``, with the rows ``kept`` names, ``(table, primary key)``, as they are now:
    read inside its change's transaction, after its index update. A change whose event does not tell what it
    wrote into engram.db (a person's reason) carries it so, for :func:`restore_cut`."""
    if not kept:
        return event
    rows = []
    for table, key in kept:
        model = CARRIED[table]
        row = model.get_or_none(model._meta.primary_key == key)
        fields = None if row is None else {f.name: getattr(row, f.name) for f in model._meta.sorted_fields}
        rows.append({"table": table, "key": key, "row": fields})
    return {**event, ROWS: rows}


def _put_back(store: Store, rows: Any) -> None:
    """engram.db's rows a cut change carried (see :func:`carry_rows`), written again as it left them."""
    for item in rows if isinstance(rows, list) else []:
        model = CARRIED.get(item.get("table")) if isinstance(item, dict) else None
        if model is None or not store.index.has(model):
            continue
        row = item.get("row")
        if row is None:
            model.delete().where(model._meta.primary_key == item.get("key")).execute()
        elif isinstance(row, dict):
            model.replace(**{f.name: row.get(f.name) for f in model._meta.sorted_fields}).execute()


def _redo(store: Store, event: dict[str, Any], created: str) -> None:
    """engram.db's rows of one cut change, from its event."""
    _put_back(store, event.get(ROWS))
    kind, slug, details = event.get("event_type"), event.get("target_id"), event.get("details") or {}
    if not isinstance(slug, str) or not store.index.has(QuarantinedMemory):
        return
    if kind == "memory_quarantined":
        rules = json.dumps([str(r) for r in details.get("rules") or []])
        QuarantinedMemory.replace(slug=slug, was=str(details.get("from")), rules=rules, at=created).execute()
    elif kind == "memory_released":
        QuarantinedMemory.delete().where(QuarantinedMemory.slug == slug).execute()


def flush(store: Store) -> int:
    """Append every queued event to the audit log, then advance the signed checkpoint; returns how many events
    are still queued (the log could not be written: ``store.audit_warning`` says why). Events a crashed writer
    already appended are not written twice (see :func:`chain.append_events`)."""
    store.audit_warning = None
    restore_cut(store)  # before its events are appended and leave the twin: see restore_cut
    rows = queued(store)
    if not rows:
        return 0
    events = []
    for _, raw in rows:  # a change a crash cut short is finished before its event is told
        event, retiring = retire.take(json.loads(raw))
        event.pop(ROWS, None)
        retire.finish(store.layout, retiring)
        events.append(event)
    try:
        chain.append_events(store.layout.audit_path, events, position_hint=_position_hint(store))
    except (StoreError, OSError) as exc:
        store.audit_warning = f"change saved, audit event queued: {exc}"
        return len(rows)
    faults.reach("audit_appended")
    ids = [op_id for op_id, _ in rows]
    with store.index.transaction():
        for at in range(0, len(ids), DELETED_AT_ONCE):
            for outbox in (AuditOutbox, OutboxGuard):
                outbox.delete().where(outbox.op_id.in_(ids[at : at + DELETED_AT_ONCE])).execute()
    _advance_checkpoint(store, set(ids))
    return 0


def _position_hint(store: Store) -> tuple[int, int] | None:
    """``(lines, offset)`` of the newest checkpoint, if it is this log's: the writer counts lines from there."""
    try:
        checkpoint = store.checkpoints.latest()
    except StoreError:
        return None
    first = chain.first_line(store.layout.audit_path)
    if checkpoint is None or first is None or chain.line_hash(first) != checkpoint.log_id:
        return None
    return checkpoint.size, checkpoint.offset


def _advance_checkpoint(store: Store, appended: set[str]) -> None:
    """``appended``: op_ids of the events just written (they are not evidence of an earlier checkpoint)."""
    try:
        advanced = store.checkpoints.advance(store.layout.audit_path, datetime.now(UTC), besides=appended)
    except (StoreError, OSError) as exc:
        store.audit_warning = f"audit checkpoint not advanced: {exc}"
        return
    if advanced is None:
        store.audit_warning = "audit checkpoint not advanced: the log no longer continues it; run `engram audit verify`"
    else:
        store.audit_warning = store.checkpoints.warning
