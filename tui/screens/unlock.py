"""Asking for the key of sensitive scopes, from any pane or the console itself: memoryd's passphrase (masked),
or the OS keyring in random-key mode. Success is told with :class:`KeysChanged`, which the console fans out to
every pane; a wrong passphrase or a missing keyring is a notification and nothing else happens."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.widget import Widget

from engram.store.errors import StoreError
from engram.store.sensitive.convert import unlock
from engram.store.service import Store
from engram.tui.messages import KeysChanged
from engram.tui.screens.prompt import TextPrompt

Asker = Widget | App[Any]  # who asks: the prompts go on its app's screen stack, KeysChanged bubbles up from it


def ask_unlock(node: Asker, store: Store, scopes: list[str], then: Callable[[], None]) -> None:
    """Unlock the sensitive scopes, then run ``then``. A passphrase no encrypted file can check is asked for a
    second time before it is taken."""

    def attempt(passphrase: str | None) -> None:
        try:
            opened = unlock(store, passphrase)
        except StoreError as exc:
            node.notify(str(exc), title="Still locked", severity="error", timeout=10)
            return
        if not opened and passphrase is not None:
            _confirm(node, store, passphrase, then)
            return
        node.notify(f"unlocked {', '.join(opened)}" if opened else "unlocked", timeout=3)
        _unlocked(node, then)

    if store.keys.key_source != "passphrase":
        attempt(None)
        return
    node.app.push_screen(
        TextPrompt(f"Locked sensitive scope {', '.join(scopes)}: memoryd passphrase", password=True),
        lambda text: attempt(text) if text else None,
    )


def ask_new_passphrase(node: Asker, store: Store, then: Callable[[], None]) -> None:
    """The passphrase the first sensitive scope will be encrypted with, typed twice."""
    prompt = TextPrompt("Choose the memoryd passphrase for sensitive scopes (nothing is encrypted yet)", password=True)
    node.app.push_screen(prompt, lambda first: _confirm(node, store, first, then) if first else None)


def _confirm(node: Asker, store: Store, first: str, then: Callable[[], None]) -> None:
    """Nothing encrypted can check ``first`` (a typo would lock memories away for good): typed again, the same,
    it is taken as confirmed; different, nothing changes."""

    def compare(again: str | None) -> None:
        if again != first:
            node.notify("the two passphrases differ: nothing changed", severity="error")
            return
        try:
            unlock(store, first, confirmed=True)
        except StoreError as exc:
            node.notify(str(exc), title="Still locked", severity="error", timeout=10)
            return
        node.notify("passphrase confirmed", timeout=3)
        _unlocked(node, then)

    node.app.push_screen(
        TextPrompt("Nothing is encrypted yet to check it against: the same passphrase again", password=True),
        compare,
    )


def _unlocked(node: Asker, then: Callable[[], None]) -> None:
    node.post_message(KeysChanged())
    then()
