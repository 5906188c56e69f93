"""A batch of thousands of files made durable by writing back the file systems that hold them (``syncfs``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from engram.store.write import atomic, filesystems
from engram.store.write.atomic import SealedFile, flush_written, write_sealed

needs_syncfs = pytest.mark.skipif(filesystems._syncfs() is None, reason="no syncfs reporting errors here")


def written(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [SealedFile(str(folder / f"m{i}.md"), b"---\ntitle: t\n---\nbody\n", 0o644, False) for i in range(count)]
    write_sealed(files)
    return [Path(f.path) for f in files]


@pytest.fixture
def flushes(monkeypatch):
    """What a flush did: the devices written back whole, and the files and folders fsynced one by one."""
    seen: dict[str, list] = {"syncfs": [], "fsync": []}
    real_syncfs, real_fsync = filesystems._syncfs(), os.fsync

    def syncfs(fd: int) -> None:
        seen["syncfs"].append(os.fstat(fd).st_dev)
        if real_syncfs is not None:
            real_syncfs(fd)

    monkeypatch.setattr(filesystems, "_syncfs", lambda: syncfs)
    monkeypatch.setattr(os, "fsync", lambda fd: (seen["fsync"].append(fd), real_fsync(fd)))
    return seen


def test_a_batch_of_thousands_is_written_back_once_per_file_system_not_file_by_file(tmp_path, flushes):
    paths = written(tmp_path / "scopes" / "a" / "facts", 600) + written(tmp_path / "scopes" / "b" / "facts", 600)
    flush_written(paths)
    assert flushes["syncfs"] == [os.stat(tmp_path).st_dev]
    assert flushes["fsync"] == []


def test_each_file_system_holding_the_batch_is_written_back(tmp_path, monkeypatch, flushes):
    """A root whose ``scopes/`` is a symlink to another file system: the folders are opened as the files were
    written, through the link, so the one that holds them is written back too."""
    elsewhere = Path("/dev/shm")
    if not elsewhere.is_dir() or os.stat(elsewhere).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system to write to")
    target = elsewhere / f"engram-test-{os.getpid()}"
    target.mkdir()
    (tmp_path / "linked").symlink_to(target)
    try:
        monkeypatch.setattr(atomic, "SYNCFS_FROM", 2)
        flush_written(written(tmp_path / "here", 2) + written(tmp_path / "linked" / "facts", 2))
        assert sorted(flushes["syncfs"]) == sorted({os.stat(tmp_path).st_dev, os.stat(target).st_dev})
    finally:
        shutil.rmtree(target)


def test_a_small_batch_keeps_its_own_fsyncs(tmp_path, flushes):
    """Below :data:`SYNCFS_FROM` files, writing back what others left dirty would cost more than the batch's own."""
    paths = written(tmp_path / "facts", 5)
    flush_written(paths)
    assert flushes["syncfs"] == []
    assert len(flushes["fsync"]) == len(paths) + 1  # each file, then its folder


def test_without_a_syncfs_that_reports_errors_every_file_is_fsynced(tmp_path, monkeypatch, flushes):
    monkeypatch.setattr(filesystems, "_syncfs", lambda: None)
    monkeypatch.setattr(atomic, "SYNCFS_FROM", 2)
    paths = written(tmp_path / "facts", 4)
    flush_written(paths)
    assert flushes["syncfs"] == [] and len(flushes["fsync"]) == len(paths) + 1


def test_a_batch_retired_is_zeroed_and_flushed_before_any_file_goes_and_each_folder_once(
    tmp_path, monkeypatch, flushes
):
    """A change retiring a batch (a scope marked sensitive: fifty plaintexts at a time) waits for the disk once a
    file and once a folder, not twice a file: every plaintext is zeroed and flushed before the first unlink."""
    plain = written(tmp_path / "a", 30) + written(tmp_path / "b", 30)
    moved = written(tmp_path / "c", 5)
    unlinked: list[tuple[Path, int, bytes]] = []  # each file as it went: the fsyncs done by then, its bytes
    real_unlink = os.unlink

    def unlink(path: str, *args: object, **kwargs: object) -> None:
        unlinked.append((Path(path), len(flushes["fsync"]), Path(path).read_bytes()))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    atomic.retire_all(moved, plain)
    assert not any(path.exists() for path in plain + moved)
    scrubbed = [(at, data) for path, at, data in unlinked if path in plain]
    assert len(scrubbed) == len(plain) and all(data and not data.strip(b"\0") for _, data in scrubbed)
    assert min(at for at, _ in scrubbed) >= len(plain)  # every zeroed file flushed before the first goes
    assert len(flushes["fsync"]) == len(plain) + 2 + 3  # the files, their two folders, then each of the three


def test_a_kernel_before_5_8_is_not_asked(monkeypatch):
    """Before Linux 5.8 ``syncfs`` returned success whatever the write-back met: a batch would count as durable
    when it was not."""
    monkeypatch.setattr(filesystems, "_kernel_release", lambda: (5, 4))
    assert filesystems._syncfs.__wrapped__() is None
    monkeypatch.setattr(filesystems, "_kernel_release", lambda: (6, 1))
    assert (filesystems._syncfs.__wrapped__() is None) == (os.uname().sysname != "Linux")


@pytest.mark.parametrize(("release", "version"), [("6.18.44-fc-v782", (6, 18)), ("5.8.0", (5, 8)), ("weird", (0, 0))])
def test_the_kernel_release_is_read_to_its_minor_version(monkeypatch, release, version):
    monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Linux", "h", release, "#1", "x86_64")))
    assert filesystems._kernel_release() == version


@needs_syncfs
def test_a_write_back_that_fails_commits_nothing_of_the_batch(store, fixture_root, monkeypatch):
    """An error of the write-back (a disk that failed under the batch) is the batch's error: its rows are not
    committed, so the index never points at files that may not be on the disk."""
    from test_write_path import apply_a_batch

    from engram.store.models import Memory

    def failing(fd: int) -> None:
        raise OSError(5, "writing back the file system: Input/output error")

    monkeypatch.setattr(filesystems, "_syncfs", lambda: failing)
    monkeypatch.setattr(atomic, "SYNCFS_FROM", 2)
    with pytest.raises(OSError, match="Input/output error"):
        apply_a_batch(store, "engram-syncfs")
    assert not Memory.select().where(Memory.slug.startswith("engram-syncfs-")).exists()
