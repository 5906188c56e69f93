"""Writing a change's files, the first step of the write path (:meth:`engram.store.service.Store.apply_many`).

Each write is sealed first: its bytes made, an encrypted memory's ciphertext decrypted again and compared with
its text, so a file nobody could open is never put in place. Then it is put in place one of three ways:

- one by one, each durable (temporary file, fsync, rename, fsync of the folder): a change a person makes;
- a batch by a few threads, flushed once before its index rows commit: an import, a rebuild, a conversion;
- a batch handed to a :class:`BatchWriter` that writes and flushes it while the rows go in: the demo's child
  process, for its long run of batches.

Whichever way, the block that puts the index rows in is left, for the commit, only once every file is flushed:
the index never points at a file a crash could still take back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Protocol

from engram.store.errors import StoreError
from engram.store.paths import RootLayout
from engram.store.sensitive.crypto import decrypt, encrypt
from engram.store.write.atomic import WRITER_THREADS, SealedFile, flushed_on_exit, write_atomic, write_sealed
from engram.store.write.change import DataWrite, MemoryWrite

Sealed = tuple[MemoryWrite | DataWrite, bytes, int, bytes | None]
"""A write sealed: what for, its bytes, its file mode and the plaintext of an encrypted memory."""

THREADED_FROM = 64  # files in a batch from which threads write them
THREADED_SLICE = 512  # files sealed and held at a time


class BatchWriter(Protocol):
    """Something that writes and flushes a batch's sealed files while the caller goes on: started, then
    finished (which returns once every file is flushed, or raises why not)."""

    def start(self, files: list[SealedFile]) -> None: ...

    def finish(self) -> None: ...


class FileEngine:
    """The files of a root's changes, sealed and written. ``key_for`` gives a sensitive scope's key; ``bind``
    records what was written where the index keeps it (the binding manifest of encrypted memories): the write
    path's, called for each file or batch."""

    def __init__(
        self, layout: RootLayout, key_for: Callable[[str], bytes], bind: Callable[[list[Sealed]], None]
    ) -> None:
        self.layout = layout
        self.key_for = key_for  # a scope's key, asked when a file is sealed (the keys may be unlocked later)
        self.bind = bind
        self.writer: BatchWriter | None = None  # see writing_with

    def target(self, write: MemoryWrite | DataWrite) -> str:
        """Where ``write`` goes, checked to be inside the root: a string, which the batch's writers take as it is."""
        if isinstance(write, DataWrite):
            return os.fspath(self.layout.resolve_data(write.relpath))
        return self.layout.inside(write.relpath)

    @contextmanager
    def writing_with(self, writer: BatchWriter) -> Iterator[None]:
        """Within: a batch's files (``durable=False``) are written and flushed by ``writer`` (the demo's child
        process, see :mod:`engram.store.demo.writer`) while the batch's rows go in, rather than before them. For
        a long run of batches: the writer is started once for all of them."""
        self.writer = writer
        try:
            yield
        finally:
            self.writer = None

    @contextmanager
    def written(self, targets: list[tuple[str, MemoryWrite | DataWrite]], durable: bool) -> Iterator[None]:
        """Write a change's files; the block puts its index rows in. A batch's files (``durable=False``) are
        flushed while its rows go in (and written then too, with :meth:`writing_with`), and the block is
        left, for the commit, only once they are: the index never points at a file a crash could still take
        back. A crash leaves what a sequential write would: temp files, or renamed files the uncommitted index
        does not point at."""
        if durable or len(targets) < THREADED_FROM:
            for path, write in targets:
                self.write_file(path, write, durable)
        elif self.writer is None:
            self._write_threaded(targets)
        else:
            with self._written_elsewhere(self.writer, targets):
                yield
            return
        with flushed_on_exit(path for path, _ in targets) if not durable and targets else nullcontext():
            yield

    @contextmanager
    def _written_elsewhere(
        self, writer: BatchWriter, targets: list[tuple[str, MemoryWrite | DataWrite]]
    ) -> Iterator[None]:
        """The batch's files sealed here, then written and flushed by ``writer``'s process during the block."""
        sealed = [(write, *self._seal(write)) for _, write in targets]
        writer.start(_files_of(targets, sealed))
        try:
            self.bind(sealed)
            yield
        finally:
            writer.finish()

    def _write_threaded(self, targets: list[tuple[str, MemoryWrite | DataWrite]]) -> None:
        """A batch's files written by a few threads, which overlap the kernel's work on each file (create,
        write, rename: most of a batch's time) with each other and with the sealing of the next slice; the
        index stays on this thread."""
        with ThreadPoolExecutor(WRITER_THREADS) as pool:
            sealed: list[Sealed] = []
            writing: list[Future[None]] = []
            for piece in (targets[at : at + THREADED_SLICE] for at in range(0, len(targets), THREADED_SLICE)):
                sealing = [(write, *self._seal(write)) for _, write in piece]  # while the last slice writes
                files = _files_of(piece, sealing)
                self._bind_written(sealed, writing)
                sealed = sealing
                # a task per thread, not per file: a future per file cost the batch more than its writing
                writing = [pool.submit(write_sealed, files[n::WRITER_THREADS]) for n in range(WRITER_THREADS)]
            self._bind_written(sealed, writing)

    def _bind_written(self, sealed: list[Sealed], writing: list[Future[None]]) -> None:
        for future in writing:
            future.result()
        self.bind(sealed)

    def write_file(self, path: str, write: MemoryWrite | DataWrite, durable: bool) -> None:
        data, mode, plaintext = self._seal(write)
        if isinstance(write, DataWrite):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, mode=mode, durable=durable, read_back=plaintext is not None)
        self.bind([(write, data, mode, plaintext)])

    def _seal(self, write: MemoryWrite | DataWrite) -> tuple[bytes, int, bytes | None]:
        """The bytes to write, their file mode, and the plaintext of an encrypted memory. An encrypted memory's
        ciphertext is decrypted here and must give its text back, and its file is read back against the
        ciphertext before the rename: a file nobody could open again is never put in place."""
        if isinstance(write, DataWrite):
            return write.data, 0o600, None
        data = write.text()
        if not write.encrypted:
            return data, 0o644, None
        scope = write.scope_hash
        key = self.key_for(scope)
        sealed = encrypt(data, key, scope)
        if decrypt(sealed, key, scope, write.relpath) != data:
            raise StoreError(f"{write.relpath}: the encrypted file did not decrypt to its text")
        return sealed, 0o600, data


def _files_of(targets: list[tuple[str, MemoryWrite | DataWrite]], sealed: list[Sealed]) -> list[SealedFile]:
    """What the writer threads (or process) need of a batch's sealed writes: an encrypted file is read back."""
    return [
        SealedFile(path, data, mode, plaintext is not None)
        for (path, _), (_, data, mode, plaintext) in zip(targets, sealed, strict=True)
    ]
