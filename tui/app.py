"""The engram console: a header with the root's state, seven panes, and a footer with the keys in reach.

Every action comes from one registry (tui.keymap): the footer, the help overlay (?), the command palette (:)
and the user's keymap all read it. Loading and checking run in workers; errors become notifications. What only
an action or a later pane needs is imported there: the first frame waits for every import at the top.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.content import Content
from textual.filter import LineFilter
from textual.markup import MarkupError
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from engram.store import heap
from engram.store.changes import ChangeFeed, Changes
from engram.store.errors import StoreError
from engram.store.paths import screenshots_dir
from engram.store.queue import snoozed_ids
from engram.store.service import Store
from engram.store.settings import Settings, save_theme
from engram.store.stats import pending_count
from engram.themes import theme_specs
from engram.tui.keymap import Action, bindings, unknown_ids
from engram.tui.messages import AuditStateChanged, Closed, KeysChanged, OpenMemory, Settled, StoreChanged
from engram.tui.panes.base import PaneBase
from engram.tui.panes.table import ALL_ACTIONS, BY_ID, CONSOLE_ACTIONS, PANES, Pane
from engram.tui.shared import Shared
from engram.tui.terminal_safe import visible
from engram.tui.threads import ReleasingExecutor, background
from engram.tui.widgets.safe import ControlFilter

if TYPE_CHECKING:
    from engram.store.audit.verify import Verdict
    from engram.store.importers.run import ImportResult
    from engram.tui.panes.audit import AuditPane
    from engram.tui.panes.queue import QueuePane
    from engram.tui.panes.search import SearchPane

CONTROL_FILTER = ControlFilter()
DEFAULT_THEME = "engram-dark"
WATCH_SECONDS = 1.0  # how often the store's change feed is asked (a few stat calls when nothing changed)


class EngramApp(App[None]):
    CSS_PATH = "engram.tcss"
    TITLE = "engram"
    # Below 110 columns every screen has the class -narrow: details go below their lists; from 120, -roomy: the
    # search pane previews the result under the cursor beside the list (engram.tcss)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide"), (120, "-roomy")]
    BINDINGS = bindings(CONSOLE_ACTIONS)

    def __init__(
        self,
        store: Store,
        settings: Settings = Settings(),
        warnings: Sequence[str] = (),
        notices: Sequence[str] = (),
    ) -> None:
        """``warnings``: what the person should know as the console opens (a config.toml that could not be
        used, say); ``notices``: what they should read (the demo's passphrase); both shown as notifications
        once it is up."""
        super().__init__()
        self.store = store
        self.shared = Shared(store)
        self.settings = settings
        self.warnings = list(warnings)
        self.notices = list(notices)
        self.sub_title = str(store.layout.root)
        self.audit_state = "audit: checking…"
        self.conflict_count = 0  # sync conflicts waiting in the inbox (see count_conflicts)
        self.history_state = ""  # the history's catch-up under way, for the status line
        self.feed: ChangeFeed | None = None
        self.feed_lock = threading.Lock()
        self.look_again = False
        self.back_to: str | None = None  # the pane a memory was opened from: esc on it returns there
        self.built: dict[str, PaneBase] = {}  # the panes made so far, by id
        for spec in theme_specs():
            self.register_theme(Theme(**spec))
        theme = settings.theme or DEFAULT_THEME
        if theme not in self.available_themes:
            self.warnings.append(f"config.toml: no theme named {theme!r}; using {DEFAULT_THEME}")
            theme = DEFAULT_THEME
        self.theme = theme
        self.set_keymap(settings.keys)

    def get_line_filters(self) -> Sequence[LineFilter]:
        return [*super().get_line_filters(), CONTROL_FILTER]  # see tui.widgets.safe

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification as plain text, whatever the caller asked (widgets pass ``markup=True`` on): messages
        carry data (titles, paths, errors quoting a file), which must neither be read as markup nor drive the
        terminal. Textual's app's own messages ("Press [b]ctrl+q[/b] to quit", the screenshot's path) are its
        markup, not data: their tags are rendered away rather than shown. (A widget's ``notify`` comes through
        textual.widget with engram's data: that stays plain.)"""
        if markup and sys._getframe(1).f_globals.get("__name__") == "textual.app":  # not a widget passing data on
            with contextlib.suppress(MarkupError):
                message = Content.from_markup(message).plain
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Textual's screenshot, saved where engram can always write (see ``screenshots_dir``); the toast names
        the file."""
        try:
            folder = path or str(screenshots_dir())
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc}", title="Screenshot", severity="error")
            return
        super().action_screenshot(filename, folder)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="status")
        with TabbedContent(id="panes"):
            for pane in PANES:
                with TabPane(pane.tab_label, id=pane.id):
                    if pane is PANES[0]:  # the queue: the others are made once it has its first page
                        yield self.made(pane)
        yield Footer(compact=True, show_command_palette=False)  # 80 columns hold the keys that matter

    def made(self, pane: Pane) -> PaneBase:
        widget = pane.widget(self.shared)
        self.built[pane.id] = widget
        return widget

    async def mounted(self, pane: Pane) -> PaneBase:
        """``pane``'s widget, made and mounted in its tab first if it was not yet. (The app's handlers run one at
        a time, so a pane is never made twice.)"""
        widget = self.built.get(pane.id)
        if widget is None:
            widget = self.made(pane)
            await self.query_one(f"#{pane.id}", TabPane).mount(widget)
        return widget

    def on_load(self) -> None:
        """Before any pane starts a worker: a worker's thread lets go of its connection when it ends (see
        tui.threads)."""
        heap.limit_arenas()  # before the pool's threads exist: each would otherwise get an arena of its own
        asyncio.get_running_loop().set_default_executor(ReleasingExecutor(self.store.index.release))

    async def on_mount(self) -> None:
        if self.store.read_only:
            self.notify(self.store.read_only_reason or "read-only", title="Read-only", severity="warning", timeout=15)
        if self.store.keys.problem:
            self.notify(self.store.keys.problem, title="memoryd's config", severity="warning", timeout=15)
        for warning in self.warnings:
            self.notify(warning, title="Settings", severity="warning", timeout=15)
        for notice in self.notices:
            self.notify(notice, timeout=20)
        for bad in unknown_ids(self.settings.keys, ALL_ACTIONS):
            self.notify(f"config.toml [keys]: no action has the id {bad!r} (see ? for the ids)", severity="warning")
        self.refresh_status()
        self.count_conflicts()
        self.theme_changed_signal.subscribe(self, self.keep_theme)  # after start: the one set above is no pick
        await self.action_show_pane("queue")
        self.set_interval(WATCH_SECONDS, self.tick)

    def action_conflicts(self) -> None:
        """C: the sync-conflict inbox, from anywhere but a text box (not over another dialog)."""
        from engram.tui.screens.conflicts import ConflictsScreen  # the inbox's modules: not for the first frame

        if len(self.screen_stack) == 1:
            self.push_screen(ConflictsScreen(self.store), lambda _: self.count_conflicts())

    @background("history")
    def catch_up_history(self) -> None:
        """What changed on disk since engram last looked becomes the history's (memoryd's writes, an editor's),
        off the UI thread, its progress in the status line: on a root's first start, every memory file."""
        from engram.store.history import ops

        def advance(done: int, total: int) -> None:
            self.history_state = f"history: recording {done:,}/{total:,}"
            self.call_from_thread(self.refresh_status)

        try:
            ops.catch_up(self.store, advance)
        finally:
            self.history_state = ""
            self.call_from_thread(self.refresh_status)

    @background("history-seen", exclusive=False)
    def record_seen(self, slugs: set[str]) -> None:
        """The memories the change feed says memoryd added or changed, recorded as it saw them."""
        from engram.store.history import ops

        ops.record_seen(self.store, slugs)

    @background("conflicts-count")
    def count_conflicts(self) -> None:
        """How many sync conflicts wait, for the status line: the inbox lists every memory folder, so it is
        counted off the UI thread, at start and when the store changed."""
        from engram.store.conflicts import conflicts

        count = len(conflicts(self.store))
        if count != self.conflict_count:
            self.conflict_count = count
            self.call_from_thread(self.refresh_status)

    def refresh_status(self) -> None:
        pending = pending_count(self.store)
        asleep = len(snoozed_ids(self.store))  # pending for memoryd, out of the queue for now
        locked = [s for s in self.store.sensitive_scopes() if not self.store.keys.can_open(s)]
        parts = [
            f"{pending} pending" + (f" ({asleep} snoozed)" if asleep else ""),
            f"{len(locked)} locked scope{'s' if len(locked) != 1 else ''}" + (" (ctrl+u unlocks)" if locked else ""),
            self.audit_state,
        ]
        if self.history_state:
            parts.append(self.history_state)
        if self.conflict_count:
            parts.append(f"{self.conflict_count} sync conflict{'s' if self.conflict_count != 1 else ''} (C)")
        if self.store.read_only:
            parts.append("READ-ONLY")
        self.query_one("#status", Static).update("  ·  ".join(parts))

    @background("audit")
    def check_audit(self) -> None:
        from engram.store.audit.ops import verify_log

        try:
            verdict = verify_log(self.store)
        except StoreError as exc:
            self.audit_state = f"audit: unreadable ({exc})"
            self.call_from_thread(self.refresh_status)
            return
        self.call_from_thread(self.show_audit, verdict, True)

    def show_audit(self, verdict: Verdict, tell: bool = False) -> None:
        """The audit state in the status line; a tampered log is also said aloud (``tell``) when the console
        found it itself."""
        where = f"at line {verdict.bad_line}" if verdict.bad_line else "(checkpoint)"
        self.audit_state = {
            "valid": f"audit: valid, {verdict.lines:,} lines",
            "torn_tail": "audit: TORN TAIL (engram audit repair)",
        }.get(verdict.status, f"audit: {verdict.status.upper()} {where}")
        if tell and verdict.status == "tampered":
            self.notify(verdict.summary(), title="Audit log", severity="error", timeout=30)
        self.shared.verdict = verdict  # one verdict: the audit pane shows the one the status line does
        audit = self.built.get("audit")
        if audit is not None and audit.is_mounted:  # one still mounting shows shared.verdict once its log is read
            cast("AuditPane", audit).show_verdict(verdict)
        self.refresh_status()

    def tick(self) -> None:
        """Every few seconds: let go of the UI thread's idle database connection (see ``Index.release``: an
        engram holding index.db open while memoryd rebuilds it would leave memoryd a malformed index), then ask
        the change feed what changed."""
        self.store.index.release()
        self.watch_store()
        queue = self.built.get("queue")
        if queue is not None:
            cast("QueuePane", queue).wake_if_due()  # a snooze ended: back in the queue without any other change

    def action_refresh(self) -> None:
        """F5: ask the change feed now instead of at the next tick, and count the sync conflicts again (a
        file-sync tool's copy changes nothing the feed watches)."""
        self.tick()
        self.count_conflicts()

    @background("watch", exclusive=False)
    def watch_store(self) -> None:
        """Ask the store's change feed, off the UI thread, what memoryd (or anyone) changed since last time.
        One look at a time: asked while a look runs (a pane's write during a tick's look), the running look
        looks once more when it is done, so no ask is lost and none waits in a thread of its own."""
        self.look_again = True
        while self.look_again and self.feed_lock.acquire(blocking=False):
            try:
                self.look_again = False
                changes = self.look()
            finally:
                self.feed_lock.release()
            if changes:
                self.call_from_thread(self.store_changed, changes)

    def look(self) -> Changes | None:
        try:
            if self.feed is None:
                self.feed = ChangeFeed(self.store)  # the first look: what later looks compare with
                return None
            return self.feed.poll()
        except StoreError:
            return None  # a locked or half-rebuilt index: the next tick asks again

    def store_changed(self, changes: Changes) -> None:
        """Bring what the person sees up to date: every pane that shows what changed (a hidden one when it is
        next shown), the status line and the audit state; a rebuilt index.db is said plainly."""
        if changes.index_replaced:
            self.notify(
                "index.db was rebuilt or replaced (memoryd's rebuild-index?): `engram check` lists what it "
                "lost, `engram repair` gives it back",
                title="Index rebuilt",
                severity="warning",
                timeout=20,
            )
        for pane, widget in self.panes():
            widget.store_changed(changes, pane.id == self.showing)
        if "audit" in changes.kinds:
            self.check_audit()
        if changes.memories:
            self.record_seen(set(changes.memories))
        if changes.memories or changes.index_replaced:  # a sync import rewrites files and rebuilds the index;
            self.count_conflicts()  # memoryd's audit lines alone (every search it answers) need no listing
        self.refresh_status()

    def panes(self) -> Iterable[tuple[Pane, PaneBase]]:
        """The panes made so far (one made later reads the store as it is then)."""
        return ((pane, self.built[pane.id]) for pane in PANES if pane.id in self.built)

    # ------------------------------------------------------------------ what the panes tell the console

    def on_store_changed(self, message: StoreChanged) -> None:
        """A pane wrote: ask the change feed now, which tells every pane (the writer included) what changed."""
        self.refresh_status()
        self.watch_store()

    def on_keys_changed(self, message: KeysChanged) -> None:
        self.refresh_status()
        for pane, widget in self.panes():
            widget.keys_changed(pane.id == self.showing)

    def on_settled(self, message: Settled) -> None:
        """The queue has its first page: once that is drawn, the other panes are made (each still reads the store
        only when first shown), and those preparing something for others (the search index) start it."""
        self.call_after_refresh(self.make_the_rest)

    async def make_the_rest(self) -> None:
        self.check_audit()  # a read of the whole log: after the first page too
        self.catch_up_history()
        self.watch_store()  # the feed's first look (what later looks compare with): not before, as on a large
        # root it took as long as the queue's first page, which it slowed down
        for pane in PANES:
            await self.mounted(pane)
        for _, widget in self.panes():
            widget.settled()

    async def on_open_memory(self, message: OpenMemory) -> None:
        self.back_to = self.showing if self.showing != "search" else self.back_to  # where esc returns (a back stack)
        await self.action_show_pane("search")
        cast("SearchPane", self.built["search"]).open_memory(message.slug)

    async def on_closed(self, message: Closed) -> None:
        back, self.back_to = self.back_to, None
        if back is not None:
            await self.action_show_pane(back)

    def on_audit_state_changed(self, message: AuditStateChanged) -> None:
        self.show_audit(message.verdict)

    async def action_show_pane(self, name: str) -> None:
        if name != "search":
            self.back_to = None  # the person went somewhere themselves: no way back to remember
        await self.mounted(BY_ID[name])
        self.query_one("#panes", TabbedContent).active = name
        # Focus must leave the pane that was hidden: TabbedContent shows the pane holding the focused widget.
        self.set_focus(self.query_one(BY_ID[name].focus))

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab clicked before its pane was made: make it."""
        await self.mounted(BY_ID[event.pane.id or ""])

    @property
    def showing(self) -> str:
        """The id of the pane on screen."""
        return self.query_one("#panes", TabbedContent).active

    # ------------------------------------------------------------------ keys of sensitive scopes

    def action_unlock(self) -> None:
        """From anywhere, a text box included (the status line says ctrl+u unlocks); not over another dialog,
        which has the keyboard until it is answered."""
        from engram.tui.screens.unlock import ask_unlock

        if len(self.screen_stack) > 1:
            return
        ask_unlock(self, self.store, sorted(self.store.sensitive_scopes()), lambda: None)

    def action_lock(self) -> None:
        """Forget every key; search drops the bodies of sensitive scopes it had read."""
        if len(self.screen_stack) > 1:
            return
        from engram.store.sensitive.convert import lock

        lock(self.store)
        self.notify("every sensitive scope is locked again", timeout=3)
        self.post_message(KeysChanged())

    def action_import(self) -> None:
        """Preview, then import, another system's memories; the queue shows the new promotions."""

        def done(result: ImportResult | None) -> None:
            if result is not None:
                self.notify(
                    f"imported {result.sessions:,} sessions, {result.promotions:,} pending promotions, "
                    f"{result.supersedes:,} proposed supersedes",
                    title="Import",
                    timeout=8,
                )
                self.post_message(StoreChanged())

        from engram.tui.screens.importer import ImportScreen

        self.push_screen(ImportScreen(self.store), done)

    def action_help(self) -> None:
        from engram.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.settings.keys))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette: the console's commands, then the showing pane's, then every other pane's. A pane's
        command runs on that pane, which is shown first, so it never acts on a row nobody sees."""
        yield from super().get_system_commands(screen)
        for action in CONSOLE_ACTIONS:
            yield SystemCommand(action.description, self.keys_of(action), lambda a=action: self.run_action(a.action))
        showing = BY_ID.get(self.showing) if screen is self.screen else None
        for pane in sorted(PANES, key=lambda p: p is not showing):
            for action in pane.actions:
                yield SystemCommand(
                    f"{pane.title}: {action.description}",
                    self.keys_of(action),
                    lambda a=action, p=pane: self.run_pane_action(p, a),
                )
        for view in getattr(self.built.get("queue"), "known_views", list)():  # the queue's saved views, once built
            show = Action(f"queue.view.{view.name}", "", f"view({view.name!r})", view.name)
            yield SystemCommand(
                f"Queue view: {view.name}",
                f"filter {view.filter or '(none)'}, sort {view.sort}",
                lambda a=show: self.run_pane_action(BY_ID["queue"], a),
            )

    def keys_of(self, action: Action) -> str:
        """The keys of ``action`` as the person has them (their keymap applied), for the palette's second line."""
        keys = self.settings.keys.get(action.id, action.keys)
        shown = " or ".join(self.get_key_display(Binding(key.strip(), "")) for key in keys.split(",") if key.strip())
        return f"key: {shown}" if shown else "no key"

    def keep_theme(self, theme: Theme) -> None:
        """A theme picked in the palette is kept in config.toml, so the next start has it too."""
        if theme.name == (self.settings.theme or DEFAULT_THEME):
            return
        try:
            path = save_theme(theme.name)
        except StoreError as exc:
            self.notify(str(exc), title="Theme", severity="warning")
            return
        self.settings = replace(self.settings, theme=theme.name)
        self.notify(f"theme {theme.name} kept in {path}", title="Theme", timeout=4)

    async def run_pane_action(self, pane: Pane, action: Action) -> None:
        """Show ``pane``, then run ``action`` on it (after the switch has been drawn, so the person sees what
        it acts on)."""
        await self.action_show_pane(pane.id)
        widget = self.built[pane.id]
        self.call_after_refresh(widget.run_action, action.action)
