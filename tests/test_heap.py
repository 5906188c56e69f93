"""The console hands freed memory back once its heavy background work is over, and never while idle."""

from __future__ import annotations

import threading

from engram.store.heap import HEAVY_SECONDS, TrimWhenIdle
from engram.tui.threads import ReleasingExecutor


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class HandTimer(threading.Timer):
    """A timer the test fires itself (``TrimWhenIdle.fire``), at the moments of its fake clock."""

    def start(self) -> None:
        pass


def test_light_tasks_never_arm_a_trim():
    clock = Clock()
    idle = TrimWhenIdle(idle_seconds=1.0, clock=clock, timer=HandTimer)
    for _ in range(20):  # the change feed's look every second
        started = idle.started()
        clock.now += HEAVY_SECONDS / 10
        idle.ended(started)
        clock.now += 1.0
    assert not idle.armed and idle.trims == 0


def test_a_heavy_task_trims_once_the_pool_is_quiet():
    clock = Clock()
    idle = TrimWhenIdle(idle_seconds=1.0, clock=clock, timer=HandTimer)
    started = idle.started()
    clock.now += 2.0  # a load
    idle.ended(started)
    assert idle.armed
    busy = idle.started()  # a search starts: not while it runs
    clock.now += 1.5
    idle.fire()
    assert idle.trims == 0 and idle.armed
    idle.ended(busy)  # itself heavy (1.5 s): the quiet second counts from its end
    clock.now += 1.0
    idle.fire()
    assert idle.trims == 1 and not idle.armed
    idle.fire()  # nothing heavy since: nothing more
    assert idle.trims == 1
    started = idle.started()
    clock.now += 1.0
    idle.ended(started)
    clock.now += 0.5  # too soon after it: look again later
    idle.fire()
    assert idle.trims == 1 and idle.armed


def test_the_consoles_pool_counts_its_tasks_and_arms_after_a_heavy_one():
    pool = ReleasingExecutor(lambda: None)
    try:
        pool.submit(lambda: None).result()
        assert not pool.idle.armed
        pool.submit(threading.Event().wait, HEAVY_SECONDS * 2).result()
        assert pool.idle.armed
    finally:
        pool.shutdown()
    assert not pool.idle.armed
