"""The audit log's operations for the CLI and the console: verify, repair a torn tail, checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engram.store.audit.chain import repair_torn_tail, set_aside
from engram.store.audit.checkpoints import Checkpoint, CheckpointRejected
from engram.store.audit.verify import SET_ASIDE, TAMPERED, VALID, Verdict, verify, verify_recording
from engram.store.errors import StoreError
from engram.store.service import Store, utcnow
from engram.store.write.change import Change


class NotSigned(StoreError):
    """A new checkpoint was asked for and the log does not verify (against the kept checkpoint, if one was
    given): a finding, and nothing is signed."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(f"nothing signed: the log does not verify: {verdict.summary()}")
        self.verdict = verdict


def verify_log(store: Store, progress: Callable[[int], None] | None = None) -> Verdict:
    """Verify the chain against the stored checkpoint and its kept copy; a valid log then gets a fresh checkpoint.

    A root moved or copied from where engram checkpointed it adopts that checkpoint first (see
    :meth:`Store.record_move`). A checkpoint that should be there and is not (see
    :meth:`CheckpointBook.missing`) is a finding, and nothing is signed: signing now would vouch for whatever the
    log holds after its evidence was removed.
    """
    book = store.checkpoints
    store.record_move()
    try:
        checkpoint, copy = book.latest(), book.kept_copy()
    except CheckpointRejected as exc:
        return Verdict(TAMPERED, reason=str(exc), checkpoint="rejected")
    witnessed = book.witnessed()
    log, prefix = store.layout.audit_path, book.verified_prefix()
    verdict, record = verify_recording(log, checkpoint, copy, witnessed, progress=progress, prefix=prefix)
    if witnessed is not None and checkpoint is not None and _behind(checkpoint, witnessed):
        verdict.add(
            None,
            f"checkpoint rolled back: the OS keyring's witness records a checkpoint of {witnessed.size} lines "
            f"({witnessed.ts}), the stored one {checkpoint.size} ({checkpoint.ts}): an older checkpoint file was put "
            "back in place of the newest. If you restored engram's state directory from a backup yourself, "
            "`engram audit checkpoint --reset` accepts the log as it is",
        )
    queued = _queued_ops(store) if checkpoint is None else set()
    missing = book.missing(store.layout.audit_path, queued) if checkpoint is None else None
    if missing:
        verdict.add(None, missing)
        verdict.checkpoint = "missing"
    elif verdict.status == VALID and verdict.lines and verdict.head:
        book.advance(log, utcnow(), (verdict.lines, verdict.head, verdict.offset), queued)
        store.audit_warning = book.warning
        if record is not None and (prefix is None or (record.lines, record.digest) != (prefix.lines, prefix.digest)):
            book.keep_prefix(record)
    return verdict


def _behind(checkpoint: Checkpoint, witnessed: Checkpoint) -> bool:
    """The stored checkpoint is older than the witness of it the keyring keeps (same log, fewer lines)."""
    return checkpoint.log_id == witnessed.log_id and checkpoint.size < witnessed.size


def _queued_ops(store: Store) -> set[str]:
    """op_ids of events committed and not yet appended: a crashed first write's lines may already be in the log."""
    return {op_id for op_id, _ in store.queued_events()}


def repair_log(store: Store) -> str:
    """Make the log appendable and whole again without rewriting a valid line, each step recorded as an event:
    a torn last line is moved aside; whole lines that are not JSON (memoryd gluing its event onto a torn tail
    makes one) are copied aside, the last one cut off when no checkpoint covers it; then queued events go out."""
    log, done, waiting = store.layout.audit_path, [], len(store.queued_events())
    moved = repair_torn_tail(log, utcnow())
    if moved is not None:
        aside, size = moved
        store.apply(Change("audit_tail_repaired", None, None, {"moved_to": aside.name, "bytes": size}))
        done.append(f"moved a torn tail of {size} bytes to {aside.name}")
    bad = {p.line for p in verify(log).problems if p.line and p.reason.startswith("unparsable")}
    kept = set_aside(log, bad, _covered(store), utcnow()) if bad else None
    if kept is not None:
        aside, records = kept
        store.apply(Change(SET_ASIDE, None, None, {"moved_to": aside.name, "lines": records}))
        cut = sum(r["cut"] for r in records)
        done.append(
            f"set {len(records)} unreadable lines aside in {aside.name}"
            + (f" ({cut} cut off the end)" if cut else " (left in place, named by the repair event)")
        )
    if waiting:  # the repair's own events went out with them, if the log takes appends again
        left = store.flush_audit_outbox()
        done.append(f"appended {waiting} queued events" if not left else f"{left} events still queued")
    return "; ".join(done) or "the audit log is whole: nothing to repair"


def _covered(store: Store) -> int:
    """How many lines a checkpoint pins: those are never cut, whatever they hold."""
    try:
        pins = [c for c in (store.checkpoints.latest(), store.checkpoints.kept_copy()) if c is not None]
    except CheckpointRejected:
        return 0
    return max((c.size for c in pins), default=0)


def current_checkpoint(store: Store) -> Checkpoint:
    """The checkpoint to print and keep elsewhere: made fresh by a verify, refused if the log is not valid."""
    verdict = verify_log(store)
    if verdict.status != VALID:
        raise StoreError(f"no checkpoint for a log that does not verify: {verdict.summary()}")
    checkpoint = store.checkpoints.latest()
    if checkpoint is None:
        raise StoreError("the audit log is empty: nothing to checkpoint")
    return checkpoint


def check_printed(store: Store, path: Path) -> tuple[Verdict, bool]:
    """Check the log against a checkpoint a person kept elsewhere. Returns the verdict, and whether the
    checkpoint was signed by this engram's key (a checkpoint from another machine verifies with its own)."""
    try:
        checkpoint = Checkpoint.from_json(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise StoreError(f"{path}: {exc.strerror}") from None
    try:
        store.checkpoints.verify_signature(checkpoint, trusted=False)
    except CheckpointRejected as exc:
        return Verdict(TAMPERED, reason=str(exc), checkpoint="rejected"), False
    own = checkpoint.public_key == store.checkpoints.public_key
    return verify(store.layout.audit_path, checkpoint), own


def restart_checkpoint(store: Store, kept: Path | None = None) -> str:
    """Sign the log as it is now as the new checkpoint, on a person's word, and record that as an event.

    ``kept``: a checkpoint the person kept (printed, or the copy): the log must verify against it first, so
    restoring trusts only what that checkpoint vouched for plus lines after it. Without it (``--reset``) the
    chain alone must verify. Either way the old checkpoint, if any, is named in the event.
    """
    log = store.layout.audit_path
    if kept is not None:
        verdict, own = check_printed(store, kept)
        against = str(kept) + ("" if own else " (signed by another engram's key)")
    else:
        verdict, against = verify(log), None
    if verdict.status != VALID:
        raise NotSigned(verdict)
    try:
        old = store.checkpoints.latest()
    except CheckpointRejected:
        old = None
    checkpoint = store.checkpoints.start(log, utcnow())
    if checkpoint is None:
        raise StoreError("the audit log is empty: nothing to checkpoint")
    store.apply(
        Change(
            "audit_checkpoint_reset",
            None,
            None,
            {
                "lines": checkpoint.size,
                "head": checkpoint.head,
                "checked_against": against,
                "replaced": None if old is None else {"ts": old.ts, "lines": old.size},
            },
        )
    )
    how = f"checked against {against}" if against else "on your word (--reset)"
    return f"new checkpoint at line {checkpoint.size}, {how}"
