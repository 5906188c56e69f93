"""What a pane tells the console, as Textual messages that bubble up to the app: a pane never calls the app.

The app answers each by bringing every pane up to date (it calls down into them: ``store_changed``,
``keys_changed``), so a pane that changed the store need not know which other panes show what it changed.
Workers may post them from their threads (``post_message`` is thread-safe); one posted by a widget that has
left the screen is dropped.
"""

from __future__ import annotations

from textual.message import Message

from engram.store.audit.verify import Verdict


class StoreChanged(Message):
    """The store changed: a pane (or a screen) wrote to it, or found another writer had. The console asks the
    change feed at once, which says exactly what changed, so every pane, the status line and the audit state
    follow without waiting for the next tick."""


class KeysChanged(Message):
    """Sensitive scopes were unlocked, locked, encrypted or decrypted: lock marks, search and scope lists
    follow."""


class Settled(Message):
    """The console's first screen has its data (the queue's first load ended, shown or failed): work no one is
    looking at yet (the search index the merge picker needs) may start without delaying it."""


class OpenMemory(Message):
    """Show this memory with everything that explains it (the search pane's reader)."""

    def __init__(self, slug: str) -> None:
        super().__init__()
        self.slug = slug


class Closed(Message):
    """A pane closed what it had opened for another (a memory opened from the queue): the console goes back to
    the pane it was opened from, which still has its row under the cursor."""


class AuditStateChanged(Message):
    """The audit pane verified the log: the status line shows ``verdict`` without verifying it again."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__()
        self.verdict = verdict
