"""Ask how long a read grant should last (memoryd's three durations) and, for a task, its id."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from engram.tui.keymap import GRANT_ACTIONS, bindings

CHOICES = (
    ("once", "once: the next 90 seconds"),
    ("session", "session: 8 hours"),
    ("task", "task: until revoked (optionally named by a task id)"),
)


class GrantScreen(ModalScreen[tuple[str, str | None] | None]):
    """Pick a duration (arrows or o/s/t, Enter); a task may then be named. Escape cancels."""

    BINDINGS = bindings(GRANT_ACTIONS)

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Grant agents read access to {self.scope}", classes="dialog-title", markup=False)
            yield OptionList(*(Option(text, id=key) for key, text in CHOICES), id="durations")
            yield Input(placeholder="task id (optional), then enter", id="task")
            yield Label("o once · s session · t task · enter ok · esc cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#task", Input).display = False
        self.query_one("#durations", OptionList).highlighted = 1

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.action_pick(event.option.id or "session")

    def action_pick(self, duration: str) -> None:
        if duration != "task":
            self.dismiss((duration, None))
            return
        task = self.query_one("#task", Input)
        task.display = True
        task.focus()

    @on(Input.Submitted, "#task")
    def _task_given(self, event: Input.Submitted) -> None:
        self.dismiss(("task", event.value.strip() or None))

    def action_cancel(self) -> None:
        self.dismiss(None)
