"""memoryd's thresholds against a person's decisions: the approval rate by DURA average, what memoryd would have
done with every decision under its current thresholds, under the ones being tried and under the suggested
ones, and the same per type or per source. ``w`` writes the tried ones to memoryd's config.toml after a
confirmation (audited, the old values in the event)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from engram.store.errors import StoreError
from engram.store.service import Store
from engram.tui.colours import role
from engram.tui.keymap import CALIBRATION_ACTIONS, bindings
from engram.tui.screens.prompt import Confirm
from engram.tui.threads import background, deliver
from engram.tui.widgets.calibration_plot import plot, sparkline

if TYPE_CHECKING:
    from engram.store.calibration import Decided, Outcome, Suggestion

GROUPINGS = ("all", "type", "source")
STEP = 0.01


class CalibrationScreen(Screen[None]):
    BINDINGS = bindings(CALIBRATION_ACTIONS)

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.decided: list[Decided] | None = None
        self.current = (0.85, 0.5)  # memoryd's, once read
        self.trying = self.current
        self.suggestion: Suggestion | None = None
        self.grouping = "all"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="calibration"):
            yield Static("Reading your decisions…", id="calibration-body")
        yield Footer(compact=True, show_command_palette=False)  # as the console's: its keys fit 80 columns

    def on_mount(self) -> None:
        self.read()

    @background("calibration")
    def read(self) -> None:
        from engram.store.calibration import current_thresholds, decisions, suggest

        try:
            current = current_thresholds()
            decided = decisions(self.store)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), severity="error")
            deliver(self, self.query_one("#calibration-body", Static).update, Text(str(exc)))
            return
        deliver(self, self.loaded, current, decided, suggest(decided))

    def loaded(self, current: tuple[float, float], decided: list[Decided], suggestion: Suggestion) -> None:
        self.current = self.trying = current
        self.decided, self.suggestion = decided, suggestion
        self.draw()

    def draw(self) -> None:
        from engram.store.calibration import bins, grouped, outcome

        decided = self.decided
        if decided is None:
            return
        promote, reject = self.trying
        kept = sum(d.kept for d in decided)
        parts: list[Text | Table] = [
            Text.assemble(
                ("Thresholds from your decisions", "bold"),
                f"  {len(decided)} decided: {kept} approved, {len(decided) - kept} rejected",
                ("  (memoryd's own approvals are left out)", "dim"),
            ),
        ]
        paint = lambda name: role(self, name)  # noqa: E731 - the theme's colour of a role, for the plots
        parts.append(plot(bins(decided), promote, reject, paint))
        if self.grouping != "all":
            groups = Table(box=None, padding=(0, 1, 0, 0), show_edge=False, header_style="bold")
            groups.add_column(self.grouping, width=11, no_wrap=True, overflow="ellipsis")
            groups.add_column("n", justify="right", width=4)
            groups.add_column("approval rate by DURA average", no_wrap=True)
            for name, group in grouped(decided, self.grouping).items():
                groups.add_row(name, str(len(group)), sparkline(bins(group), promote, reject, paint))
            parts.append(groups)
        columns = [("memoryd now", *self.current), ("trying", promote, reject)]
        if self.suggestion and self.suggestion.promote_at is not None and self.suggestion.reject_below is not None:
            columns.append(("suggested", self.suggestion.promote_at, self.suggestion.reject_below))
        parts.append(_table([(label, outcome(decided, p, r)) for label, p, r in columns]))
        if self.suggestion:
            parts.append(Text(f"Suggested: {self.suggestion.why}", style="dim"))
        self.query_one("#calibration-body", Static).update(Group(*parts))

    def action_move(self, which: str, delta: float) -> None:
        promote, reject = self.trying
        if which == "approve":
            promote = round(min(1.1, max(reject, promote + delta)), 2)
        else:
            reject = round(max(0.0, min(promote, reject + delta)), 2)
        self.trying = (promote, reject)
        self.draw()

    def action_suggested(self) -> None:
        s = self.suggestion
        if s is None or s.promote_at is None or s.reject_below is None:
            self.notify(s.why if s else "Still reading your decisions", severity="warning")
            return
        self.trying = (s.promote_at, s.reject_below)
        self.draw()

    def action_group(self) -> None:
        self.grouping = GROUPINGS[(GROUPINGS.index(self.grouping) + 1) % len(GROUPINGS)]
        self.draw()

    def action_write(self) -> None:
        promote, reject = self.trying
        if self.trying == self.current:
            self.notify("memoryd already uses these thresholds", timeout=3)
            return
        question = (
            f"Write auto_promote_threshold = {promote:.2f} and auto_reject_threshold = {reject:.2f} "
            f"(now {self.current[0]:.2f} and {self.current[1]:.2f}) to memoryd's config.toml?"
        )
        self.app.push_screen(Confirm(question), lambda yes: self.write(promote, reject) if yes else None)

    @background("calibration-write", exclusive=False)
    def write(self, promote: float, reject: float) -> None:
        from engram.store.calibration import set_thresholds

        try:
            details = set_thresholds(self.store, promote, reject)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), severity="error")
            return
        deliver(self, self.written, (promote, reject), details["path"])

    def written(self, thresholds: tuple[float, float], path: str) -> None:
        self.current = thresholds
        self.notify(f"memoryd's thresholds set in {path} (audited)", timeout=5)
        self.draw()

    def action_close(self) -> None:
        self.dismiss(None)


def _table(columns: list[tuple[str, Outcome]]) -> Table:
    """What memoryd would have done with the decisions, one column per pair of thresholds."""
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold", title_justify="left")
    table.title = "What memoryd would have done with them:"
    table.add_column("")
    for label, o in columns:
        table.add_column(f"{label}\n≥{o.promote_at:.2f} <{o.reject_below:.2f}", justify="right")
    rows = (
        ("approved, you approved", "kept_auto_approved"),
        ("approved, you rejected", "dropped_auto_approved"),
        ("rejected, you approved", "kept_auto_rejected"),
        ("rejected, you rejected", "dropped_auto_rejected"),
        ("left for you", "left_for_review"),
    )
    for label, attribute in rows:
        table.add_row(label, *(str(getattr(o, attribute)) for _, o in columns))
    return table
