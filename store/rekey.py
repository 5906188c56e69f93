"""Rekeying a sensitive scope: every ``.md.enc`` re-encrypted from the current key to a new one (a new
passphrase, or a move between memoryd's passphrase and random-key sources), crash-safe and resumable.

Every file is read before anything changes, so a wrong current key, or a file neither key opens, stops the
rekey while the scope is untouched. A row in ``engram_rekey`` says a rekey is under way; then, a batch at a
time, each file is re-encrypted under the new key to a temp file, read back and checked, and renamed over the
old one (the write path), with one ``memory_rekeyed`` event per batch. A crash leaves each file whole under one
key or the other; running the rekey again with both keys finds which files are done and finishes the rest.
"""

from __future__ import annotations

from collections.abc import Callable

from store.crypto import KeyRing, decrypt, new_random_scope_key
from store.errors import Conflict, DecryptionFailed, KeyUnavailable, WrongKey
from store.frontmatter import MemoryDoc, parse
from store.index import Memory, Rekey
from store.sensitive import BATCH, Progress, resolve_scope
from store.service import Change, FileWrite, Store


def new_key_for(scope_hash: str, source: str, passphrase: str | None, kdf_iters: int) -> bytes:
    """The scope's key under the new source: derived from ``passphrase``, or a random key kept in the keyring."""
    if source == "random":
        return new_random_scope_key(scope_hash)
    if not passphrase:
        raise KeyUnavailable("a rekey to a new passphrase needs the new passphrase")
    return KeyRing(kdf_iters=kdf_iters, passphrase=passphrase).key_for(scope_hash)


def rekey(store: Store, scope: str, new_key: bytes, source: str = "passphrase",
          progress: Callable[[int, int], None] | None = None) -> Progress:
    """Re-encrypt every memory of the sensitive ``scope`` under ``new_key``; see the module's notes."""
    scope_hash, _ = resolve_scope(store, scope)
    if scope_hash not in store.sensitive_scopes():
        raise Conflict(f"scope {scope_hash} is not sensitive: it has no key to change")
    todo = _still_under_old_key(store, scope_hash, new_key)
    result = Progress(scope_hash, files=len(todo))
    if Rekey.get_or_none(Rekey.scope_hash == scope_hash) is None:
        store.apply(Change("rekey_started", scope_hash, scope_hash, {"files": len(todo), "new_source": source},
                           index_update=lambda: Rekey.insert(scope_hash=scope_hash, started_at=store.now().isoformat(),
                                                             new_source=source).execute()))
    old_key = store.keys.key_for(scope_hash) if todo else None
    for start in range(0, len(todo), BATCH):
        batch = todo[start:start + BATCH]
        store.keys.adopt(scope_hash, new_key)  # the write path encrypts and binds under the new key
        try:
            store.apply(Change("memory_rekeyed", scope_hash, scope_hash,
                               {"count": len(batch), "slugs": [doc.frontmatter.slug for _, doc in batch]},
                               writes=[FileWrite(rel, doc, encrypted=True) for rel, doc in batch]))
        except BaseException:
            if old_key is not None:
                store.keys.adopt(scope_hash, old_key)  # the files not yet done still need it
            raise
        result.done += len(batch)
        result.batches += 1
        if progress is not None:
            progress(result.done, result.files)
    store.keys.adopt(scope_hash, new_key)
    store.apply(Change("scope_rekeyed", scope_hash, scope_hash, {"files": result.done, "new_source": source},
                       index_update=lambda: _finish(store, scope_hash, source)))
    return result


def _still_under_old_key(store: Store, scope_hash: str, new_key: bytes) -> list[tuple[str, MemoryDoc]]:
    """The files the new key does not open yet, decrypted with the current key; raises before any change when
    the current key opens none of them (wrong key) or a file opens under neither key (damage)."""
    todo: list[tuple[str, MemoryDoc]] = []
    rows = Memory.select(Memory.body_path).where(
        (Memory.scope_hash == scope_hash) & Memory.body_path.endswith(".md.enc")).order_by(Memory.slug)
    for (path,) in rows.tuples():
        rel = store.safe_relpath(path)
        data = store.layout.resolve(rel).read_bytes()
        try:
            decrypt(data, new_key, scope_hash, rel)
            continue  # done by an earlier, interrupted run
        except DecryptionFailed:
            pass
        try:
            todo.append((rel, parse(decrypt(data, store.keys.key_for(scope_hash), scope_hash, rel), rel)))
        except DecryptionFailed:
            if not todo:
                raise WrongKey(f"the current key does not open {rel} (wrong passphrase, or damaged)") from None
            raise
    return todo


def _finish(store: Store, scope_hash: str, source: str) -> None:
    Rekey.delete().where(Rekey.scope_hash == scope_hash).execute()
    if "key_source" in store.index.columns("sensitive_scopes"):
        store.index.db.execute_sql("UPDATE sensitive_scopes SET key_source = ? WHERE scope_hash = ?",
                                   (source, scope_hash))
