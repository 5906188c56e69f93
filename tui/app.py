"""The engram console. For now one overview screen: what the root holds, and its drift report.

Counts come from the index at once; the full check (which reads every file) runs in a worker thread with a
progress bar, so a 100k-memory root opens without freezing. The review panes come with the console issue.
"""

from __future__ import annotations

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Header, ProgressBar, Static

from store.check import KINDS, Report, check
from store.errors import StoreError
from store.service import Store
from store.stats import Counts, counts


class EngramApp(App[None]):
    """Overview of one data root."""

    CSS_PATH = "engram.tcss"
    TITLE = "engram"
    BINDINGS = [
        Binding("r", "recheck", "Re-check"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.sub_title = str(store.layout.root)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="overview"):
            with Vertical(id="left"):
                yield Static("Loading…", id="summary")
                yield DataTable(id="scopes", cursor_type="row", zebra_stripes=True)
            with Vertical(id="right"):
                yield Static("Drift", classes="title")
                yield ProgressBar(id="progress", show_eta=False)
                yield DataTable(id="findings", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        if self.store.read_only:
            self.notify(self.store.index.read_only_reason or "read-only", title="Read-only", severity="warning",
                        timeout=15)
        self.action_recheck()

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

    def action_recheck(self) -> None:
        self.query_one("#progress", ProgressBar).update(total=None, progress=0)
        self.run_check()

    @work(thread=True, exclusive=True)
    def run_check(self) -> None:
        """Load the counts, then read every file and compare it with the index, all off the UI thread."""
        bar = self.query_one("#progress", ProgressBar)

        def progress(done: int, total: int) -> None:
            # call_from_thread waits for the UI: report about every 1%, not every file
            if done == total or done % max(1, total // 100) == 0:
                self.call_from_thread(bar.update, total=total, progress=done)

        try:
            self.call_from_thread(self.show_counts, counts(self.store))
            report = check(self.store, progress)
        except StoreError as exc:
            self.call_from_thread(self.notify, str(exc), title="Check failed", severity="error")
            return
        self.call_from_thread(self.show_report, report)

    def show_report(self, report: Report) -> None:
        table = self.query_one("#findings", DataTable)
        table.clear(columns=True)
        table.add_columns("count", "repair", "finding")
        for kind, n in sorted(report.counts().items(), key=lambda kv: -kv[1]):
            meaning, fixable = KINDS[kind]
            table.add_row(str(n), "yes" if fixable else "-", meaning)
        if not report.findings:
            table.add_row("0", "", f"no drift in {report.files} files")
