"""The binding manifest: what memoryd's file format cannot tell.

A ``.md.enc`` authenticates only against its scope (the AAD), so two files of one scope can be swapped, or an
older version restored, and still decrypt. Engram keeps, per encrypted memory, a version that grows with every
write and two HMACs keyed from the scope key (HKDF, so the scope key itself is never used twice): one over slug,
version and the file's bytes, one over the plaintext. Reading compares:

- the file MAC matches: ``bound``;
- no entry (memoryd wrote the file): ``unbound``; engram binds it once it has decrypted it (``engram repair``,
  or unlocking in the console);
- the plaintext names another slug: ``swapped``;
- the frontmatter's ``updated_at`` is older than when it was bound, or equal with other text: ``rolled_back``;
- same text encrypted again, or a newer version: ``changed`` (memoryd edited it): bound again by repair.

Nothing of the plaintext is stored: only keyed MACs, in engram's own table, and the latest change's rows again in
a twin inside index.db (:class:`~engram.store.models.BindingGuard`). SQLite commits index.db (WAL) and the
attached engram.db one after the other, so a kill between the two commits would keep a rewritten file's index
row and lose its new binding: the file would read as rolled back, an alarm on engram's own work. The twin is
committed with the index row; reading takes the newer of the two rows, opening the root copies a newer twin
row into engram.db (:func:`restore_cut`), and the next write drops the rows engram.db has caught up with
(:func:`settle`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from peewee import DatabaseError

from engram.store.errors import StoreError
from engram.store.index import as_peewee_errors
from engram.store.lazy import lazy_module
from engram.store.models import Binding, BindingGuard, table_of
from engram.store.write.change import Change, IndexEntry, index_entry

if TYPE_CHECKING:
    from engram.store import frontmatter
    from engram.store.frontmatter import MemoryDoc
    from engram.store.service import Store
else:
    frontmatter = lazy_module("engram.store.frontmatter")

INFO = b"engram-binding/1"
_TABLE, _GUARD = table_of(Binding), table_of(BindingGuard)
_COLUMNS = "slug, scope_hash, version, updated_at, file_mac, content_mac, bound_at"
BOUND, UNBOUND, SWAPPED, ROLLED_BACK, CHANGED = "bound", "unbound", "swapped", "rolled_back", "changed"


def binding_key(scope_key: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes  # the cipher's package: imported once a key is at hand
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=INFO).derive(scope_key)


def file_mac(key: bytes, slug: str, version: int, data: bytes) -> str:
    message = slug.encode("utf-8") + b"\0" + str(version).encode("ascii") + b"\0" + hashlib.sha256(data).digest()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def content_mac(key: bytes, plaintext: bytes) -> str:
    return hmac.new(key, b"content\0" + plaintext, hashlib.sha256).hexdigest()


def record(store: Store, written: Sequence[tuple[IndexEntry, bytes, bytes]]) -> None:
    """Bind the encrypted files just written, each ``(entry, data, plaintext)`` with the memory's index entry
    (inside the write's index transaction): one query for their versions so far, one statement for the rows, one
    key derived per scope. A bulk write binds thousands at a time, where a statement per file cost more than the
    files' HMACs."""
    if not written or not store.index.has(Binding):
        return  # a root opened read-only, or by an index without engram's tables: nothing is written anyway
    slugs = json.dumps([entry.slug for entry, _, _ in written])
    tables = _tables(store)
    within = "WHERE slug IN (SELECT value FROM json_each(?))"
    union = " UNION ALL ".join(f"SELECT slug, version FROM {table} {within}" for table in tables)
    query = f"SELECT slug, max(version) FROM ({union}) GROUP BY slug"
    versions: dict[str, int] = dict(store.index.db.execute_sql(query, (slugs,) * len(tables)).fetchall())
    keys: dict[str, bytes] = {}
    rows = []
    for entry, data, plaintext in written:
        slug, scope = entry.slug, entry.scope_hash
        if scope not in keys:
            keys[scope] = binding_key(store.keys.key_for(scope))
        key = keys[scope]
        version = versions[slug] = versions.get(slug, 0) + 1  # a slug written twice in one batch
        macs = file_mac(key, slug, version, data), content_mac(key, plaintext)
        rows.append((slug, scope, version, entry.changed_at, *macs, store.now().isoformat()))
    with as_peewee_errors():
        cursor = store.index.db.cursor()
        for table in tables:
            cursor.executemany(f"INSERT OR REPLACE INTO {table} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _tables(store: Store) -> list[str]:
    """Where a binding is written: engram.db's table, and its twin where index.db has it (a root opened
    writable)."""
    return [_TABLE, _GUARD] if store.index.has(BindingGuard) else [_TABLE]


def forget(store: Store, slugs: Collection[str]) -> None:
    """These memories are plaintext now (or gone): their bindings no longer mean anything. One statement a
    table."""
    if slugs and store.index.has(Binding):
        for table in _tables(store):
            query = f"DELETE FROM {table} WHERE slug IN (SELECT value FROM json_each(?))"
            store.index.db.execute_sql(query, (json.dumps(list(slugs)),))


_LOST = f"FROM {_GUARD} g WHERE g.version > coalesce((SELECT b.version FROM {_TABLE} b WHERE b.slug = g.slug), 0)"


def settle(store: Store) -> None:
    """At the start of a write's transaction: drop the twin rows engram.db has caught up with, then copy into
    engram.db those it lost (a kill between the two commits). In that order: the drop reads engram.db as
    committed, so if this transaction's engram.db part is lost in turn, the rows it copied are still in the
    twin for the next write."""
    if not (store.index.has(Binding) and store.index.has(BindingGuard)):
        return
    db = store.index.db
    db.execute_sql(
        f"DELETE FROM {_GUARD} WHERE version <= (SELECT b.version FROM {_TABLE} b WHERE b.slug = {_GUARD}.slug)"
    )
    db.execute_sql(f"INSERT OR REPLACE INTO {_TABLE} ({_COLUMNS}) SELECT {_COLUMNS} {_LOST}")


def restore_cut(store: Store) -> int:
    """On opening a root it can write: the twin rows engram.db lost to a cut commit, copied back at once, in a
    transaction that writes engram.db only (index.db stays as it is: the twin's rows leave it at the next
    write). Waiting for that write would leave them in index.db alone, where memoryd's rebuild-index would take
    them, and the files they bind would read as rolled back. Returns how many; a locked database is left for
    the next try."""
    if store.read_only or not (store.index.has(Binding) and store.index.has(BindingGuard)):
        return 0
    db = store.index.db
    try:
        (lost,) = db.execute_sql(f"SELECT count(*) {_LOST}").fetchone()
        if lost:
            with store.index.transaction(prepare=False):
                db.execute_sql(f"INSERT OR REPLACE INTO {_TABLE} ({_COLUMNS}) SELECT {_COLUMNS} {_LOST}")
    except (StoreError, DatabaseError):
        return 0
    return int(lost)


@dataclass(frozen=True)
class BindingState:
    state: str
    detail: str = ""


def bindings(store: Store) -> dict[str, Binding]:
    """Every binding by slug (the newer of engram.db's and the twin's), a query a table: for a caller that
    verifies many files (``check``), where a query per file cost seconds of query building at 20,000 memories."""
    if not store.index.has(Binding):
        return {}
    found = {b.slug: b for b in Binding.select()}
    if store.index.has(BindingGuard):
        for row in BindingGuard.select():
            if row.slug not in found or row.version > found[row.slug].version:
                found[row.slug] = row
    return found


def binding_of(store: Store, slug: str) -> Binding | None:
    """The memory's binding: the newer of engram.db's and the twin's."""
    rows = [Binding.get_or_none(Binding.slug == slug)]
    if store.index.has(BindingGuard):
        rows.append(BindingGuard.get_or_none(BindingGuard.slug == slug))
    return max((row for row in rows if row is not None), key=lambda row: row.version, default=None)


def verify(
    store: Store,
    relpath: str,
    data: bytes,
    doc: MemoryDoc,
    plaintext: bytes,
    known: Mapping[str, Binding] | None = None,
) -> BindingState:
    """The state of the encrypted file at ``relpath`` (its bytes ``data``, decrypted to ``doc``); ``known``:
    every binding, from :func:`bindings`, instead of a query for this one."""
    if not store.index.has(Binding):
        return BindingState(UNBOUND, "this index has no binding table")
    slug = PurePosixPath(relpath).name.removesuffix(".md.enc")  # memoryd names each file by its slug
    entry = known.get(slug) if known is not None else binding_of(store, slug)
    if entry is None:
        return BindingState(UNBOUND, "written by memoryd, or before engram bound files")
    key = binding_key(store.keys.key_for(entry.scope_hash))
    if hmac.compare_digest(entry.file_mac, file_mac(key, slug, entry.version, data)):
        return BindingState(BOUND)
    fm = doc.frontmatter
    if fm.slug != slug:
        return BindingState(SWAPPED, f"{relpath} holds the memory {fm.slug}, not {slug}")
    if hmac.compare_digest(entry.content_mac, content_mac(key, plaintext)):
        return BindingState(CHANGED, "the same text, encrypted again outside engram")
    updated = frontmatter.index_datetime(fm.updated_at or fm.created_at) or ""
    if updated <= (entry.updated_at or ""):
        return BindingState(
            ROLLED_BACK,
            f"an older version: updated_at {updated}, bound at version "
            f"{entry.version} with updated_at {entry.updated_at}",
        )
    return BindingState(CHANGED, f"a newer version written outside engram (updated_at {updated})")


def bind_files(store: Store, scope_hash: str, items: list[tuple[str, MemoryDoc, bytes, bytes]]) -> int:
    """Bind files of a scope engram has just decrypted and accepted (unbound, or changed by memoryd): one
    audited change. ``items`` are (relpath, doc, file bytes, plaintext)."""
    if not items:
        return 0

    store.apply(
        Change(
            "files_bound",
            scope_hash,
            scope_hash,
            {"count": len(items), "slugs": [doc.frontmatter.slug for _, doc, _, _ in items]},
            index_update=lambda: record(
                store, [(index_entry(doc, rel), data, plain) for rel, doc, data, plain in items]
            ),
        )
    )
    return len(items)


def bind_unbound(store: Store, files: dict[str, list[str]]) -> int:
    """Bind the given encrypted files (relpaths by scope) that decrypt now and are still unbound or changed by
    memoryd; a file that fails to decrypt, or reads as swapped or rolled back, is left for a person."""

    bound = 0
    for scope, relpaths in sorted(files.items()):
        if not store.keys.can_open(scope):
            continue
        items = []
        for rel in relpaths:
            data, plaintext = store.read_file(rel)
            doc = frontmatter.parse(plaintext, rel)
            if verify(store, rel, data, doc, plaintext).state in (UNBOUND, CHANGED):
                items.append((rel, doc, data, plaintext))
        bound += bind_files(store, scope, items)
    return bound
