"""Every version of every memory file, kept in a git repository beside engram's other state for the root.

A memory file is stored as the bytes on disk: an encrypted memory's revisions are its ciphertext, so the
repository never holds what the root does not. The tree mirrors ``scopes/`` with one level added, two hex digits of
the file name's sha256 (``scopes/<scope>/<type>/<xx>/<slug>.md``): a revision rewrites the trees on its path, and a
type folder of 24,000 files would otherwise be rewritten whole on every approve. ``git log`` on the repository reads
as the history of the root: one commit per engram change (its audit event, op id and actor in the message) or per
batch of files seen changed by someone else, each naming the paths it touched.

git through libgit2 (pygit2): the objects are written in compiled code, in process; a revision costs one
commit's objects, where the git command line would start several processes for each.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.errors import StoreError
from engram.store.lazy import lazy_module

if TYPE_CHECKING:
    import pygit2
else:
    pygit2 = lazy_module("pygit2")  # libgit2: for the commands that write or read a revision, not every start

BRANCH = "refs/heads/main"
CACHE_BYTES = 8 * 1024 * 1024
LISTED = 200  # paths a commit message names; a commit touching more says so, and is read from its trees
_MEMORY_FILE = re.compile(r"^scopes/(?!_)[^/]+/[^/]+/[^/]+\.md(\.enc)?$")
_TRAILER = re.compile(r"^([A-Z][A-Za-z-]+): (.*)$")


class HistoryError(StoreError):
    """The history repository cannot be opened or written (its files damaged, its folder not writable)."""


@dataclass(frozen=True)
class Stored:
    """A file's bytes written to the repository already (:meth:`HistoryRepo.store`): its blob's id. A revision
    of many files can name them so, rather than hold every file's bytes until it is made."""

    blob: str


Content = bytes | Stored | None  # what a revision sets a file to: its bytes, a blob stored already, or removed


def is_memory_file(relpath: str) -> bool:
    """Whether history keeps ``relpath``: a memory file under a scope's type folder (not ``_conflicts/``)."""
    return _MEMORY_FILE.match(relpath) is not None


def tree_path(relpath: str) -> str:
    """Where ``relpath`` sits in the repository's tree (see the module's docstring)."""
    folder, name = relpath.rsplit("/", 1)
    return f"{folder}/{hashlib.sha256(name.encode('utf-8')).hexdigest()[:2]}/{name}"


def root_path(path: str) -> str:
    """The root's relpath of a tree path: the shard taken out."""
    parts = path.split("/")
    return "/".join(parts[:-2] + parts[-1:])


@dataclass(frozen=True)
class Commit:
    """One revision of the root, as a list shows it."""

    id: str
    when: datetime
    author: str
    summary: str
    trailers: dict[str, list[str]]

    @property
    def paths(self) -> list[str] | None:
        """The root's relpaths it touched; None when it touched more than its message names."""
        if self.trailers.get("Paths") == ["more than listed"]:
            return None
        return self.trailers.get("Path", [])

    def one(self, key: str) -> str | None:
        values = self.trailers.get(key)
        return values[0] if values else None


@dataclass(frozen=True)
class Message:
    """What a revision says of itself: a summary line and its trailers (``Event: memory_edited``)."""

    summary: str
    trailers: tuple[tuple[str, str], ...] = ()

    def text(self, paths: list[str]) -> str:
        lines = [self.summary, ""] + [f"{key}: {value}" for key, value in self.trailers]
        lines += [f"Path: {p}" for p in sorted(paths)[:LISTED]]
        if len(paths) > LISTED:
            lines.append("Paths: more than listed")
        return "\n".join(lines) + "\n"


