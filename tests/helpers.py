"""Helpers shared by the test modules (a plain module: pytest puts tests/ on the import path)."""

from __future__ import annotations

import gc
import io
import json
import os
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import forked
import numpy as np
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from rich.console import Console
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Static
from textual.worker import WorkerCancelled

from engram.store.domain import MemoryType
from engram.store.frontmatter import Frontmatter, MemoryDoc
from engram.store.memories import create_memory
from engram.store.search.fulltext import FullText
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store


def events(root: Path) -> list[dict]:
    """Every event of the root's audit log, parsed."""
    return [json.loads(line) for line in (root / "audit" / "audit.jsonl").read_text().splitlines()]


def promotion_texts_in(data: bytes) -> list[str]:
    """The promotions' titles, bodies and scopes (six characters or more) found in ``data``: what a file that
    must hold no text of any scope must not show. Fails when there is no such text to look for."""
    from engram.store.models import Promotion

    texts = [
        text
        for row in Promotion.select(Promotion.proposed_title, Promotion.proposed_body, Promotion.scope_hash).tuples()
        for text in row
        if len(text) >= 6
    ]
    assert texts
    return [text for text in texts if text.encode() in data]


def mapped_kb(directory: Path) -> int:
    """Resident kilobytes of this process's maps of files in ``directory`` (Linux's smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if not line[:1].isupper():  # a map's header: address range, permissions, ..., path
            inside = str(directory) in line
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def shown(static: Static, width: int = 80) -> str:
    """The text a Static shows (whatever Rich renderable it holds), as a terminal ``width`` wide would."""
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(static.content)
    return console.export_text()


async def settle(app: App, pilot: Pilot) -> None:
    """Let workers (loading, decisions, the audit check) finish and the screen catch up. Quiet twice in a row: a
    worker's end may start the next only after the screen's next refresh (the queue's first full read, then the
    other panes and the audit check), which a single look finds not started yet on a loaded machine."""
    quiet = 0
    for _ in range(12):  # a worker's result may start the next (the queue, then its blocks, then the detail's list)
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # an exclusive worker (detail, load) replaced by a newer one
            pass
        await pilot.pause()
        quiet = 0 if any(worker.is_running for worker in app.workers) else quiet + 1
        if quiet == 2:
            break


async def until(pilot: Pilot, condition: Callable[[], object], seconds: float = 60.0) -> bool:
    """Let the app run until ``condition()`` holds; False if it still does not after ``seconds``. The bound only
    stops a stuck test, far above what a loaded machine needs: a test asserts the condition, never how long it
    took (a budget of a few seconds failed on a busy machine)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await pilot.pause(0.02)
    return True


def run_engram(root: Path, *args: str, env: dict[str, str], crash: str | None = None) -> int:
    """``engram ARGS --root ROOT`` in its own process (so a crash point can kill it), forked from a warm server
    (see ``forked``); its exit code. What it printed is in ``engram.out`` beside the root."""
    return forked.engram(root, *args, env=env, crash=crash, output=root.parent / "engram.out")


def fresh_store(root: Path, keys: KeyRing, scope: str) -> Store:
    """A new root with one plaintext memory in ``scope`` and no encrypted file: nothing to check a passphrase
    against. Open: the caller closes it."""
    store = Store.open(root, create=True, keys=keys, actor="engram-test")
    doc = MemoryDoc(
        frontmatter=Frontmatter(
            title="A client's rate",
            slug="client-rate",
            type=MemoryType.FACT,
            scope_hash=scope,
            source="manual",
            created_at=store.now(),
        ),
        body="120/h\n",
    )
    create_memory(store, doc)
    return store


def yaml_text(syntax: str, max_size: int) -> SearchStrategy[str]:
    """Text of any character, with those of ``syntax`` (YAML's syntax characters, and those where emitters or
    readers part) drawn as often as all the others together."""
    return st.text(
        st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(list(syntax))), max_size=max_size
    )


def open_after_letting_go(make: Callable[[], object], named: str) -> tuple[set[str], list[str]]:
    """Make an object with ``make`` (which uses it as it likes), drop it and collect: the descriptors it opened
    that are still open, and the ResourceWarnings (unclosed files) about paths holding ``named``. Objects other
    tests left to the collector are collected first, so their warnings are not counted."""
    gc.collect()
    before = set(os.listdir("/proc/self/fd"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = make()
        assert set(os.listdir("/proc/self/fd")) - before, "nothing was opened: the check would prove nothing"
        del made
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning) and named in str(w.message)]
    return set(os.listdir("/proc/self/fd")) - before, unclosed


def fulltext_matching(fulltext: FullText, term: str) -> np.ndarray:
    """Ids (ascending) of the memories whose head, tags or body contain ``term``: :meth:`FullText.flag` with each
    id its own row (the search flags its own rows; a test asks by id)."""
    highest = fulltext.con.execute("SELECT max(id) FROM docs").fetchone()[0] or 0
    flags = np.zeros(highest + 2, dtype=np.uint8)
    fulltext.flag(term, np.arange(highest + 1, dtype=np.int32), flags)
    return np.flatnonzero(flags[:-1])


def held(gate: threading.Event, real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, made to wait for ``gate`` (at most 10 s) before it runs: a test holds a worker's step back to
    look at the console meanwhile."""

    def waiting(*args: Any, **kwargs: Any) -> Any:
        gate.wait(10)
        return real(*args, **kwargs)

    return waiting
