"""The rules each line of ``audit/audit.jsonl`` is held to, and what a verify finds.

Lines by memoryd (and by anything else that appends through memoryd's ``append_event``) and engram's lines may
be interleaved in any order, and each is held to its author's rule:

- every line's ``prev_hash`` follows memoryd's rule (the previous non-blank line, minus its prev_hash);
  blank lines are skipped, as memoryd's verifier skips them;
- a line without ``this_hash`` is not engram's: a ``seq`` on it is the writer's own numbering (memoryd's docs
  describe one, and a writer that follows them counts its own events from 1), shown as written, never checked;
- engram's lines carry ``seq`` = their 1-based position in the file (blank lines count) and a ``this_hash``
  that must match.

Every problem is reported, not only the first, so an oddity early in the log cannot hide an edit later on.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from engram.store.audit import fastcheck, fastjson
from engram.store.audit.chain import GENESIS, SET_ASIDE, line_hash, memoryd_link, this_hash
from engram.store.audit.prefix import ChainState, VerifiedPrefix

VALID, TAMPERED, TORN, UNREADABLE = "valid", "tampered", "torn_tail", "unreadable"
MAX_PROBLEMS = 1000  # listed; the rest are counted


class State(NamedTuple):
    """:meth:`Chain.state`: everything a line's check depends on besides the line."""

    started: bool
    link: str | None
    prev_line: int
    prev_bad: bool
    unknown: bool
    last_seq: tuple[int, int] | None
    legacy_base: int
    legacy_since: int
    seq_known: bool
    legacy_known: bool


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
        others = self.problem_count - 1  # an unreadable log has a reason and no problem counted
        more = f" (and {others} more problem{'s' if others > 1 else ''})" if others > 0 else ""
        return f"{self.status}: {where}{self.reason}{more}"


class Chain:
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
        # A chain started in the middle of the log (see engram.store.audit.split) knows neither the last engram
        # line's seq nor the legacy numbering until a line tells it; ``consulted`` says one was needed before.
        self.seq_known = True
        self.legacy_known = True
        self.consulted = False

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

    def state(self) -> State:
        """What the next line is checked against."""
        return State(
            self.started,
            self.link,
            self.prev_line,
            self.prev_bad,
            self.unknown,
            self.last_seq,
            self.legacy_base,
            self.legacy_since,
            self.seq_known,
            self.legacy_known,
        )

    def forgiven(self) -> set[int]:
        """The unparsable lines a later repair event names, hash and all (a line edited since is not)."""
        return {line for line, digest in self.named if self.unparsable.get(line, ("", ""))[0] == digest}

    def check_many(self, first: int, lines: list[bytes]) -> None:
        """:meth:`check` each of ``lines``, numbered from ``first``: all at once where the rule can find
        nothing in them (see :mod:`engram.store.audit.fastcheck`), else one by one."""
        advance = None
        if self.started and not self.unknown and self.link is not None:
            advance = fastcheck.passes(first, lines, self.link)
        if advance is None:
            for n, raw in enumerate(lines, first):
                self.check(n, raw)
            return
        verdict, last = self.verdict, first + len(lines) - 1
        verdict.engram_lines += advance.engram_lines
        verdict.memoryd_lines += len(lines) - advance.engram_lines
        self.link, self.prev_line, self.prev_bad = advance.link, last, False
        if advance.last_engram is not None:
            self.last_seq, self.seq_known = (advance.last_engram, advance.last_engram), True
        if advance.last_seq is None:
            self.legacy_since += len(lines)
        else:
            seq, at = advance.last_seq
            self.legacy_base, self.legacy_since, self.legacy_known = seq, last - at, True

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
        last_known, self.seq_known = self.seq_known, True
        if seq == n:
            return None
        if not (last_known and self.legacy_known):
            self.consulted = True
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
            self.legacy_base, self.legacy_since, self.legacy_known = seq, 0, True
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
