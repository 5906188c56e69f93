"""The engram console: a header with the root's state, seven panes, and a footer with the keys in reach.

Every action comes from one registry (tui.keymap): the footer, the help overlay (?), the command palette (:)
and the user's keymap all read it. Loading and checking run in workers; errors become notifications.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence

from textual.app import App, ComposeResult, SystemCommand
from textual.filter import LineFilter
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane

from engram.store.audit.ops import verify_log
from engram.store.changes import ChangeFeed, Changes
from engram.store.errors import StoreError
from engram.store.importers.run import ImportResult
from engram.store.search import SearchIndex
from engram.store.sensitive.convert import lock, unlock
from engram.store.service import Store
from engram.store.settings import Settings
from engram.store.stats import pending_count
from engram.themes import theme_specs
from engram.tui.keymap import Action, bindings, unknown_ids
from engram.tui.panes.queue import QueuePane
from engram.tui.panes.scopes import ScopesPane
from engram.tui.panes.search import SearchPane
from engram.tui.panes.table import ALL_ACTIONS, BY_ID, CONSOLE_ACTIONS, PANES, Pane
from engram.tui.screens.help import HelpScreen
from engram.tui.screens.importer import ImportScreen
from engram.tui.screens.prompt import TextPrompt
from engram.tui.terminal_safe import visible
from engram.tui.threads import ReleasingExecutor, background
from engram.tui.widgets.safe import ControlFilter

CONTROL_FILTER = ControlFilter()
DEFAULT_THEME = "engram-dark"
WATCH_SECONDS = 1.0  # how often the store's change feed is asked (a few stat calls when nothing changed)


class EngramApp(App[None]):
    CSS_PATH = "engram.tcss"
    TITLE = "engram"
    BINDINGS = bindings(CONSOLE_ACTIONS)

    def __init__(self, store: Store, settings: Settings = Settings(), warnings: Sequence[str] = ()) -> None:
        """``warnings``: what the person should know as the console opens (a config.toml that could not be
        used, say); shown as notifications once it is up."""
        super().__init__()
        self.store = store
        self.settings = settings
        self.warnings = list(warnings)
        self.sub_title = str(store.layout.root)
        self.audit_state = "audit: checking…"
        self.feed: ChangeFeed | None = None
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
        terminal."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="status")
        with TabbedContent(id="panes"):
            for pane in PANES:
                with TabPane(pane.tab_label, id=pane.id):
                    yield pane.widget(self.store)
        yield Footer()

    def on_load(self) -> None:
        """Before any pane starts a worker: a worker's thread lets go of its connection when it ends (see
        tui.threads)."""
        asyncio.get_running_loop().set_default_executor(ReleasingExecutor(self.store.index.release))

    def on_mount(self) -> None:
        if self.store.read_only:
            self.notify(self.store.read_only_reason or "read-only", title="Read-only", severity="warning", timeout=15)
        for warning in self.warnings:
            self.notify(warning, title="Settings", severity="warning", timeout=15)
        for bad in unknown_ids(self.settings.keys, ALL_ACTIONS):
            self.notify(f"config.toml [keys]: no action has the id {bad!r} (see ? for the ids)", severity="warning")
        self.refresh_status()
        self.check_audit()
        self.action_show_pane("queue")
        self.set_interval(WATCH_SECONDS, self.tick)

    def refresh_status(self) -> None:
        pending = pending_count(self.store)
        locked = [s for s in self.store.sensitive_scopes() if not self.store.keys.can_open(s)]
        parts = [
            f"{pending} pending",
            f"{len(locked)} locked scope{'s' if len(locked) != 1 else ''}" + (" (ctrl+u unlocks)" if locked else ""),
            self.audit_state,
        ]
        if self.store.read_only:
            parts.append("READ-ONLY")
        self.query_one("#status", Static).update("  ·  ".join(parts))

    @background("audit")
    def check_audit(self) -> None:
        try:
            verdict = verify_log(self.store)
        except StoreError as exc:
            state = f"audit: unreadable ({exc})"
        else:
            where = f"at line {verdict.bad_line}" if verdict.bad_line else "(checkpoint)"
            state = {
                "valid": f"audit: valid, {verdict.lines:,} lines",
                "torn_tail": "audit: TORN TAIL (engram audit repair)",
            }.get(verdict.status, f"audit: {verdict.status.upper()} {where}")
            if verdict.status == "tampered":
                self.call_from_thread(self.notify, verdict.summary(), title="Audit log", severity="error", timeout=30)
        self.audit_state = state
        self.call_from_thread(self.refresh_status)

    def tick(self) -> None:
        """Every few seconds: let go of the UI thread's idle database connection (see ``Index.release``: an
        engram holding index.db open while memoryd rebuilds it would leave memoryd a malformed index), then ask
        the change feed what changed."""
        self.store.index.release()
        self.watch_store()

    def action_refresh(self) -> None:
        """F5: ask the change feed now instead of at the next tick."""
        self.tick()

    @background("watch")
    def watch_store(self) -> None:
        """Ask the store's change feed, off the UI thread, what memoryd (or anyone) changed since last time."""
        try:
            if self.feed is None:
                self.feed = ChangeFeed(self.store)  # the first look: what later looks compare with
                return
            changes = self.feed.poll()
        except StoreError:
            return  # a locked or half-rebuilt index: the next tick asks again
        if changes:
            self.call_from_thread(self.store_changed, changes)

    def store_changed(self, changes: Changes) -> None:
        """Bring what the person sees up to date: the queue (keeping the cursor on its promotion), the status
        line and the audit state; a rebuilt index.db is said plainly."""
        if changes.index_replaced:
            self.notify(
                "index.db was rebuilt or replaced (memoryd's rebuild-index?): `engram check` lists what it "
                "lost, `engram repair` gives it back",
                title="Index rebuilt",
                severity="warning",
                timeout=20,
            )
        if changes.kinds & {"promotions", "index"}:
            self.query_one(QueuePane).reload()
        if "audit" in changes.kinds:
            self.check_audit()
        self.refresh_status()

    # ------------------------------------------------------------------ panes and shared services

    def action_show_pane(self, name: str) -> None:
        self.query_one("#panes", TabbedContent).active = name
        # Focus must leave the pane that was hidden: TabbedContent shows the pane holding the focused widget.
        self.set_focus(self.query_one(BY_ID[name].focus))

    @property
    def showing(self) -> str:
        """The id of the pane on screen."""
        return self.query_one("#panes", TabbedContent).active

    def search_index(self) -> SearchIndex | None:
        return self.query_one(SearchPane).index

    def open_memory(self, slug: str) -> None:
        self.action_show_pane("search")
        self.query_one(SearchPane).open_memory(slug)

    # ------------------------------------------------------------------ keys of sensitive scopes

    def ask_unlock(self, then: Callable[[], None], scopes: list[str]) -> None:
        """Unlock the sensitive scopes (memoryd's passphrase, masked; or the OS keyring in random-key mode), then
        run ``then``. A wrong passphrase or a missing keyring is a notification; nothing else happens. A
        passphrase no encrypted file can check is asked for a second time."""

        def attempt(passphrase: str | None) -> None:
            try:
                opened = unlock(self.store, passphrase)
            except StoreError as exc:
                self.notify(str(exc), title="Still locked", severity="error", timeout=10)
                return
            if not opened and passphrase is not None:
                self.confirm_passphrase(passphrase, then)
                return
            self.notify(f"unlocked {', '.join(opened)}" if opened else "unlocked", timeout=3)
            self.keys_changed()
            then()

        if self.store.keys.key_source != "passphrase":
            attempt(None)
            return
        self.push_screen(
            TextPrompt(f"Locked sensitive scope {', '.join(scopes)}: memoryd passphrase", password=True),
            lambda text: attempt(text) if text else None,
        )

    def ask_new_passphrase(self, then: Callable[[], None]) -> None:
        """The passphrase the first sensitive scope will be encrypted with, typed twice."""
        prompt = TextPrompt("memoryd passphrase for sensitive scopes (the first one: choose it)", password=True)
        self.push_screen(prompt, lambda first: self.confirm_passphrase(first, then) if first else None)

    def confirm_passphrase(self, first: str, then: Callable[[], None]) -> None:
        """Nothing encrypted can check ``first`` (a typo would lock memories away for good): typed again, the
        same, it is taken as confirmed; different, nothing changes."""

        def compare(again: str | None) -> None:
            if again != first:
                self.notify("the two passphrases differ: nothing changed", severity="error")
                return
            try:
                unlock(self.store, first, confirmed=True)
            except StoreError as exc:
                self.notify(str(exc), title="Still locked", severity="error", timeout=10)
                return
            self.notify("passphrase confirmed", timeout=3)
            self.keys_changed()
            then()

        self.push_screen(
            TextPrompt("Nothing is encrypted yet to check it against: the same passphrase again", password=True),
            compare,
        )

    def action_unlock(self) -> None:
        self.ask_unlock(lambda: None, sorted(self.store.sensitive_scopes()))

    def action_lock(self) -> None:
        """Forget every key; search drops the bodies of sensitive scopes it had read."""
        lock(self.store)
        self.notify("every sensitive scope is locked again", timeout=3)
        self.keys_changed()

    def keys_changed(self) -> None:
        self.refresh_status()
        self.query_one(QueuePane).keys_changed()
        self.query_one(SearchPane).rebuild()
        self.query_one(ScopesPane).keys_changed()

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
                self.query_one(QueuePane).reload()
                self.query_one(SearchPane).rebuild()
                self.refresh_status()
                self.check_audit()

        self.push_screen(ImportScreen(self.store), done)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.settings.keys))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette: the console's commands, then the showing pane's, then every other pane's. A pane's
        command runs on that pane, which is shown first, so it never acts on a row nobody sees."""
        yield from super().get_system_commands(screen)
        for action in CONSOLE_ACTIONS:
            yield SystemCommand(action.description, action.id, lambda a=action: self.run_action(a.action))
        showing = BY_ID.get(self.showing) if screen is self.screen else None
        for pane in sorted(PANES, key=lambda p: p is not showing):
            for action in pane.actions:
                yield SystemCommand(
                    f"{pane.title}: {action.description}",
                    action.id,
                    lambda a=action, p=pane: self.run_pane_action(p, a),
                )

    def run_pane_action(self, pane: Pane, action: Action) -> None:
        """Show ``pane``, then run ``action`` on it (after the switch has been drawn, so the person sees what
        it acts on)."""
        self.action_show_pane(pane.id)
        widget = self.query_one(pane.widget)
        self.call_after_refresh(widget.run_action, action.action)
