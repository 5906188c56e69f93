"""Proving a key before anything is encrypted under it.

A key that opens nothing yet (the first sensitive scope, a scope with no encrypted file) would silently encrypt
under a typo, and neither memoryd nor engram could then read those files with the real passphrase. So before
the write path encrypts anything for a scope, the scope's key is proven, once per session, by the first of:

1. one of the scope's own encrypted files opens with it (a wrong key here is refused);
2. passphrase mode (one master passphrase; each scope's key derived with its hash as salt): an encrypted file of
   another sensitive scope opens with the key derived for that scope;
3. the root's verifier in engram.db (migration 107) opens with the passphrase;
4. the passphrase was given twice, the same both times (typed again, or ``$ENGRAM_CONFIRM_PASSPHRASE``).

Random mode keys come from memoryd's own keyring entries, which nobody types: the scope's files prove them when
there are any, else they are taken as they are. A passphrase proven by files or typed twice is kept as the root's
verifier when there is none yet, so the day no file is encrypted any more a typo is still caught.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

from engram.store.drift.scan import scope_files
from engram.store.errors import DecryptionFailed, PassphraseUnconfirmed, StoreError, WrongKey
from engram.store.models import KeyVerifier
from engram.store.sensitive.crypto import (
    PASSPHRASE_ENV,
    decrypt,
    derive_passphrase_key,
    opens_verifier,
    seal_verifier,
)
from engram.store.write.atomic import read_regular

if TYPE_CHECKING:
    from engram.store.service import Store

PROBES = 3  # files tried per scope: one damaged file must not pass for a wrong key
CONFIRM_HELP = (
    f"type it twice at a terminal (or in the console), or set ENGRAM_CONFIRM_PASSPHRASE to the same "
    f"value as {PASSPHRASE_ENV}"
)


def prove(store: Store, scope_hash: str) -> None:
    """Make sure the scope's key is the one memoryd encrypts it under, before anything is encrypted with it.

    Raises :class:`WrongKey` when something on the root contradicts the key, and :class:`PassphraseUnconfirmed`
    when nothing can vouch for a passphrase that was given only once. Nothing is written on failure."""
    keys = store.keys
    if keys.proven(scope_hash) or opens_own_files(store, scope_hash):
        return
    if keys.key_source != "passphrase":
        keys.key_for(scope_hash)
        keys.mark_proven(scope_hash)
        return
    keys.key_for(scope_hash)  # loads the passphrase from its sources, or says where it would come from
    passphrase = str(keys.passphrase)
    for other in sorted(store.sensitive_scopes() - {scope_hash}):
        probes = _encrypted(store, other)
        if not probes:
            continue
        key = derive_passphrase_key(passphrase, other, keys.kdf_iters)
        if not any(_opens(store, rel, key, other) for rel in probes):
            raise WrongKey(
                f"wrong passphrase: it does not open sensitive scope {other}, encrypted under memoryd's "
                "master passphrase; nothing changed"
            )
        return _proven(store, scope_hash)
    verifier = _verifier(store)
    if verifier is not None and opens_verifier(passphrase, verifier.salt, verifier.kdf_iters, verifier.sealed):
        return _proven(store, scope_hash)
    if not keys.confirmed:
        if verifier is not None:
            raise WrongKey(
                f"wrong passphrase: it is not the one this root was last encrypted under (set "
                f"{verifier.set_at[:10]}); nothing changed. Nothing is encrypted now, so a new one is "
                f"taken only when given twice: {CONFIRM_HELP}"
            )
        raise PassphraseUnconfirmed(
            "nothing on this root is encrypted under memoryd's passphrase yet to check it "
            f"against, and a typo would lock these memories away: {CONFIRM_HELP}"
        )
    _proven(store, scope_hash, replace=verifier is not None)


def opens_own_files(store: Store, scope_hash: str) -> bool:
    """True when the scope's key opens one of its first encrypted files on disk (indexed or not: after memoryd's
    rebuild-index none is), False when the scope has none; a key that opens none of them raises
    :class:`WrongKey`, so a wrong passphrase is reported before anything changes, never as damage later."""
    probes = _encrypted(store, scope_hash)
    if not probes:
        return False

    def opens_one(key: bytes) -> None:
        if not any(_opens(store, rel, key, scope_hash) for rel in probes):
            raise DecryptionFailed(f"no encrypted file of scope {scope_hash} opens")

    store.keys.verify(scope_hash, opens_one)
    _remember(store)
    return True


def remember(store: Store) -> None:
    """Keep the current passphrase as the root's verifier, replacing an older one (a passphrase rekey)."""
    _remember(store, replace=True)


def _proven(store: Store, scope_hash: str, replace: bool = False) -> None:
    store.keys.mark_proven(scope_hash)
    _remember(store, replace)


def _remember(store: Store, replace: bool = False) -> None:
    keys = store.keys
    if keys.key_source != "passphrase" or keys.passphrase is None or store.read_only:
        return
    if not replace and _verifier(store) is not None:
        return
    salt, sealed = seal_verifier(keys.passphrase, keys.kdf_iters)
    with store.index.transaction():
        KeyVerifier.insert(
            id=1, salt=salt, kdf_iters=keys.kdf_iters, sealed=sealed, set_at=store.now().isoformat()
        ).on_conflict_replace().execute()


def _verifier(store: Store) -> KeyVerifier | None:
    return KeyVerifier.get_or_none(KeyVerifier.id == 1) if store.index.has(KeyVerifier) else None


def _encrypted(store: Store, scope_hash: str) -> list[str]:
    return list(islice((e.relpath for e in scope_files(store.layout, scope_hash) if e.encrypted), PROBES))


def _opens(store: Store, relpath: str, key: bytes, scope_hash: str) -> bool:
    try:
        decrypt(read_regular(store.layout.resolve(relpath)), key, scope_hash, relpath)
    except (DecryptionFailed, StoreError, OSError):
        return False
    return True
