"""The console app as a pane sees it. ``widget.app`` is typed as any Textual app; the panes call engram's own
(unlock, the audit line, the shared search index), so they reach it through :func:`console`, which says so to
the type checker once instead of at every call."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.widget import Widget

if TYPE_CHECKING:  # the app imports the panes: only the type is needed here
    from engram.tui.app import EngramApp


def console(widget: Widget) -> EngramApp:
    """The EngramApp ``widget`` runs in."""
    return cast("EngramApp", widget.app)
