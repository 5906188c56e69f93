"""Walking ``scopes/``: every memory file on disk, without reading or parsing it yet."""

from __future__ import annotations

import functools
import os
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from engram.store.domain import FORGOTTEN_DIR, TYPE_DIRS
from engram.store.errors import StoreError
from engram.store.paths import RootLayout, sync_conflict_copy
from engram.store.write.atomic import is_temp_file, read_regular


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A memory file found on disk: where it is and what its location says about it. A check or rebuild of a
    million files holds one for each: slots, the scope's and folder's names shared by their files, and the slug
    read off the path when asked (a dict and a slug string per file were 175 MB at 1M)."""

    relpath: str  # body_path form: scopes/<scope>/<dir>/<slug>.md[.enc]
    scope_hash: str
    folder: str  # a type dir or "forgotten"
    encrypted: bool

    @property
    def slug(self) -> str:
        """The slug the file's name gives (its frontmatter says which it really has)."""
        name = self.relpath.rpartition("/")[2]
        return name[: -len(".md.enc")] if self.encrypted else name[: -len(".md")]

    @property
    def forgotten(self) -> bool:
        return self.folder == FORGOTTEN_DIR


def walk(layout: RootLayout) -> Iterator[FileEntry | str]:
    """Yield each memory file as a :class:`FileEntry`, and each crash-leftover temp file's relpath as a str.

    Files in unknown folders or with other endings are not memoryd's and are skipped.
    """
    scopes = layout.scopes_dir
    if not scopes.is_dir():
        return
    for scope in sorted(os.scandir(scopes), key=lambda e: e.name):
        if scope.is_dir(follow_symlinks=False):
            yield from _scope(scope.name, scope.path)


def scope_files(layout: RootLayout, scope_hash: str) -> Iterator[FileEntry]:
    """The memory files of one scope, as :func:`walk` finds them (from the disk, whatever the index says), a
    folder at a time: a caller that needs a few stops early."""
    folder = layout.scopes_dir / scope_hash
    if folder.is_symlink() or not folder.is_dir():
        return
    yield from (e for e in _scope(scope_hash, str(folder)) if isinstance(e, FileEntry))


def holds_encrypted(layout: RootLayout, scope_hash: str) -> bool:
    """Whether :func:`scope_files` would find an encrypted file in the scope: the names alone, unsorted and
    without an entry made for each file (asked before a memory is written to a scope the index does not list
    as sensitive, which in a plain scope means every name of it)."""
    folder = layout.scopes_dir / scope_hash
    if folder.is_symlink() or not folder.is_dir():
        return False
    for kind in _type_folders(str(folder)):
        with os.scandir(kind.path) as items:
            for item in items:  # the ending first: the other tests of a name are a regex, and most names are plain
                if item.name.endswith(".md.enc") and _memory_file(item.name) and item.is_file(follow_symlinks=False):
                    return True
    return False


def _scope(name: str, path: str) -> Iterator[FileEntry | str]:
    for folder in sorted(_type_folders(path), key=lambda e: e.name):
        kind = folder.name  # one string for all its files
        for item in sorted(os.scandir(folder.path), key=lambda e: e.name):
            if not item.is_file(follow_symlinks=False):
                continue
            rel = f"scopes/{name}/{kind}/{item.name}"
            if is_temp_file(item.name):
                yield rel
            elif (encrypted := _memory_file(item.name)) is not None:
                yield FileEntry(rel, name, kind, encrypted)


def _type_folders(path: str) -> list[os.DirEntry[str]]:
    """The folders of a scope that hold its memories: its type folders and ``forgotten/``, not through a link."""
    with os.scandir(path) as entries:
        return [
            e for e in entries if e.is_dir(follow_symlinks=False) and (e.name in TYPE_DIRS or e.name == FORGOTTEN_DIR)
        ]


def _memory_file(name: str) -> bool | None:
    """Whether a file of a type folder named ``name`` is an encrypted memory (True) or a plain one (False); None
    for anything else: a temp file, a file-sync tool's conflict copy (the conflict inbox's, see
    :mod:`engram.store.conflicts`), another ending."""
    if is_temp_file(name) or sync_conflict_copy(name) is not None:
        return None
    if name.endswith(".md.enc"):
        return True
    return False if name.endswith(".md") else None


def appeared_since(layout: RootLayout, relpath: str) -> bool:
    """Whether a memory file the walk did not find is at ``relpath`` now (an index row's ``body_path``): a file
    memoryd saved after the walk passed, whose row a whole-root pass must not take for a row without a file.
    Only where :func:`walk` would have found it: a row naming another place is still one without a file."""
    parts = relpath.split("/")
    if len(parts) != 4 or parts[0] != "scopes" or (parts[2] not in TYPE_DIRS and parts[2] != FORGOTTEN_DIR):
        return False
    if is_temp_file(parts[3]) or not parts[3].endswith((".md", ".md.enc")):
        return False
    try:
        return os.path.lexists(layout.inside(relpath))
    except StoreError:  # a path that leaves the root
        return False


