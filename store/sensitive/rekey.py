"""Rekeying sensitive scopes: every ``.md.enc`` re-encrypted from the current key to a new one, crash-safe and
resumable, in the key source memoryd's config names.

memoryd's passphrase mode derives every scope's key from one master passphrase, so a new passphrase re-encrypts
every sensitive scope together (:func:`rekey_passphrase`): one scope under another passphrase would be lost to
memoryd. Its random mode keeps one key per scope in the OS keyring, so there a scope gets a new key of its own
(:func:`rekey_random`). A move between the two sources is memoryd's config change, not a rekey.

Every file is read before anything changes, so a wrong current key, or a file neither key opens, stops the
rekey while everything is untouched. A row in ``engram_rekey`` per scope says a rekey is under way; then, a batch
at a time, each file is re-encrypted under the new key to a temp file, read back and checked, and renamed over
the old one (the write path), with one ``memory_rekeyed`` event per batch. A crash leaves each file whole under
one key or the other; running the rekey again with both keys finds which files are done and finishes the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engram.store.drift.scan import scope_files
from engram.store.errors import BadMemoryFile, Conflict, DecryptionFailed, KeyUnavailable, StoreError, WrongKey
from engram.store.frontmatter import MemoryDoc, parse
from engram.store.models import Rekey
from engram.store.scopes import resolve_scope
from engram.store.sensitive import binding, keyproof
from engram.store.sensitive.convert import BATCH, Progress
from engram.store.sensitive.crypto import (
    PASSPHRASE_SERVICE,
    PASSPHRASE_USER,
    decrypt,
    derive_passphrase_key,
    install_random_scope_key,
    keyring_password,
    next_random_scope_key,
)
from engram.store.service import Store
from engram.store.write.atomic import read_regular
from engram.store.write.change import Change, FileWrite, index_entry

# What a rekey's end says, in the CLI and the console: memoryd reads its passphrase once, when it starts.
RESTART_MEMORYD = (
    "Restart memoryd with the new passphrase: it keeps the one it started with, and what it saves under the old one "
    "is named by `engram check` (old_key_file)"
)
LATE_ROUNDS = 3  # looks for files memoryd saved under the old key meanwhile; each round re-encrypts what it found


@dataclass
class RekeyResult:
    """What a rekey did, per scope."""

    scopes: list[Progress] = field(default_factory=list)
    keyring_updated: bool = False  # the OS keyring held memoryd's old passphrase, and now holds the new one
    already: bool = False  # every file was under the new key and no rekey was under way: nothing was done

    @property
    def done(self) -> int:
        return sum(p.done for p in self.scopes)

    @property
    def late(self) -> int:
        """Files memoryd saved under the old key while the rekey ran, re-encrypted by its last step."""
        return sum(p.late for p in self.scopes)


def plan_passphrase_rekey(store: Store) -> dict[str, int]:
    """Every sensitive scope and its encrypted files: what a new master passphrase re-encrypts, to announce
    before it starts."""
    _check_source(store, "passphrase")
    return {scope: len(_encrypted_files(store, scope)) for scope in sorted(store.sensitive_scopes())}


def rekey_passphrase(
    store: Store, new_passphrase: str, progress: Callable[[str, int, int], None] | None = None
) -> RekeyResult:
    """Re-encrypt every sensitive scope under keys derived from ``new_passphrase``, as memoryd derives them.

    Every file of every scope is proven to open under the current or the new passphrase before anything changes;
    then one change records a rekey under way for all of them (``check`` reports any not finished), and the
    scopes are done one after the other. Run again after a crash with both passphrases, it skips what is done.
    When memoryd's passphrase sits in the OS keyring, the keyring gets the new one last."""
    plan = plan_passphrase_rekey(store)
    if not new_passphrase:
        raise KeyUnavailable("a rekey to a new passphrase needs the new passphrase")
    new_keys = {scope: derive_passphrase_key(new_passphrase, scope, store.keys.kdf_iters) for scope in plan}
    under_old = sum(_still_under_old_key(store, scope, key, keep=False).under_old for scope, key in new_keys.items())
    if not under_old and not Rekey.select().where(Rekey.scope_hash.in_(list(plan))).exists():
        return RekeyResult(already=True)  # a rerun of a finished rekey: no change, so no event either
    _record_start(store, list(plan), sum(plan.values()), "passphrase")
    old = store.keys.passphrase
    result = RekeyResult()
    for scope, key in new_keys.items():
        step = None if progress is None else (lambda n, total, scope=scope: progress(scope, n, total))
        result.scopes.append(_rekey_scope(store, scope, key, "passphrase", step))
    store.keys.set_passphrase(new_passphrase, confirmed=True)
    keyproof.remember(store)
    result.keyring_updated = _update_stored_passphrase(old, new_passphrase)
    return result


