"""Crash-safe file replacement: temp file in the same directory, fsync, rename, fsync the directory.

After a crash at any point the target holds either the old bytes or the new ones, never a mix; at worst
a temp file named ``.<name>.engram-tmp-*`` is left behind, which ``engram check`` reports and
``engram repair`` removes.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from engram.store.errors import StoreError
from engram.store.write import faults

TEMP_MARKER = ".engram-tmp-"


def fsync_dir(path: Path) -> None:
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


def write_atomic(
    path: Path, data: bytes, mode: int = 0o644, durable: bool = True, verify: Callable[[bytes], None] | None = None
) -> None:
    """Replace ``path`` with ``data`` atomically; keeps an existing file's permissions.

    ``durable=False`` skips the fsyncs for batches (demo, import), which call :func:`flush_written` once
    before committing the index instead: the same guarantee, with the flushes of a batch together. ``verify`` is
    called with the temp file's bytes as read back from disk, before the rename; raising there keeps the old file.
    """
    ensure_dir(path.parent)
    if path.exists():
        mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARKER}", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        faults.reach("temp_written")
        if verify is not None:
            verify(Path(tmp).read_bytes())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(Path(tmp))
        raise
    if durable:
        fsync_dir(path.parent)
    faults.reach("renamed")


def flush_written(paths: Iterable[Path], threads: int = 8) -> None:
    """Make files written with ``durable=False`` durable, and their directories: fsync of exactly what the batch
    wrote (``os.sync`` would flush every file system on the machine, other programs' writes included), by a few
    threads so the device sees the flushes together rather than one at a time."""
    files = list(paths)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(_fsync_file, files))
        list(pool.map(fsync_dir, {path.parent for path in files}))


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_regular(path: str | Path, limit: int = 64 * 1024 * 1024) -> bytes:
    """A regular file's bytes. Opened without following a symlink and without blocking (a FIFO where a memory
    should be would hang a reader forever), then checked to be a regular file of sane size before reading."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(f"{path}: a symlink where a memory file should be; not followed") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"{path}: not a regular file (a FIFO, device or directory where a memory should be)")
        if st.st_size > limit:
            raise StoreError(f"{path}: {st.st_size:,} bytes, larger than any memory file ({limit:,})")
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
    try:
        size = path.stat().st_size
        with path.open("r+b") as fh:
            zeros = bytes(min(size, 1 << 20))  # a MiB at a time: a search segment may be a gigabyte
            for _ in range(0, size, len(zeros) or 1):
                fh.write(zeros[: size - fh.tell()])
            fh.flush()
            os.fsync(fh.fileno())
    except FileNotFoundError:
        return
    faults.reach(SCRUB_POINT)  # a kill here leaves the zeros beside the encrypted copy: see scan.half_scrubbed
    remove_durably(path)


def is_temp_file(name: str) -> bool:
    """True for the temp files :func:`write_atomic` makes (left behind only by a crash)."""
    return TEMP_MARKER in name


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
