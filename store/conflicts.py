"""The sync-conflict inbox: the local versions a sync set aside, beside the versions that won, and a decision on
each.

Two writers leave them. memoryd's ``sync import`` copies the other machine's file over a local one that differs,
after copying the local one to ``scopes/_conflicts/<file name>-<first 8 hex of its sha256>`` (and nothing else
remembers where it came from: the file name says which memory). A file-sync tool (Syncthing and its kind) leaves
``<name>.sync-conflict-<date>-<time>-<device>.<ext>`` beside the file it could not merge. Either way the version
in place is the one memoryd reads; the other is only on disk, unindexed.

Each decision is one change through the write path: keep the remote version (the set-aside file goes), keep the
local one (written back as the memory's text, then the set-aside file goes) or a merge of the two (the same,
with the text a person made). The set-aside file is retired with the change's audit event, so it is removed
only once the decision is written. Before it goes, the local version is recorded in the memory's history.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Any

from engram.store.domain import FORGOTTEN_DIR, KEEP_SIDES, TYPE_DIRS
from engram.store.errors import NotFound, StoreError
from engram.store.frontmatter import MemoryDoc, parse
from engram.store.models import Memory
from engram.store.paths import sync_conflict_copy
from engram.store.sensitive.crypto import decrypt
from engram.store.service import Store
from engram.store.write.atomic import read_regular
from engram.store.write.change import Change

CONFLICTS_DIR = "_conflicts"
_ASIDE = re.compile(r"^(?P<name>.+\.md(?:\.enc)?)-(?P<fp>[0-9a-f]{8})$")


@dataclass(frozen=True)
class Conflict:
    """A local version set aside (``aside``) and the memory file in place that won (``relpath``, None when
    that file is gone too)."""

    id: str
    source: str  # "memoryd sync import" or "file sync"
    aside: str  # relpath of the set-aside copy
    name: str  # the memory file's name (slug.md or slug.md.enc)
    relpath: str | None

    @property
    def slug(self) -> str:
        return self.name.removesuffix(".enc").removesuffix(".md")

    @property
    def encrypted(self) -> bool:
        return self.name.endswith(".md.enc")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "slug": self.slug,
            "set_aside": self.aside,
            "in_place": self.relpath,
            "encrypted": self.encrypted,
        }


def conflicts(store: Store) -> list[Conflict]:
    """Every set-aside version on disk: memoryd's first, then a file-sync tool's. Looking reads directory
    listings only."""
    return [*_set_aside_by_memoryd(store), *_left_by_file_sync(store)]


def _set_aside_by_memoryd(store: Store) -> list[Conflict]:
    folder = store.layout.scopes_dir / CONFLICTS_DIR
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        match = _ASIDE.match(entry.name)
        if match and entry.is_file(follow_symlinks=False):
            rel = f"scopes/{CONFLICTS_DIR}/{entry.name}"
            name = match["name"]
            found.append(Conflict(_id(rel), "memoryd sync import", rel, name, _in_place(store, name)))
    return found


def _left_by_file_sync(store: Store) -> list[Conflict]:
    found = []
    for folder in _memory_folders(store):
        for entry in sorted(os.scandir(store.layout.root / folder), key=lambda e: e.name):
            name = sync_conflict_copy(entry.name)
            if name is not None and entry.is_file(follow_symlinks=False):
                beside = f"{folder}/{name}"
                in_place = beside if os.path.lexists(store.layout.root / beside) else _in_place(store, name)
                found.append(
                    Conflict(_id(f"{folder}/{entry.name}"), "file sync", f"{folder}/{entry.name}", name, in_place)
                )
    return found


def _memory_folders(store: Store) -> list[str]:
    """``scopes/<scope>/<type dir or forgotten>`` of every scope, as relpaths."""
    scopes = store.layout.scopes_dir
    if not scopes.is_dir():
        return []
    folders = []
    for scope in sorted(os.scandir(scopes), key=lambda e: e.name):
        if scope.name == CONFLICTS_DIR or not scope.is_dir(follow_symlinks=False):
            continue
        for folder in sorted(os.scandir(scope.path), key=lambda e: e.name):
            if (folder.name in TYPE_DIRS or folder.name == FORGOTTEN_DIR) and folder.is_dir(follow_symlinks=False):
                folders.append(f"scopes/{scope.name}/{folder.name}")
    return folders


def conflict(store: Store, conflict_id: str) -> Conflict:
    wanted = conflict_id.strip().lower()
    matches = [c for c in conflicts(store) if c.id.startswith(wanted)] if len(wanted) >= 4 else []
    if len(matches) != 1:
        what = "is ambiguous" if matches else "is not in the inbox"
        raise NotFound(f"conflict {conflict_id!r} {what} (`engram conflicts` lists them)")
    return matches[0]


def versions(store: Store, found: Conflict) -> tuple[str, str | None]:
    """The local version set aside and the remote one in place, as text (an encrypted one decrypted in memory
    with its scope's key, and the reading audited as opening the memory is)."""
    local = _text(store, found.aside, found)
    remote = _text(store, found.relpath, found) if found.relpath is not None else None
    if found.encrypted:
        details = {"path": found.aside, "conflict": found.id}
        store.apply(Change("sensitive_viewed", found.slug, _scope(found), details))
    return local, remote


def resolve(store: Store, found: Conflict, keep: str, merged: str | None = None) -> str:
    """Decide a conflict: ``keep`` is "remote" (the version in place stays), "local" (the set-aside version is
    written back) or "merged" (``merged``, a whole memory file's text, is written). Returns what was done."""
    if keep not in (*KEEP_SIDES, "merged"):
        raise StoreError(f"keep {keep!r}: say local, remote or merged")
    details = {"conflict": found.id, "kept": keep, "source": found.source}
    if found.relpath is not None:  # the local version joins the memory's history before its copy goes
        with store.history_kept():
            store.history.record_set_aside(
                found.relpath, read_regular(store.layout.inside(found.aside)), found.source, found.id, store.now()
            )
    if keep == "remote":
        store.apply(Change("conflict_resolved", found.slug, _scope(found), details, removals=[found.aside]))
        return f"kept the version in place; the set-aside copy of {found.slug} removed"
    text = merged if keep == "merged" else _text(store, found.aside, found)
    if text is None or unmerged(text):
        raise StoreError("the merge still has conflict markers (<<<<<<< ======= >>>>>>>): nothing changed")
    doc = parse(text.encode("utf-8"), found.aside)
    if doc.frontmatter.slug != found.slug:
        raise StoreError(f"the text is of {doc.frontmatter.slug!r}, not {found.slug!r}: nothing changed")
    fm = doc.frontmatter.model_copy(deep=True)
    fm.updated_at = store.now()
    doc = MemoryDoc(frontmatter=fm, body=doc.body)
    row = Memory.get_or_none(Memory.slug == found.slug)
    current = store.safe_relpath(row.body_path) if row is not None else None
    kept_encrypted = True if found.encrypted else None  # never a plaintext file from an encrypted version
    write = store.rewrite(current, doc) if current is not None else store.memory_write(doc, encrypted=kept_encrypted)
    removals = [found.aside, *([current] if current is not None and current != write.relpath else [])]
    store.apply(
        Change(
            "conflict_resolved",
            found.slug,
            fm.scope_hash,
            details,
            writes=[write],
            index_update=lambda: store.upsert_memory_row(doc, write.relpath, keep_runtime=current is not None),
            removals=removals,
        )
    )
    return f"wrote the {'merged' if keep == 'merged' else 'local'} version of {found.slug}; the set-aside copy removed"


MARKERS = ("<<<<<<< local", "=======", ">>>>>>> remote")


def merge_draft(local: str, remote: str) -> str:
    """Both versions in one text for a person to merge: the lines they share once, each block where they differ
    between git's conflict markers (local above, remote below)."""
    out: list[str] = []
    mine, theirs = local.splitlines(keepends=True), remote.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, mine, theirs, autojunk=False).get_opcodes():
        if tag == "equal":
            out += mine[i1:i2]
        else:
            block = [MARKERS[0] + "\n", *mine[i1:i2], MARKERS[1] + "\n", *theirs[j1:j2], MARKERS[2] + "\n"]
            out += [line if line.endswith("\n") else line + "\n" for line in block]
    return "".join(out)


