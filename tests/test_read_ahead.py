"""Reading every memory file ahead of ``check`` and ``rebuild-index``: the bytes come in order, each file's fault
stays its own, and the kernel is asked for each file's pages ahead of the readers, a bounded distance ahead."""

from __future__ import annotations

import os
import threading

import pytest

from engram.store.drift import scan
from engram.store.drift.scan import FileEntry, read_ahead
from engram.store.paths import RootLayout


@pytest.fixture
def files(tmp_path):
    layout = RootLayout(tmp_path)
    folder = tmp_path / "scopes" / "abc" / "facts"
    folder.mkdir(parents=True)
    for n in range(300):
        (folder / f"m{n:03}.md").write_bytes(f"---\ntitle: {n}\n---\nbody {n}\n".encode())
    (folder / "m151.md").unlink()
    os.mkfifo(folder / "m151.md")  # a FIFO where a memory should be: hinting it must neither hang nor fail
    (folder / "m152.md").unlink()
    (folder / "m152.md").symlink_to(folder / "m000.md")
    return layout, [FileEntry(f"scopes/abc/facts/m{n:03}.md", "abc", "facts", False) for n in range(300)]


def test_files_come_in_order_with_their_own_faults_and_the_kernel_is_asked_for_them_ahead(files, monkeypatch):
    """The first chunk is read only once forty files were hinted: hints run ahead of the readers, and never
    further than allowed past what the caller was handed."""
    layout, entries = files
    monkeypatch.setattr(scan, "_HINTED_AHEAD", 40)
    hinted: list[int] = []  # how many files the caller had been handed when each hint was given
    handed = 0
    forty = threading.Event()
    real_hint, real_read = os.posix_fadvise, scan._read_chunk

    def hint(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_WILLNEED
        hinted.append(handed)
        if len(hinted) == 40:
            forty.set()
        real_hint(fd, offset, length, advice)

    def read_after_hints(*args):
        assert forty.wait(10)
        return real_read(*args)

    monkeypatch.setattr(os, "posix_fadvise", hint)
    monkeypatch.setattr(scan, "_read_chunk", read_after_hints)
    got = {}
    for entry, stored in read_ahead(layout, entries):
        try:
            got[entry.slug] = stored()
        except Exception as exc:
            got[entry.slug] = type(exc).__name__
        handed += 1
    assert list(got) == [e.slug for e in entries]
    assert got["m007"] == b"---\ntitle: 7\n---\nbody 7\n"
    assert got["m151"] == "StoreError" and got["m152"] == "StoreError"  # the readers say what is wrong
    assert len(hinted) >= 40
    assert max(n - at for n, at in enumerate(hinted)) <= 40 + scan._CHUNK  # never further ahead than allowed


def test_without_the_call_the_files_are_read_all_the_same(files, monkeypatch):
    layout, entries = files
    monkeypatch.delattr(os, "posix_fadvise")
    assert sum(1 for _ in read_ahead(layout, entries)) == len(entries)


def _hinted_paths(monkeypatch) -> list[tuple[str, int, int]]:
    """Every ``POSIX_FADV_WILLNEED`` asked from now on: the file (by its path), offset and length."""
    asked: list[tuple[str, int, int]] = []
    real = os.posix_fadvise

    def hint(fd: int, offset: int, length: int, advice: int) -> None:
        if advice == os.POSIX_FADV_WILLNEED:
            asked.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length))
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", hint)
    return asked


def test_check_and_rebuild_ask_the_kernel_for_all_of_index_db_ahead_of_their_lookups(store, monkeypatch):
    """They look rows up a batch of files at a time: on a cold cache each lookup was a random read of index.db."""
    from engram.store import index as index_module
    from engram.store.drift.check import check
    from engram.store.drift.rebuild import rebuild_index

    monkeypatch.setattr(index_module, "READ_AHEAD_SLICE", 4096)
    size = store.layout.index_path.stat().st_size
    for run in (check, rebuild_index):
        asked = _hinted_paths(monkeypatch)
        run(store)
        slices = sorted((offset, length) for path, offset, length in asked if path == str(store.layout.index_path))
        assert [offset for offset, _ in slices][: size // 4096] == list(range(0, size, 4096))[: size // 4096], run
        monkeypatch.undo()
        monkeypatch.setattr(index_module, "READ_AHEAD_SLICE", 4096)


def test_a_search_index_build_asks_the_kernel_for_its_files_ahead_of_reading_them(store, monkeypatch):
    from engram.store.models import Memory
    from engram.store.search.fulltext import sync

    asked = _hinted_paths(monkeypatch)
    assert sync(store).read > 100
    hinted = {path for path, _, _ in asked}
    plain = {str(store.layout.root / m.body_path) for m in Memory.select() if m.body_path.endswith(".md")}
    assert len(plain & hinted) > 100
