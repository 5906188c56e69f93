"""The poisoning lane of what memoryd already keeps: every long-term memory screened (in a worker, with a progress
bar, when the pane is first shown), the flagged ones listed with their lane, and those engram holds in quarantine;
``Q`` quarantines the one under the cursor (out of memoryd's injection and search), ``U`` releases it, ``x``
reveals its hidden text, ``c`` screens again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, ProgressBar, Static

from engram.store.errors import StoreError
from engram.tui.actions import attempt_in_worker
from engram.tui.keymap import POISON_ACTIONS, bindings
from engram.tui.panes.base import PaneBase
from engram.tui.screens.prompt import Confirm
from engram.tui.shared import Shared
from engram.tui.tables import FitTable, fit_columns
from engram.tui.threads import background, deliver, progress
from engram.tui.widgets.findings import findings_grid
from engram.tui.widgets.safe import plain

if TYPE_CHECKING:
    from engram.store.screening import Screened, Tally


class PoisonPane(PaneBase):
    BINDINGS = bindings(POISON_ACTIONS)
    LIST = "#poison-list"
    WATCHES = frozenset({"memories", "index"})

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="poison-pane")
        self.items: list[Screened] = []
        self.held: set[str] = set()  # slugs engram holds in quarantine
        self.screened = False  # a screen has finished (until then an empty list says nothing)

    def compose(self) -> ComposeResult:
        yield Static("Screening the memories memoryd keeps…", id="poison-summary")
        yield ProgressBar(id="poison-progress", show_eta=False)
        yield FitTable(id="poison-list", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="poison-detail"):
            yield Static("", id="poison-findings")

    def load(self) -> None:
        """Every memory is read: it starts when the pane is first looked at, not with the console."""
        self.action_rescreen()

    def follow(self) -> None:
        self.action_rescreen()

    def keys_changed(self, showing: bool) -> None:
        if self.loaded:
            self.action_rescreen()  # a scope just unlocked can be read now

    def action_rescreen(self) -> None:
        self.query_one("#poison-summary", Static).update("Screening the memories memoryd keeps…")
        self.screen_memories()

    @background("poison-screen")
    def screen_memories(self) -> None:
        from engram.store.quarantine import held_memories
        from engram.store.screening import Tally, screen_root  # the screen's rules: compiled here, on first use

        tally = Tally()
        try:
            with progress(self, "#poison-progress") as report:
                found = [i for i in screen_root(self.store, None, report, tally) if i.kind == "memory"]
            held = {h.slug for h in held_memories(self.store)}
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Screen", severity="error")
            return
        flagged = [i for i in found if i.screening.lane != "clean" or i.key in held]
        flagged.sort(key=lambda i: (i.key not in held, i.screening.lane != "quarantine", i.key))
        deliver(self, self.show, flagged, held, tally)

    @on(FitTable.Resized, "#poison-list")
    def setup_columns(self) -> None:
        fit_columns(
            self.query_one("#poison-list", DataTable),
            [("lane", "lane", 10), ("held", "held", 4)],
            ("title", "memory"),
        )
        self.fill()

    def show(self, items: list[Screened], held: set[str], tally: Tally) -> None:
        self.items, self.held, self.screened = items, held, True
        quarantined = sum(i.screening.lane == "quarantine" for i in items)
        review = sum(i.screening.lane == "review" for i in items)
        locked = f" · {tally.locked} in locked scopes not read (ctrl+u)" if tally.locked else ""
        self.query_one("#poison-summary", Static).update(
            Text(
                f"{tally.memories:,} memories screened: {quarantined} in quarantine, {review} to review, "
                f"{len(held)} held out of memoryd's reach{locked}"
            )
        )
        self.fill()

    def fill(self) -> None:
        table = self.query_one("#poison-list", DataTable)
        if not table.columns:
            return
        row = table.cursor_row
        table.clear()
        for item in self.items:
            table.add_row(item.screening.lane, "yes" if item.key in self.held else "", plain(item.title), key=item.key)
        if self.items:
            table.move_cursor(row=min(max(row, 0), len(self.items) - 1))
            self.show_findings(self.items[table.cursor_row])
        elif self.screened:
            self.query_one("#poison-findings", Static).update(Text("Nothing flagged.", style="dim"))

    @on(DataTable.RowHighlighted, "#poison-list")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.items):
            self.show_findings(self.items[event.cursor_row])

    def show_findings(self, item: Screened) -> None:
        text = Text.assemble((item.key, "bold"), "\n", (f"scope {item.scope_hash}", "dim"))
        if item.key in self.held:
            text.append("\nheld in quarantine: memoryd neither injects nor finds it (U releases it)")
        else:
            text.append("\nQ quarantines it: out of memoryd's injection and search")
        self.query_one("#poison-findings", Static).update(Group(text, findings_grid(item.screening.findings)))

    @property
    def current(self) -> Screened | None:
        row = self.query_one("#poison-list", DataTable).cursor_row
        return self.items[row] if 0 <= row < len(self.items) else None

    def action_quarantine(self) -> None:
        item = self.current
        if item is None:
            return
        if item.key in self.held:
            self.notify(f"{item.key} is already held (U releases it)", timeout=3)
            return
        question = (
            f"Quarantine '{item.title}'? memoryd will no longer inject it into agent sessions or find it in "
            "searches (its file says soft-forgotten; U releases it). (y/n)"
        )
        self.app.push_screen(Confirm(question), lambda yes: self.change(item.key, "quarantine") if yes else None)

    def action_release(self) -> None:
        item = self.current
        if item is None or item.key not in self.held:
            self.notify("put the cursor on a memory held in quarantine", timeout=3)
            return
        self.app.push_screen(
            Confirm(f"Release '{item.title}' back to memoryd? (y/n)"),
            lambda yes: self.change(item.key, "release") if yes else None,
        )

    @background("poison-change", exclusive=False)
    def change(self, slug: str, how: str) -> None:
        """Quarantine or release in a worker; the pane follows the store's change as every pane does."""
        from engram.store import quarantine

        def nothing() -> None:
            pass

        if how == "quarantine":
            rules = next((i.screening.rules for i in self.items if i.key == slug), None)
            said = f"quarantined {slug}: memoryd no longer injects or finds it"
            attempt_in_worker(self, lambda: quarantine.quarantine(self.store, slug, rules), said, nothing)
        else:
            attempt_in_worker(
                self,
                lambda: quarantine.release(self.store, slug),
                lambda state: f"released {slug}: {state} again",
                nothing,
            )

    def action_reveal(self) -> None:
        from engram.store.errors import StoreError as Failed
        from engram.store.memories import view_memory
        from engram.tui.screens.reveal import RevealScreen

        item = self.current
        if item is None:
            return
        try:
            doc = view_memory(self.store, item.key)
        except Failed as exc:
            self.notify(str(exc), title="Cannot open", severity="error")
            return
        front = doc.frontmatter
        self.app.push_screen(RevealScreen(item.key, front.title, list(front.triggers), doc.body, item.screening))
