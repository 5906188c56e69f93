"""The one way a pane carries out a person's action on the store: say what went wrong and change nothing more,
or say what was done, refresh what shows it, and re-check the audit chain in the status line."""

from __future__ import annotations

from collections.abc import Callable

from textual.widget import Widget

from engram.store.errors import ENVIRONMENT_ERRORS, StoreError
from engram.tui.host import console


def attempt(widget: Widget, act: Callable[[], object], done: str, then: Callable[[], None]) -> bool:
    """Run ``act`` (a store call); on success notify ``done`` and run ``then``. Returns whether it succeeded."""
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
    console(widget).check_audit()
    return True