_CHUNK = 32  # files one thread reads at a time: a task per file would cost the reader more than it saves
_AHEAD = 16  # chunks read ahead of the reader
_THREADS = 4
_HINTED_AHEAD = 4096  # files the kernel is asked to fetch ahead of the readers (a few MB of page cache)
T = TypeVar("T")


def read_ahead(layout: RootLayout, entries: Sequence[FileEntry]) -> Generator[tuple[FileEntry, Callable[[], bytes]]]:
    """Each file's bytes as stored, in order, read by threads a few hundred files ahead of the caller: on a cold
    page cache a lone reader waits on the disk one file at a time (two thirds of a ``check`` of 100k files).
    Further ahead, :class:`_Hints` asks the kernel for the next files' pages. What is yielded returns the bytes,
    or raises what :func:`read_regular` raised for that file."""
    with ThreadPoolExecutor(_THREADS) as pool:
        for entry, outcome in in_order(layout, entries, lambda part: pool.submit(_read_chunk, layout, part)):
            yield entry, functools.partial(_bytes, outcome)


def in_order(
    layout: RootLayout,
    entries: Sequence[FileEntry],
    submit: Callable[[Sequence[FileEntry]], Future[list[T]]],
    *,
    chunk: int = _CHUNK,
    ahead: int = _AHEAD,
) -> Iterator[tuple[FileEntry, T]]:
    """Each entry with what ``submit``'s work made of it, in order: the entries go to the work ``chunk`` at a time,
    at most ``ahead`` chunks ahead of the caller, and :class:`_Hints` asks the kernel for the files' pages further
    ahead still (:data:`_HINTED_AHEAD` files ahead of the caller)."""
    with _Hints(layout, entries) as hints:
        pending: deque[tuple[Sequence[FileEntry], Future[list[T]]]] = deque()
        try:
            for start in range(0, len(entries), chunk):
                part = entries[start : start + chunk]
                pending.append((part, submit(part)))
                if len(pending) >= ahead:
                    yield from _outcomes(*pending.popleft(), hints)
            while pending:
                yield from _outcomes(*pending.popleft(), hints)
        finally:  # the caller stopped early (an error, an interrupt): nothing more is worked out for it
            for _, future in pending:
                future.cancel()


class _Hints:
    """A thread that opens the files ahead of the readers and asks the kernel to fetch their pages
    (``POSIX_FADV_WILLNEED``), without waiting for them: the readers, a few at a time, then mostly find the
    pages there. On a cold page cache the device gets many requests at once instead of four, and the files are
    read in little more than half the time. It reads nothing into this process; a file it cannot
    open or hint (a symlink, a FIFO, a system without the call) is left to the readers, who say what is wrong.
    It keeps at most :data:`_HINTED_AHEAD` files ahead of those handed to the caller."""

    def __init__(self, layout: RootLayout, entries: Sequence[FileEntry]) -> None:
        self._layout = layout
        self._entries = entries if hasattr(os, "posix_fadvise") else ()
        self._room = threading.Semaphore(_HINTED_AHEAD)
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="engram-read-hints", daemon=True)

    def __enter__(self) -> _Hints:
        if self._entries:
            self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop = True
        self._room.release(_HINTED_AHEAD + 1)  # wakes the thread wherever it waits
        if self._thread.is_alive():
            self._thread.join()

    def allow(self, files: int) -> None:
        """``files`` more were handed to the caller: as many more may be hinted."""
        self._room.release(files)

    def _run(self) -> None:
        for entry in self._entries:
            self._room.acquire()
            if self._stop:
                return
            try:
                fd = os.open(self._layout.inside(entry.relpath), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            except (OSError, StoreError):
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass  # not a regular file: the reader reports it
            finally:
                os.close(fd)


def _read_chunk(layout: RootLayout, chunk: Sequence[FileEntry]) -> list[bytes | Exception]:
    out: list[bytes | Exception] = []
    for entry in chunk:
        try:
            out.append(read_regular(layout.inside(entry.relpath)))
        except Exception as exc:  # handed to the caller, for the file it belongs to
            out.append(exc)
    return out


def _outcomes(chunk: Sequence[FileEntry], future: Future[list[T]], hints: _Hints) -> Iterator[tuple[FileEntry, T]]:
    hints.allow(len(chunk))
    yield from zip(chunk, future.result(), strict=True)


def _bytes(outcome: bytes | Exception) -> bytes:
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def half_scrubbed(layout: RootLayout, entry: FileEntry) -> bool:
    """A plaintext file an interrupted encryption was overwriting with zeros (it starts with a NUL byte, which no
    memory file does) beside its encrypted twin: what is left to do is finish the scrub, never to parse it."""
    if entry.encrypted or not layout.resolve(entry.relpath + ".enc").is_file():
        return False
    try:
        with open(layout.resolve(entry.relpath), "rb") as fh:
            return fh.read(1) == b"\0"
    except OSError:
        return False
