"""Reading ``audit/audit.jsonl``: verifying the chain, and listing its events.

Both stream the file a line at a time, so a log of a million lines verifies in bounded memory. memoryd's
lines (no ``seq``, no ``this_hash``) and engram's lines may be interleaved in any order: each line's position
is its seq, every ``prev_hash`` must follow memoryd's rule, and engram's ``this_hash`` must match. A signed
checkpoint (see :mod:`store.checkpoints`) adds what a chain cannot see alone: truncation, a rewritten history
with every later hash recomputed, a whole replaced file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from store.audit import GENESIS, accumulate, line_hash, memoryd_link, this_hash
from store.checkpoints import Checkpoint

VALID, TAMPERED, TORN, UNREADABLE = "valid", "tampered", "torn_tail", "unreadable"


@dataclass
class Verdict:
    status: str  # valid | tampered | torn_tail | unreadable
    lines: int = 0  # complete lines that verified
    head: str | None = None  # running digest of every verified line (what a checkpoint pins)
    offset: int = 0  # bytes of verified lines
    bad_line: int | None = None
    reason: str | None = None
    memoryd_lines: int = 0
    engram_lines: int = 0
    checkpoint: str = "none"  # none | matched | what went wrong

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if self.status == VALID:
            return (f"valid: {self.lines} lines ({self.memoryd_lines} memoryd, {self.engram_lines} engram), "
                    f"head {self.head}; checkpoint {self.checkpoint}")
        if self.status == TORN:
            return (f"torn tail after line {self.lines}: {self.reason} (recoverable, not tampering: "
                    "run `engram audit repair`)")
        where = f"line {self.bad_line}: " if self.bad_line else ""
        return f"{self.status}: {where}{self.reason}"


def verify(path: Path, checkpoint: Checkpoint | None = None,
           progress: Callable[[int], None] | None = None) -> Verdict:
    """Verify the log; stops at the first bad line. ``progress(bytes_read)`` is called every 10k lines."""
    verdict = Verdict(VALID, checkpoint="none" if checkpoint is None else "pending")
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return _against_checkpoint(verdict, checkpoint)
    except OSError as exc:
        return Verdict(UNREADABLE, reason=str(exc))
    prev: dict[str, Any] | None = None
    prev_seq: int | None = None
    with fh:
        try:
            for n, raw in enumerate(fh, 1):
                if not raw.endswith(b"\n"):
                    verdict.status, verdict.reason = TORN, f"{len(raw)} bytes with no newline at the end"
                    break
                problem, obj = _check_line(n, raw, prev, prev_seq)
                head = accumulate(verdict.head or "", raw)
                if problem is None and checkpoint is not None:
                    problem = _check_pin(n, raw, head, checkpoint)
                if problem is not None:
                    return _tampered(verdict, n, problem)
                if "this_hash" in obj:
                    verdict.engram_lines += 1
                else:
                    verdict.memoryd_lines += 1
                prev, prev_seq = obj, obj.get("seq", n)
                verdict.lines, verdict.offset = n, verdict.offset + len(raw)
                verdict.head = head
                if progress is not None and n % 10_000 == 0:
                    progress(verdict.offset)
        except OSError as exc:
            return Verdict(UNREADABLE, reason=str(exc))
    return _against_checkpoint(verdict, checkpoint)


def _check_line(n: int, raw: bytes, prev: dict[str, Any] | None, prev_seq: int | None
                ) -> tuple[str | None, dict[str, Any]]:
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return "unparsable: not a JSON line", {}
    if not isinstance(obj, dict):
        return "unparsable: not a JSON object", {}
    seq = obj.get("seq")
    if "seq" in obj and (not isinstance(seq, int) or isinstance(seq, bool)):
        return "seq is not a number", obj
    if seq is not None and seq != n:
        if seq == prev_seq:
            return f"seq duplicate: seq {seq} again (a line was duplicated)", obj
        if seq > n:
            return f"seq gap: expected {n}, found {seq} (a line before it was removed)", obj
        return f"seq mismatch: expected {n}, found {seq} (lines reordered or inserted)", obj
    if "this_hash" in obj and (not isinstance(obj.get("prev_hash"), str) or this_hash(obj) != obj["this_hash"]):
        return "content does not match its this_hash (the line was edited)", obj
    expected = GENESIS if prev is None else memoryd_link(prev)
    if obj.get("prev_hash") != expected:
        return ("link mismatch: prev_hash does not match line "
                f"{n - 1} (that line was edited, or this one inserted or moved)" if prev else
                "link mismatch: the first line's prev_hash is not the genesis value"), obj
    return None, obj


def _check_pin(n: int, raw: bytes, head: str, checkpoint: Checkpoint) -> str | None:
    if n == 1 and line_hash(raw) != checkpoint.log_id:
        return "checkpoint log_id mismatch: the log was replaced since the checkpoint"
    if n == checkpoint.size and head != checkpoint.head:
        return (f"checkpoint mismatch: lines 1-{n} are not what was checkpointed at {checkpoint.ts} "
                "(history rewritten with recomputed hashes)")
    return None


def _tampered(verdict: Verdict, n: int, reason: str) -> Verdict:
    verdict.status, verdict.bad_line, verdict.reason = TAMPERED, n, reason
    if reason.startswith("checkpoint"):
        verdict.checkpoint = "mismatch"
    return verdict


def _against_checkpoint(verdict: Verdict, checkpoint: Checkpoint | None) -> Verdict:
    if checkpoint is None:
        return verdict
    if verdict.lines < checkpoint.size:
        verdict.status, verdict.checkpoint = TAMPERED, "larger than log"
        verdict.reason = (f"truncated: the checkpoint of {checkpoint.ts} records {checkpoint.size} lines, "
                          f"the log has {verdict.lines}")
        return verdict
    verdict.checkpoint = "matched"
    return verdict


@dataclass(frozen=True)
class EventFilter:
    scope: str | None = None
    since: datetime | None = None
    event_type: str | None = None
    target: str | None = None

    def matches(self, obj: dict[str, Any]) -> bool:
        if self.scope and obj.get("scope_hash") != self.scope:
            return False
        if self.event_type and obj.get("event_type") != self.event_type:
            return False
        if self.target and obj.get("target_id") != self.target:
            return False
        if self.since:
            try:
                ts = datetime.fromisoformat(str(obj.get("ts", "")).replace("Z", "+00:00"))
            except ValueError:
                return False
            return _aware(ts) >= _aware(self.since)
        return True


def _aware(value: datetime) -> datetime:
    """Naive timestamps (memoryd's capture path writes some) are read as UTC, as memoryd reads them."""
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def events(path: Path, where: EventFilter = EventFilter()) -> Iterator[dict[str, Any]]:
    """The log's events (with ``seq`` filled in for memoryd's lines), filtered, a line at a time."""
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    with fh:
        for n, raw in enumerate(fh, 1):
            try:
                obj = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue  # `engram audit verify` reports it; a listing shows what can be read
            if isinstance(obj, dict) and where.matches(obj):
                yield {"seq": n, **obj}
