"""The one registry of the console's actions: a stable id, default keys, and a description each.

It feeds the footer (through Textual bindings carrying the id), the help overlay, the command palette and the
user keymap (``[keys]`` in ``~/.config/engram/config.toml``, applied with ``App.set_keymap``). The table of
panes (tui.panes.table) gathers every action; docs/keymap.md lists every id; a test keeps the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True)
class Action:
    id: str  # stable: user keymaps refer to it
    keys: str  # Textual key names, comma-separated
    action: str  # the Textual action it runs on its owner (the app or a pane)
    description: str
    show: bool = True  # in the footer
    priority: bool = False  # before a focused text box's own use of the key (ctrl+u: unlock, not "clear the line")

    def binding(self) -> Binding:
        return Binding(self.keys, self.action, self.description, show=self.show, id=self.id, priority=self.priority)


def list_moves(owner: str, top: str, bottom: str) -> tuple[Action, ...]:
    """j k g G on a pane with a main list (``PaneBase.LIST``; its ``move`` action forwards to that list)."""
    return (
        Action(f"{owner}.down", "j", "move(1)", "Down", show=False),
        Action(f"{owner}.up", "k", "move(-1)", "Up", show=False),
        Action(f"{owner}.top", "g", "move('-all')", top, show=False),
        Action(f"{owner}.bottom", "G", "move('all')", bottom, show=False),
    )


APP_ACTIONS = (
    Action("app.help", "question_mark,f1", "help", "Help"),  # before quit: the footer always holds it (f1 in a box)
    Action("app.quit", "q", "quit", "Quit"),
    Action("app.palette", "colon,ctrl+p", "command_palette", "Commands", show=False),
    Action("app.unlock", "ctrl+u", "unlock", "Unlock", show=False, priority=True),
    Action("app.lock", "ctrl+l", "lock", "Lock", show=False, priority=True),
    Action("app.import", "I", "import", "Import from another system", show=False),
    Action("app.refresh", "f5", "refresh", "Look for changes now", show=False),
    Action("app.conflicts", "C", "conflicts", "Sync conflicts", show=False),
)  # the keys that show each pane come from the table of panes (tui.panes.table)

# The footer at 80 columns holds the decisions, undo, filter, sort, clusters and help; the rest (marks, views,
# similar, redo, thresholds) are in ? and the palette.
QUEUE_ACTIONS = (
    Action("queue.approve", "a", "approve", "Approve"),
    Action("queue.reject", "r", "reject", "Reject"),
    Action("queue.defer", "d", "defer", "Defer"),
    Action("queue.reject_now", "R", "reject_now", "Reject, no reason", show=False),
    Action("queue.defer_now", "D", "defer_now", "Defer, no reason", show=False),
    Action("queue.snooze", "z", "snooze", "Snooze", show=False),
    Action("queue.edit", "e", "edit", "Edit", show=False),
    Action("queue.merge", "m", "merge", "Merge"),
    Action("queue.undo", "u", "undo", "Undo"),
    Action("queue.redo", "ctrl+r", "redo", "Redo", show=False),
    Action("queue.mark", "space", "mark", "Mark", show=False),
    Action("queue.range", "v", "mark_range", "Range", show=False),
    Action("queue.mark_all", "ctrl+a", "mark_all", "Mark all", show=False),
    Action("queue.filter", "slash", "filter", "Filter"),
    Action("queue.sort", "s", "cycle_sort", "Sort"),
    Action("queue.view", "w", "next_view", "View", show=False),
    Action("queue.save_view", "W", "save_view", "Save view", show=False),
    Action("queue.open_session", "enter", "open_session", "Session", show=False),
    Action("queue.similar", "tab", "similar", "Similar", show=False),
    Action("queue.clusters", "c", "clusters", "Clusters"),
    Action("queue.cluster_approve", "A", "cluster('approve')", "Best of cluster", show=False),
    Action("queue.cluster_merge", "M", "cluster('merge')", "Merge cluster", show=False),
    Action("queue.calibrate", "t", "calibrate", "Thresholds", show=False),
    Action("queue.reveal", "x", "reveal", "Reveal hidden text", show=False),
    Action("queue.down", "j", "cursor(1)", "Down", show=False),
    Action("queue.up", "k", "cursor(-1)", "Up", show=False),
    Action("queue.top", "g", "jump('top')", "Top", show=False),
    Action("queue.bottom", "G", "jump('bottom')", "Bottom", show=False),
    Action("queue.next_page", "pagedown", "page(1)", "Next page", show=False),
    Action("queue.prev_page", "pageup", "page(-1)", "Previous page", show=False),
)

SEARCH_ACTIONS = (
    Action("search.focus", "slash", "focus_query", "Search"),
    Action("search.open", "enter", "open", "Open"),
    Action("search.history", "h", "history", "History"),
    Action("search.back", "escape", "back", "Back"),
    *list_moves("search", "Top", "Bottom"),
)

SCOPES_ACTIONS = (
    Action("scopes.mark", "m", "mark", "Mark sensitive"),
    Action("scopes.unmark", "M", "unmark", "Unmark"),
    Action("scopes.grant", "i", "grant", "Issue grant"),
    Action("scopes.revoke", "R", "revoke", "Revoke grant"),
    Action("scopes.rekey", "K", "rekey", "Rekey", show=False),
    Action("scopes.label", "l", "label", "Name", show=False),
    Action("scopes.recheck", "c", "recheck", "Re-check drift"),
    Action("scopes.seen", "s", "seen", "Mark seen", show=False),
    *list_moves("scopes", "Top", "Bottom"),
)

POISON_ACTIONS = (
    Action("poison.quarantine", "Q", "quarantine", "Quarantine"),
    Action("poison.release", "U", "release", "Release"),
    Action("poison.reveal", "x", "reveal", "Reveal"),
    Action("poison.rescreen", "c", "rescreen", "Screen again"),
    *list_moves("poison", "Top", "Bottom"),
)

SUPERSEDES_ACTIONS = (
    Action("supersedes.confirm", "c", "confirm", "Confirm"),
    Action("supersedes.reject", "x", "reject", "Reject"),
    Action("supersedes.undo", "u", "undo", "Undo link"),
    Action("supersedes.add", "a", "add", "Add link"),
    *list_moves("supersedes", "Top", "Bottom"),
)

DECAY_ACTIONS = (
    Action("decay.sweep", "s", "sweep", "Sweep"),
    Action("decay.next_list", "l", "next_list", "Next list"),
    Action("decay.revive", "r", "revive", "Revive"),
    Action("decay.pin", "p", "pin", "Pin"),
    Action("decay.ttl", "T", "ttl", "Set ttl"),
    Action("decay.forget", "f", "forget", "Forget"),
    Action("decay.days", "n", "days", "Days ahead", show=False),
    Action("decay.group", "t", "toggle_group", "By type/scope", show=False),
    *list_moves("decay", "Top", "Bottom"),
)

GRAPH_ACTIONS = (
    Action("graph.deeper", "plus", "hops(1)", "Hops +"),
    Action("graph.shallower", "minus", "hops(-1)", "Hops -"),
    Action("graph.rename", "R", "rename", "Rename"),
    Action("graph.merge", "M", "merge", "Merge alias"),
    Action("graph.supersede", "s", "supersede", "Supersede relation"),
    *list_moves("graph", "Top", "Bottom"),
)

AUDIT_ACTIONS = (
    Action("audit.filter", "slash", "filter", "Filter"),
    Action("audit.verify", "v", "verify", "Verify"),
    Action("audit.bad", "b", "jump_bad", "First bad line"),
    Action("audit.checkpoint", "p", "checkpoint", "Print checkpoint"),
    Action("audit.back", "escape", "back", "Back", show=False),
    *list_moves("audit", "Newest", "Oldest"),
)


LIST_ACTIONS = (  # every LineList: search results, audit lines
    Action("list.up", "up", "move(-1)", "Up", show=False),
    Action("list.down", "down", "move(1)", "Down", show=False),
    Action("list.page_up", "pageup", "move('-page')", "Page up", show=False),
    Action("list.page_down", "pagedown", "move('page')", "Page down", show=False),
    Action("list.first", "home", "move('-all')", "First", show=False),
    Action("list.last", "end", "move('all')", "Last", show=False),
    Action("list.open", "enter", "select", "Open", show=False),
)

TABLE_ACTIONS = (  # every table: the queue, decay, scopes, graph, findings, pickers
    Action("table.up", "up", "cursor_up", "Up", show=False),
    Action("table.down", "down", "cursor_down", "Down", show=False),
    Action("table.left", "left", "cursor_left", "Left", show=False),
    Action("table.right", "right", "cursor_right", "Right", show=False),
    Action("table.page_up", "pageup", "page_up", "Page up", show=False),
    Action("table.page_down", "pagedown", "page_down", "Page down", show=False),
    Action("table.first", "home", "scroll_home", "First", show=False),
    Action("table.last", "end", "scroll_end", "Last", show=False),
    Action("table.top", "ctrl+home", "scroll_top", "Top", show=False),
    Action("table.bottom", "ctrl+end", "scroll_bottom", "Bottom", show=False),
    Action("table.select", "enter", "select_cursor", "Select", show=False),
)

SIMILAR_ACTIONS = (  # the list of similar memories and promotions in the queue's detail
    Action("similar.open", "enter", "open", "Open"),
    Action("similar.merge", "m", "merge", "Merge into it"),
    Action("similar.back", "escape,tab", "back", "Back to the queue"),
)

CALIBRATION_ACTIONS = (  # the thresholds screen, from the queue (t)
    Action("calibrate.approve_down", "left", "move('approve', -0.01)", "Approve −"),
    Action("calibrate.approve_up", "right", "move('approve', 0.01)", "Approve +"),
    Action("calibrate.reject_down", "comma", "move('reject', -0.01)", "Reject −"),
    Action("calibrate.reject_up", "full_stop", "move('reject', 0.01)", "Reject +"),
    Action("calibrate.suggested", "s", "suggested", "Suggested"),
    Action("calibrate.group", "g", "group", "By type/source"),
    Action("calibrate.write", "w", "write", "Write to memoryd"),
    Action("calibrate.close", "escape,q", "close", "Back"),
)

CANCEL = Action("dialog.cancel", "escape", "cancel", "Cancel")  # every dialog that can be left unanswered
CONFIRM_ACTIONS = (
    Action("confirm.yes", "y,enter", "answer(True)", "Yes"),
    Action("confirm.no", "n,escape", "answer(False)", "No"),
)
EDIT_ACTIONS = (
    Action("edit.save", "ctrl+s", "save", "Approve with edits"),
    Action("edit.external", "ctrl+e", "external", "Body in $EDITOR"),
    CANCEL,
)
GRANT_ACTIONS = (
    CANCEL,
    Action("grant.once", "o", "pick('once')", "Grant once", show=False),
    Action("grant.session", "s", "pick('session')", "Grant for a session", show=False),
    Action("grant.task", "t", "pick('task')", "Grant for a task", show=False),
)
SECRET_ACTIONS = (
    Action("secret.redact", "r", "choose('redact')", "Redact, then approve"),
    Action("secret.reject", "x", "choose('reject')", "Reject"),
    Action("secret.sensitive", "s", "choose('sensitive')", "Approve into its sensitive scope"),
    CANCEL,
)
HISTORY_ACTIONS = (  # a memory's history, from the search (h)
    Action("history.down", "j", "move(1)", "Down", show=False),
    Action("history.up", "k", "move(-1)", "Up", show=False),
    Action("history.mark", "space", "mark", "Mark to compare"),
    Action("history.restore", "R", "restore", "Restore"),
    Action("history.close", "escape,q", "close", "Close"),
)
CONFLICT_ACTIONS = (  # the sync-conflict inbox (C)
    Action("conflict.local", "l", "keep('local')", "Keep local"),
    Action("conflict.remote", "r", "keep('remote')", "Keep remote"),
    Action("conflict.merge", "m", "merge", "Merge"),
    Action("conflict.down", "j", "move(1)", "Down", show=False),
    Action("conflict.up", "k", "move(-1)", "Up", show=False),
    Action("conflict.close", "escape,q", "close", "Close"),
)
MERGE_ACTIONS = (Action("merge.save", "ctrl+s", "save", "Write the merge"), CANCEL)
HELP_ACTIONS = (Action("help.close", "escape", "close", "Close"),)
REVEAL_ACTIONS = (Action("reveal.close", "escape,q,x", "close", "Close"),)
IMPORT_ACTIONS = (Action("import.back", "escape", "back", "Back"),)
DIALOG_ACTIONS = (
    CANCEL,
    *CONFIRM_ACTIONS,
    *EDIT_ACTIONS[:2],
    *GRANT_ACTIONS[1:],
    *SECRET_ACTIONS[:3],
    *HELP_ACTIONS,
    *HISTORY_ACTIONS,
    *CONFLICT_ACTIONS,
    MERGE_ACTIONS[0],
    *REVEAL_ACTIONS,
    *IMPORT_ACTIONS,
)


def bindings(actions: tuple[Action, ...]) -> list[BindingType]:
    """The Textual bindings of ``actions`` (typed as Textual's ``BINDINGS`` is)."""
    return [a.binding() for a in actions]


def unknown_ids(keymap: dict[str, str], actions: tuple[Action, ...]) -> list[str]:
    """Ids in a user keymap that none of ``actions`` has (a typo, or an id from another version)."""
    known = {a.id for a in actions}
    return sorted(k for k in keymap if k not in known)
