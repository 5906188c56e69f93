"""Mutations of memories: create, edit, decay, supersede. Each is one :class:`Change` through the write path."""

from __future__ import annotations

from dataclasses import dataclass

from engram.store.domain import DecayState, MemoryType
from engram.store.errors import Conflict, NotFound
from engram.store.frontmatter import MemoryDoc
from engram.store.models import Memory, SupersedesChain
from engram.store.service import Store
from engram.store.write.change import Change, FileWrite


def create_memory(store: Store, doc: MemoryDoc) -> str:
    """Add a new memory; refuses a slug that already exists anywhere (slugs are global)."""
    fm = doc.frontmatter
    if Memory.get_or_none(Memory.slug == fm.slug) is not None:
        raise Conflict(f"a memory with slug {fm.slug!r} already exists")
    write = store.memory_write(doc)
    store.apply(
        Change(
            "memory_created",
            fm.slug,
            fm.scope_hash,
            {"type": fm.type.value, "source": fm.source},
            writes=[write],
            index_update=lambda: store.upsert_memory_row(doc, write.relpath),
        )
    )
    return write.relpath


def edit_memory(
    store: Store,
    slug: str,
    *,
    title: str | None = None,
    body: str | None = None,
    triggers: list[str] | None = None,
    tags: list[str] | None = None,
    type: MemoryType | None = None,
) -> None:
    """Change a memory's text or labels; sets ``updated_at``. A type change moves the file to its new dir."""
    row = store.memory(slug)
    old_rel = store.safe_relpath(row.body_path)
    doc = store.read_doc(old_rel)
    fm = doc.frontmatter.model_copy(deep=True)
    changed = []
    for name, value in (("title", title), ("triggers", triggers), ("tags", tags), ("type", type)):
        if value is not None and getattr(fm, name) != value:
            setattr(fm, name, value)
            changed.append(name)
    new_body = doc.body if body is None else body
    if new_body != doc.body:
        changed.append("body")
    if not changed:
        return
    fm.updated_at = store.now()
    new_doc = MemoryDoc(frontmatter=fm, body=new_body)
    write = store.rewrite(old_rel, new_doc)
    store.apply(
        Change(
            "memory_edited",
            slug,
            fm.scope_hash,
            {"fields": changed},
            writes=[write],
            index_update=lambda: store.upsert_memory_row(new_doc, write.relpath, keep_runtime=True),
            removals=[old_rel],
        )
    )


@dataclass(frozen=True)
class StateChange:
    """A memory's file rewritten with another decay state: what :class:`Change` needs to apply it, and the state
    it had. Set here once for the decay pane, engram's quarantine and its release."""

    before: str  # the frontmatter's state until now
    doc: MemoryDoc  # the new content
    write: FileWrite
    removal: str  # the old file, when the write puts it elsewhere (an encrypted or moved one)

    @property
    def scope_hash(self) -> str:
        return self.doc.frontmatter.scope_hash


def with_state(store: Store, slug: str, state: DecayState) -> StateChange:
    """Memory ``slug``'s file as it would be with decay ``state`` (nothing written yet)."""
    rel = store.safe_relpath(store.memory(slug).body_path)
    doc = store.read_doc(rel)
    new_doc = MemoryDoc(frontmatter=doc.frontmatter.replace(decay_state=state), body=doc.body)
    return StateChange(doc.frontmatter.decay_state.value, new_doc, store.rewrite(rel, new_doc), rel)


def set_decay(store: Store, slug: str, state: DecayState) -> None:
    """Set a memory's decay state in the index and (unlike memoryd) in its frontmatter, so rebuilds keep it."""
    row = store.memory(slug)
    change = with_state(store, slug, state)
    if row.decay_state == state.value and change.before == state.value:
        return

    def index_update() -> None:
        store.upsert_memory_row(change.doc, change.write.relpath)

    store.apply(
        Change(
            "decay_changed",
            slug,
            change.scope_hash,
            {"from": row.decay_state, "to": state.value},
            writes=[change.write],
            index_update=index_update,
            removals=[change.removal],
        )
    )


def add_supersede(
    store: Store,
    newer: str,
    older: str,
    *,
    reason: str | None = None,
    entity_id: str | None = None,
    confidence: float = 1.0,
) -> None:
    """Record that ``newer`` supersedes ``older``: a supersedes_chain row and the newer file's ``supersedes``."""
    if newer == older:
        raise Conflict("a memory cannot supersede itself")
    for slug in (newer, older):
        if Memory.get_or_none(Memory.slug == slug) is None:
            raise NotFound(f"no memory with slug {slug!r}")
    row = store.memory(newer)
    rel = store.safe_relpath(row.body_path)
    doc = store.read_doc(rel)
    fm = doc.frontmatter
    writes = []
    new_doc = doc
    if older not in fm.supersedes:
        new_doc = MemoryDoc(frontmatter=fm.replace(supersedes=[*fm.supersedes, older]), body=doc.body)
        writes.append(store.rewrite(rel, new_doc))

    def index_update() -> None:
        SupersedesChain.insert(
            newer_memory_id=newer,
            older_memory_id=older,
            entity_id=entity_id,
            confidence=confidence,
            decided_at=store.now().isoformat(),
            decided_by="user",
            reason=reason,
        ).on_conflict_replace().execute()
        if writes:
            store.upsert_memory_row(new_doc, writes[0].relpath, keep_runtime=True)

    store.apply(
        Change(
            "supersede_added",
            newer,
            fm.scope_hash,
            {"older": older, "reason": reason},
            writes=writes,
            index_update=index_update,
        )
    )


def view_memory(store: Store, slug: str) -> MemoryDoc:
    """A memory's content for a person to read. Reading a sensitive scope's plaintext is recorded as a
    ``sensitive_viewed`` event (who looked, and when, is part of what the audit log proves)."""
    row = store.memory(slug)
    rel = store.safe_relpath(row.body_path)
    doc = store.read_doc(rel)
    if rel.endswith(".md.enc"):
        store.apply(Change("sensitive_viewed", slug, row.scope_hash, {"path": rel}))
    return doc
