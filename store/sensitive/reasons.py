"""A person's reasons for rejecting or deferring a promotion, as engram.db's notes keep them.

A reason is text a person typed about a proposal, and for a sensitive scope it often repeats the proposal's
words. engram keeps no plaintext of a sensitive scope outside its files (its copy of such a scope's promotions
is left out, a decided one is sealed), so neither does a note: the reason is sealed under the scope's key (the
cipher of its ``.md.enc`` files) and stored as ``sealed:v1:`` and base64. Sealing takes a key proven this
session, as a decision's seal does: under a mistyped passphrase nobody could read it again. A reason given
while the scope is locked is therefore not kept (the decision and its audited hash are). Marking a scope
sensitive seals the reasons it had; unmarking opens them again.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import TYPE_CHECKING

from engram.store.errors import StoreError
from engram.store.models import Promotion, PromotionNote
from engram.store.sensitive.crypto import decrypt, encrypt

if TYPE_CHECKING:
    from engram.store.service import Store

SEALED = "sealed:v1:"
LOCKED = "(sealed: unlock the scope to read it)"
FIELDS = ("reject_reason", "defer_reason")


def kept(store: Store, scope_hash: str, text: str | None) -> str | None:
    """``text`` as a note keeps it: as it is for a plain scope, sealed for a sensitive one, None when that
    scope's key is not proven this session."""
    if not text or text.startswith(SEALED) or scope_hash not in store.sensitive_scopes():
        return text
    return _sealed(store, scope_hash, text)


def is_sealed(text: str) -> bool:
    return text.startswith(SEALED)


def shown(store: Store, scope_hash: str, text: str | None) -> str | None:
    """A note's reason to show: opened when the scope's key is at hand, else :data:`LOCKED`."""
    if not text or not text.startswith(SEALED):
        return text
    if not store.keys.can_open(scope_hash):
        return LOCKED
    try:
        data = base64.b64decode(text.removeprefix(SEALED), validate=True)
        return decrypt(data, store.keys.key_for(scope_hash), scope_hash).decode("utf-8")
    except (StoreError, ValueError, binascii.Error):  # another key, or a damaged note: said, not raised
        return LOCKED


def seal_scope(store: Store, scope_hash: str) -> None:
    """Inside the transaction that marks ``scope_hash`` sensitive: seal the reasons of its promotions (a reason
    that cannot be sealed, the key not proven, is dropped rather than left in plaintext)."""
    _rewrite(store, scope_hash, lambda text: text if text.startswith(SEALED) else _sealed(store, scope_hash, text))


def open_scope(store: Store, scope_hash: str) -> None:
    """Inside the transaction that unmarks ``scope_hash``: its reasons in plaintext again, as a plain scope's
    are (one that does not open stays as it is)."""

    def opened(text: str) -> str | None:
        plain = shown(store, scope_hash, text)
        return text if plain == LOCKED else plain

    _rewrite(store, scope_hash, opened)


def _sealed(store: Store, scope_hash: str, text: str) -> str | None:
    if not store.keys.proven(scope_hash):
        return None
    data = encrypt(text.encode("utf-8"), store.keys.key_for(scope_hash), scope_hash)
    return SEALED + base64.b64encode(data).decode("ascii")


def _rewrite(store: Store, scope_hash: str, change: Callable[[str], str | None]) -> None:
    notes = PromotionNote.select().join(Promotion, on=(PromotionNote.promotion_id == Promotion.id))
    for note in notes.where(Promotion.scope_hash == scope_hash):
        values = {f: change(getattr(note, f)) for f in FIELDS if getattr(note, f)}
        if any(values[f] != getattr(note, f) for f in values):
            PromotionNote.update(**values).where(PromotionNote.promotion_id == note.promotion_id).execute()
