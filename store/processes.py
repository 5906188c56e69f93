"""A generator run in another process, its items taken here one at a time.

A bulk write (the demo's millions of rows) spends a third of its main thread drawing the content it then writes.
Drawn in a child process, on another core, the next piece is ready while this one is written. The child is
started fresh (``spawn``): a fork would copy the writer threads' locks mid-use.
"""

from __future__ import annotations

import signal
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from engram.store.errors import StoreError
from engram.store.lazy import lazy_module

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

multiprocessing = lazy_module("multiprocessing")  # 5 ms the console's start-up has no use for

T = TypeVar("T")


def produced_elsewhere(make: Callable[..., Iterator[T]], *args: Any) -> Iterator[T]:
    """``make(*args)``'s items, drawn in a child process. A pipe holds about one item: the child draws the next
    while this process uses the last, and never runs further ahead, so memory stays bounded. An error in the child
    is raised here as :class:`StoreError`; leaving the loop early ends the child."""
    context = multiprocessing.get_context("spawn")
    here, there = context.Pipe(duplex=False)
    child = context.Process(target=_produce, args=(there, make, args), daemon=True, name=f"engram {make.__name__}")
    child.start()
    there.close()  # the child's end: once the child is gone, a read here ends instead of waiting forever
    try:
        while True:
            try:
                kind, value = here.recv()
            except EOFError:
                raise StoreError(f"the process drawing {make.__name__} ended early ({child.exitcode})") from None
            if kind == "done":
                return
            if kind == "error":
                raise StoreError(f"the process drawing {make.__name__} failed: {value}")
            yield value
            del value  # not held while the next one arrives
    finally:
        here.close()
        if child.is_alive():
            child.kill()
        child.join()


def _produce(out: Connection, make: Callable[..., Iterator[Any]], args: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends this process
    try:
        for item in make(*args):
            out.send(("item", item))
        out.send(("done", None))
    except BrokenPipeError:
        pass  # the parent stopped listening: nothing left to tell it
    except Exception as exc:  # noqa: BLE001 - any failure is the parent's to report, with its cause
        out.send(("error", "".join(traceback.format_exception_only(exc)).strip()))
    finally:
        out.close()
