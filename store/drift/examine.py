"""What ``check`` compares of a memory file with its index row, and the worker processes that work out that (or,
for ``rebuild-index``, the file's index row) for the files of plain scopes.

Reading, parsing and scanning a file's text is most of a check's or a rebuild's time, and it needs nothing of the
calling process but the root's path: a pool of worker processes, a core each, examines the files of scopes that
are not sensitive while the caller takes what they send back (a tuple of short strings per file). Files of
sensitive scopes never go there, encrypted or not: their text, and the keys that open it, stay in the caller. A
root too small to repay the workers' start (each imports the parser) is examined in the calling process, by the
same code.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import resource_tracker
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeAlias, TypeVar

from engram.store.drift.scan import FileEntry, in_order, read_ahead
from engram.store.errors import BadMemoryFile, StoreError
from engram.store.frontmatter import MemoryDoc, index_datetime, parse
from engram.store.paths import RootLayout
from engram.store.secrets import scan
from engram.store.write.atomic import read_regular
from engram.store.write.change import IndexEntry

MIN_FILES = 4000
"""Plain files below which the checking process examines them itself: starting a worker (a fresh interpreter
importing the parser) costs about what examining 2,000 files does."""
_CHUNK = 256  # files per task: each task costs the checking process a message (a millisecond of 1,200 at 64)
_AHEAD = 8  # tasks handed to the workers ahead of the checking process: half as far as the kernel is asked ahead


class Facts(NamedTuple):
    """What ``check`` compares of a memory file with its index row, in the index's terms."""

    slug: str
    type: str
    scope_hash: str
    title: str
    source: str
    created_at: str | None
    ttl_days: int | None
    fingerprint: str
    decay_state: str
    secrets: str | None  # what in a plain scope's title or body looks like a credential or personal data


class Bad(NamedTuple):
    """A file that does not parse, and why (:class:`BadMemoryFile`'s reason)."""

    reason: str


class Failed(NamedTuple):
    """A file that could not be read at all (a FIFO or symlink put there since the walk): the check stops on it,
    as it does for a file of the checking process's own."""

    error: str


if TYPE_CHECKING:
    from engram.store.screen import ScreenedText

T = TypeVar("T", Facts, IndexEntry, "ScreenedText")  # what a check, a rebuild and the poisoning screen make of files
Outcome: TypeAlias = T | Bad | Failed | None
"""What a file gave (its :class:`Facts` for a check, its :class:`IndexEntry` for a rebuild), or why it gave nothing;
None: the file moved since the walk (memoryd's sweep), nothing to say."""


def facts(doc: MemoryDoc, *, scanned: bool) -> Facts:
    """``doc``'s facts; ``scanned``: its title and body are looked through for secrets (plain scopes only)."""
    fm = doc.frontmatter
    found = scan(f"{fm.title}\n{doc.body}") if scanned else []
    return Facts(
        fm.slug,
        fm.type.value,
        fm.scope_hash,
        fm.title,
        fm.source,
        index_datetime(fm.created_at),
        fm.ttl_days,
        doc.fingerprint,
        fm.decay_state.value,
        ", ".join(sorted({f"{f.kind} {f.masked}" for f in found})) or None,
    )


def checked_facts(doc: MemoryDoc, relpath: str) -> Facts:
    """What ``check`` makes of a plain file: its facts, its text looked through for secrets."""
    return facts(doc, scanned=True)


def examined(
    layout: RootLayout, entries: Sequence[FileEntry], make: Callable[[MemoryDoc, str], T]
) -> Generator[tuple[FileEntry, Outcome[T]]]:
    """Each plain file of ``entries`` with its :data:`Outcome`, what ``make`` (a module's function: the workers are
    handed its name) made of the parsed file, in order: worked out by worker processes a few thousand files ahead
    of the caller, or by read-ahead threads and the caller for fewer than :data:`MIN_FILES` files, a single core,
    or a process that cannot start workers (no stderr at all)."""
    workers = _cores()
    if len(entries) < MIN_FILES or workers < 2 or not _tracker_running():
        yield from _examined_here(layout, entries, make)
        return
    context = multiprocessing.get_context("spawn")  # no copy of this process's threads, locks or open index
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=signal.signal, initargs=_QUIET)
    try:

        def submit(part: Sequence[FileEntry]) -> Future[list[Outcome[T]]]:
            return pool.submit(_examine, str(layout.root), [e.relpath for e in part], make)

        yield from in_order(layout, entries, submit, chunk=_CHUNK, ahead=_AHEAD)
    finally:
        pool.shutdown(cancel_futures=True)


def _examined_here(
    layout: RootLayout, entries: Sequence[FileEntry], make: Callable[[MemoryDoc, str], T]
) -> Iterator[tuple[FileEntry, Outcome[T]]]:
    """:func:`examined` without workers: read ahead by threads, parsed by the caller."""
    for entry, stored in read_ahead(layout, entries):
        yield entry, _outcome(entry.relpath, stored, make)


_STDERR = threading.Lock()


def _tracker_running() -> bool:
    """Start multiprocessing's resource tracker (the process that frees the pool's semaphores should this one
    die) if it is not running; False if it cannot be. It is handed this process's stderr: under the console,
    Textual's stand-in for it has no file descriptor (-1), which would fail every worker's start, so the real
    one (the terminal, where a worker's own last words would go too) is put back for that moment."""
    stderr = sys.stderr
    try:
        usable = stderr is not None and stderr.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        usable = False
    if usable:
        return True
    if sys.__stderr__ is None:
        return False
    with _STDERR:
        sys.stderr = sys.__stderr__
        try:
            resource_tracker.ensure_running()
        except (OSError, ValueError):
            return False
        finally:
            sys.stderr = stderr
    return True


_QUIET = (signal.SIGINT, signal.SIG_IGN)
"""Ctrl+C reaches the terminal's whole process group: the checking process stops the workers, which would
otherwise each print a traceback."""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _examine(root: str, relpaths: list[str], make: Callable[[MemoryDoc, str], T]) -> list[Outcome[T]]:
    """A worker's task: the outcomes of a chunk of plain files (whose pages the calling process asked the kernel
    for, further ahead)."""
    layout = _layout(root)
    return [_outcome(relpath, functools.partial(_read, layout, relpath), make) for relpath in relpaths]


def _read(layout: RootLayout, relpath: str) -> bytes:
    return read_regular(layout.inside(relpath))


@functools.cache
def _layout(root: str) -> RootLayout:
    """One layout per worker: it remembers the root's real directories, each checked once."""
    return RootLayout(Path(root))


def _outcome(relpath: str, stored: Callable[[], bytes], make: Callable[[MemoryDoc, str], T]) -> Outcome[T]:
    try:
        return make(parse(stored(), relpath), relpath)
    except FileNotFoundError:
        return None
    except BadMemoryFile as exc:
        return Bad(exc.reason)
    except (OSError, StoreError) as exc:
        return Failed(str(exc))
