"""The one way a pane carries out a person's action on the store, whether on the UI thread or in a worker: say
what went wrong and change nothing more, or say what was done, refresh what shows it, and tell the console the
store changed (it re-checks the audit chain and brings the other panes up to date).

Every pane acts through these: :func:`attempt` for a quick store call, :func:`attempt_in_worker` from a
worker's thread (a conversion, a sweep, a quarantine), and :func:`succeeded` / :func:`refused` for work that
reports its own outcome (the queue's decisions, undone and redone as steps), or :func:`changed_elsewhere` when
another writer got there first. No pane posts :class:`StoreChanged` itself (a test holds them to it)."""

from __future__ import annotations

from collections.abc import Callable

from textual.widget import Widget

from engram.store.errors import ENVIRONMENT_ERRORS, StoreError
from engram.tui.messages import StoreChanged
from engram.tui.threads import deliver_outcome

FAILURES = (StoreError, *ENVIRONMENT_ERRORS)


def attempt(widget: Widget, act: Callable[[], object], done: str, then: Callable[[], None]) -> bool:
    """Run ``act`` (a store call) on the UI thread; on success say ``done``, run ``then`` and tell the console.
    Returns whether it succeeded."""
    try:
        act()
    except FAILURES as exc:
        refused(widget, exc)
        return False
    succeeded(widget, done, then)
    return True


def attempt_in_worker(
    widget: Widget, act: Callable[[], object], done: Callable[[object], str] | str, then: Callable[[], None]
) -> bool:
    """:func:`attempt` from a worker's thread: ``act`` runs here, what is said and refreshed on the UI thread.
    ``done`` may make the message from what ``act`` returned."""
    try:
        result = act()
    except FAILURES as exc:
        deliver_outcome(widget, refused, widget, exc)
        return False
    deliver_outcome(widget, succeeded, widget, done(result) if callable(done) else done, then)
    return True


def succeeded(widget: Widget, done: str, then: Callable[[], None], timeout: float = 3) -> None:
    """Say what was done, refresh what shows it, and tell the console the store changed."""
    widget.notify(done, timeout=timeout)
    then()
    widget.post_message(StoreChanged())


def changed_elsewhere(widget: Widget, then: Callable[[], None]) -> None:
    """Nothing was done here, but the store had changed under the action (memoryd decided what a person was
    deciding): refresh what shows it and tell the console, with nothing to say of its own (the skips were said)."""
    then()
    widget.post_message(StoreChanged())


def refused(widget: Widget, exc: BaseException, title: str = "Nothing changed") -> None:
    """Say why nothing changed: the store's refusal as it words it; the environment's (a read-only file system, a
    full disk) with its kind, as `engram check` then says what is left."""
    if isinstance(exc, StoreError):
        widget.notify(str(exc), title=title, severity="error")
    else:
        widget.notify(f"{type(exc).__name__}: {exc}", title="Not done", severity="error")
