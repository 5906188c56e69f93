"""Supersedes chains: which memory replaces which, as memoryd records them (``supersedes_chain`` rows, decided
``auto`` by its digest with high confidence, ``digest`` when it only proposes, ``user`` when a person decided)
and as the newer file's frontmatter ``supersedes`` lists them.

A person confirms a proposed link, rejects it, or undoes any link; every change writes the newer memory's
frontmatter and the index together through the write path, so the two never disagree, and is audited. Chains
are walked with a visited set: a cycle someone wrote by hand is shown once, never followed forever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engram.store.errors import Conflict, NotFound, StoreError
from engram.store.frontmatter import MemoryDoc, parse
from engram.store.models import Memory, SupersedesChain, tuples
from engram.store.service import Store
from engram.store.write.change import Change

PROPOSED = "digest"  # memoryd's decided_by for a link its digest proposes but does not apply with confidence
FILE_ONLY = "file"  # shown as decided_by for a link only the newer file's frontmatter lists (no index row)


@dataclass
class Link:
    newer: str
    older: str
    decided_by: str
    confidence: float | None  # None for a link only the frontmatter lists
    reason: str | None
    decided_at: str | None
    entity_id: str | None = None
    listed: bool | None = None  # does the newer file's frontmatter list it? None: files not read (yet)


@dataclass
class Node:
    """A memory in the supersedes forest, with the links to what it supersedes."""

    slug: str
    title: str
    links: list[tuple[Link, Node]] = field(default_factory=list)
    cycle: bool = False  # reached again below itself: shown, not followed


def links(store: Store) -> list[Link]:
    """Every ``supersedes_chain`` row, newest decision first."""
    return [_from_row(r) for r in SupersedesChain.select().order_by(SupersedesChain.decided_at.desc())]


def _from_row(row: SupersedesChain) -> Link:
    return Link(
        row.newer_memory_id,
        row.older_memory_id,
        row.decided_by,
        row.confidence,
        row.reason,
        row.decided_at,
        row.entity_id,
    )


@dataclass
class Listed:
    """What the memory files' frontmatter says: ``(newer, older)`` pairs, and how many files could not be read
    (locked scopes, unreadable files), so a person knows the picture may be partial."""

    pairs: set[tuple[str, str]] = field(default_factory=set)
    unread: int = 0


def listed_links(
    store: Store, progress: Callable[[int, int], None] | None = None, slugs: list[str] | None = None
) -> Listed:
    """Read the ``supersedes`` of every memory file (or only ``slugs``') that this process may open.

    memoryd's digest writes links to the index and a person may list one in the file only; the files are the
    truth, so the pane reads them. Only files whose frontmatter mentions ``supersedes`` are parsed, which keeps
    a 100k-memory root to one read per file. Meant for a worker: ``progress`` gets (done, total).
    """
    query = Memory.select(Memory.slug, Memory.body_path, Memory.scope_hash)
    if slugs is not None:
        query = query.where(Memory.slug.in_(slugs))
    rows = list(tuples(query))
    result = Listed()
    for n, (slug, path, scope) in enumerate(rows, 1):
        if progress is not None and n % 1000 == 0:
            progress(n, len(rows))
        if path.endswith(".md.enc") and not store.keys.can_open(scope):
            result.unread += 1
            continue
        try:
            rel = store.safe_relpath(path)
            data = store.read_bytes(rel)
            if b"supersedes" not in data.split(b"\n---", 1)[0]:
                continue
            listed = parse(data, rel).frontmatter.supersedes
        except (StoreError, OSError):
            result.unread += 1
            continue
        result.pairs.update((slug, older) for older in listed)
    return result


def forest(store: Store, listed: Listed | None = None) -> list[Node]:
    """The chains as trees: roots are memories that supersede something and nothing supersedes them (newest
    first); a chain that only loops gets one of its members as root, marked where the loop closes.

    With ``listed`` (the files' frontmatter), links only a file lists join the index's, and each link says
    whether its file lists it."""
    all_links = links(store)
    if listed is not None:
        in_index = {(link.newer, link.older) for link in all_links}
        for link in all_links:
            link.listed = (link.newer, link.older) in listed.pairs
        all_links += [
            Link(newer, older, FILE_ONLY, None, None, None, listed=True)
            for newer, older in sorted(listed.pairs - in_index)
        ]
    by_newer: dict[str, list[Link]] = {}
    for link in all_links:
        by_newer.setdefault(link.newer, []).append(link)
    titles, created = {}, {}
    for slug, title, created_at in tuples(
        Memory.select(Memory.slug, Memory.title, Memory.created_at).where(
            Memory.slug.in_({x for link in all_links for x in (link.newer, link.older)})
        )
    ):
        titles[slug], created[slug] = title, created_at or ""
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

    def newest(slug: str) -> str:
        return max(x.decided_at or created.get(slug, "") for x in by_newer[slug])

    roots = [build(s, frozenset()) for s in sorted(set(by_newer) - superseded, key=newest, reverse=True)]
    for slug in sorted(set(by_newer) - shown):  # members of pure cycles
        if slug not in shown:
            roots.append(build(slug, frozenset()))
    return roots


def confirm_supersede(store: Store, newer: str, older: str) -> None:
    """A person agrees with a proposed link, or with one only the file lists: the index records it as
    decided by ``user``; the frontmatter lists it."""
    link = _link(store, newer, older)
    if link.decided_by == "user":
        raise Conflict(f"{newer} → {older} is already a person's decision")

    def index() -> None:
        SupersedesChain.insert(
            newer_memory_id=newer,
            older_memory_id=older,
            entity_id=link.entity_id,
            confidence=1.0 if link.confidence is None else link.confidence,
            decided_at=store.now().isoformat(),
            decided_by="user",
            reason=link.reason,
        ).on_conflict_replace().execute()

    _write(
        store,
        newer,
        older,
        keep=True,
        event="supersede_confirmed",
        details={"older": older, "was": link.decided_by},
        index=index,
    )


def reject_supersede(store: Store, newer: str, older: str, reason: str | None = None) -> None:
    """A person disagrees with a proposed (``digest``) link: it goes from the index and the frontmatter."""
    link = _link(store, newer, older)
    if link.decided_by != PROPOSED:
        raise Conflict(f"{newer} → {older} was decided ({link.decided_by}); undo it instead")
    _drop(store, link, "supersede_rejected", reason)


def undo_supersede(store: Store, newer: str, older: str, reason: str | None = None) -> None:
    """Take back any link (the older memory is current again); the audit event keeps what it was."""
    _drop(store, _link(store, newer, older), "supersede_undone", reason)


def _drop(store: Store, link: Link, event: str, reason: str | None) -> None:
    newer, older = link.newer, link.older
    _write(
        store,
        newer,
        older,
        keep=False,
        event=event,
        details={"older": older, "was": link.decided_by, "confidence": link.confidence, "reason": reason},
        index=lambda: (
            SupersedesChain.delete()
            .where((SupersedesChain.newer_memory_id == newer) & (SupersedesChain.older_memory_id == older))
            .execute()
        ),
    )


def _write(
    store: Store, newer: str, older: str, *, keep: bool, event: str, details: dict, index: Callable[[], object]
) -> None:
    """The newer memory's frontmatter ``supersedes`` with (``keep``) or without ``older``, and the index change
    (run inside the index transaction), as one mutation."""
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


def _link(store: Store, newer: str, older: str) -> Link:
    """The index's link, else the one the newer file's frontmatter lists."""
    row = SupersedesChain.get_or_none(
        (SupersedesChain.newer_memory_id == newer) & (SupersedesChain.older_memory_id == older)
    )
    if row is not None:
        return _from_row(row)
    if (
        Memory.get_or_none(Memory.slug == newer) is not None
        and (newer, older) in listed_links(store, slugs=[newer]).pairs
    ):
        return Link(newer, older, FILE_ONLY, None, None, None, listed=True)
    raise NotFound(f"no supersedes link {newer} → {older}")