def rekey_random(store: Store, scope: str, progress: Callable[[int, int], None] | None = None) -> RekeyResult:
    """memoryd's random mode: the scope moves to a new random key, saved in the OS keyring beside memoryd's entry
    before any file is under it, and put in memoryd's entry only once every file is."""
    _check_source(store, "random")
    scope_hash = _sensitive(store, scope)
    new_key = next_random_scope_key(scope_hash)
    split = _still_under_old_key(store, scope_hash, new_key)
    _record_start(store, [scope_hash], len(split.todo), "random")
    done = _rekey_scope(
        store,
        scope_hash,
        new_key,
        "random",
        progress,
        split,
        before_finish=lambda: install_random_scope_key(scope_hash, new_key),
    )
    return RekeyResult([done])


def _check_source(store: Store, source: str) -> None:
    """Refuse a rekey memoryd could not follow: its config names one key source for every scope."""
    if store.keys.problem is not None:
        raise KeyUnavailable(store.keys.problem)
    if source != store.keys.key_source:
        raise Conflict(
            f"memoryd's config uses key_source = {store.keys.key_source!r}: a {source} rekey would "
            "leave files memoryd cannot read (change memoryd's config first)"
        )


def _sensitive(store: Store, scope: str) -> str:
    scope_hash, _ = resolve_scope(store, scope)
    if scope_hash not in store.sensitive_scopes():
        raise Conflict(f"scope {scope_hash} is not sensitive: it has no key to change")
    return scope_hash


def _record_start(store: Store, scopes: list[str], files: int, source: str) -> None:
    """One ``rekey_started`` change for the scopes not already recorded (a rerun records nothing new)."""
    missing = [scope for scope in scopes if Rekey.get_or_none(Rekey.scope_hash == scope) is None]
    if not missing:
        return
    target = missing[0] if len(missing) == 1 else None

    def insert() -> None:
        Rekey.insert_many(
            [{"scope_hash": s, "started_at": store.now().isoformat(), "new_source": source} for s in missing]
        ).execute()

    store.apply(
        Change(
            "rekey_started",
            target,
            target,
            {"scopes": missing, "files": files, "new_source": source},
            index_update=insert,
        )
    )


def _rekey_scope(
    store: Store,
    scope_hash: str,
    new_key: bytes,
    source: str,
    progress: Callable[[int, int], None] | None,
    split: _Split | None = None,
    before_finish: Callable[[], None] | None = None,
) -> Progress:
    """Re-encrypt the scope's files still under the old key, a batch per change, then those memoryd saved under
    the old key meanwhile (it keeps the key it started with), looking again until none is found; then
    ``before_finish`` (the keyring step of random mode) and the ``scope_rekeyed`` change that closes the scope's
    rekey. That change
    also binds again the files an interrupted run re-encrypted but could not record (killed between a file's
    rename and its batch's commit), so no file of engram's own rekey is left looking rolled back."""
    split = _still_under_old_key(store, scope_hash, new_key) if split is None else split
    todo = split.todo
    result = Progress(scope_hash, files=len(todo))
    old_key = store.keys.key_for(scope_hash)
    for _ in range(LATE_ROUNDS):
        _rekey_batches(store, scope_hash, todo, old_key, new_key, result, progress)
        todo = _written_meanwhile(store, scope_hash, old_key, new_key)
        if not todo:
            break
        result.files += len(todo)
        result.late += len(todo)
    store.keys.adopt(scope_hash, new_key)
    if before_finish is not None:
        before_finish()
    bound = binding.bindings(store)
    stale = [
        (rel, doc, data, plain)
        for rel, doc, data, plain in split.done
        if binding.verify(store, rel, data, doc, plain, bound).state != binding.BOUND
    ]

    def finish() -> None:
        binding.record(store, [(index_entry(doc, rel), data, plain) for rel, doc, data, plain in stale])
        _finish(store, scope_hash, source)

    store.apply(
        Change(
            "scope_rekeyed",
            scope_hash,
            scope_hash,
            {"files": result.done, "new_source": source, "bound_again": len(stale)},
            index_update=finish,
        )
    )
    return result


