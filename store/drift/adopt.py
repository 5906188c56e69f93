"""Taking in a memory file that has no index row (memoryd leaves some; a crash can leave a copy): indexed as it
is, dropped when it is an exact copy of the memory that holds its slug, or given a free slug otherwise.

``engram repair`` adopts the files ``check`` finds unindexed, and marking a scope sensitive adopts those of the
scope first, so that its encryption reaches every file: both build on this module.
"""

from __future__ import annotations

from engram.store.errors import StoreError
from engram.store.frontmatter import MemoryDoc
from engram.store.models import Memory
from engram.store.service import Store
from engram.store.write.change import Change


def adopt_file(store: Store, rel: str) -> str:
    """Index a memory file that has no row; if its slug is taken, drop an exact leftover copy or give it a free
    slug. Says what it did (one ``repair_applied`` event)."""
    doc = store.read_doc(rel)  # an encrypted file without its key raises KeyUnavailable: left for later
    owner = Memory.get_or_none(Memory.slug == doc.frontmatter.slug)
    if owner is None:
        store.apply(
            Change(
                "repair_applied",
                doc.frontmatter.slug,
                doc.frontmatter.scope_hash,
                {"fix": "indexed_file", "path": rel},
                index_update=lambda: store.upsert_memory_row(doc, rel, keep_runtime=True),
            )
        )
        return f"indexed {rel}"
    if _same_memory(store, owner.body_path, doc):
        store.apply(
            Change(
                "repair_applied",
                owner.slug,
                doc.frontmatter.scope_hash,
                {"fix": "removed_duplicate_copy", "path": rel, "kept": owner.body_path},
                scrubs=[rel],
            )
        )
        return f"removed {rel}: an exact copy of {owner.body_path}"
    new_slug = _free_slug(f"{doc.frontmatter.slug}-{doc.frontmatter.scope_hash}")
    new_doc = MemoryDoc(frontmatter=doc.frontmatter.replace(slug=new_slug), body=doc.body)
    write = store.rewrite(rel, new_doc)
    store.apply(
        Change(
            "repair_applied",
            new_slug,
            doc.frontmatter.scope_hash,
            {
                "fix": "reslugged_collision",
                "path": rel,
                "old_slug": doc.frontmatter.slug,
                "slug_owner": owner.body_path,
            },
            writes=[write],
            index_update=lambda: store.upsert_memory_row(new_doc, write.relpath),
            removals=[rel],
        )
    )
    return f"{rel}: slug {doc.frontmatter.slug} belongs to {owner.body_path}; renamed to {new_slug}"


def _same_memory(store: Store, relpath: str, doc: MemoryDoc) -> bool:
    """True when the file at ``relpath`` holds exactly ``doc`` (a leftover copy, not a different memory)."""
    try:
        return store.read_doc(relpath) == doc
    except (StoreError, OSError):
        return False


def _free_slug(base: str) -> str:
    slug, n = base, 2
    while Memory.get_or_none(Memory.slug == slug) is not None:
        slug, n = f"{base}-{n}", n + 1
    return slug
