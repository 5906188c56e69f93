"""A first verify of a long log on two cores: a second process checks the later part of the lines.

Checking a line (a JSON parse, memoryd's link, engram's hash) depends on the line and on a little state left by
the lines before it (:class:`~engram.store.audit.rules.State`); the running digest a checkpoint pins depends on
every byte before, and stays in this process. So this process reads the whole log as ever: it checks the lines
up to ``start`` itself, and from there only hashes each line into the digest, while the other process checks
the lines from ``start`` to ``end``.

The other process cannot know the state at ``start``. It reads the first :data:`WARM_LINES` lines there only to
take it up, and this process checks those lines itself too. The part is taken only where both then stand in the
same state, every line checked by the rules a single pass would use; where they do not (a stretch of blank or
unparsable lines, or a line that needed the numbering before ``start``), and wherever the other process fails,
this process checks the part itself. The problems the part found, and each checkpoint pinned inside it, are then
reported in line order, so the verdict is the one a single pass gives. The other process also hashes the bytes
it checked: a log rewritten in place meanwhile is not taken.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from engram.store.audit.chain import open_log
from engram.store.audit.rules import VALID, Chain, State, Verdict
from engram.store.audit.runs import Run, Runs

SPLIT_BYTES = 32 << 20  # a shorter log is checked here alone: starting a process costs more than it saves
SHARE = 0.38  # of the bytes, checked here: this process also hashes every line into the running digest
WARM_LINES = 64  # read by the other process only to take up the state, and checked here
_LOOK = 1 << 16  # bytes read to find a line's end


@dataclass
class Part:
    """What the other process found in its part of the log, past the lines it read to take up the state."""

    first: int  # the first line it checked
    last: int  # the last line it read
    warm: State | None  # its state before ``first`` (None: the part had no line past the warm-up)
    final: State
    consulted: bool  # a line needed the numbering before the part (see Chain.consulted)
    problems: list[tuple[int, str]]
    problem_count: int
    memoryd_lines: int
    engram_lines: int
    legacy_numbered: int
    unparsable: dict[int, tuple[str, str]]
    named: set[tuple[int, str]]
    digest: str  # sha256 of the bytes of lines ``first`` to ``last``


def check_part(path: str, begin: int, begin_line: int, start: int, end: int, warm_lines: int) -> Part:
    """In the other process: check the lines between bytes ``start`` and ``end`` of the log at ``path``, the
    first ``warm_lines`` only to take up the state; the bytes from ``begin`` (after line ``begin_line``) to
    ``start`` are only counted, to number the lines."""
    first = begin_line + _newlines(path, begin, start) + 1
    chain = Chain(Verdict(VALID))
    chain.started, chain.unknown, chain.prev_line = True, True, first - 1
    chain.seq_known = chain.legacy_known = False
    warm, digest, last, warm_left = None, hashlib.sha256(), first - 1, warm_lines
    with open_log(path) as fh:
        fh.seek(start)
        for run in Runs(fh, first, start, limit=end):
            here = min(warm_left, len(run.lines))
            warm_left -= here
            for n, raw in enumerate(run.lines[:here], run.first):
                chain.check(n, raw)
            if here < len(run.lines):
                if warm is None:
                    warm = chain.state()
                    chain.verdict = Verdict(VALID)
                    chain.unparsable.clear()
                    chain.named.clear()
                    chain.consulted = False
                    if not chain.legacy_known:
                        chain.legacy_since = 0  # counted from here: added to this process's count at the end
                rest = run.tail(here)
                chain.check_many(rest.first, rest.lines)
                digest.update(rest.data)
            last = run.last
    found = chain.verdict
    return Part(
        first + warm_lines,
        last,
        warm,
        chain.state(),
        chain.consulted,
        [(p.line, p.reason) for p in found.problems if p.line is not None],
        found.problem_count,
        found.memoryd_lines,
        found.engram_lines,
        found.legacy_numbered,
        dict(chain.unparsable),
        set(chain.named),
        digest.hexdigest(),
    )


PinCheck = Callable[[Verdict, int, str], None]  # a line's number and the running digest after it


class Pending(Protocol):
    """A part being checked elsewhere."""

    def result(self) -> Part: ...

    def close(self) -> None: ...


class _Child:
    """:func:`check_part` in a fresh interpreter (``python -m``: no fork of a process that may run threads, and
    nothing of the program that called it is imported again there), its :class:`Part` read from its output."""

    def __init__(self, *args: object) -> None:
        command = [sys.executable, "-m", __name__, *map(str, args)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def result(self) -> Part:
        out, _ = self.process.communicate()
        if self.process.returncode:
            raise OSError(f"the second process stopped ({self.process.returncode})")
        part = pickle.loads(out)  # noqa: S301  (our own child's output)
        if not isinstance(part, Part):
            raise OSError("the second process gave no part")
        return part

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@dataclass
class Handoff:
    """The part of the log another process checks, as this process reads past it."""

    path: Path
    start: int
    end: int
    pending: Pending
    pinned: frozenset[int]  # lines a checkpoint pins: their digests wait for the part's problems
    warm_left: int  # lines at ``start`` still to check here (the other process only takes up the state there)
    at_warm: State | None = None
    first: int = 0  # the part's first and last lines checked there, and where it starts
    last: int = 0
    first_offset: int = 0
    done: bool = False
    digest: Any = field(default_factory=hashlib.sha256)
    deferred: list[tuple[int, str]] = field(default_factory=list)

    @property
    def cuts(self) -> tuple[int, int]:
        """Where the part starts and ends: the reading's runs of lines are cut there."""
        return self.start, self.end

    def mine(self, run: Run) -> int:
        """How many of ``run``'s lines, from its first, are checked here: the rest are the other process's."""
        if run.offset < self.start or run.end > self.end or self.done:
            return len(run.lines)
        here = min(self.warm_left, len(run.lines))
        self.warm_left -= here
        return here

    def took(self, taken: Run, chain: Chain) -> None:
        """The other process checks ``taken``; this one, after the lines before them, stands at ``chain``."""
        if self.at_warm is None:
            self.at_warm, self.first, self.first_offset = chain.state(), taken.first, taken.offset
        self.last = taken.last
        self.digest.update(taken.data)

    def passed(self, n: int, head: str) -> None:
        """Line ``n``, one the other process checks, left the running digest at ``head``."""
        if n in self.pinned:
            self.deferred.append((n, head))

    def due(self) -> bool:
        """Did the part take lines whose findings are not in yet? (Called at a line the part did not take.)"""
        return self.at_warm is not None and not self.done

    def finish(self, chain: Chain, check_pin: PinCheck) -> None:
        """After the part's last line: take what the other process found, or check the part here."""
        self.done = True
        part = self._result()
        taken = (
            part is not None
            and part.warm is not None
            and self.at_warm is not None
            and (part.first, part.last, part.digest) == (self.first, self.last, self.digest.hexdigest())
            and not part.consulted
            and _same(self.at_warm, part.warm)
        )
        if part is not None and taken:
            _take(part, chain, self.deferred, check_pin)
        else:
            self._check_here(chain, check_pin)

    def close(self) -> None:
        self.pending.close()

    def _result(self) -> Part | None:
        try:
            return self.pending.result()
        except Exception:  # noqa: BLE001  (any failure there: the part is checked here)
            return None

    def _check_here(self, chain: Chain, check_pin: PinCheck) -> None:
        """The part's lines, read again and checked here, each checkpoint inside it after its line."""
        digest, pins = hashlib.sha256(), dict(self.deferred)
        with open_log(self.path) as fh:
            fh.seek(self.first_offset)
            for run in Runs(fh, self.first, self.first_offset, limit=self.end):
                for piece in run.pieces(sorted(pins)):
                    chain.check_many(piece.first, piece.lines)
                    if piece.last in pins:
                        check_pin(chain.verdict, piece.last, pins[piece.last])
                digest.update(run.data)
        if digest.hexdigest() != self.digest.hexdigest():
            raise OSError("the log was rewritten while it was verified: verify it again")


