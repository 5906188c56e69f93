"""A batch's files written and flushed by a child process while this one puts the batch's index rows in.

A bulk write (the demo's million memories) has two halves of about the same size: its files (create, write and
rename each, then flush them) and its index rows. On one thread they wait for each other. Writer threads of this
same process were tried beside the rows, and the rows went four times slower: each of the threads' system calls
lets go of the interpreter and takes it back, and ``sqlite3``, which lets go of it for every row it steps,
queued behind them. A child process has an interpreter of its own, and another core.

The child gets the bytes to write, sealed here (a sensitive scope's key never leaves this process), and does
what :func:`~engram.store.write.atomic.write_atomic` and :func:`~engram.store.write.atomic.flush_written` do here:
the same code. It is started fresh (``spawn``): a fork would copy this process's threads' locks mid-use.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from engram.store.demo.processes import failure, leave_ctrl_c_to_the_parent, start_child
from engram.store.errors import StoreError
from engram.store.write.atomic import SealedFile, flush_written, write_sealed

if TYPE_CHECKING:
    from multiprocessing.connection import Connection


class FileWriter:
    """A child process that writes and flushes one batch of files at a time: :meth:`start` hands it a batch and
    returns at once, :meth:`finish` (once per batch started) waits until every file of it is renamed into place
    and durable, or raises :class:`StoreError` with what failed there. Use as a context manager: leaving it ends
    the child."""

    def __init__(self) -> None:
        self._conn, self._child = start_child(_serve, (), "engram writer", duplex=True)

    def start(self, files: list[SealedFile]) -> None:
        self._conn.send(files)

    def finish(self) -> None:
        try:
            kind, value = self._conn.recv()
        except EOFError:
            self._child.join()
            raise StoreError(f"the process writing the batch's files ended early ({self._child.exitcode})") from None
        if kind == "error":
            raise StoreError(f"writing the batch's files failed: {value}")

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._conn.close()  # the child reads the end of its input and returns
        if kind is None:
            self._child.join(timeout=60)
        if self._child.is_alive():  # left by an error (its batch was waited for): nothing of it is still to come
            self._child.kill()
        self._child.join()


def _write_and_flush(files: list[SealedFile]) -> None:
    """Write ``files`` one after another, then make them durable (:func:`flush_written`: one ``syncfs`` for a
    demo's chunk, else an fsync of each by a few threads, waits on the device). This process is already the
    batch's second core: more writer threads here took two to two and a half times the CPU for the same files
    (their creates contend in the kernel), which the drawing and indexing processes then lacked, and did not
    write them sooner."""
    write_sealed(files)
    flush_written([f.path for f in files])


def _serve(conn: Connection) -> None:
    """The child: each batch received is written and answered, until the parent closes its end. Ctrl-C is the
    parent's to handle: it waits for the batch under way, then ends this process."""
    leave_ctrl_c_to_the_parent()
    while True:
        try:
            files = conn.recv()
        except EOFError:
            return
        try:
            _write_and_flush(files)
        except Exception as exc:  # noqa: BLE001 - any failure is the parent's to report, with its cause
            answer: tuple[str, object] = ("error", failure(exc))
        else:
            answer = ("done", len(files))
        try:
            conn.send(answer)
        except BrokenPipeError:
            return  # the parent stopped listening: nothing left to tell it
