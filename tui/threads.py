"""Where the console's thread workers run: on a pool that lets go of each thread's database connection when a
worker ends.

Textual runs thread workers on the event loop's default executor, whose threads live on. peewee keeps one SQLite
connection per thread, so every pool thread would hold index.db open for as long as the console runs, and
memoryd's rebuild-index, which unlinks index.db but leaves its WAL, would then leave memoryd a malformed index
(see ``Index.release``). This executor runs ``after`` (the store's release) at the end of every task, on the
task's own thread.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class ReleasingExecutor(ThreadPoolExecutor):
    """A thread pool that calls ``after()`` on the worker's thread once each task is done."""

    def __init__(self, after: Callable[[], None]) -> None:
        super().__init__(thread_name_prefix="engram-worker")
        self.after = after

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        def task() -> T:
            try:
                return fn(*args, **kwargs)
            finally:
                self.after()
        return super().submit(task)
