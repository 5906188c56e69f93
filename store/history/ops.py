"""What a person does with a memory's history: list its revisions, read one, compare two, restore one, forget
them all.

A revision is found by the memory's slug (its file name), wherever the file was: a type change, a move to
``forgotten/``, or a memory deleted since. Reading an encrypted revision decrypts it in memory with the scope's
key and is audited as opening the memory is. A restore is a new revision, never a rewind: the old text goes
through the write path like any edit (audited, indexed, readable by memoryd), and the history keeps what it
replaced.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engram.store.errors import NotFound, StoreError
from engram.store.frontmatter import MemoryDoc, parse
from engram.store.history.repo import Commit, tree_path
from engram.store.models import Memory
from engram.store.service import Store
from engram.store.write.change import Change

if TYPE_CHECKING:
    import pygit2


@dataclass(frozen=True)
class Revision:
    """One version of a memory's file: the revision of the root it is in, and where the file was then."""

    commit: Commit
    relpath: str
    blob: str | None  # None: the revision removed the file

    @property
    def id(self) -> str:
        return self.commit.id

    @property
    def short(self) -> str:
        return self.commit.id[:10]

    @property
    def encrypted(self) -> bool:
        return self.relpath.endswith(".md.enc")

    @property
    def removed(self) -> bool:
        return self.blob is None

    def to_json(self) -> dict[str, Any]:
        return {
            "revision": self.id,
            "when": self.commit.when.isoformat(),
            "author": self.commit.author,
            "summary": self.commit.summary,
            "path": self.relpath,
            "removed": self.removed,
            "encrypted": self.encrypted,
            "events": self.commit.trailers.get("Event", []),
        }


