"""Reading ``audit/audit.jsonl``: verifying the chain, and listing its events.

Both stream the file a line at a time, so a log of a million lines verifies in bounded memory. Lines by
memoryd (and by anything else that appends through memoryd's ``append_event``) and engram's lines may be
interleaved in any order, and each is held to its author's rule:

- every line's ``prev_hash`` follows memoryd's rule (the previous non-blank line, minus its prev_hash);
  blank lines are skipped, as memoryd's verifier skips them;
- a line without ``this_hash`` is not engram's: a ``seq`` on it is the writer's own numbering (memoryd's docs
  describe one, and a writer that follows them counts its own events from 1), shown as written, never checked;
- engram's lines carry ``seq`` = their 1-based position in the file (blank lines count) and a ``this_hash``
  that must match.

Every problem is reported, not only the first, so an oddity early in the log cannot hide an edit later on.
A signed checkpoint (see :mod:`engram.store.audit.checkpoints`) adds what a chain cannot see alone: truncation, a
rewritten history with every later hash recomputed, a whole replaced file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.store.audit import fastjson
from engram.store.audit.chain import GENESIS, accumulate, line_hash, memoryd_link, this_hash
from engram.store.audit.checkpoints import Checkpoint
from engram.store.audit.prefix import ChainState, VerifiedPrefix

VALID, TAMPERED, TORN, UNREADABLE = "valid", "tampered", "torn_tail", "unreadable"
SET_ASIDE = "audit_lines_set_aside"  # engram's event naming bad lines its repair copied aside
MAX_PROBLEMS = 1000  # listed; the rest are counted
# What settles the one case a checkpoint cannot tell from tampering: a person who restored a backup says so.
RESTORED = "if you restored a backup, `engram audit checkpoint --reset` accepts the log as it is, recorded"


@dataclass(frozen=True)
class Problem:
    line: int | None
    reason: str


@dataclass
class Verdict:
    status: str  # valid | tampered | torn_tail | unreadable
    lines: int = 0  # complete lines read (a torn tail excluded)
    head: str | None = None  # running digest of every complete line (what a checkpoint pins)
    offset: int = 0  # bytes of complete lines
    bad_line: int | None = None  # the first problem's line
    reason: str | None = None  # the first problem's reason
    memoryd_lines: int = 0  # lines without this_hash: memoryd's, or any writer's through memoryd's rule
    engram_lines: int = 0
    legacy_numbered: int = 0  # engram lines numbered by engram 0.1's writer (see _Chain.seq_problem)
    set_aside: int = 0  # bad lines left in place and named by a repair's event (see Verdict.forgive)
    checkpoint: str = "none"  # none | matched | missing | what went wrong
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def add(self, line: int | None, reason: str) -> None:
        """Record a problem (``line`` None: the log as a whole, e.g. truncated)."""
        if self.problem_count == 0:
            self.status, self.bad_line, self.reason = TAMPERED, line, reason
        if reason.startswith("checkpoint"):
            self.checkpoint = "mismatch"
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(line, reason))

    def forgive(self, lines: set[int]) -> None:
        """Drop the "unparsable" problem of each of ``lines``: lines ``engram audit repair`` set aside, named by
        line and hash in its event. Every other problem stays."""
        if not lines:
            return
        self.set_aside = len(lines)
        self.problems = [p for p in self.problems if not (p.line in lines and p.reason.startswith("unparsable"))]
        self.problem_count -= len(lines)
        first = self.problems[0] if self.problems else None
        self.bad_line, self.reason = (first.line, first.reason) if first else (None, None)
        if self.problem_count == 0:
            self.status = VALID

    def summary(self) -> str:
        if self.status == VALID:
            aside = f", {self.set_aside} set aside by repair" if self.set_aside else ""
            return (
                f"valid: {self.lines} lines ({self.memoryd_lines} memoryd, {self.engram_lines} engram{aside}), "
                f"head {self.head}; checkpoint {self.checkpoint}"
            )
        if self.status == TORN:
            return (
                f"torn tail after line {self.lines}: {self.reason} (recoverable, not tampering: "
                "run `engram audit repair`)"
            )
        where = f"line {self.bad_line}: " if self.bad_line else ""
        others = self.problem_count - 1
        more = f" (and {others} more problem{'s' if others > 1 else ''})" if others else ""
        return f"{self.status}: {where}{self.reason}{more}"


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
        fh = path.open("rb")
    except FileNotFoundError:
        return _against_checkpoints(verdict, pins), None
    except OSError as exc:
        return Verdict(UNREADABLE, reason=str(exc)), None
    chain, torn = _Chain(verdict), None
    with fh:
        try:
            read = prefix.read_over(fh) if prefix is not None and _resumes(prefix, pins) else None
            if prefix is not None and read is not None:
                chain.resume(prefix)
                if progress is not None:
                    progress(verdict.offset)
            else:
                read = hashlib.sha256()
            for n, raw in enumerate(fh, verdict.lines + 1):
                if not raw.endswith(b"\n"):
                    torn = f"{len(raw)} bytes with no newline at the end"
                    break
                chain.check(n, raw)
                read.update(raw)
                verdict.head = accumulate(verdict.head or "", raw)
                for pin in pins:
                    _check_pin(verdict, n, raw, pin)
                verdict.lines, verdict.offset = n, verdict.offset + len(raw)
                if progress is not None and n % 10_000 == 0:
                    progress(verdict.offset)
        except OSError as exc:
            return Verdict(UNREADABLE, reason=str(exc)), None
    verdict.forgive(chain.forgiven())
    if torn and verdict.status == VALID:
        verdict.status, verdict.reason = TORN, torn
    verdict = _against_checkpoints(verdict, pins)
    if verdict.status != VALID or not verdict.lines or verdict.head is None:
        return verdict, None
    checked = tuple(sorted({(p.size, p.head) for p in pins if p.size <= verdict.lines}))
    return verdict, chain.record(read.hexdigest(), checked)


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


class _Chain:
    """The state carried from one line to the next while verifying."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.started = False  # a non-blank line was read
        self.link: str | None = None  # memoryd's prev_hash for the next line (of the last non-blank one, parsed)
        self.prev_line = 0  # its number
        self.prev_bad = False  # it had a problem of its own (its successor's link is then not blamed on it)
        self.unknown = False  # it could not be parsed: the next link cannot be checked
        self.last_seq: tuple[int, int] | None = None  # the previous engram line's (seq, line)
        self.legacy_base = 0  # see seq_problem
        self.legacy_since = 0
        self.unparsable: dict[int, tuple[str, str]] = {}  # line -> its hash, and why
        self.named: set[tuple[int, str]] = set()  # (line, hash) set aside by a repair's event
        self.log_id = ""

    def resume(self, prefix: VerifiedPrefix) -> None:
        """Stand where a valid verify of ``prefix`` stood after its last line. The lines it found unparsable and
        a repair set aside are problems again, forgiven again at the end, as a full read would find them."""
        state, verdict = prefix.state, self.verdict
        self.started, self.link, self.prev_line = prefix.lines > 0, state.link, state.prev_line
        self.unknown, self.last_seq = state.unknown, state.last_seq
        self.legacy_base, self.legacy_since = state.legacy_base, state.legacy_since
        self.named, self.log_id = set(state.named), prefix.log_id
        for line, digest, reason in state.unparsable:
            self.unparsable[line] = (digest, reason)
            verdict.add(line, reason)
        verdict.lines, verdict.offset, verdict.head = prefix.lines, prefix.offset, prefix.head
        verdict.memoryd_lines, verdict.engram_lines = prefix.memoryd_lines, prefix.engram_lines
        verdict.legacy_numbered = prefix.legacy_numbered

    def record(self, digest: str, pins: tuple[tuple[int, str], ...]) -> VerifiedPrefix:
        verdict = self.verdict
        state = ChainState(
            self.link,
            self.prev_line,
            self.unknown,
            self.last_seq,
            self.legacy_base,
            self.legacy_since,
            tuple((line, h, why) for line, (h, why) in sorted(self.unparsable.items())),
            tuple(sorted(self.named)),
        )
        assert verdict.head is not None
        return VerifiedPrefix(
            self.log_id,
            verdict.lines,
            verdict.offset,
            verdict.head,
            digest,
            verdict.memoryd_lines,
            verdict.engram_lines,
            verdict.legacy_numbered,
            state,
            pins,
        )

    def forgiven(self) -> set[int]:
        """The unparsable lines a later repair event names, hash and all (a line edited since is not)."""
        return {line for line, digest in self.named if self.unparsable.get(line, ("", ""))[0] == digest}

    def check(self, n: int, raw: bytes) -> None:
        if n == 1:
            self.log_id = line_hash(raw)
        if not raw.strip():
            return  # memoryd's verifier skips blank lines; they still count as positions
        problems: list[str] = []
        try:
            obj = fastjson.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            obj = None
            problems.append("unparsable: not a JSON line")
        if obj is not None and not isinstance(obj, dict):
            obj = None
            problems.append("unparsable: not a JSON object")
        if obj is None:
            self.unparsable[n] = (line_hash(raw), problems[0])
        else:
            if "this_hash" in obj:
                self.verdict.engram_lines += 1
                own = self.engram_problems(n, obj)
                if not own and obj.get("event_type") == SET_ASIDE:
                    self.named |= _named_lines(obj)
                problems += own
            else:
                self.verdict.memoryd_lines += 1
            link = self.link_problem(n, obj)
            if link is not None:
                problems.append(link)
            self.follow_legacy_numbering(obj)
        for reason in problems:
            self.verdict.add(n, reason)
        self.started, self.prev_line, self.prev_bad, self.unknown = True, n, bool(problems), obj is None
        self.link = None if obj is None else memoryd_link(obj)

    def engram_problems(self, n: int, obj: dict[str, Any]) -> list[str]:
        problems = []
        seq = self.seq_problem(n, obj.get("seq"))
        if seq is not None:
            problems.append(seq)
        if not isinstance(obj.get("prev_hash"), str) or this_hash(obj) != obj["this_hash"]:
            problems.append("content does not match its this_hash (the line was edited)")
        return problems

    def seq_problem(self, n: int, seq: Any) -> str | None:
        """engram's seq is the line's position. Its 0.1 writer instead continued the last number it found in
        the log, a foreign ``seq`` included; lines it wrote that way are accepted (``legacy_numbered``), since
        the chain and the checkpoint, not seq, are what detect removed, moved and repeated lines."""
        if not isinstance(seq, int) or isinstance(seq, bool):
            return "seq is not a number on an engram line"
        last, self.last_seq = self.last_seq, (seq, n)
        if seq == n:
            return None
        if seq == self.legacy_base + self.legacy_since + 1:
            self.verdict.legacy_numbered += 1
            return None
        if last is not None and last[0] == seq:
            return f"seq duplicate: seq {seq} was already on line {last[1]} (a line was duplicated)"
        if seq > n:
            return f"seq gap: expected {n}, found {seq} (a line before it was removed)"
        return f"seq mismatch: expected {n}, found {seq} (lines reordered or inserted)"

    def follow_legacy_numbering(self, obj: dict[str, Any]) -> None:
        seq = obj.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            self.legacy_base, self.legacy_since = seq, 0
        else:
            self.legacy_since += 1

    def link_problem(self, n: int, obj: dict[str, Any]) -> str | None:
        if self.unknown:
            return None  # the line before could not be parsed: that line is the problem reported
        if not self.started:
            return (
                None
                if obj.get("prev_hash") == GENESIS
                else "link mismatch: the first line's prev_hash is not the genesis value"
            )
        if obj.get("prev_hash") == self.link:
            return None
        if self.prev_bad:
            return None  # the line before is already reported; this link breaks because of it
        return (
            f"link mismatch: prev_hash does not match line {self.prev_line} (line {self.prev_line} was "
            "edited, or this one inserted or moved, or a line between them removed)"
        )


def _named_lines(obj: dict[str, Any]) -> set[tuple[int, str]]:
    try:
        records = json.loads(obj.get("details") or "{}").get("lines", [])
        return {(int(r["line"]), str(r["sha256"])) for r in records if not r.get("cut")}
    except (TypeError, ValueError, KeyError, AttributeError):
        return set()


def _check_pin(verdict: Verdict, n: int, raw: bytes, checkpoint: Checkpoint) -> None:
    if n == 1 and line_hash(raw) != checkpoint.log_id:
        verdict.add(n, "checkpoint log_id mismatch: the log was replaced since the checkpoint")
    elif n == checkpoint.size and verdict.head != checkpoint.head:
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
                yield {"seq": n, **obj, "line": n}
