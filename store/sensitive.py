"""Sensitive scopes as the console needs them today: unlocking with memoryd's passphrase.

(Marking, encrypting, unmarking and grants come with the sensitive-scopes work.)
"""

from __future__ import annotations

from store.crypto import decrypt
from store.errors import KeyUnavailable
from store.index import Memory
from store.service import Store


def unlock(store: Store, passphrase: str) -> list[str]:
    """Use ``passphrase`` for sensitive scopes; returns the scopes it opens.

    It is checked against one encrypted file of each sensitive scope that has any; if it opens none of them it
    is a wrong passphrase (reported as such, never as damage) and the previous one stays in use."""
    keys = store.keys
    previous = keys.passphrase
    keys.set_passphrase(passphrase)
    opened = []
    for scope in sorted(store.sensitive_scopes()):
        row = Memory.get_or_none((Memory.scope_hash == scope) & Memory.body_path.endswith(".md.enc"))
        if row is None:
            continue
        data = store.layout.resolve(store.safe_relpath(row.body_path)).read_bytes()
        try:
            keys.verify(scope, lambda key, s=scope: decrypt(data, key, s))
            opened.append(scope)
        except KeyUnavailable:
            continue
    if not opened and store.sensitive_scopes():
        keys.forget() if previous is None else keys.set_passphrase(previous)
        raise KeyUnavailable("wrong passphrase: it opens none of the sensitive scopes")
    return opened