def begin(path: Path, fh: BinaryIO, offset: int, lines: int, pinned: frozenset[int]) -> Handoff | None:
    """A second process checking the later part of the log from byte ``offset`` (after line ``lines``), when
    there are two cores and enough bytes left to gain by it; None otherwise."""
    size = os.fstat(fh.fileno()).st_size
    if size - offset < max(SPLIT_BYTES, 1) or _cores() < 2:
        return None
    start = _line_start(fh, max(1, offset + int((size - offset) * SHARE)), size)  # line 1 is checked here
    end = _last_line_end(fh, size)
    if start is None or end is None or start >= end:
        return None
    try:
        pending = run(path, offset, lines, start, end, WARM_LINES)
    except OSError:  # no second process to be had: one pass here
        return None
    return Handoff(path, start, end, pending, pinned, WARM_LINES)


run: Callable[..., Pending] = _Child  # what checks a part: the tests check it in this process


def _same(mine: State, theirs: State) -> bool:
    """The other process stands where this one does: the numbering only once a line there told it."""
    return (
        mine[:5] == theirs[:5]
        and (not theirs.seq_known or mine.last_seq == theirs.last_seq)
        and (not theirs.legacy_known or (mine.legacy_base, mine.legacy_since) == theirs[6:8])
    )


def _take(part: Part, chain: Chain, deferred: list[tuple[int, str]], check_pin: PinCheck) -> None:
    """Report the part's problems and the checkpoints inside it in line order (a line's own problems before a
    checkpoint at it, as a single pass does), and stand where the part left the chain."""
    verdict = chain.verdict
    found = [(line, 0, reason) for line, reason in part.problems] + [(line, 1, head) for line, head in deferred]
    for line, kind, text in sorted(found, key=lambda item: item[:2]):
        if kind == 0:
            verdict.add(line, text)
        else:
            check_pin(verdict, line, text)
    verdict.problem_count += part.problem_count - len(part.problems)  # past the other process's list
    verdict.memoryd_lines += part.memoryd_lines
    verdict.engram_lines += part.engram_lines
    verdict.legacy_numbered += part.legacy_numbered
    final = part.final
    chain.started, chain.link, chain.prev_line, chain.prev_bad, chain.unknown = final[:5]
    if final.seq_known:
        chain.last_seq = final.last_seq
    if final.legacy_known:
        chain.legacy_base, chain.legacy_since = final.legacy_base, final.legacy_since
    else:
        chain.legacy_since += final.legacy_since
    chain.unparsable.update(part.unparsable)
    chain.named |= part.named


