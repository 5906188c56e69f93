"""The decay pane: how memories fade per scope (or per type) as bars with their numbers, the lists a person acts
on (ttl running out, dim, soft-forgotten, recently recalled), revive / pin / ttl / forget on the cursor row, and
memoryd's sweep shown as a dry run before it is applied."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import DataTable, ProgressBar, Static

from engram.store.decay import (
    MOVED,
    Step,
    apply_sweep,
    distribution,
    forget_now,
    listing,
    plan_sweep,
    revive,
    set_ttl,
)
from engram.store.domain import DECAY_LISTS
from engram.tui.actions import attempt, attempt_in_worker
from engram.tui.colours import Paint, role
from engram.tui.keymap import DECAY_ACTIONS, bindings
from engram.tui.messages import OpenMemory
from engram.tui.panes.base import PaneBase
from engram.tui.screens.prompt import Confirm, TextPrompt
from engram.tui.shared import Shared
from engram.tui.tables import PlainTable
from engram.tui.threads import background, deliver, progress

STATES = (("alive", "good"), ("dim", "warn"), ("soft-forgotten", "other"), (MOVED, "bad"))  # colour roles
BAR = 30


def stacked_bar(counts: Counter[str], paint: Paint, width: int = BAR) -> Text:
    """The states of a group as one bar; the numbers sit in their own columns, so colour only repeats them."""
    total = sum(counts.values()) or 1
    bar = Text()
    for (state, style), mark in zip(STATES, "█▓▒░", strict=True):
        bar.append(mark * round(width * counts.get(state, 0) / total), style=paint(style))
    return bar


class DecayPane(PaneBase):
    BINDINGS = bindings(DECAY_ACTIONS)
    LIST = "#decay-list"
    WATCHES = frozenset({"memories", "index"})

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="decay-pane")
        self.by_type = False
        self.kind = DECAY_LISTS[0]
        self.days = 14

    def compose(self) -> ComposeResult:
        yield Static("", id="decay-title")
        yield PlainTable(id="decay-dist", cursor_type="none", zebra_stripes=True)
        yield Static("", id="decay-list-title")
        with Horizontal(id="decay-bottom"):
            yield PlainTable(id="decay-list", cursor_type="row", zebra_stripes=True)
        yield ProgressBar(id="decay-progress", show_eta=False)

    def load(self) -> None:
        self.reload()

    def reload(self) -> None:
        self.show_distribution()
        self.show_list()

    # ------------------------------------------------------------------ the distribution

    def show_distribution(self) -> None:
        groups: dict[str, Counter[str]] = {}
        for (scope, mtype), counts in distribution(self.store).items():
            groups.setdefault(mtype if self.by_type else scope, Counter()).update(counts)
        table = self.query_one("#decay-dist", DataTable)
        table.clear(columns=True)
        table.add_columns("type" if self.by_type else "scope", *(s for s, _ in STATES), "")
        for name, counts in sorted(groups.items(), key=lambda kv: -sum(kv[1].values())):
            table.add_row(
                name, *(str(counts.get(s, 0)) for s, _ in STATES), stacked_bar(counts, lambda name: role(self, name))
            )
        self.query_one("#decay-title", Static).update(
            f"[b]Decay by {'type' if self.by_type else 'scope'}[/b]  (█ alive ▓ dim ▒ soft-forgotten ░ moved to "
            "forgotten/) · t by type/scope · s sweep"
        )

    def action_toggle_group(self) -> None:
        self.by_type = not self.by_type
        self.show_distribution()

    # ------------------------------------------------------------------ the lists

    def show_list(self) -> None:
        entries = listing(self.store, self.kind, self.days)
        table = self.query_one("#decay-list", DataTable)
        keep = self.current
        table.clear(columns=True)
        table.add_columns("state", "ttl", "expires", "recalled", "title")
        for e in entries:
            table.add_row(
                e.state,
                "pinned" if e.ttl_days is None else f"{e.ttl_days} d",
                e.expires or "",
                f"{e.recall_count}× {(e.last_recalled_at or '')[:10]}" if e.recall_count else "",
                e.title,
                key=e.slug,
            )
        if keep is not None and keep in table.rows:  # the store changed under the list: the cursor stays put
            table.move_cursor(row=table.get_row_index(keep))
        what = {
            "expiring": f"ttl running out within {self.days} days (overdue first)",
            "dim": "dim",
            "soft-forgotten": "soft-forgotten (not yet moved)",
            "recalled": "recently recalled",
        }[self.kind]
        self.query_one("#decay-list-title", Static).update(
            f"[b]{len(entries)} {what}[/b] · l next list · n days · r revive · p pin · T ttl · f forget"
        )

    def action_next_list(self) -> None:
        self.kind = DECAY_LISTS[(DECAY_LISTS.index(self.kind) + 1) % len(DECAY_LISTS)]
        self.show_list()

    def action_days(self) -> None:
        def given(text: str | None) -> None:
            if text and text.strip().isdigit() and int(text) > 0:
                self.days, self.kind = int(text), "expiring"
                self.show_list()
            elif text:
                self.notify("a number of days, please", severity="error")

        self.app.push_screen(TextPrompt("Show ttls running out within how many days?", value=str(self.days)), given)

    @property
    def current(self) -> str | None:
        table = self.query_one("#decay-list", DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def _act(self, act, done: str) -> None:  # noqa: ANN001 (a store call on the current slug)
        slug = self.current
        if slug is None:
            self.notify("the list is empty", timeout=3)
            return
        attempt(self, lambda: act(slug), f"{slug}: {done}", self.reload)

    def action_revive(self) -> None:
        self._act(lambda slug: revive(self.store, slug), "alive again, recall stamped")

    def action_pin(self) -> None:
        self._act(lambda slug: set_ttl(self.store, slug, None), "pinned (no ttl)")

    def action_ttl(self) -> None:
        def given(text: str | None) -> None:
            if text is None:
                return
            if not text.strip().isdigit():
                self.notify("a number of days, please", severity="error")
                return
            self._act(lambda slug: set_ttl(self.store, slug, int(text)), f"ttl {int(text)} days")

        self.app.push_screen(TextPrompt("ttl in days"), given)

    def action_forget(self) -> None:
        slug = self.current
        if slug is not None:
            self.app.push_screen(
                Confirm(f"Forget {slug} now (soft-forgotten, moved to forgotten/)? (y/n)"),
                lambda yes: self._act(lambda s: forget_now(self.store, s), "forgotten") if yes else None,
            )

    # ------------------------------------------------------------------ the sweep

    def action_sweep(self) -> None:
        """A dry run first: what memoryd's rule would change now, and a question before anything does."""
        steps = plan_sweep(self.store)
        if not steps:
            self.notify("a sweep now would change nothing", timeout=4)
            return
        moves = Counter(f"{s.before} → {s.after}" for s in steps)
        summary = ", ".join(f"{n} {what}" for what, n in moves.most_common())
        first = "\n".join(f"  {s.before} → {s.after}: {s.title[:60]} ({s.age_days} d)" for s in steps[:8])
        self.app.push_screen(
            Confirm(
                f"Sweep (dry run): {len(steps)} memories would change: {summary}.\n{first}"
                f"{chr(10) + '  …' if len(steps) > 8 else ''}\nApply it? (y/n)"
            ),
            lambda yes: self.run_sweep(steps) if yes else None,
        )

    @background("decay-sweep", exclusive=False)
    def run_sweep(self, steps: list[Step]) -> None:
        with progress(self, "#decay-progress") as report:
            swept = attempt_in_worker(
                self,
                lambda: apply_sweep(self.store, steps, report),
                lambda done: f"swept: {done} memories changed",
                self.reload,
            )
        if not swept:  # the batches before the one that stopped it are applied: shown
            deliver(self, self.reload)

    @on(DataTable.RowSelected, "#decay-list")
    def _open(self, event: DataTable.RowSelected) -> None:
        self.post_message(OpenMemory(str(event.row_key.value)))
