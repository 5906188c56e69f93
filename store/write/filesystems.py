"""Making a large batch of new files durable by writing back the file systems that hold them (``syncfs``).

Flushed file by file, each of a batch's new files costs an ``fsync`` that writes its data and its inode's block
and waits for the device: nearly as much time and CPU as writing them, on every batch of a large demo. Asked
of the file system once, the kernel writes the same blocks back together (sixteen inodes share a block), several
times faster. ``syncfs`` also writes back whatever else is waiting on that
file system, which is why small batches keep their own fsyncs.

Python's ``os`` has no ``syncfs``; it is libc's, called through ``ctypes``, and only where it reports write-back
errors (Linux 5.8 and later): before that it returned success whatever happened, and a batch would be counted
durable when it was not. Elsewhere :func:`sync_file_systems` declines and the caller flushes file by file.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable

StrPath = str | os.PathLike[str]
"""A path as a string or a ``Path``: a batch's files go through as strings (making a ``Path`` of each cost a demo's
writer process a tenth of its time)."""

SYNCFS_FROM = 1000
"""Files in a batch from which it is made durable by ``syncfs``: below, the batch's own fsyncs cost less than
writing back what other programs may have left dirty on the same file system."""


def sync_file_systems(folders: Iterable[StrPath]) -> bool:
    """Write back every file system holding one of ``folders``, each once, and wait until it is on the device;
    an error of the write-back is raised as :class:`OSError`. False, with nothing done, where the system has no
    ``syncfs`` that reports errors. Each folder is opened as its files were written, through any symlink, so the
    file system written back is the one that holds them."""
    syncfs = _syncfs()
    if syncfs is None:
        return False
    by_device: dict[int, int] = {}  # the file system's device -> a folder on it, opened
    try:
        for folder in folders:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            device = os.fstat(fd).st_dev
            if device in by_device:
                os.close(fd)
            else:
                by_device[device] = fd
        for fd in by_device.values():
            syncfs(fd)
    finally:
        for fd in by_device.values():
            os.close(fd)
    return True


@functools.cache
def _syncfs() -> Callable[[int], None] | None:
    """libc's ``syncfs`` as a function raising :class:`OSError`, where it reports write-back errors; else None."""
    if sys.platform != "linux" or _kernel_release() < (5, 8):
        return None
    import ctypes  # only a batch this large needs it

    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    call.argtypes, call.restype = [ctypes.c_int], ctypes.c_int

    def syncfs(fd: int) -> None:
        if call(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"writing back the file system: {os.strerror(code)}")

    return syncfs


def _kernel_release() -> tuple[int, int]:
    """The running kernel's major and minor version; (0, 0) where its release does not say."""
    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(found[1]), int(found[2])) if found else (0, 0)
