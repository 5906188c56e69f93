"""Small modal questions: a line of text (a reason, a passphrase), a yes/no confirmation, and what to do with
promotions that hold secret-looking text."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from engram.tui.keymap import CANCEL, CONFIRM_ACTIONS, SECRET_ACTIONS, bindings


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
            with VerticalScroll(classes="question"):  # a long question scrolls; the y/n line stays in view
                yield Label(self.question, classes="dialog-title", markup=False)
            yield Label("y / enter yes · n / esc no", classes="hint")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class SecretsPrompt(ModalScreen[str | None]):
    """Asked before approving promotions that look like they hold a credential or personal data: redact it from
    the memory and from the proposal, then approve; reject them; or, when every one goes into a sensitive scope
    (encrypted on disk), approve them as they are. Escape changes nothing."""

    BINDINGS = bindings(SECRET_ACTIONS)

    def __init__(self, count: int, kinds: list[str], sensitive: bool) -> None:
        super().__init__()
        self.count, self.kinds, self.sensitive = count, kinds, sensitive

    def compose(self) -> ComposeResult:
        which = "This promotion looks like it holds" if self.count == 1 else f"{self.count} of them look like holding"
        with Vertical(classes="dialog"):
            yield Label(f"{which}: {', '.join(self.kinds)}.", classes="dialog-title", markup=False)
            yield Label("r  redact, then approve (memory and proposal)", markup=False)
            yield Label("x  reject", markup=False)
            if self.sensitive:
                yield Label("s  approve as it is (sensitive scope: encrypted)", markup=False)
            else:
                yield Label("   as it is: only into a sensitive scope", markup=False)
            yield Label("esc  cancel", classes="hint")

    def action_choose(self, answer: str) -> None:
        if answer != "sensitive" or self.sensitive:
            self.dismiss(answer)

    def action_cancel(self) -> None:
        self.dismiss(None)
