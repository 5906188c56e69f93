"""Supersedes chains: which memory replaces which, as memoryd records them (``supersedes_chain`` rows, decided
``auto`` by its digest with high confidence, ``digest`` when it only proposes, ``user`` when a person decided)
and as the newer file's frontmatter ``supersedes`` lists them.

A person confirms a proposed link, rejects it, or undoes any link; every change writes the newer memory's
frontmatter and the index together through the write path, so the two never disagree, and is audited. Chains
are walked with a visited set: a cycle someone wrote by hand is shown once, never followed forever.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from store.errors import Conflict, NotFound
from store.frontmatter import MemoryDoc
from store.index import Memory, SupersedesChain
from store.service import Change, Store

PROPOSED = "digest"  # memoryd's decided_by for a link its digest proposes but does not apply with confidence


@dataclass
class Link:
    newer: str
    older: str
    decided_by: str
    confidence: float
    reason: str | None
    decided_at: str
    entity_id: str | None = None


@dataclass
class Node:
    """A memory in the supersedes forest, with the links to what it supersedes."""

    slug: str
    title: str
    links: list[tuple[Link, Node]] = field(default_factory=list)
    cycle: bool = False  # reached again below itself: shown, not followed


def links(store: Store) -> list[Link]:
    """Every ``supersedes_chain`` row, newest decision first."""
    rows = SupersedesChain.select().order_by(SupersedesChain.decided_at.desc())
    return [Link(r.newer_memory_id, r.older_memory_id, r.decided_by, r.confidence, r.reason, r.decided_at,
                 r.entity_id) for r in rows]


def forest(store: Store) -> list[Node]:
    """The chains as trees: roots are memories that supersede something and nothing supersedes them (newest
    first); a chain that only loops gets one of its members as root, marked where the loop closes."""
    all_links = links(store)
    by_newer: dict[str, list[Link]] = {}
    for link in all_links:
        by_newer.setdefault(link.newer, []).append(link)
    titles = {slug: title for slug, title in Memory.select(Memory.slug, Memory.title).where(
        Memory.slug.in_({x for link in all_links for x in (link.newer, link.older)})).tuples()}
    superseded = {link.older for link in all_links}
    shown: set[str] = set()

    def build(slug: str, path: frozenset[str]) -> Node:
        node = Node(slug, titles.get(slug, "(no such memory)"))
        shown.add(slug)
        if slug in path:
            node.cycle = True
            return node
        for link in by_newer.get(slug, []):
            node.links.append((link, build(link.older, path | {slug})))
        return node

    roots = [build(s, frozenset()) for s in sorted(set(by_newer) - superseded,
                                                   key=lambda s: max(x.decided_at for x in by_newer[s]),
                                                   reverse=True)]
    for slug in sorted(set(by_newer) - shown):  # members of pure cycles
        if slug not in shown:
            roots.append(build(slug, frozenset()))
    return roots


def confirm_supersede(store: Store, newer: str, older: str) -> None:
    """A person agrees with a proposed link: decided_by becomes ``user``; the frontmatter lists it."""
    row = _link(newer, older)
    if row.decided_by == "user":
        raise Conflict(f"{newer} → {older} is already a person's decision")
    _write(store, newer, older, keep=True, event="supersede_confirmed",
           details={"older": older, "was": row.decided_by},
           index=lambda: SupersedesChain.update(decided_by="user", decided_at=store.now().isoformat()).where(
               (SupersedesChain.newer_memory_id == newer) & (SupersedesChain.older_memory_id == older)).execute())


def reject_supersede(store: Store, newer: str, older: str, reason: str | None = None) -> None:
    """A person disagrees with a proposed (``digest``) link: it goes from the index and the frontmatter."""
    row = _link(newer, older)
    if row.decided_by != PROPOSED:
        raise Conflict(f"{newer} → {older} was decided ({row.decided_by}); undo it instead")
    _drop(store, row, "supersede_rejected", reason)


def undo_supersede(store: Store, newer: str, older: str, reason: str | None = None) -> None:
    """Take back any link (the older memory is current again); the audit event keeps what it was."""
    _drop(store, _link(newer, older), "supersede_undone", reason)


def _drop(store: Store, row: SupersedesChain, event: str, reason: str | None) -> None:
    newer, older = row.newer_memory_id, row.older_memory_id
    _write(store, newer, older, keep=False, event=event,
           details={"older": older, "was": row.decided_by, "confidence": row.confidence, "reason": reason},
           index=lambda: SupersedesChain.delete().where(
               (SupersedesChain.newer_memory_id == newer) & (SupersedesChain.older_memory_id == older)).execute())


def _write(store: Store, newer: str, older: str, *, keep: bool, event: str, details: dict,
           index) -> None:  # noqa: ANN001 (a callable run inside the index transaction)
    """The newer memory's frontmatter ``supersedes`` with (``keep``) or without ``older``, and the index change,
    as one mutation."""
    row = store.memory(newer)
    rel = store.safe_relpath(row.body_path)
    doc = store.read_doc(rel)
    current = list(doc.frontmatter.supersedes)
    listed = (current if older in current else [*current, older]) if keep else [s for s in current if s != older]
    writes, new_doc = [], doc
    if listed != current:
        new_doc = MemoryDoc(frontmatter=doc.frontmatter.replace(supersedes=listed), body=doc.body)
        writes.append(store.rewrite(rel, new_doc))

    def update() -> None:
        index()
        if writes:
            store.upsert_memory_row(new_doc, writes[0].relpath, keep_runtime=True)

    store.apply(Change(event, newer, row.scope_hash, details, writes=writes, index_update=update))


def _link(newer: str, older: str) -> SupersedesChain:
    row = SupersedesChain.get_or_none((SupersedesChain.newer_memory_id == newer)
                                      & (SupersedesChain.older_memory_id == older))
    if row is None:
        raise NotFound(f"no supersedes link {newer} → {older}")
    return row
