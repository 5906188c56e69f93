"""Small modal questions: a line of text (a reason, a passphrase) and a yes/no confirmation."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from engram.tui.keymap import CANCEL, CONFIRM_ACTIONS, bindings


class TextPrompt(ModalScreen[str | None]):
    """Ask for one line; Enter answers (possibly empty), Escape cancels (None)."""

    BINDINGS = bindings((CANCEL,))

    def __init__(self, question: str, placeholder: str = "", password: bool = False, value: str = "") -> None:
        super().__init__()
        self.question, self.placeholder, self.password, self.value = question, placeholder, password, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="dialog-title", markup=False)
            yield Input(self.value, placeholder=self.placeholder, password=self.password, id="answer")
            yield Label("enter ok · esc cancel", classes="hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """Ask yes or no; y or Enter is yes."""

    BINDINGS = bindings(CONFIRM_ACTIONS)

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="dialog-title", markup=False)
            yield Label("y / enter yes · n / esc no", classes="hint")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
