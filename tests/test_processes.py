"""A generator run in a child process: its items in order, its failures raised here, the child never left behind."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from engram.store.errors import StoreError
from engram.store.processes import produced_elsewhere


def squares(n: int) -> Iterator[tuple[int, int]]:
    for i in range(n):
        yield os.getpid(), i * i


def fails_after(n: int) -> Iterator[int]:
    yield from range(n)
    raise ValueError("drawn wrong")


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


def test_leaving_early_ends_the_child():
    items = produced_elsewhere(squares, 10_000)
    pid, _ = next(items)
    items.close()
    with pytest.raises(ProcessLookupError):  # ended and reaped
        os.kill(pid, 0)
