"""What a person needs to know about each scope before trusting it: a readable label, what it holds, whether it
is sensitive and unlocked, its grant, and what leaks.

memoryd names scopes by a 12-hex hash of the project directory. The label comes from what the root itself knows
(``sensitive_scopes.scope_root``, a grant's ``scope_root``), else from hashing candidate project directories on
this machine until one matches. The leak findings are memoryd's own habit: it keeps titles, triggers, promotion
text and entity names of a sensitive scope in clear in index.db, and a plaintext ``.md`` may sit in a sensitive
scope after a crash. Engram reports them here; it never copies that text anywhere new.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peewee import fn

from engram.store.drift.scan import scope_files
from engram.store.errors import BadInput, NotFound, StoreError, UnsafePath
from engram.store.models import Binding, Entity, Memory, Promotion, ScopeLabel, Trigger, tuples
from engram.store.paths import check_scope_name, scope_hash_for, scope_root_for
from engram.store.sensitive.grants import Grant, grants
from engram.store.service import Store
from engram.store.write.change import Change

UNSCOPED = "_unscoped"


@dataclass
class ScopeInfo:
    scope_hash: str
    label: str | None = None  # the project directory, when anything tells it
    label_from: str | None = None  # you, sensitive_scopes, grant, codex cwd, discovered
    by_type: dict[str, int] = field(default_factory=dict)
    sensitive: bool = False
    locked: bool = False  # sensitive and this session has no key for it
    encrypted: int = 0
    bound: int = 0  # encrypted memories in engram's binding manifest
    grant: Grant | str | None = None  # a grant, or why its file could not be read
    plaintext_files: int = 0  # plaintext .md files on disk in a sensitive scope (as check finds them, not rows)
    index_leaks: dict[str, int] = field(default_factory=dict)  # what of it index.db holds in clear

    @property
    def memories(self) -> int:
        return sum(self.by_type.values())

    @property
    def name(self) -> str:
        return self.label or self.scope_hash

    def findings(self) -> list[str]:
        found = []
        if self.plaintext_files:
            found.append(
                f"{self.plaintext_files} plaintext files in a sensitive scope (`engram check` names them, "
                "`engram repair` encrypts them)"
            )
        if self.index_leaks:
            what = ", ".join(f"{n} {kind}" for kind, n in self.index_leaks.items())
            found.append(f"index.db holds in clear: {what} (memoryd needs them there; engram copies them nowhere)")
        if isinstance(self.grant, str):
            found.append(self.grant)
        return found

    def to_json(self, store: Store) -> dict[str, Any]:
        grant = self.grant.to_json(store.now()) if isinstance(self.grant, Grant) else self.grant
        return {
            "scope_hash": self.scope_hash,
            "label": self.label,
            "label_from": self.label_from,
            "memories": self.memories,
            "by_type": self.by_type,
            "sensitive": self.sensitive,
            "locked": self.locked,
            "encrypted": self.encrypted,
            "bound": self.bound,
            "grant": grant,
            "findings": self.findings(),
        }


def scopes(store: Store, discover_in: Iterable[Path] = ()) -> list[ScopeInfo]:
    """Every scope the root knows of (memories, sensitive registrations, grants), most memories first."""
    infos: dict[str, ScopeInfo] = {}

    def info(scope: str) -> ScopeInfo:
        if scope not in infos:
            infos[scope] = ScopeInfo(scope)
        return infos[scope]

    rows = tuples(Memory.select(Memory.scope_hash, Memory.type, Memory.body_path))
    types: dict[str, Counter[str]] = defaultdict(Counter)
    for scope, mtype, path in rows:
        types[scope][mtype] += 1
        if path.endswith(".md.enc"):
            info(scope).encrypted += 1
    for scope, counter in types.items():
        info(scope).by_type = dict(counter.most_common())
    for row in store.index.sensitive_scope_rows():
        scope = row.get("scope_hash")
        if scope:
            s = info(scope)
            s.sensitive = True
            if row.get("scope_root"):
                s.label, s.label_from = row["scope_root"], "sensitive_scopes"
    for scope, grant in grants(store).items():
        s = info(scope)
        s.grant = grant
        if s.label is None and isinstance(grant, Grant) and grant.scope_root:
            s.label, s.label_from = grant.scope_root, "grant"
    for scope, label in (
        tuples(ScopeLabel.select(ScopeLabel.scope_hash, ScopeLabel.label)) if store.index.has(ScopeLabel) else []
    ):
        info(scope).label, info(scope).label_from = label, "you"  # a person's name for it beats any guess
    for s in infos.values():
        if s.label is None and s.scope_hash != UNSCOPED:
            s.label = _codex_cwd(store, s.scope_hash)
            s.label_from = "codex cwd" if s.label else None
    unlabeled = {s.scope_hash for s in infos.values() if s.label is None and s.scope_hash != UNSCOPED}
    for scope, root in discover_roots(discover_in, unlabeled).items():
        infos[scope].label, infos[scope].label_from = root, "discovered"
    if store.index.has(Binding):
        bound = Binding.select(Binding.scope_hash, fn.COUNT(Binding.slug)).group_by(Binding.scope_hash)
        for scope, n in tuples(bound):
            if scope in infos:
                infos[scope].bound = n
    for s in infos.values():
        if s.sensitive:
            s.locked = not store.keys.can_open(s.scope_hash)
            s.plaintext_files = sum(not e.encrypted for e in scope_files(store.layout, s.scope_hash))
            s.index_leaks = _index_leaks(s.scope_hash)
    return sorted(infos.values(), key=lambda s: (-s.memories, s.scope_hash))


def resolve_scope(store: Store, scope: str) -> tuple[str, str | None]:
    """What a SCOPE argument names: a scope the root knows, by its hash, or a project directory, by memoryd's
    rule (the nearest ancestor with ``.git``, else the directory itself). Returns (hash, project directory or
    None). Anything else is an error before anything changes: a path that does not exist, a file, or a
    directory inside the data root is no project, and a path is never taken for a hash."""
    if _known_scope(store, scope):
        return scope, None
    path = Path(scope).expanduser()
    if not path.exists():
        raise NotFound(f"no scope {scope!r}: give a scope hash from `engram scopes`, or a project directory")
    if not path.is_dir():
        raise BadInput(f"{scope}: not a project directory (give the project's folder, or a scope hash)")
    root = scope_root_for(path)
    data_root = store.layout.root.resolve()
    if root == data_root or data_root in root.parents:
        raise BadInput(f"{scope}: inside the data root, not a project directory")
    return scope_hash_for(root), str(root)


def scope_hashes(store: Store) -> list[str]:
    """Every scope hash the root knows, from the index alone (cheap enough for shell completion)."""
    found = {scope for (scope,) in tuples(Memory.select(Memory.scope_hash).distinct())}
    return sorted(found | store.sensitive_scopes())


def _known_scope(store: Store, scope: str) -> bool:
    try:
        check_scope_name(scope)
    except UnsafePath:
        return False
    return (
        (store.layout.scopes_dir / scope).is_dir()
        or scope in store.sensitive_scopes()
        or Memory.select().where(Memory.scope_hash == scope).exists()
        or (store.layout.grants_dir / f"{scope}.json").is_file()
    )


def project_dir(store: Store, scope_hash: str, discover_in: Iterable[Path] | None = None) -> str | None:
    """The project directory of a scope known by its hash, as memoryd records it when marking by path: from the
    sensitive registration, the grant, the person's label, a Codex session's cwd, else by looking for it on
    this machine. Every candidate must hash to the scope; None when nothing does."""
    candidates = [
        row.get("scope_root") for row in store.index.sensitive_scope_rows() if row.get("scope_hash") == scope_hash
    ]
    grant = grants(store).get(scope_hash)
    candidates.append(grant.scope_root if isinstance(grant, Grant) else None)
    if store.index.has(ScopeLabel):
        candidates += [
            label for (label,) in tuples(ScopeLabel.select(ScopeLabel.label).where(ScopeLabel.scope_hash == scope_hash))
        ]
    candidates.append(_codex_cwd(store, scope_hash))
    for candidate in candidates:
        if candidate and Path(candidate).is_dir() and scope_hash_for(candidate) == scope_hash:
            return str(scope_root_for(candidate))
    bases = default_discovery_dirs() if discover_in is None else discover_in
    return discover_roots(bases, {scope_hash}).get(scope_hash)


def set_label(store: Store, scope_hash: str, label: str) -> None:
    """Name a scope (an empty label removes the name); audited as ``scope_labeled``."""
    label = " ".join(label.split())

    def update() -> None:
        ScopeLabel.delete().where(ScopeLabel.scope_hash == scope_hash).execute()
        if label:
            ScopeLabel.insert(scope_hash=scope_hash, label=label, set_at=store.now().isoformat()).execute()

    store.apply(Change("scope_labeled", scope_hash, scope_hash, {"label": label or None}, index_update=update))


def discover_roots(bases: Iterable[Path], wanted: set[str], depth: int = 2) -> dict[str, str]:
    """Project directories under ``bases`` (to ``depth`` levels) whose memoryd scope hash is one of ``wanted``."""
    found: dict[str, str] = {}
    for base in bases:
        stack = [(Path(base).expanduser(), 0)]
        while stack and len(found) < len(wanted):
            folder, level = stack.pop()
            try:
                scope = scope_hash_for(folder)
            except OSError:
                continue
            if scope in wanted and scope not in found:
                found[scope] = str(scope_root_for(folder))
            if level < depth:
                try:
                    children = [
                        e for e in os.scandir(folder) if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
                    ]
                except OSError:
                    continue
                stack.extend((Path(e.path), level + 1) for e in children)
    return found


def default_discovery_dirs() -> list[Path]:
    """Where projects usually live: the home directory and its common code folders."""
    home = Path.home()
    return [home, *(home / name for name in ("code", "src", "projects", "work", "dev", "repos"))]


_CWD = re.compile(r"^cwd: (.+)$", re.MULTILINE)


def _codex_cwd(store: Store, scope: str) -> str | None:
    """The working directory a Codex rollout header of this scope names, when it hashes to the scope: memoryd
    derives a Codex session's scope from that cwd, so it is the project's directory."""
    sessions = (
        Memory.select(Memory.body_path)
        .where((Memory.scope_hash == scope) & (Memory.source.startswith("codex")) & ~Memory.body_path.endswith(".enc"))
        .limit(20)
    )
    for (path,) in tuples(sessions):
        try:
            text = store.read_bytes(store.safe_relpath(path))[:4096].decode("utf-8", "replace")
        except (StoreError, OSError):
            continue
        for cwd in _CWD.findall(text):
            if scope_hash_for(cwd.strip()) == scope:
                return cwd.strip()
    return None


def _index_leaks(scope: str) -> dict[str, int]:
    """How many titles, triggers, promotions and entities of ``scope`` index.db keeps in clear."""
    leaks = {
        "titles": Memory.select().where((Memory.scope_hash == scope) & (Memory.title != "")).count(),
        "triggers": Trigger.select()
        .join(Memory, on=(Trigger.slug == Memory.slug))
        .where(Memory.scope_hash == scope)
        .count(),
        "promotion texts": Promotion.select().where(Promotion.scope_hash == scope).count(),
        "entity names": Entity.select().where(Entity.scope_hash == scope).count(),
    }
    return {kind: n for kind, n in leaks.items() if n}
