"""What a change to a data root is made of: the files it writes (a memory, with its document or made already; or
another file), its index update, what it retires, and its audit event; and the ``memories`` row a memory file
puts in the index.

These are plain values, below the write path that carries them out (:meth:`engram.store.service.Store.apply`):
a module that builds a change (a workflow, the binding manifest, the re-registration of sensitive scopes) needs
them, not the Store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from engram.store.lazy import lazy_module

if TYPE_CHECKING:
    from engram.store import frontmatter
    from engram.store.frontmatter import MemoryDoc
else:
    frontmatter = lazy_module("engram.store.frontmatter")  # PyYAML and pydantic: not for the first frame

ROW_COLUMNS = (  # the order of index_entry's values
    "slug",
    "type",
    "scope_hash",
    "title",
    "source",
    "created_at",
    "updated_at",
    "ttl_days",
    "decay_state",
    "last_recalled_at",
    "recall_count",
    "fingerprint",
    "body_path",
    "scope_sensitive",
)


@dataclass
class FileWrite:
    """A memory file to (re)write: ``doc`` is serialised, and encrypted when ``encrypted``."""

    relpath: str
    doc: MemoryDoc
    encrypted: bool

    @property
    def slug(self) -> str:
        return self.doc.frontmatter.slug

    @property
    def scope_hash(self) -> str:
        return self.doc.frontmatter.scope_hash

    @property
    def entry(self) -> IndexEntry:
        return index_entry(self.doc, self.relpath)

    def text(self) -> bytes:
        return frontmatter.serialize(self.doc)


class MadeFile(NamedTuple):
    """A memory file made elsewhere: its text and its index entry, all that writing it takes of its document (the
    demo's drawing process makes them). The document itself then never crosses to this process: unpickling the
    documents, and making their entries here, were a sixth of the demo's main process. A named tuple, as the
    entry is: pickled in half the time a dataclass takes."""

    relpath: str
    made: bytes
    entry: IndexEntry
    encrypted: bool

    @property
    def slug(self) -> str:
        return self.entry.slug

    @property
    def scope_hash(self) -> str:
        return self.entry.scope_hash

    def text(self) -> bytes:
        return self.made


MemoryWrite = FileWrite | MadeFile
"""A memory file to write, with its document or made already."""


@dataclass
class DataWrite:
    """A file that is not a memory (a grant): ``relpath`` under the root, checked by
    :meth:`RootLayout.resolve_data`, written as ``data``."""

    relpath: str
    data: bytes


@dataclass
class Change:
    """One mutation: the files it writes, its index update, the files it retires, and its audit event."""

    event_type: str
    target_id: str | None
    scope_hash: str | None
    details: dict[str, Any]
    writes: Sequence[MemoryWrite | DataWrite] = field(default_factory=list)
    index_update: Callable[[], object] | None = None  # what it returns is not used
    removals: list[str] = field(default_factory=list)  # files the change retires (moved or renamed away)
    scrubs: list[str] = field(default_factory=list)  # plaintext files it retires: zeroed before they are unlinked
    # Checked first inside the write transaction, before any file moves: raises if the state the change was
    # planned on is gone (memoryd decided the promotion meanwhile). The transaction holds the write lock, so
    # what it saw cannot change until the change commits.
    precondition: Callable[[], None] | None = None
    # engram.db's rows the index update writes that its event does not tell, by (table, primary key): carried in
    # its queued event as the update left them, so that a kill between SQLite's two commits, which keeps the
    # index's part and loses engram.db's, loses none of them (see engram.store.audit.outbox.restore_cut)
    kept_rows: Sequence[tuple[str, Any]] = ()


class IndexEntry(NamedTuple):
    """What one memory file puts in the index: its ``memories`` row (values in ROW_COLUMNS order) and its
    triggers. A few hundred bytes, where the parsed document holds the whole body."""

    values: tuple[Any, ...]
    triggers: tuple[str, ...]

    @property
    def slug(self) -> str:
        return str(self.values[0])

    @property
    def scope_hash(self) -> str:
        return str(self.values[ROW_COLUMNS.index("scope_hash")])

    @property
    def relpath(self) -> str:
        return str(self.values[ROW_COLUMNS.index("body_path")])

    @property
    def changed_at(self) -> str:
        """When the memory last changed, as the index writes times: ``updated_at``, else ``created_at``."""
        updated, created = (self.values[ROW_COLUMNS.index(c)] for c in ("updated_at", "created_at"))
        return str(updated or created)


def index_entry(doc: MemoryDoc, relpath: str) -> IndexEntry:
    """The ``memories`` row memoryd would write for ``doc`` at ``relpath``, and its triggers, the row made as the
    tuple its statement takes (not a dict made a tuple: a step per memory of every demo, import and rebuild)."""
    fm = doc.frontmatter
    values = (
        fm.slug,
        fm.type.value,
        fm.scope_hash,
        fm.title,
        fm.source,
        frontmatter.index_datetime(fm.created_at),
        frontmatter.index_datetime(fm.updated_at),
        fm.ttl_days,
        fm.decay_state.value,
        frontmatter.index_datetime(fm.last_recalled_at),
        fm.recall_count,
        doc.fingerprint,
        relpath,
        int(relpath.endswith(".md.enc")),
    )
    return IndexEntry(values, tuple(dict.fromkeys(fm.triggers)))


def memory_row(doc: MemoryDoc, relpath: str) -> dict[str, Any]:
    """The ``memories`` row memoryd would write for ``doc`` at ``relpath``, by column."""
    return dict(zip(ROW_COLUMNS, index_entry(doc, relpath).values, strict=True))
