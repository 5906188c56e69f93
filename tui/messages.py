"""What a pane tells the console, as Textual messages that bubble up to the app: a pane never calls the app.

The app answers each by bringing every pane up to date (it calls down into them: ``store_changed``,
``keys_changed``), so a pane that changed the store need not know which other panes show what it changed.
Workers may post them from their threads (``post_message`` is thread-safe); one posted by a widget that has
left the screen is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.message import Message

from engram.store.audit.verify import Verdict


class StoreChanged(Message):
    """A pane (or a screen) wrote to the store: ``kinds`` names what it changed, in the change feed's words
    (``promotions``, ``memories``, ``audit``), ``slugs`` the memories when it knows them. The console asks the
    change feed at once, so every pane, the status line and the audit state follow without waiting for the
    next tick, and re-checks the audit chain the write appended to."""

    def __init__(self, *kinds: str, slugs: Iterable[str] = ()) -> None:
        super().__init__()
        self.kinds = frozenset(kinds)
        self.slugs = frozenset(slugs)


class KeysChanged(Message):
    """Sensitive scopes were unlocked, locked, encrypted or decrypted: lock marks, search and scope lists
    follow."""


class OpenMemory(Message):
    """Show this memory with everything that explains it (the search pane's reader)."""

    def __init__(self, slug: str) -> None:
        super().__init__()
        self.slug = slug


class AuditStateChanged(Message):
    """The audit pane verified the log: the status line shows ``verdict`` without verifying it again."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__()
        self.verdict = verdict
