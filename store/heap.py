"""What a long-running process hands back to the system once its background work is done.

glibc keeps freed memory for reuse, and it keeps it per arena: each thread that allocates gets an arena of its
own (up to eight per core), and what one thread's work freed stays resident in that thread's arena. The console
runs its loading and searching on a pool of threads, so after opening a 100,000-memory root it held 296-360 MB
of which Python used 100 MB; with two arenas and the freed pages given back once the pool is quiet, 246 MB.
Everything here does nothing where the C library has no ``mallopt`` or ``malloc_trim`` (musl, macOS).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
import time
from collections.abc import Callable

_M_ARENA_MAX = -8  # glibc's malloc.h
ARENAS = 2
"""Arenas a console uses: two keeps the UI thread and one worker from waiting on each other's allocations."""

IDLE_SECONDS = 1.0
"""How long the pool must have been quiet before the heap is trimmed: a burst of keystrokes' searches is not
interrupted by a trim after each (each would give back pages the next one faults in again)."""
HEAVY_SECONDS = 0.05
"""A task that ran this long may have freed enough to be worth a trim."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    with contextlib.suppress(OSError):
        return ctypes.CDLL(None)
    return None


def limit_arenas(count: int = ARENAS) -> None:
    """Let every thread share ``count`` malloc arenas (call it before threads start: arenas made before stay)."""
    libc = _libc()
    with contextlib.suppress(AttributeError):
        if libc is not None:
            libc.mallopt(_M_ARENA_MAX, count)


def give_back() -> None:
    """Hand the freed memory of every arena back to the system (``malloc_trim`` walks them all; ctypes lets go
    of the interpreter meanwhile)."""
    libc = _libc()
    with contextlib.suppress(AttributeError):
        if libc is not None:
            libc.malloc_trim(0)


class TrimWhenIdle:
    """Gives the heap back once the pool's heavy work is over: a task that ran :data:`HEAVY_SECONDS` or longer
    (a load, a build, a sweep) arms a timer, which trims once no task has been running and no heavy one has
    ended for :data:`IDLE_SECONDS`. The change feed's look every second is not heavy: an idle console never
    trims. Thread-safe: tasks start and end on any thread; the timer runs on its own."""

    def __init__(
        self,
        idle_seconds: float = IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        timer: Callable[[float, Callable[[], None]], threading.Timer] = threading.Timer,
    ) -> None:
        self.idle_seconds = idle_seconds
        self.clock = clock
        self.timer = timer  # tests fire it by hand
        self._lock = threading.Lock()
        self._running = 0
        self._last_heavy: float | None = None  # when the last heavy task ended; None once trimmed since
        self._timer: threading.Timer | None = None
        self.trims = 0

    @property
    def armed(self) -> bool:
        return self._timer is not None

    def started(self) -> float:
        """A task starts; returns its start time, for :meth:`ended`."""
        with self._lock:
            self._running += 1
        return self.clock()

    def ended(self, started_at: float) -> None:
        now = self.clock()
        with self._lock:
            self._running -= 1
            if now - started_at >= HEAVY_SECONDS:
                self._last_heavy = now
                if self._timer is None:
                    self._arm(self.idle_seconds)

    def fire(self) -> None:
        """What the timer runs: trim if the pool has been quiet long enough, else look again later."""
        with self._lock:
            self._timer = None
            if self._last_heavy is None:
                return
            wait = self._last_heavy + self.idle_seconds - self.clock()
            if self._running or wait > 0:
                self._arm(max(wait, self.idle_seconds / 10))
                return
            self._last_heavy = None
        give_back()
        self.trims += 1

    def cancel(self) -> None:
        """No trim is pending after this (the pool is shutting down)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._last_heavy = None

    def _arm(self, delay: float) -> None:
        self._timer = self.timer(delay, self.fire)
        self._timer.daemon = True
        self._timer.start()
