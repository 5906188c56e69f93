"""The one way a pane carries out a person's action on the store: say what went wrong and change nothing more,
or say what was done, refresh what shows it, and tell the console the store changed (it re-checks the audit
chain and brings the other panes up to date)."""

from __future__ import annotations

from collections.abc import Callable

from textual.widget import Widget

from engram.store.errors import ENVIRONMENT_ERRORS, StoreError
from engram.tui.messages import StoreChanged


def attempt(widget: Widget, act: Callable[[], object], done: str, then: Callable[[], None]) -> bool:
    """Run ``act`` (a store call); on success notify ``done``, run ``then`` and post :class:`StoreChanged`.
    Returns whether it succeeded."""
    try:
        act()
    except StoreError as exc:
        widget.notify(str(exc), title="Nothing changed", severity="error")
        return False
    except ENVIRONMENT_ERRORS as exc:  # a read-only file system, a full disk: `engram check` says what is left
        widget.notify(f"{type(exc).__name__}: {exc}", title="Not done", severity="error")
        return False
    widget.notify(done, timeout=3)
    then()
    widget.post_message(StoreChanged())
    return True
