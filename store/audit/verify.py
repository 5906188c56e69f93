"""Reading ``audit/audit.jsonl``: verifying the chain, and listing its events.

Both stream the file, so a log of a million lines verifies in bounded memory. Each line is held to its author's
rule (see :mod:`engram.store.audit.rules`; a verify checks runs of lines at once where the rule finds nothing in
them, see :mod:`engram.store.audit.fastcheck`), and every problem is reported, not only the first. A signed
checkpoint (see :mod:`engram.store.audit.checkpoints`) adds what a chain cannot see alone: truncation, a
rewritten history with every later hash recomputed, a whole replaced file. A verified prefix (see
:mod:`engram.store.audit.prefix`) spares reading again what an earlier verify found valid; on two cores, a long
first verify has a second process check the later part of the lines (see :mod:`engram.store.audit.split`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from engram.store.audit import split
from engram.store.audit.chain import accumulate_all, line_hash, open_log
from engram.store.audit.checkpoints import Checkpoint
from engram.store.audit.prefix import VerifiedPrefix
from engram.store.audit.rules import (
    MAX_PROBLEMS,
    SET_ASIDE,
    TAMPERED,
    TORN,
    UNREADABLE,
    VALID,
    Chain,
    Problem,
    Verdict,
)
from engram.store.audit.runs import Run, Runs

__all__ = ["MAX_PROBLEMS", "SET_ASIDE", "TAMPERED", "TORN", "UNREADABLE", "VALID", "Problem", "Verdict"]

# What settles the one case a checkpoint cannot tell from tampering: a person who restored a backup says so.
RESTORED = "if you restored a backup, `engram audit checkpoint --reset` accepts the log as it is, recorded"


def verify(
    path: Path,
    *checkpoints: Checkpoint | None,
    progress: Callable[[int], None] | None = None,
    prefix: VerifiedPrefix | None = None,
) -> Verdict:
    """Verify the whole log against every checkpoint given (engram's own and its kept copy; None ones are
    skipped), collecting every problem. ``progress(bytes_read)`` is called every 10k lines. With ``prefix`` (see
    :mod:`engram.store.audit.prefix`), bytes it covers unchanged are not read line by line."""
    return verify_recording(path, *checkpoints, progress=progress, prefix=prefix)[0]


def verify_recording(
    path: Path,
    *checkpoints: Checkpoint | None,
    progress: Callable[[int], None] | None = None,
    prefix: VerifiedPrefix | None = None,
) -> tuple[Verdict, VerifiedPrefix | None]:
    """:func:`verify`, and the unsigned record of what it found, for a valid log (None otherwise)."""
    pins = list({(c.log_id, c.size, c.head): c for c in checkpoints if c is not None}.values())  # a copy: once
    verdict = Verdict(VALID, checkpoint="pending" if pins else "none")
    try:
        fh = open_log(path)
    except FileNotFoundError:
        return _against_checkpoints(verdict, pins), None
    except OSError as exc:
        return Verdict(UNREADABLE, reason=str(exc)), None
    chain, part = Chain(verdict), None
    with fh:
        try:
            read = prefix.read_over(fh) if prefix is not None and _resumes(prefix, pins) else None
            if prefix is not None and read is not None:
                chain.resume(prefix)
                if progress is not None:
                    progress(verdict.offset)
            else:
                read = hashlib.sha256()
            part = split.begin(path, fh, verdict.offset, verdict.lines, frozenset(pin.size for pin in pins))
            check_pins = functools.partial(_check_pins, pins=pins)
            pinned = sorted({1, *(pin.size for pin in pins)}) if pins else []
            runs = Runs(fh, verdict.lines + 1, verdict.offset, part.cuts if part is not None else ())
            for run in runs:
                mine = len(run.lines) if part is None else part.mine(run)
                if part is not None and mine and part.due():
                    part.finish(chain, check_pins)
                _advance(chain, run, mine, pinned, check_pins, part)
                read.update(run.data)
                if progress is not None and run.last // 10_000 > (run.first - 1) // 10_000:
                    progress(verdict.offset)
            if part is not None and part.due():
                part.finish(chain, check_pins)
        except OSError as exc:
            return Verdict(UNREADABLE, reason=str(exc)), None
        finally:
            if part is not None:
                part.close()
    torn = f"{len(runs.torn)} bytes with no newline at the end" if runs.torn else None
    verdict.forgive(chain.forgiven())
    if torn and verdict.status == VALID:
        verdict.status, verdict.reason = TORN, torn
    verdict = _against_checkpoints(verdict, pins)
    if verdict.status != VALID or not verdict.lines or verdict.head is None:
        return verdict, None
    checked = tuple(sorted({(p.size, p.head) for p in pins if p.size <= verdict.lines}))
    return verdict, chain.record(read.hexdigest(), checked)


class _Pins(Protocol):
    """:func:`_check_pins` bound to the checkpoints: line ``n``'s ``raw`` bytes are needed for line 1 only."""

    def __call__(self, verdict: Verdict, n: int, head: str, raw: bytes = b"") -> None: ...


