"""Read-only views of a root for the UI and CLI: counts, and the list of every memory with its state."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from peewee import fn

from engram.store.domain import OPEN_STATUSES
from engram.store.drift.scan import FileEntry, walk
from engram.store.errors import StoreError
from engram.store.models import Entity, Memory, Promotion, Relation, SupersedesChain, tuples
from engram.store.service import Store


@dataclass
class Counts:
    memories: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_scope: dict[str, int] = field(default_factory=dict)
    by_decay: dict[str, int] = field(default_factory=dict)
    promotions: dict[str, int] = field(default_factory=dict)
    sensitive_scopes: list[str] = field(default_factory=list)
    encrypted: int = 0
    entities: int = 0
    relations: int = 0
    supersedes: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _grouped(column) -> dict[str, int]:
    query = tuples(Memory.select(column, fn.COUNT(Memory.slug)).group_by(column).order_by(column))
    return {str(key): n for key, n in query}


def counts(store: Store) -> Counts:
    """What the root holds, from the index alone (fast at 100k memories)."""
    return Counts(
        memories=Memory.select().count(),
        by_type=_grouped(Memory.type),
        by_scope=_grouped(Memory.scope_hash),
        by_decay=_grouped(Memory.decay_state),
        promotions={
            s: n
            for s, n in tuples(Promotion.select(Promotion.status, fn.COUNT(Promotion.id)).group_by(Promotion.status))
        },
        sensitive_scopes=sorted(store.sensitive_scopes()),
        encrypted=Memory.select().where(Memory.scope_sensitive == 1).count(),
        entities=Entity.select().count(),
        relations=Relation.select().count(),
        supersedes=SupersedesChain.select().count(),
    )


def pending_count(store: Store) -> int:
    return Promotion.select().where(Promotion.status.in_(OPEN_STATUSES)).count()


@dataclass(frozen=True)
class Listed:
    """One memory as a listing shows it."""

    slug: str
    type: str
    scope_hash: str
    title: str
    decay_state: str
    state: str  # indexed | unindexed | unreadable, plus "encrypted" / "in forgotten/"
    body_path: str
    created_at: str


def list_memories(store: Store) -> list[Listed]:
    """Every memory: the indexed ones, then files on disk the index does not know (parsed to show them)."""
    out = []
    known = set()
    columns = (Memory.slug, Memory.type, Memory.scope_hash, Memory.title, Memory.decay_state, Memory.body_path)
    rows = Memory.select(*columns, Memory.created_at).order_by(Memory.scope_hash, Memory.type, Memory.created_at)
    for slug, mtype, scope, title, decay, body_path, created in tuples(rows):  # no model instance a row
        known.add(body_path)
        out.append(Listed(slug, mtype, scope, title, decay, _state("indexed", body_path), body_path, created))
    for entry in walk(store.layout):
        if not isinstance(entry, FileEntry) or entry.relpath in known:
            continue
        try:
            fm = store.read_doc(entry.relpath).frontmatter
            out.append(
                Listed(
                    fm.slug,
                    fm.type.value,
                    fm.scope_hash,
                    fm.title,
                    fm.decay_state.value,
                    _state("unindexed", entry.relpath),
                    entry.relpath,
                    fm.created_at.isoformat(),
                )
            )
        except StoreError as exc:
            out.append(
                Listed(
                    entry.slug,
                    "?",
                    entry.scope_hash,
                    str(exc),
                    "?",
                    _state("unreadable", entry.relpath),
                    entry.relpath,
                    "",
                )
            )
    return out


def _state(base: str, relpath: str) -> str:
    parts = [base]
    if relpath.endswith(".md.enc"):
        parts.append("encrypted")
    if "/forgotten/" in relpath:
        parts.append("in forgotten/")
    return ", ".join(parts)
