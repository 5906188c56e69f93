"""A witness of the newest checkpoint, kept in the OS keyring: what makes a rolled-back checkpoint visible.

A checkpoint file is signed, so it cannot be forged, but an older one of engram's own can be put back in place of
the newest, and the log rewritten after the point it pins: both then agree, and ``audit verify`` passes. The OS
keyring (where memoryd keeps its own secret) is a second place an attacker able to write files does not reach as
easily: after each checkpoint engram records there its size and digest, only ever upwards (a person's
``--reset`` or ``--restore`` replaces it). A stored checkpoint smaller than its witness was rolled back; the
witness is also checked against the log like a checkpoint.

Without a usable keyring (none installed, a locked one that cannot be asked, the ``fail`` or ``null`` backends)
nothing is kept and nothing is said: see docs/threat-model.md for what is caught with it, with a checkpoint copy,
and with neither.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SERVICE = "engram-audit-witness"


@dataclass(frozen=True)
class Witness:
    log_id: str
    size: int
    head: str
    offset: int
    ts: str


def _keyring() -> Any | None:
    """The keyring module, when a real backend is in use."""
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:
        return None
    if isinstance(keyring.get_keyring(), (fail.Keyring, null.Keyring)):
        return None
    return keyring


def read(name: str) -> Witness | None:
    """The witness kept for the checkpoint file ``name``, or None (no keyring, none kept, or not one of ours)."""
    keyring = _keyring()
    if keyring is None:
        return None
    try:
        text = keyring.get_password(SERVICE, name)
        data = json.loads(text) if text else None
        if not isinstance(data, dict):
            return None
        return Witness(str(data["log_id"]), int(data["size"]), str(data["head"]), int(data["offset"]), str(data["ts"]))
    except Exception:  # noqa: BLE001 - a keyring that fails is one that is not there, for a witness
        return None


def raise_to(name: str, witness: Witness, *, replace: bool = False) -> None:
    """Record ``witness`` unless the one kept is of the same log and further along (``replace``: a person started
    a new checkpoint, which may be smaller)."""
    keyring = _keyring()
    if keyring is None:
        return
    kept = read(name)
    if not replace and kept is not None and kept.log_id == witness.log_id and kept.size >= witness.size:
        return
    try:
        keyring.set_password(SERVICE, name, json.dumps(witness.__dict__, sort_keys=True))
    except Exception:  # noqa: BLE001 - nothing to keep it in: the checkpoint itself is written already
        return


def forget(name: str) -> None:
    """Drop the witness of a root that moved away (a new root at its old place is another log)."""
    keyring = _keyring()
    if keyring is None:
        return
    try:
        keyring.delete_password(SERVICE, name)
    except Exception:  # noqa: BLE001 - none kept, or no keyring: nothing to drop
        return