def _rekey_batches(
    store: Store,
    scope_hash: str,
    todo: list[tuple[str, MemoryDoc]],
    old_key: bytes,
    new_key: bytes,
    result: Progress,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Re-encrypt ``todo`` under ``new_key``, a batch per change (one ``memory_rekeyed`` event each)."""
    for start in range(0, len(todo), BATCH):
        batch = todo[start : start + BATCH]
        store.keys.adopt(scope_hash, new_key)  # the write path encrypts and binds under the new key
        try:
            store.apply(
                Change(
                    "memory_rekeyed",
                    scope_hash,
                    scope_hash,
                    {"count": len(batch), "slugs": [doc.frontmatter.slug for _, doc in batch]},
                    writes=[FileWrite(rel, doc, encrypted=True) for rel, doc in batch],
                )
            )
        except BaseException:
            store.keys.adopt(scope_hash, old_key)  # the files not yet done still need it
            raise
        result.done += len(batch)
        result.batches += 1
        if progress is not None:
            progress(result.done, result.files)


def _written_meanwhile(store: Store, scope_hash: str, old_key: bytes, new_key: bytes) -> list[tuple[str, MemoryDoc]]:
    """Files of the scope under the old key now: memoryd keeps the key it started with, so what it saved while the
    rekey ran is under the old one. A file neither key opens is left as it is (``check`` names it)."""
    late = []
    for rel in _encrypted_files(store, scope_hash):
        try:
            data = read_regular(store.layout.resolve(rel))
        except (OSError, StoreError):
            continue  # moved since the walk (memoryd's sweep)
        if _opens(data, new_key, scope_hash, rel):
            continue
        try:
            late.append((rel, parse(decrypt(data, old_key, scope_hash, rel), rel)))
        except (DecryptionFailed, BadMemoryFile):
            continue
    return late


def _opens(data: bytes, key: bytes, scope_hash: str, rel: str) -> bool:
    try:
        decrypt(data, key, scope_hash, rel)
    except DecryptionFailed:
        return False
    return True


def _update_stored_passphrase(old: str | None, new: str) -> bool:
    """memoryd reads its passphrase from the environment, else the OS keyring: a keyring entry holding the old
    passphrase is replaced (where memoryd's own ``set-passphrase`` keeps it), anything else is left alone."""
    import keyring
    from keyring.errors import KeyringError

    try:
        if old is None or keyring_password(PASSPHRASE_SERVICE, PASSPHRASE_USER) != old:
            return False
        keyring.set_password(PASSPHRASE_SERVICE, PASSPHRASE_USER, new)
    except (KeyUnavailable, KeyringError, RuntimeError):
        return False
    return True


@dataclass
class _Split:
    """A scope's encrypted files by the key they are under: ``todo`` still under the current one (decrypted, to
    re-encrypt), ``done`` already under the new one (an interrupted run got there: bytes and plaintext, so their
    binding can follow them)."""

    todo: list[tuple[str, MemoryDoc]] = field(default_factory=list)
    done: list[tuple[str, MemoryDoc, bytes, bytes]] = field(default_factory=list)
    under_old: int = 0  # how many files are still under the current key (counted when not kept too)


def _still_under_old_key(store: Store, scope_hash: str, new_key: bytes, keep: bool = True) -> _Split:
    """Sort the scope's files by key, decrypting each (only checking, not keeping, when ``keep`` is false);
    raises before any change when the current key opens none of them (wrong key) or a file opens under neither
    key (damage)."""
    split = _Split()
    opened = 0
    for rel in _encrypted_files(store, scope_hash):
        data = read_regular(store.layout.resolve(rel))
        try:
            plain = decrypt(data, new_key, scope_hash, rel)
            if keep:
                split.done.append((rel, parse(plain, rel), data, plain))
            continue
        except DecryptionFailed:
            pass
        try:
            plain = decrypt(data, store.keys.key_for(scope_hash), scope_hash, rel)
            opened += 1
            split.under_old += 1
            if keep:
                split.todo.append((rel, parse(plain, rel)))
        except DecryptionFailed:
            if not opened:
                raise WrongKey(f"the current key does not open {rel} (wrong passphrase, or damaged)") from None
            raise
    return split


def _encrypted_files(store: Store, scope_hash: str) -> list[str]:
    """Every ``.md.enc`` of the scope on disk, indexed or not: after memoryd's rebuild-index none of them has a
    row, and a file left under the old key would be lost to memoryd."""
    return [entry.relpath for entry in scope_files(store.layout, scope_hash) if entry.encrypted]


def _finish(store: Store, scope_hash: str, source: str) -> None:
    Rekey.delete().where(Rekey.scope_hash == scope_hash).execute()
    if "key_source" in store.index.columns("sensitive_scopes"):
        store.index.db.execute_sql(
            "UPDATE sensitive_scopes SET key_source = ? WHERE scope_hash = ?", (source, scope_hash)
        )
