"""Sensitive scopes: unlocking and locking, and marking or unmarking a scope (encrypting or decrypting every
memory in it) crash-safe and resumable.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from engram.store.coexist import lost_promotions, seal_scope
from engram.store.drift.adopt import adopt_file
from engram.store.drift.scan import half_scrubbed, scope_files
from engram.store.errors import Conflict, DecryptionFailed, KeyUnavailable, WrongKey
from engram.store.models import Memory, SensitiveScope
from engram.store.paths import check_scope_name
from engram.store.scopes import project_dir, resolve_scope
from engram.store.search import fulltext
from engram.store.sensitive import keyproof, reasons
from engram.store.sensitive.crypto import PASSPHRASE_ENV
from engram.store.sensitive.registration import MARKER, register, write_marker
from engram.store.service import Store
from engram.store.write.atomic import remove_durably
from engram.store.write.change import Change, FileWrite


def unlock(store: Store, passphrase: str | None = None, *, confirmed: bool = False) -> list[str]:
    """Open the sensitive scopes: with ``passphrase`` in memoryd's passphrase mode (``confirmed``: typed twice,
    see :mod:`engram.store.sensitive.keyproof`), from the OS keyring in its random mode. Returns the scopes opened.

    Each key is checked against one encrypted file of its scope. A passphrase that opens none of them is a wrong
    passphrase (reported as such, never as damage) and the previous one stays in use."""
    keys = store.keys
    previous = keys.passphrase
    if passphrase is not None:
        keys.set_passphrase(passphrase, confirmed=confirmed)
    elif keys.key_source == "passphrase" and keys.passphrase is None:
        raise KeyUnavailable(f"unlocking needs memoryd's passphrase ({PASSPHRASE_ENV}, or type it)")
    opened, failures = [], []
    for scope in sorted(store.sensitive_scopes()):
        try:
            if check_key(store, scope):
                opened.append(scope)
        except KeyUnavailable as exc:
            failures.append(str(exc))
    if failures and not opened:
        if passphrase is not None:
            keys.forget() if previous is None else keys.set_passphrase(previous)
            raise WrongKey("wrong passphrase: it opens none of the sensitive scopes")
        raise KeyUnavailable(failures[0])
    return opened


def lock(store: Store) -> None:
    """Forget the passphrase and every key: every sensitive scope is locked again until the next unlock."""
    store.keys.forget()


BATCH = 50  # files per change: one audit event each, and the unit a crash can leave half done


@dataclass
class Progress:
    """What a mark or unmark did (the figures a person or a script wants afterwards)."""

    scope_hash: str
    files: int = 0
    done: int = 0
    batches: int = 0
    late: int = 0  # a rekey's: files memoryd saved under the old key while it ran (see rekey._written_meanwhile)


def mark_sensitive(
    store: Store,
    scope: str,
    progress: Callable[[int, int], None] | None = None,
    discover_in: Iterable[Path] | None = None,
) -> Progress:
    """Register the scope as sensitive and encrypt every memory in it, crash-safe and resumable.

    Registration first (the index row; the ``.memoryd-sensitive`` marker where the project exists), so a crash
    leaves a scope every later write treats as sensitive. Then, a batch at a time: each file is encrypted to a
    temp file, read back and checked, renamed to ``<slug>.md.enc``; the index rows follow in one transaction
    with one ``memory_encrypted`` event; only then is the plaintext zeroed and unlinked. Running it again after
    a crash finishes the job: a plaintext file still there is simply encrypted again.

    ``scope`` is a hash or a project directory (:func:`resolve_scope`); marked by hash, the registration and
    the marker still get the project directory wherever engram can find it (``discover_in``), as memoryd's
    mark-by-path records it.
    """
    scope_hash, scope_root = resolve_scope(store, scope)
    keyproof.prove(store, scope_hash)  # no proven key, no start: nothing is registered that could not be encrypted
    lost = [row for row in lost_promotions(store) if row["scope_hash"] == scope_hash]
    if lost:  # marking drops engram's copy of a sensitive scope's promotion text: here the copy is all there is
        raise Conflict(
            f"memoryd's rebuild-index removed {len(lost)} promotions of scope {scope_hash} that only "
            "engram.db still holds: run `engram repair` first, then mark it"
        )
    if scope_hash not in store.sensitive_scopes():
        scope_root = scope_root or project_dir(store, scope_hash, discover_in)
        write_marker(scope_root)

        def registered() -> None:  # engram's plain copy of the scope's promotions goes: the decided ones are sealed
            register(store, scope_hash, scope_root)
            seal_scope(store, scope_hash)
            reasons.seal_scope(store, scope_hash)

        with store.index.overwriting():  # the plain copies and reasons it drops leave no trace in engram.db's pages
            store.apply(
                Change(
                    "scope_marked_sensitive",
                    scope_hash,
                    scope_hash,
                    {"scope_root": scope_root},
                    index_update=registered,
                )
            )
    fulltext.purge(store)  # the search index's copy of the scope's text goes before its files are encrypted
    for folder in _scope_dirs(store, scope_hash):
        folder.chmod(0o700)
    _adopt_unindexed(store, scope_hash)
    return _convert(store, scope_hash, encrypt=True, progress=progress)


def _unregistered(store: Store, scope_hash: str) -> None:
    """The scope out of ``sensitive_scopes``, and the reasons of its promotions opened again."""
    SensitiveScope.delete().where(SensitiveScope.scope_hash == scope_hash).execute()
    reasons.open_scope(store, scope_hash)


def unmark_sensitive(store: Store, scope: str, progress: Callable[[int, int], None] | None = None) -> Progress:
    """Decrypt every memory of the scope back to plaintext (needs the key), then unregister it: the mirror
    image of :func:`mark_sensitive`, crash-safe and resumable the same way."""
    scope_hash, _ = resolve_scope(store, scope)
    if scope_hash not in store.sensitive_scopes():
        raise Conflict(f"scope {scope_hash} is not marked sensitive")
    check_key(store, scope_hash)
    _adopt_unindexed(store, scope_hash)
    result = _convert(store, scope_hash, encrypt=False, progress=progress)
    row = next((r for r in store.index.sensitive_scope_rows() if r["scope_hash"] == scope_hash), {})
    store.apply(
        Change(
            "scope_unmarked_sensitive",
            scope_hash,
            scope_hash,
            {"files": result.files},
            index_update=lambda: _unregistered(store, scope_hash),
        )
    )
    _remove_marker(row.get("scope_root"))
    return result


def _convert(store: Store, scope_hash: str, encrypt: bool, progress: Callable[[int, int], None] | None) -> Progress:
    rows = [
        m
        for m in Memory.select().where(Memory.scope_hash == scope_hash).order_by(Memory.slug)
        if m.body_path.endswith(".md.enc") != encrypt
    ]  # the ones still to do: a rerun resumes
    result = Progress(scope_hash, files=len(rows))
    with store.history.purging_once():
        _convert_batches(store, scope_hash, encrypt, rows, result, progress)
    return result


def _convert_batches(
    store: Store,
    scope_hash: str,
    encrypt: bool,
    rows: list[Memory],
    result: Progress,
    progress: Callable[[int, int], None] | None,
) -> None:
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        items = []
        for row in batch:
            rel = store.safe_relpath(row.body_path)
            doc = store.read_doc(rel)
            target = rel + ".enc" if encrypt else rel[:-4]
            items.append((rel, FileWrite(target, doc, encrypted=encrypt)))
        event = "memory_encrypted" if encrypt else "memory_decrypted"
        retired = [rel for rel, _ in items]
        rows_after = [(w.doc, w.relpath) for _, w in items]
        store.apply(
            Change(
                event,
                scope_hash,
                scope_hash,
                {"count": len(items), "slugs": [w.doc.frontmatter.slug for _, w in items]},
                writes=[w for _, w in items],
                index_update=functools.partial(store.upsert_memory_rows, rows_after, keep_runtime=True),
                scrubs=retired if encrypt else [],
                removals=[] if encrypt else retired,
            ),
            durable=False,  # the batch's files flushed together before its rows commit, not one by one
        )
        result.done += len(items)
        result.batches += 1
        if progress is not None:
            progress(result.done, result.files)
    _sweep_twins(store, scope_hash, encrypt)


def _adopt_unindexed(store: Store, scope_hash: str) -> None:
    """Files of the scope with no index row (memoryd leaves some) are indexed first, as repair would, so that the
    conversion reaches them too: a sensitive scope must not keep a plaintext file nobody listed. A change a
    crash cut short is finished first: its old copies are not memories of their own (see
    :mod:`engram.store.write.retire`)."""
    store.flush_audit_outbox()
    indexed = {row.body_path for row in Memory.select(Memory.body_path).where(Memory.scope_hash == scope_hash)}
    for entry in list(scope_files(store.layout, scope_hash)):  # listed before any is adopted
        if entry.relpath not in indexed and not half_scrubbed(store.layout, entry):  # the sweep finishes those
            try:
                adopt_file(store, entry.relpath)
            except (DecryptionFailed, KeyUnavailable):
                if not entry.encrypted:
                    raise
                # an encrypted file this key does not open (memoryd saved it under an old passphrase) holds no
                # plaintext: it stays as it is, named by `check`, and the scope's plaintext is encrypted all the same


def _sweep_twins(store: Store, scope_hash: str, encrypt: bool) -> None:
    """A crash between a batch's commit and its clean-up leaves the old twin of an indexed file (plaintext after
    encrypting, ciphertext after decrypting, or plaintext a kill left half zeroed): retire them, the plaintext
    zeroed first and only once its encrypted file is shown to decrypt, so no text is retired without its copy."""
    twins = []
    for row in Memory.select(Memory.body_path).where(Memory.scope_hash == scope_hash):
        rel = row.body_path
        twin = rel[:-4] if rel.endswith(".md.enc") else rel + ".enc"
        if rel.endswith(".md.enc") == encrypt and store.layout.resolve(twin).exists():
            if encrypt:
                store.read_doc(rel)  # DecryptionFailed: stop here, the plaintext is all there is
            twins.append(twin)
    if twins:
        store.apply(
            Change(
                "stale_copies_removed",
                scope_hash,
                scope_hash,
                {"files": twins},
                scrubs=twins if encrypt else [],
                removals=[] if encrypt else twins,
            )
        )


def check_key(store: Store, scope_hash: str) -> bool:
    """The scope's key is at hand and opens one of its encrypted files (True), or it is at hand and the scope has
    no encrypted file to try it on yet (False); a wrong key raises :class:`KeyUnavailable` naming it (see
    :func:`keyproof.opens_own_files`)."""
    if keyproof.opens_own_files(store, scope_hash):
        return True
    store.keys.key_for(scope_hash)
    return False


def _scope_dirs(store: Store, scope_hash: str) -> list[Path]:
    """The scope's folders to close to the owner: real directories inside ``scopes/`` only, so a symlinked
    folder never carries a chmod out of the data root."""
    check_scope_name(scope_hash)
    base = store.layout.scopes_dir / scope_hash
    if base.is_symlink() or not base.is_dir():
        return []
    return [base, *(p for p in base.iterdir() if p.is_dir() and not p.is_symlink())]


def _remove_marker(scope_root: str | None) -> None:
    if scope_root:
        remove_durably(Path(scope_root) / MARKER)
