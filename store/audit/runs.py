"""Reading the log's complete lines a run at a time, for a verify that checks many lines at once (see
:mod:`engram.store.audit.fastcheck`): large reads split into lines in one call, not a call per line."""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

RUN_LINES = 512  # lines checked at once: a run with a problem in it is checked again line by line
BLOCK = 1 << 20  # bytes read at a time


@dataclass(frozen=True)
class Run:
    """Consecutive complete lines of the log."""

    first: int  # the first line's number
    offset: int  # its byte offset
    lines: list[bytes]  # without their newlines
    data: memoryview  # their bytes, newlines included

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1

    @property
    def end(self) -> int:
        return self.offset + len(self.data)

    def head(self, count: int) -> Run:
        """The first ``count`` lines."""
        return self._part(0, count)

    def tail(self, count: int) -> Run:
        """The lines after the first ``count``."""
        return self._part(count, len(self.lines))

    def pieces(self, lines: Sequence[int]) -> Iterator[Run]:
        """The run cut after each of ``lines`` (sorted line numbers) that falls inside it."""
        cuts = lines[bisect_left(lines, self.first) : bisect_right(lines, self.last - 1)]
        start = 0
        for number in cuts:
            yield self._part(start, number - self.first + 1)
            start = number - self.first + 1
        yield self._part(start, len(self.lines))

    def _part(self, start: int, stop: int) -> Run:
        if start == 0 and stop == len(self.lines):  # the common case: the run whole, not copied or measured again
            return self
        lines = self.lines[start:stop]
        skip = _size(self.lines[:start])
        return Run(self.first + start, self.offset + skip, lines, self.data[skip : skip + _size(lines)])


class Runs:
    """The complete lines from byte ``offset`` (line ``first`` starts there) to ``limit`` (None: the end of the
    file), in runs of at most :data:`RUN_LINES`, none of which crosses a byte offset in ``cuts`` (a line that
    does is kept whole). Once read, ``torn`` holds the bytes after the last newline (a torn tail at the end of
    the file).

    Each read starts at a line's start and ends at the last newline it holds (``pread``: the file object's
    position is neither used nor moved), so a run's bytes are a slice of one read, never a copy: joining the
    unfinished line to the next read copied every block again."""

    def __init__(
        self, fh: BinaryIO, first: int, offset: int, cuts: Sequence[int] = (), limit: int | None = None
    ) -> None:
        self.fh, self.first, self.offset, self.limit = fh, first, offset, limit
        self.cuts = sorted({cut for cut in cuts if cut > offset} | ({limit} if limit is not None else set()))
        self.torn = b""

    def __iter__(self) -> Iterator[Run]:
        fd, first, at, size = self.fh.fileno(), self.first, self.offset, BLOCK
        cuts = iter(self.cuts)
        cut = next(cuts, None)
        while self.limit is None or at < self.limit:
            while cut is not None and cut <= at:
                cut = next(cuts, None)
            want = size if cut is None else min(size, cut - at)
            block = os.pread(fd, want, at)
            end = block.rfind(b"\n") + 1
            if not end:
                if len(block) < want or at + len(block) == self.limit:
                    self.torn = block  # the file, or the part asked for, ends inside a line
                    return
                if cut == at + want:  # the line goes on past the cut: it stays whole
                    cut = next(cuts, None)
                size = max(size, want) * 2  # a line longer than a read: read it whole
                continue
            size = BLOCK
            lines = block.split(b"\n")
            lines.pop()  # what follows the last newline: read again, from its start, with the next read
            view, skip = memoryview(block), 0
            for start in range(0, len(lines), RUN_LINES):
                run = lines[start : start + RUN_LINES]
                length = _size(run)
                yield Run(first, at + skip, run, view[skip : skip + length])
                first, skip = first + len(run), skip + length
            at += end


def _size(lines: list[bytes]) -> int:
    """The bytes of ``lines``, each with its newline."""
    return sum(map(len, lines)) + len(lines)
