"""Where the console's thread workers run: on a pool that lets go of each thread's database connection when a
worker ends.

Textual runs thread workers on the event loop's default executor, whose threads live on. peewee keeps one SQLite
connection per thread, so every pool thread would hold index.db open for as long as the console runs, and
memoryd's rebuild-index, which unlinks index.db but leaves its WAL, would then leave memoryd a malformed index
(see ``Index.release``). This executor runs ``after`` (the store's release) at the end of every task, on the
task's own thread, and gives the heap back a second after its heavy work is over (see ``store.heap``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from textual import work
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import ProgressBar
from textual.worker import NoActiveWorker, Worker, get_current_worker

from engram.store.errors import StoreError
from engram.store.heap import TrimWhenIdle

T = TypeVar("T")


class ReleasingExecutor(ThreadPoolExecutor):
    """A thread pool that calls ``after()`` on the worker's thread once each task is done, and trims the heap
    once its heavy work is over."""

    def __init__(self, after: Callable[[], None]) -> None:
        super().__init__(thread_name_prefix="engram-worker")
        self.after = after
        self.idle = TrimWhenIdle()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        def task() -> T:
            started = self.idle.started()
            try:
                return fn(*args, **kwargs)
            finally:
                try:
                    self.after()
                finally:
                    self.idle.ended(started)

        return super().submit(task)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.idle.cancel()
        super().shutdown(wait, cancel_futures=cancel_futures)


def background(group: str, *, exclusive: bool = True) -> Callable[[Callable[..., Any]], Any]:
    """``@work(thread=True)`` for a widget's method, whose failure is a notification instead of the end of the
    console: a read-only file system, a full disk, a damaged index page or data no code path expected stops that
    one piece of work, never the session (and never with a traceback over the screen).

    ``exclusive``: a newer call replaces this one, whose result is then dropped (see :func:`deliver`); that is
    for reads. A write is never exclusive: it runs to its end anyway, and what it says of its outcome (done, or
    why it failed) must reach the person who asked for it."""

    def wrap(method: Callable[..., Any]) -> Any:
        @functools.wraps(method)
        def run(widget: Widget, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(widget, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the console outlives any one failure; it is shown, not hidden
                _tell(widget, exc)
                return None

        return work(thread=True, exclusive=exclusive, group=group, exit_on_error=False)(run)

    return wrap


def deliver(widget: Widget, callback: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    """From a worker's thread: run ``callback(*args, **kwargs)`` on the UI thread and wait for it, unless the
    console has closed or ``widget`` has left the screen meanwhile (a quick ``q`` while a detail loads, a pane
    torn down): a result that arrives after the widgets it was for is dropped, never an error on a closing
    console.

    So is the result of a worker a newer one of its group replaced (an exclusive worker is cancelled then, but a
    thread cannot be stopped, and it runs on): ``j j`` loads two details, and the first, slower to read, must
    not replace the second's under the cursor. Both the cancelling and this check happen on the UI thread, so a
    result is either applied before the newer worker starts or not at all."""
    _deliver(widget, callback, args, kwargs, _superseded())


def deliver_outcome(widget: Widget, callback: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    """:func:`deliver` for what a write says of its outcome: shown even if a newer worker replaced the one that
    wrote (the write happened, or failed, all the same), dropped only with the widget."""
    _deliver(widget, callback, args, kwargs, lambda: False)


def _superseded() -> Callable[[], bool]:
    """Was the calling worker replaced by a newer one? Read on the UI thread, where workers are cancelled."""
    try:
        worker: Worker[Any] = get_current_worker()
    except NoActiveWorker:  # called from a plain thread (a test, a timer)
        return lambda: False
    return lambda: worker.is_cancelled


def _deliver(
    widget: Widget,
    callback: Callable[..., object],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    superseded: Callable[[], bool],
) -> None:
    def apply() -> None:
        if not widget.is_attached or superseded():
            return
        try:
            callback(*args, **kwargs)
        except NoMatches:  # while the console closes, children go before their parents: then drop it
            if widget.is_attached and widget.app.return_code is None:
                raise

    try:
        widget.app.call_from_thread(apply)
    except RuntimeError:  # the console's loop has stopped: nobody to show it to
        pass


def painted(widget: Widget, timeout: float = 1.0) -> None:
    """From a worker's thread: wait until the screen has been drawn with what was just delivered. Work that goes
    on at once holds the interpreter from the UI thread about half the time: the console's first page, shown
    before every pending promotion is read, reached the terminal only once that read was over."""
    drawn = threading.Event()
    try:
        widget.app.call_from_thread(widget.call_after_refresh, drawn.set)
    except RuntimeError:  # the console's loop has stopped
        return
    drawn.wait(timeout)


@contextmanager
def progress(widget: Widget, bar: str) -> Iterator[Callable[[int, int | None], None]]:
    """In a worker: show ``widget``'s progress bar ``bar`` (a selector) while the block runs; the block reports
    ``(done, total)`` through the function it is given. The bar hides again however the block ends. Reports go
    on about once per hundredth (each waits for the UI thread), or per hundred items when the total is not
    known."""
    shown = widget.query_one(bar, ProgressBar)
    last = -1

    def report(done: int, total: int | None) -> None:
        nonlocal last
        step = done * 100 // total if total else done // 100
        if step != last:
            last = step
            deliver(widget, shown.update, total=total, progress=done)

    deliver(widget, shown.update, total=None, progress=0)
    deliver(widget, setattr, shown, "display", True)
    try:
        yield report
    finally:
        deliver(widget, setattr, shown, "display", False)


def _tell(widget: Widget, exc: Exception) -> None:
    deliver(widget, widget.app.notify, failure(exc), title="That did not work", severity="error", timeout=10)


def failure(exc: Exception) -> str:
    """What a failure says to a person: a store's own message as it is, anything else with its kind."""
    return str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
