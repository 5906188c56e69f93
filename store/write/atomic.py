"""Crash-safe file replacement: temp file in the same directory, fsync, rename, fsync the directory.

After a crash at any point the target holds either the old bytes or the new ones, never a mix; at worst
a temp file named ``.<name>.engram-tmp-*`` is left behind, which ``engram check`` reports and
``engram repair`` removes.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
from collections.abc import Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engram.store.errors import StoreError
from engram.store.write import faults
from engram.store.write.filesystems import SYNCFS_FROM, StrPath, sync_file_systems

TEMP_MARKER = ".engram-tmp-"


def fsync_dir(path: StrPath) -> None:
    """Make a rename or unlink in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(path: Path, mode: int = 0o755) -> None:
    """Create ``path`` and its parents, fsyncing each new directory's parent so the entry survives."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir(mode=mode, exist_ok=True)
        fsync_dir(d.parent)


def write_atomic(path: StrPath, data: bytes, mode: int = 0o644, durable: bool = True, read_back: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically; keeps an existing file's permissions.

    ``durable=False`` skips the fsyncs for batches (demo, import), whose files :func:`flushed_on_exit` flushes
    before the index commits instead: the same guarantee, with the flushes of a batch together. ``read_back`` reads
    the temp file back before the rename and keeps the old file unless it holds ``data`` (an encrypted memory: a
    file that reads back wrong would be lost for good, as nobody can tell it from the text).

    Plain ``os`` calls rather than ``tempfile`` and file objects: a batch's writer threads then spend their time
    in system calls, which let go of the interpreter, not in Python a busy thread holds them back from.
    """
    folder, target = os.path.dirname(path), os.fspath(path)
    name = os.path.basename(target)
    with contextlib.suppress(FileNotFoundError):  # a new file: the mode asked for
        mode = os.stat(target).st_mode & 0o777
    try:
        fd, tmp = _create_temp(folder, name, mode)
    except FileNotFoundError:  # its folder is missing (asked only then: a batch's files mostly share a few)
        ensure_dir(Path(folder))
        fd, tmp = _create_temp(folder, name, mode)
    try:
        try:
            os.fchmod(fd, mode)  # whatever the umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        faults.reach("temp_written")
        if read_back and Path(tmp).read_bytes() != data:
            raise StoreError(f"{target}: the file written did not read back to its bytes; the old one is kept")
        os.replace(tmp, target)
    except BaseException:
        _unlink_quietly(Path(tmp))
        raise
    if durable:
        fsync_dir(Path(folder))
    faults.reach("renamed")


_temp_numbers = itertools.count()  # ``next`` on it is one atomic step: threads never share a number


def _create_temp(folder: str, name: str, mode: int) -> tuple[int, str]:
    """A new file ``.<name>.engram-tmp-<pid>-<n>`` in ``folder``, opened for writing. ``O_EXCL`` makes it ours:
    a name left by a crashed process of the same pid is passed over."""
    while True:
        tmp = os.path.join(folder, f".{name}{TEMP_MARKER}{os.getpid()}-{next(_temp_numbers)}")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, mode), tmp
        except FileExistsError:
            continue


@dataclass(frozen=True, slots=True)
class SealedFile:
    """A file of a batch as it goes to disk: where, its bytes and mode, and whether to read it back before the
    rename (an encrypted memory, whose ciphertext was checked to decrypt to its text when it was sealed)."""

    path: str
    data: bytes
    mode: int
    read_back: bool


WRITER_THREADS = 8  # a batch's writer threads: the device sees that many files' creates (or flushes) at once


def write_sealed(files: Iterable[SealedFile]) -> None:
    """Write a batch's files, not yet durable: one thread's share of the batch (a task per thread, not per file:
    a future per file cost more than its writing)."""
    for f in files:
        write_atomic(f.path, f.data, f.mode, durable=False, read_back=f.read_back)


def flush_written(paths: Iterable[StrPath], threads: int = WRITER_THREADS) -> None:
    """Make files written with ``durable=False`` durable, and their directories: fsync of exactly what the batch
    wrote (``os.sync`` would flush every file system on the machine, other programs' writes included), by a few
    threads so the device sees the flushes together rather than one at a time. A batch of thousands of files is
    made durable by writing back the file systems holding it instead (:mod:`~engram.store.write.filesystems`)."""
    files = [os.fspath(path) for path in paths]
    folders = {os.path.dirname(file) for file in files}
    if len(files) >= SYNCFS_FROM and sync_file_systems(folders):
        return
    with ThreadPoolExecutor(threads) as pool:  # a task per thread, not per file (a future costs more than a flush)
        list(pool.map(_fsync_all, [files[n::threads] for n in range(threads)]))
        list(pool.map(fsync_dir, folders))