def unmerged(text: str) -> bool:
    """Whether a conflict marker is still on a line of its own in ``text``."""
    return any(line.rstrip("\n") in MARKERS for line in text.splitlines())


def _text(store: Store, relpath: str, found: Conflict) -> str:
    data = read_regular(store.layout.inside(relpath))
    if found.encrypted:
        scope = _scope(found)
        if scope is None:
            raise StoreError(f"{found.aside}: encrypted, and no file in place says which scope's key opens it")
        home = found.relpath or relpath
        try:
            data = decrypt(data, store.keys.key_for(scope), scope, home)
        except StoreError as exc:
            raise StoreError(f"{relpath}: cannot be opened: {exc}") from exc
    return data.decode("utf-8")


def _scope(found: Conflict) -> str | None:
    return found.relpath.split("/")[1] if found.relpath is not None else None


def _in_place(store: Store, name: str) -> str | None:
    """The memory file named ``name``: where the index says it is, else where it is on disk (memoryd's rebuild
    after an import does not index encrypted files)."""
    slug = name.removesuffix(".enc").removesuffix(".md")
    row = Memory.get_or_none(Memory.slug == slug)
    if row is not None and str(row.body_path).endswith("/" + name):
        return str(row.body_path)
    return next((f"{f}/{name}" for f in _memory_folders(store) if os.path.lexists(store.layout.root / f / name)), None)


def _id(relpath: str) -> str:
    return hashlib.sha256(relpath.encode("utf-8")).hexdigest()[:8]
