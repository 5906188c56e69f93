"""The audit log's operations for the CLI and the console: verify, repair a torn tail, checkpoints."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from store.audit import repair_torn_tail
from store.audit_verify import TAMPERED, VALID, Verdict, verify
from store.checkpoints import Checkpoint, CheckpointRejected
from store.errors import StoreError
from store.service import Change, Store, utcnow


def verify_log(store: Store, progress: Callable[[int], None] | None = None) -> Verdict:
    """Verify the chain against the stored checkpoint; a valid log then gets a fresh checkpoint."""
    try:
        checkpoint = store.checkpoints.latest()
    except CheckpointRejected as exc:
        return Verdict(TAMPERED, reason=str(exc), checkpoint="rejected")
    verdict = verify(store.layout.audit_path, checkpoint, progress)
    if verdict.status == VALID and verdict.lines and verdict.head:
        store.checkpoints.advance(store.layout.audit_path, utcnow(), (verdict.lines, verdict.head, verdict.offset))
    return verdict


def repair_log(store: Store) -> str:
    """Move a torn last line aside (never touching valid lines) and record that as an event."""
    moved = repair_torn_tail(store.layout.audit_path, utcnow())
    if moved is None:
        return "the audit log's tail is whole: nothing to repair"
    aside, size = moved
    store.apply(Change("audit_tail_repaired", None, None, {"moved_to": aside.name, "bytes": size}))
    return f"moved a torn tail of {size} bytes to {aside.name}"


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