class HistoryRepo:
    """The repository at ``path`` (bare), made on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # libgit2 keeps up to 256 MB of objects it read or wrote; a conversion or a first catch-up writes
        # thousands, each used once: the cache would only grow the process
        pygit2.settings.cache_max_size(CACHE_BYTES)
        try:
            if (path / "HEAD").exists():
                self.repo = pygit2.Repository(str(path))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.repo = pygit2.init_repository(str(path), bare=True, initial_head="main")
                self.repo.config["core.logAllRefUpdates"] = "false"  # no reflog: a purge must leave nothing behind
        except (pygit2.GitError, OSError) as exc:
            raise HistoryError(f"history repository {path}: {exc}") from exc

    # ------------------------------------------------------------------ reading

    def head(self) -> pygit2.Commit | None:
        try:
            ref = self.repo.references.get(BRANCH)
        except pygit2.GitError as exc:
            raise HistoryError(f"history repository {self.path}: {exc}") from exc
        return None if ref is None else self.repo[ref.target].peel(pygit2.Commit)

    def files(self) -> dict[str, str]:
        """Every file the newest revision holds: the root's relpath and its blob id."""
        head = self.head()
        out: dict[str, str] = {}
        if head is not None:
            for path, oid in _walk_tree(self.repo, head.tree, ""):
                out[root_path(path)] = oid
        return out

    def blob_of(self, commit_id: str, relpath: str) -> bytes | None:
        """The bytes ``relpath`` had in revision ``commit_id``; None when it was not there."""
        commit = self.commit(commit_id)
        try:
            entry = commit.tree[tree_path(relpath)]
        except KeyError:
            return None
        return self.repo[entry.id].peel(pygit2.Blob).data

    def commit(self, commit_id: str) -> pygit2.Commit:
        try:
            return self.repo.revparse_single(commit_id).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise HistoryError(f"no revision {commit_id!r} in the history") from exc

    def log(self) -> Iterator[tuple[Commit, pygit2.Commit]]:
        """Every revision, newest first."""
        head = self.head()
        if head is None:
            return
        for raw in self.repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL):
            yield _described(raw), raw

    def changed_paths(self, raw: pygit2.Commit) -> list[str]:
        """The relpaths ``raw`` added, changed or removed, read from its trees."""
        parent = raw.parents[0].tree if raw.parents else None
        diff = raw.tree.diff_to_tree(parent, swap=True) if parent is not None else raw.tree.diff_to_tree(swap=True)
        return [root_path(delta.new_file.path if delta.status != 2 else delta.old_file.path) for delta in diff.deltas]

    # ------------------------------------------------------------------ writing

    def store(self, data: bytes) -> Stored:
        """Write a file's bytes as a blob, for a revision to name later (one never made leaves the blob
        unreferenced, as a crash before a commit does)."""
        return Stored(str(self.repo.create_blob(data)))

    def record(self, files: Mapping[str, Content], message: Message, author: str, when: datetime) -> str | None:
        """One revision: each relpath set to its bytes or its stored blob (None: removed). Nothing is committed
        when no file changes. Returns the new revision's id."""
        head = self.head()
        base = head.tree if head is not None else None
        edits: dict[str, pygit2.Oid | None] = {}
        for relpath, data in files.items():
            if isinstance(data, Stored):
                edits[tree_path(relpath)] = pygit2.Oid(hex=data.blob)
            else:
                edits[tree_path(relpath)] = None if data is None else self.repo.create_blob(data)
        tree = _edit_tree(self.repo, base, edits)
        if base is not None and tree == base.id:
            return None
        touched = [root_path(p) for p in edits if _entry(base, p) != edits[p]]
        stamp = int(when.timestamp())
        who = pygit2.Signature(author, f"{_email(author)}@engram.invalid", stamp, 0)
        parents = [head.id] if head is not None else []
        try:
            oid = self.repo.create_commit(BRANCH, who, who, message.text(touched), tree, parents)
        except pygit2.GitError as exc:
            raise HistoryError(f"history repository {self.path}: {exc}") from exc
        return str(oid)

    def purge(self, doomed: Callable[[str, str], bool]) -> set[str]:
        """Remove from every revision each file ``doomed(relpath, blob id)`` names, rewriting the commits from the
        first that held one, and delete those blobs from the object store. Returns the blob ids removed."""
        head = self.head()
        if head is None:
            return set()
        removed: set[str] = set()
        trees: dict[pygit2.Oid, pygit2.Oid] = {}

        def rewrite(tree: pygit2.Tree, prefix: str) -> pygit2.Oid:
            if tree.id in trees:
                return trees[tree.id]
            builder = self.repo.TreeBuilder(tree)
            for entry in tree:
                name = str(entry.name)
                path = prefix + name
                if entry.type_str == "tree":
                    new = rewrite(self.repo[entry.id].peel(pygit2.Tree), path + "/")
                    if new != entry.id:
                        if len(self.repo[new].peel(pygit2.Tree)) == 0:
                            builder.remove(name)
                        else:
                            builder.insert(name, new, entry.filemode)
                elif doomed(root_path(path), str(entry.id)):
                    removed.add(str(entry.id))
                    builder.remove(name)
            trees[tree.id] = builder.write()
            return trees[tree.id]

        commits = list(self.repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE))
        mapped: dict[pygit2.Oid, pygit2.Oid] = {}
        for raw in commits:
            tree = rewrite(raw.tree, "")
            parents = [mapped[p] for p in raw.parent_ids]
            if tree == raw.tree_id and parents == list(raw.parent_ids):
                mapped[raw.id] = raw.id
                continue
            mapped[raw.id] = self.repo.create_commit(None, raw.author, raw.committer, raw.message, tree, parents)
        if mapped[head.id] != head.id:
            self.repo.references.create(BRANCH, mapped[head.id], force=True)
        self._delete_objects(removed)
        return removed

    def push(self, remote: str) -> str:
        """Push the history to ``remote`` (a path, or a URL git understands; ssh keys from the agent), replacing
        what is there: a purge rewrites the history, and the remote must lose what was purged too."""
        head = self.head()
        if head is None:
            raise HistoryError("the history is empty: nothing to push")
        callbacks = pygit2.RemoteCallbacks(credentials=pygit2.KeypairFromAgent("git"))
        try:
            self.repo.remotes.create_anonymous(remote).push([f"+{BRANCH}:{BRANCH}"], callbacks=callbacks)
        except (pygit2.GitError, OSError, ValueError) as exc:
            raise HistoryError(f"could not push the history to {remote}: {exc}") from exc
        return str(head.id)

    def _delete_objects(self, oids: set[str]) -> None:
        """Unlink the loose objects ``oids``; a pack holding one is written again without it."""
        objects = self.path / "objects"
        for oid in oids:
            loose = objects / oid[:2] / oid[2:]
            if loose.exists():
                loose.unlink()
        still = [oid for oid in oids if oid in self.repo.odb]
        if still:
            self._repack()
            if any(oid in self.repo.odb for oid in still):
                raise HistoryError(f"history repository {self.path}: a removed revision is still in its packs")

    def _repack(self) -> None:
        """Write one pack of what the branch reaches, then delete every other pack and loose object."""
        pack_dir = self.path / "objects" / "pack"
        old = set(pack_dir.glob("pack-*")) if pack_dir.exists() else set()
        head = self.head()
        reachable: set[pygit2.Oid] = set()
        if head is not None:
            for raw in self.repo.walk(head.id):
                reachable.add(raw.id)
                reachable.update(_tree_objects(self.repo, raw.tree))

        def delegate(builder: pygit2.PackBuilder) -> None:
            for oid in reachable:
                builder.add(oid)

        self.repo.pack(pack_delegate=delegate)
        for path in old:
            path.unlink()
        for folder in (self.path / "objects").glob("[0-9a-f][0-9a-f]"):
            for loose in folder.iterdir():
                loose.unlink()
        self.repo = pygit2.Repository(str(self.path))  # the object store read again, without the packs removed


