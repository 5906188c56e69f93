"""A generator run in a child process: its items in order, its failures raised here, the child never left behind."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from engram.store.demo.processes import produced_elsewhere
from engram.store.errors import StoreError


def squares(n: int) -> Iterator[tuple[int, int]]:
    for i in range(n):
        yield os.getpid(), i * i


def fails_after(n: int) -> Iterator[int]:
    yield from range(n)
    raise ValueError("drawn wrong")


def big_items_logged(log: str) -> Iterator[bytes]:
    """Items far larger than a pipe holds, each noted in ``log`` once drawn."""
    for i in range(100):
        with open(log, "a") as fh:
            fh.write(f"{i}\n")
        yield bytes(1 << 20)


def dies_after(n: int) -> Iterator[int]:
    yield from range(n)
    os._exit(3)


def test_items_come_in_order_from_another_process():
    got = list(produced_elsewhere(squares, 50))
    assert [square for _, square in got] == [i * i for i in range(50)]
    assert {pid for pid, _ in got} != {os.getpid()}


def test_an_error_in_the_child_is_raised_here_with_its_cause():
    got = []
    with pytest.raises(StoreError, match="ValueError: drawn wrong"):
        for item in produced_elsewhere(fails_after, 3):
            got.append(item)
    assert got == [0, 1, 2]


def test_a_child_that_dies_is_an_error_not_a_wait_forever():
    with pytest.raises(StoreError, match="ended early"):
        list(produced_elsewhere(dies_after, 2))


def test_the_child_draws_a_few_items_ahead_and_no_more(tmp_path):
    """While this process works on an item, the child goes on drawing (it used to wait with the next one until
    this process took it), and stops at AHEAD items ready beyond the one in the pipe: memory stays bounded."""
    import time

    from engram.store.demo.processes import AHEAD

    log = tmp_path / "drawn"
    items = produced_elsewhere(big_items_logged, str(log))
    next(items)

    def drawn() -> int:
        return len(log.read_text().split()) if log.exists() else 0

    # taken 1, in the pipe 1, ready AHEAD, and the one drawn that waits for room
    deadline = time.monotonic() + 30
    while drawn() < 3 + AHEAD and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # time to draw more, were it not bounded
    assert drawn() == 3 + AHEAD
    assert sum(1 for _ in items) == 99


def test_leaving_early_ends_the_child():
    items = produced_elsewhere(squares, 10_000)
    pid, _ = next(items)
    items.close()
    with pytest.raises(ProcessLookupError):  # ended and reaped
        os.kill(pid, 0)


def test_ctrl_c_is_left_to_the_parent():
    """Ctrl-C reaches every process of the terminal's group: the child lets the parent decide (the parent then
    ends it) rather than die printing its own traceback beside the parent's."""
    import signal

    items = produced_elsewhere(squares, 10_000)
    pid, _ = next(items)  # the child is running its loop: its handler is set
    os.kill(pid, signal.SIGINT)
    assert [square for _, square in items][-1] == 9_999**2  # every item still comes: the child lived on


def test_the_writer_process_writes_batch_after_batch_and_leaves_ctrl_c_to_the_parent(tmp_path):
    """The writer process writes and flushes each batch handed to it, answers when done, says what failed, and
    outlives a Ctrl-C (the parent decides what to do about it: the batch under way is waited for)."""
    import multiprocessing
    import signal

    from engram.store.demo.writer import FileWriter
    from engram.store.write.atomic import SealedFile

    def batch(name: str, count: int) -> list[SealedFile]:
        return [
            SealedFile(str(tmp_path / name / f"{i}.md"), f"{name} {i}\n".encode(), 0o640, False) for i in range(count)
        ]

    with FileWriter() as writer:
        writer.start(batch("first", 20))
        writer.finish()
        (child,) = [c for c in multiprocessing.active_children() if c.name == "engram writer"]
        os.kill(child.pid, signal.SIGINT)
        (tmp_path / "blocked").write_bytes(b"a file where a folder would go")
        writer.start(batch("blocked", 3))
        with pytest.raises(StoreError, match="writing the batch's files failed: .*blocked"):
            writer.finish()
        writer.start(batch("second", 20))
        writer.finish()
    assert not child.is_alive()
    assert (tmp_path / "second" / "7.md").read_bytes() == b"second 7\n"
    assert (tmp_path / "first" / "3.md").stat().st_mode & 0o777 == 0o640
