"""Retiring files a change replaces (a move's old location, the plaintext of a file just encrypted), as part of
that change even across a crash.

A change writes its new files, commits the index, and only then removes the old ones: until the commit, the
old files are what the index points at. A kill between the commit and the removals used to leave the old file
beside the new one, and ``repair`` then took it for a memory of its own (a forgotten memory back alive, renamed).
So the files to retire travel with the change's queued audit event, in the same transaction as its index rows,
each with the size and mtime it had at the commit. Whoever appends that event next (the change itself, any later
write, ``repair``) retires them first, and ``check`` names them as a change to finish, never as new memories.
A file changed since (another writer put something else there) is left alone: it is no longer the one retired.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.store.paths import RootLayout
from engram.store.write.atomic import retire_all

KEY = "_retire"  # in a queued event only: taken off before the event is appended to the log


@dataclass(frozen=True)
class Retiring:
    path: str  # relpath under the root (memory files under scopes/, grants under grants/)
    scrub: bool  # plaintext of an encrypted memory: zeroed before it is unlinked
    size: int
    mtime_ns: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "scrub": self.scrub, "size": self.size, "mtime_ns": self.mtime_ns}


def plan(layout: RootLayout, removals: list[str], scrubs: list[str], written: set[str]) -> list[Retiring]:
    """What a change retires, as the files are now (inside its transaction); a file rewritten in place by the
    same change, or already gone, is not retired."""
    found = []
    for relpath, zeroed in [*((r, False) for r in removals), *((r, True) for r in scrubs)]:
        if relpath in written:
            continue
        try:
            st = os.stat(_resolve(layout, relpath), follow_symlinks=False)
        except FileNotFoundError:
            continue
        found.append(Retiring(relpath, zeroed, st.st_size, st.st_mtime_ns))
    return found


def carry(event: dict[str, Any], retiring: list[Retiring]) -> dict[str, Any]:
    """The queued form of ``event``: with the files its change retires."""
    return {**event, KEY: [r.to_json() for r in retiring]} if retiring else event


def finish(layout: RootLayout, retiring: list[Retiring]) -> None:
    """Retire each file that is still the one the change meant; idempotent."""
    left = [item for item in retiring if still_there(layout, item)]
    retire_all(
        [_resolve(layout, item.path) for item in left if not item.scrub],
        [_resolve(layout, item.path) for item in left if item.scrub],
    )


def take(event: dict[str, Any]) -> tuple[dict[str, Any], list[Retiring]]:
    """A queued event without its retirements, and the retirements."""
    items = event.pop(KEY, None) or []
    return event, [
        Retiring(str(i["path"]), bool(i["scrub"]), int(i["size"]), int(i["mtime_ns"]))
        for i in items
        if isinstance(i, dict)
    ]


def pending(layout: RootLayout, queued: list[tuple[str, str]]) -> list[Retiring]:
    """Retirements of queued events whose files are still there, unchanged: a change not finished yet."""
    left = []
    for _, raw in queued:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        left += [r for r in take(event)[1] if still_there(layout, r)]
    return left


def still_there(layout: RootLayout, item: Retiring) -> bool:
    try:
        st = os.stat(_resolve(layout, item.path), follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return st.st_size == item.size and st.st_mtime_ns == item.mtime_ns


def _resolve(layout: RootLayout, relpath: str) -> Path:
    return layout.resolve_data(relpath) if relpath.startswith("grants/") else layout.resolve(relpath)