def _email(author: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", author) or "unknown"


def _described(raw: pygit2.Commit) -> Commit:
    lines = raw.message.splitlines()
    trailers: dict[str, list[str]] = {}
    for line in lines[2:]:
        match = _TRAILER.match(line)
        if match:
            trailers.setdefault(match.group(1), []).append(match.group(2))
    when = datetime.fromtimestamp(raw.commit_time, UTC)
    return Commit(str(raw.id), when, raw.author.name, lines[0] if lines else "", trailers)


def _entry(tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
    if tree is None:
        return None
    try:
        return tree[path].id
    except KeyError:
        return None


def _edit_tree(repo: pygit2.Repository, base: pygit2.Tree | None, edits: Mapping[str, pygit2.Oid | None]) -> pygit2.Oid:
    """``base`` with each path set to its blob (None: removed), trees left empty dropped; only the trees on the
    edited paths are written again."""
    here: dict[str, pygit2.Oid | None] = {}
    below: dict[str, dict[str, pygit2.Oid | None]] = {}
    for path, oid in edits.items():
        head, _, rest = path.partition("/")
        if rest:
            below.setdefault(head, {})[rest] = oid
        else:
            here[head] = oid
    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    for name, oid in here.items():
        if oid is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, oid, pygit2.enums.FileMode.BLOB)
    for name, sub in below.items():
        existing = builder.get(name)
        subtree = repo[existing.id].peel(pygit2.Tree) if existing is not None and existing.type_str == "tree" else None
        new = _edit_tree(repo, subtree, sub)
        if len(repo[new].peel(pygit2.Tree)) == 0:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, new, pygit2.enums.FileMode.TREE)
    return builder.write()


def _walk_tree(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, str]]:
    for entry in tree:
        if entry.type_str == "tree":
            yield from _walk_tree(repo, repo[entry.id].peel(pygit2.Tree), f"{prefix}{entry.name}/")
        else:
            yield f"{prefix}{entry.name}", str(entry.id)


def _tree_objects(repo: pygit2.Repository, tree: pygit2.Tree) -> Iterable[pygit2.Oid]:
    yield tree.id
    for entry in tree:
        if entry.type_str == "tree":
            yield from _tree_objects(repo, repo[entry.id].peel(pygit2.Tree))
        else:
            yield entry.id


def blob_id(data: bytes) -> str:
    """git's id of a file holding ``data``: what a revision of it is stored under."""
    return str(pygit2.hash(data))


def history_dir(state_dir: Path, root: Path) -> Path:
    """The repository's folder for ``root``: named by the root's path, as engram's checkpoints are."""
    name = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]
    return state_dir / "history" / f"{name}.git"