def _advance(
    chain: Chain, run: Run, mine: int, pinned: list[int], check_pins: _Pins, part: split.Handoff | None
) -> None:
    """Check the first ``mine`` lines of ``run`` here (the rest are the other process's), and take every line
    into the running digest; a checkpoint is checked after its line, its line's own problems before it."""
    verdict, head = chain.verdict, chain.verdict.head or ""
    for piece in run.pieces(sorted({*pinned, run.first + mine - 1})):
        here = piece.first < run.first + mine
        if here:
            chain.check_many(piece.first, piece.lines)
        head = accumulate_all(head, piece.lines)
        if piece.last in pinned and here:
            check_pins(verdict, piece.last, head, raw=piece.lines[-1])
        elif piece.last in pinned and part is not None:
            part.passed(piece.last, head)
    if part is not None and mine < len(run.lines):
        part.took(run.tail(mine), chain)
    verdict.head, verdict.lines, verdict.offset = head, run.last, run.end


def _resumes(prefix: VerifiedPrefix, pins: list[Checkpoint]) -> bool:
    """Can the verify start after ``prefix``? Every checkpoint must be of its log, and one that pins a line
    inside it must be one it was matched against (or pin its last line): those lines are not read again."""
    for pin in pins:
        if pin.log_id != prefix.log_id:
            return False
        inside = pin.size <= prefix.lines
        if inside and (pin.size, pin.head) not in prefix.pins and (pin.size, pin.head) != (prefix.lines, prefix.head):
            return False
    return True


def _check_pins(verdict: Verdict, n: int, head: str, raw: bytes = b"", *, pins: list[Checkpoint]) -> None:
    """Line ``n`` (``raw``: needed for line 1 only), the running digest at ``head`` after it, against each
    checkpoint."""
    for pin in pins:
        if n == 1 and line_hash(raw) != pin.log_id:
            verdict.add(n, "checkpoint log_id mismatch: the log was replaced since the checkpoint")
        elif n == pin.size and head != pin.head:
            _mismatch(verdict, n, pin)


def _mismatch(verdict: Verdict, n: int, checkpoint: Checkpoint) -> None:
    earlier = [p.line for p in verdict.problems if p.line is not None and p.line <= n]
    verdict.add(
        n,
        f"checkpoint mismatch: lines 1-{n} are not what was checkpointed at {checkpoint.ts}: "
        + (
            f"this follows from the problem at line {earlier[0]}, not a second change"
            if earlier
            else "the history was rewritten with recomputed hashes, or this root was restored from a backup "
            f"older than that checkpoint and written to since ({RESTORED})"
        ),
    )


def _against_checkpoints(verdict: Verdict, pins: list[Checkpoint]) -> Verdict:
    if verdict.status == UNREADABLE:
        return verdict
    for pin in pins:
        if verdict.lines < pin.size:
            verdict.add(
                None,
                f"truncated: the checkpoint of {pin.ts} records {pin.size} lines, the log has {verdict.lines}: "
                f"lines were removed, or this root was restored from a backup older than that checkpoint ({RESTORED})",
            )
            verdict.checkpoint = "larger than log"
    if verdict.checkpoint == "pending":
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
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def events(path: Path, where: EventFilter = EventFilter()) -> Iterator[dict[str, Any]]:
    """The log's events, filtered, a line at a time: each with ``line`` (its position) and ``seq`` as written,
    or its position where the line has none."""
    try:
        fh = open_log(path)
    except FileNotFoundError:
        return
    with fh:
        for n, raw in enumerate(fh, 1):
            try:
                obj = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue  # `engram audit verify` reports it; a listing shows what can be read
            if isinstance(obj, dict) and where.matches(obj):
                yield {"seq": n, **obj, "line": n}
