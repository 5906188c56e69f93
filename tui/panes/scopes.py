"""The scopes pane, for now: what the root holds per scope, and the drift report of `engram check`.
(Marking, encrypting, unlocking and grants come with the sensitive-scopes work.)"""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, ProgressBar, Static

from store.check import KINDS, Report, check
from store.errors import StoreError
from store.service import Store
from store.stats import Counts, counts
from tui.keymap import SCOPES_ACTIONS, bindings


class ScopesPane(Vertical):
    BINDINGS = bindings(SCOPES_ACTIONS)

    def __init__(self, store: Store) -> None:
        super().__init__(id="scopes-pane")
        self.store = store
        self.checked = False

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="scopes-left"):
                yield Static("Loading…", id="summary")
                yield DataTable(id="scopes", cursor_type="row", zebra_stripes=True)
            with Vertical(id="scopes-right"):
                yield Static("Drift between files and index", classes="title")
                yield ProgressBar(id="progress", show_eta=False)
                yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)

    def on_show(self) -> None:
        """The check reads every file: it starts when the pane is first looked at, not with the console
        (a background thread still takes a share of the interpreter from the keys being typed elsewhere)."""
        if not self.checked:
            self.checked = True
            self.action_recheck()

    def action_recheck(self) -> None:
        self.query_one("#progress", ProgressBar).update(total=None, progress=0)
        self.run_check()

    @work(thread=True, exclusive=True, group="scopes-check")
    def run_check(self) -> None:
        """Load the counts, then read every file and compare it with the index, all off the UI thread."""
        bar = self.query_one("#progress", ProgressBar)

        def progress(done: int, total: int) -> None:
            # call_from_thread waits for the UI: report about every 1%, not every file
            if done == total or done % max(1, total // 100) == 0:
                self.app.call_from_thread(bar.update, total=total, progress=done)

        try:
            self.app.call_from_thread(self.show_counts, counts(self.store))
            report = check(self.store, progress)
        except StoreError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="Check failed", severity="error")
            return
        self.app.call_from_thread(self.show_report, report)

    def show_counts(self, c: Counts) -> None:
        promos = ", ".join(f"{n} {s}" for s, n in sorted(c.promotions.items())) or "none"
        decay = ", ".join(f"{n:,} {s}" for s, n in c.by_decay.items())
        self.query_one("#summary", Static).update(
            f"[b]{c.memories:,} memories[/b]  ({c.encrypted:,} encrypted, {decay})\n"
            f"promotions: {promos}\n"
            f"graph: {c.entities} entities, {c.relations} relations, {c.supersedes} supersedes\n"
            f"sensitive scopes: {', '.join(c.sensitive_scopes) or 'none'}")
        table = self.query_one("#scopes", DataTable)
        table.clear(columns=True)
        table.add_columns("scope", "memories", "sensitive")
        for scope, n in sorted(c.by_scope.items(), key=lambda kv: -kv[1]):
            table.add_row(scope, str(n), "yes" if scope in c.sensitive_scopes else "")

    def show_report(self, report: Report) -> None:
        table = self.query_one("#findings", DataTable)
        table.clear(columns=True)
        table.add_columns("count", "repair", "finding")
        for kind, n in sorted(report.counts().items(), key=lambda kv: -kv[1]):
            meaning, fixable = KINDS[kind]
            table.add_row(str(n), "yes" if fixable else "-", meaning)
        if not report.findings:
            table.add_row("0", "", f"no drift in {report.files} files")
