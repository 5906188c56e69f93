"""The one table of the console's panes: id, number key, title, class, the widget that takes the focus, and the
pane's actions. The tabs, switching panes (and its keys), the command palette, the help overlay and the keymap's
list of every action are all derived from it, so a pane is added or moved in one place."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from engram.tui.keymap import (
    APP_ACTIONS,
    AUDIT_ACTIONS,
    CALIBRATION_ACTIONS,
    DECAY_ACTIONS,
    DIALOG_ACTIONS,
    GRAPH_ACTIONS,
    LIST_ACTIONS,
    POISON_ACTIONS,
    QUEUE_ACTIONS,
    SCOPES_ACTIONS,
    SEARCH_ACTIONS,
    SIMILAR_ACTIONS,
    SUPERSEDES_ACTIONS,
    TABLE_ACTIONS,
    Action,
)
from engram.tui.panes.base import PaneBase


@dataclass(frozen=True)
class Pane:
    id: str  # the tab's id, and the owner part of the pane's action ids ("queue" in "queue.approve")
    title: str
    widget_name: str  # the class, in the module engram.tui.panes.<id>: imported when the pane is first shown
    focus: str  # selector of the widget that takes the focus when the pane is shown
    actions: tuple[Action, ...]

    @property
    def key(self) -> str:
        """The number key that shows the pane: its place in :data:`PANES`."""
        return str(PANES.index(self) + 1)

    @property
    def widget(self) -> type[PaneBase]:
        """The pane's class. A pane's module (and what it alone needs) is imported only once the pane is wanted,
        so the console's first frame waits for the queue alone."""
        cls: type[PaneBase] = getattr(importlib.import_module(f"engram.tui.panes.{self.id}"), self.widget_name)
        return cls

    @property
    def tab_label(self) -> str:
        return f"{self.key} {self.title}"


PANES = (
    Pane("queue", "Queue", "QueuePane", "#queue-table", QUEUE_ACTIONS),
    Pane("search", "Search", "SearchPane", "#search-query", SEARCH_ACTIONS),
    Pane("supersedes", "Supersedes", "SupersedesPane", "#chains", SUPERSEDES_ACTIONS),
    Pane("decay", "Decay", "DecayPane", "#decay-list", DECAY_ACTIONS),
    Pane("graph", "Graph", "GraphPane", "#entities", GRAPH_ACTIONS),
    Pane("audit", "Audit", "AuditPane", "#audit-lines", AUDIT_ACTIONS),
    Pane("scopes", "Scopes", "ScopesPane", "#scope-list", SCOPES_ACTIONS),
    Pane("poison", "Poison", "PoisonPane", "#poison-list", POISON_ACTIONS),
)
BY_ID = {pane.id: pane for pane in PANES}

SHOW_ACTIONS = tuple(
    Action(f"app.pane.{pane.id}", pane.key, f"show_pane('{pane.id}')", pane.title, show=False) for pane in PANES
)
CONSOLE_ACTIONS = APP_ACTIONS + SHOW_ACTIONS  # the app's own bindings
ALL_ACTIONS = (
    CONSOLE_ACTIONS
    + tuple(action for pane in PANES for action in pane.actions)
    + DIALOG_ACTIONS
    + LIST_ACTIONS
    + SIMILAR_ACTIONS
    + CALIBRATION_ACTIONS
    + TABLE_ACTIONS
)  # every key of the console, dialogs and list movement included: all under ?, all remappable