def catch_up(store: Store, progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Bring the history up to date with the files (see :meth:`Keeper.catch_up`); the relpaths recorded."""
    if store.read_only:
        return []
    store.follow_move()  # a root moved here brings its history along before anything is recorded
    return store.history.catch_up(store.sensitive_scopes(), store.now(), progress)


def record_seen(store: Store, slugs: set[str]) -> list[str]:
    """The files of ``slugs`` as they are now, recorded where the history has not seen them so (the memories the
    change feed says memoryd added or changed); a memory removed is left to the next whole catch-up."""
    if store.read_only or not slugs:
        return []
    rows = Memory.select(Memory.body_path).where(Memory.slug.in_(sorted(slugs)))
    paths = [str(row.body_path) for row in rows]
    return store.history.catch_up_paths(paths, store.sensitive_scopes(), store.now())


def revisions(store: Store, slug: str) -> list[Revision]:
    """Every revision of ``slug``'s file, newest first; raises NotFound when the history has none."""
    names = {f"{slug}.md", f"{slug}.md.enc"}
    repo = store.history.repo
    found: list[Revision] = []
    for commit, raw in repo.log():
        paths = commit.paths if commit.paths is not None else repo.changed_paths(raw)
        for path in (p for p in paths if p.rsplit("/", 1)[-1] in names):
            blob = _blob(raw.tree, path)
            if blob is None and not any(_blob(parent.tree, path) for parent in raw.parents):
                continue  # neither here nor before: a version purged from the history
            found.append(Revision(commit, path, blob))
    if not found:
        raise NotFound(f"no revision of {slug!r} in the history (`engram check` records what it has not seen yet)")
    return _moves_folded(found)


def revision(store: Store, slug: str, rev: str, among: list[Revision] | None = None) -> Revision:
    """The revision ``rev`` (an id or its first characters, as ``engram history`` lists them) of ``slug``,
    looked up ``among`` its revisions when the caller has them already."""
    rev = rev.strip().lower()
    if len(rev) < 4:
        raise StoreError(f"revision {rev!r}: give at least 4 characters of its id")
    listed = among if among is not None else revisions(store, slug)
    matches = [r for r in listed if r.id.startswith(rev) and not r.removed]
    if not matches:
        raise NotFound(f"no revision {rev!r} of {slug!r} with its file (`engram history {slug}` lists them)")
    if len({r.id for r in matches}) > 1:
        raise StoreError(f"revision {rev!r} of {slug!r} is ambiguous: give more of its id")
    return matches[0]


def at(store: Store, slug: str, when: datetime) -> Revision:
    """The revision of ``slug`` that was current at ``when``."""
    for found in revisions(store, slug):
        if found.commit.when <= when:
            if found.removed:
                raise NotFound(f"{slug!r} had been removed by {when.isoformat()} ({found.short})")
            return found
    raise NotFound(f"the history has no revision of {slug!r} from before {when.isoformat()}")


def text(store: Store, found: Revision) -> str:
    """A revision's text. An encrypted one is decrypted in memory with the scope's key, and the reading is
    recorded as ``sensitive_viewed`` (the revision named), as opening the memory is."""
    if found.blob is None:
        raise NotFound(f"revision {found.short} removed the file: it has no text")
    data = store.history.repo.blob_of(found.id, found.relpath)
    if data is None:
        raise NotFound(f"revision {found.short} of {found.relpath} is no longer in the history")
    if found.encrypted:
        scope = found.relpath.split("/")[1]
        try:
            plain = store.opened(found.relpath, data)[1]
        except StoreError as exc:
            raise StoreError(f"revision {found.short} cannot be opened: {exc}") from exc
        slug = found.relpath.rsplit("/", 1)[-1].removesuffix(".md.enc")
        store.apply(Change("sensitive_viewed", slug, scope, {"path": found.relpath, "revision": found.id}))
        return plain.decode("utf-8")
    return data.decode("utf-8")


def current_text(store: Store, slug: str) -> str | None:
    """The memory's text on disk now; None when it has no file."""
    row = Memory.get_or_none(Memory.slug == slug)
    if row is None:
        return None
    try:
        return store.read_bytes(store.safe_relpath(row.body_path)).decode("utf-8")
    except FileNotFoundError:
        return None


def diff(store: Store, slug: str, old: str, new: str | None = None) -> str:
    """A unified diff of revision ``old`` against ``new`` (default: the file as it is now)."""
    listed = revisions(store, slug)  # one walk of the history for both
    before = revision(store, slug, old, listed)
    if new is None:
        after_text, after_name = current_text(store, slug) or "", "now"
    else:
        after = revision(store, slug, new, listed)
        after_text, after_name = text(store, after), after.short
    lines = difflib.unified_diff(
        text(store, before).splitlines(keepends=True),
        after_text.splitlines(keepends=True),
        f"{slug} @ {before.short}",
        f"{slug} @ {after_name}",
    )
    return "".join(lines)


def restore(store: Store, slug: str, rev: str) -> str:
    """Write revision ``rev``'s text as the memory's current version, through the write path; returns its
    relpath. A memory deleted since comes back where it was; its scope's encryption is the scope's now."""
    found = revision(store, slug, rev)
    old = parse(text(store, found).encode("utf-8"), found.relpath)
    if old.frontmatter.slug != slug:
        raise StoreError(f"revision {found.short} is of {old.frontmatter.slug!r}, not {slug!r}")
    fm = old.frontmatter.model_copy(deep=True)
    fm.updated_at = store.now()
    doc = MemoryDoc(frontmatter=fm, body=old.body)
    row = Memory.get_or_none(Memory.slug == slug)
    current = store.safe_relpath(row.body_path) if row is not None else None
    kept_encrypted = True if found.encrypted else None  # never a plaintext file from an encrypted revision
    write = store.rewrite(current, doc) if current is not None else store.memory_write(doc, encrypted=kept_encrypted)
    store.apply(
        Change(
            "memory_restored",
            slug,
            fm.scope_hash,
            {"revision": found.id},
            writes=[write],
            index_update=lambda: store.upsert_memory_row(doc, write.relpath, keep_runtime=current is not None),
            removals=[current] if current is not None and current != write.relpath else [],
        )
    )
    return write.relpath


def push(store: Store, remote: str) -> str:
    """Push the history to a git remote (see :meth:`HistoryRepo.push`), recorded as a ``history_pushed`` event:
    the revisions leave the machine (an encrypted memory's only as ciphertext)."""
    pushed = store.history.repo.push(remote)
    store.apply(Change("history_pushed", None, None, {"remote": remote, "revision": pushed}))
    return pushed


def forget(store: Store, slug: str) -> int:
    """Remove every earlier revision of ``slug`` from the history (the file as it is now stays recorded), its
    objects deleted, recorded as a ``history_forgotten`` event. Returns how many versions were removed."""
    found = revisions(store, slug)
    names = {f"{slug}.md", f"{slug}.md.enc"}
    files = store.history.repo.files()
    keep = {blob for path, blob in files.items() if path.rsplit("/", 1)[-1] in names}
    removed = store.history.purge(lambda path, blob: path.rsplit("/", 1)[-1] in names and blob not in keep)
    scope = found[0].relpath.split("/")[1]
    store.apply(Change("history_forgotten", slug, scope, {"versions": len(removed)}))
    return len(removed)


def _blob(tree: pygit2.Tree, relpath: str) -> str | None:
    try:
        return str(tree[tree_path(relpath)].id)
    except KeyError:
        return None


def _moves_folded(found: list[Revision]) -> list[Revision]:
    """A revision that moved the file (a type change) touches two paths: its removal of the old one is not a
    version of its own."""
    kept: list[Revision] = []
    for item in found:
        if item.removed and any(o.commit.id == item.commit.id and not o.removed for o in found):
            continue
        kept.append(item)
    return kept