def _newlines(path: str, start: int, end: int) -> int:
    count = 0
    with open_log(path) as fh:
        fh.seek(start)
        while start < end and (chunk := fh.read(min(1 << 23, end - start))):
            count += chunk.count(b"\n")
            start += len(chunk)
    return count


def _line_start(fh: BinaryIO, at: int, size: int) -> int | None:
    """The start of the first line that begins at or after byte ``at`` (None: none does before ``size``)."""
    if at == 0:
        return 0
    pos = at - 1
    while pos < size and (chunk := os.pread(fh.fileno(), _LOOK, pos)):
        found = chunk.find(b"\n")
        if found >= 0:
            start = pos + found + 1
            return start if start < size else None
        pos += len(chunk)
    return None


def _last_line_end(fh: BinaryIO, size: int) -> int | None:
    """The end of the log's last complete line (a torn tail after it is left to this process)."""
    start = max(0, size - _LOOK)
    found = os.pread(fh.fileno(), size - start, start).rfind(b"\n")
    return start + found + 1 if found >= 0 else None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


if __name__ == "__main__":  # the other process: python -m engram.store.audit.split PATH BEGIN LINE START END WARM
    from engram.store.audit.split import check_part as _check  # Part pickled under this module's own name

    path_arg, *numbers = sys.argv[1:]
    sys.stdout.buffer.write(pickle.dumps(_check(path_arg, *map(int, numbers))))