@contextmanager
def flushed_on_exit(paths: Iterable[StrPath]) -> Iterator[None]:
    """:func:`flush_written` running beside the block, finished when the block is left (even by an error: no
    flush outlives its caller). A batch puts its index rows in meanwhile and commits them after."""
    with ThreadPoolExecutor(1) as pool:
        flushing = pool.submit(flush_written, list(paths))
        try:
            yield
        finally:
            flushing.result()


def _fsync_all(paths: list[str]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class NotRegularFile(StoreError, OSError):
    """Something other than a regular file where engram reads or appends one: a FIFO would hang the reader
    forever, a symlink would send the read (or an append) to another file. A StoreError, said in one line; an
    OSError, so that what handles a file it cannot read (a verify: "unreadable") handles this one too."""


def open_regular(path: StrPath, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """A descriptor of the regular file at ``path`` (``flags`` as :func:`os.open` takes them: ``O_CREAT``
    creates it), opened without following a symlink and without blocking on a FIFO, then checked to be a regular
    file. :class:`NotRegularFile` otherwise; a missing file raises FileNotFoundError, as ``os.open`` does."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(f"{path}: a symlink; not followed") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{path}: not a regular file (a FIFO, device or directory)")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | Path, limit: int = 64 * 1024 * 1024) -> bytes:
    """A regular file's bytes (see :func:`open_regular`), checked to be of sane size before reading."""
    try:
        fd = open_regular(path)
    except NotRegularFile as exc:
        raise StoreError(f"{exc}, where a memory file should be") from None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise StoreError(f"{path}: {size:,} bytes, larger than any memory file ({limit:,})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def remove_durably(path: Path) -> None:
    """Unlink ``path`` (if present) and fsync its directory."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_dir(path.parent)


SCRUB_POINT = "scrub_zeroed"  # a crash point of its own: only changes that retire plaintext reach it


def scrub(path: Path) -> None:
    """Overwrite a file with zeros, fsync, then unlink it durably: the plaintext left when a memory is encrypted.

    This takes the text out of the live store; it is not secure erasure (SSDs and copy-on-write file systems
    keep old blocks), which the README says.
    """
    if not zero_out(path, durable=True):
        return
    faults.reach(SCRUB_POINT)  # a kill here leaves the zeros beside the encrypted copy: see scan.half_scrubbed
    remove_durably(path)


def zero_out(path: Path, *, durable: bool) -> bool:
    """Overwrite a file's bytes with zeros (flushed to the disk when ``durable``); False when it is gone."""
    try:
        size = path.stat().st_size
        with path.open("r+b") as fh:
            zeros = bytes(min(size, 1 << 20))  # a MiB at a time: a search segment may be a gigabyte
            for _ in range(0, size, len(zeros) or 1):
                fh.write(zeros[: size - fh.tell()])
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
    except FileNotFoundError:
        return False
    return True


def retire_all(removals: Iterable[Path], scrubs: Iterable[Path]) -> None:
    """:func:`remove_durably` each of ``removals`` and :func:`scrub` each of ``scrubs``, waiting for the disk a
    few times rather than twice a file: every plaintext is zeroed, then flushed together (as a batch's new files
    are), and only then is any file unlinked; each folder is flushed once, after its last unlink."""
    zeroed = [path for path in scrubs if zero_out(path, durable=False)]
    if zeroed:
        flush_written(zeroed)
        faults.reach(SCRUB_POINT)  # a kill here leaves the zeros beside the encrypted copies: see scan.half_scrubbed
    folders = set()
    for path in [*removals, *zeroed]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            folders.add(path.parent)
    for folder in folders:
        fsync_dir(folder)


def scrub_except(directory: Path, stems: Collection[str]) -> None:
    """:func:`scrub` every file of ``directory`` whose name, up to its first dot, is not one of ``stems``: the
    files of a cache's generations no longer named (a temp file a crash left has none, so it goes too)."""
    try:
        files = list(directory.iterdir())
    except FileNotFoundError:
        return
    for path in files:
        if path.name.split(".", 1)[0] not in stems:
            scrub(path)


def is_temp_file(name: str) -> bool:
    """True for the temp files :func:`write_atomic` makes (left behind only by a crash)."""
    return TEMP_MARKER in name


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
