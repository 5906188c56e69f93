"""A generator run in another process, its items taken here one at a time.

A bulk write (the demo's millions of rows) spends a third of its main thread drawing the content it then writes.
Drawn in a child process, on another core, the next pieces are ready while this one is written. The child is
started fresh (``spawn``): a fork would copy the writer threads' locks mid-use.
"""

from __future__ import annotations

import queue
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from engram.store.errors import StoreError
from engram.store.lazy import lazy_module

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

multiprocessing = lazy_module("multiprocessing")  # an import the console's start-up has no use for

T = TypeVar("T")


def produced_elsewhere(make: Callable[..., Iterator[T]], *args: Any) -> Iterator[T]:
    """``make(*args)``'s items, drawn in a child process, which runs at most :data:`AHEAD` items ahead of the one
    taken here, so memory stays bounded. An error in the child is raised here as :class:`StoreError`; leaving
    the loop early ends the child."""
    here, child = start_child(_produce, (make, args), f"engram {make.__name__}", duplex=False)
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


def start_child(
    target: Callable[..., None], args: tuple[Any, ...], name: str, *, duplex: bool
) -> tuple[Connection, BaseProcess]:
    """A fresh child process running ``target(conn, *args)``, and this process's end of the pipe to it. The
    child's end is closed here: once the child is gone, a read here ends instead of waiting forever."""
    context = multiprocessing.get_context("spawn")
    here, there = context.Pipe(duplex=duplex)
    child = context.Process(target=target, args=(there, *args), daemon=True, name=name)
    child.start()
    there.close()
    return here, child


def leave_ctrl_c_to_the_parent() -> None:
    """In a child: Ctrl-C reaches every process of the terminal's group, and the parent decides (it waits for the
    work under way, then ends the child), rather than each child dying with a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def failure(exc: Exception) -> str:
    """What failed in a child, as the parent reports it: the exception's type and message, on one line."""
    return "".join(traceback.format_exception_only(exc)).strip()


AHEAD = 2
"""Items the child keeps ready (pickled) beyond the one it is sending. With none, it drew one item and then waited
for this process to take it: when this process waited too (on the disk, flushing a batch of the demo's files), a
core had nothing to do (a large demo kept two cores busy a third of the time)."""


def _produce(out: Connection, make: Callable[..., Iterator[Any]], args: tuple[Any, ...]) -> None:
    """The child: items are drawn and pickled on this thread and sent by another, so drawing goes on while the
    pipe waits for the parent to read."""
    leave_ctrl_c_to_the_parent()
    ready: queue.Queue[bytes | None] = queue.Queue(AHEAD)
    sender = threading.Thread(target=_send, args=(out, ready), name="sender")
    sender.start()
    try:
        for item in make(*args):
            ready.put(_pickled("item", item))
        ready.put(_pickled("done", None))
    except Exception as exc:  # noqa: BLE001 - any failure is the parent's to report, with its cause
        ready.put(_pickled("error", failure(exc)))
    finally:
        ready.put(None)
        sender.join()
        out.close()


def _pickled(kind: str, value: object) -> bytes:
    """The message as ``Connection.send`` would pickle it, so the parent's ``recv`` reads it as sent."""
    from multiprocessing.reduction import ForkingPickler

    return bytes(ForkingPickler.dumps((kind, value)))


def _send(out: Connection, ready: queue.Queue[bytes | None]) -> None:
    """Send what is ready, in order, until the end. Once the parent stops listening the rest is taken and
    dropped, so the drawing thread is never left waiting for room."""
    listening = True
    while (message := ready.get()) is not None:
        if listening:
            try:
                out.send_bytes(message)
            except BrokenPipeError:
                listening = False  # the parent stopped listening: nothing left to tell it
