"""Edit a promotion before approving it: title, type, triggers and body."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select, TextArea

from engram.store.domain import MemoryType
from engram.store.errors import StoreError
from engram.store.external_edit import edit_in_editor
from engram.store.promotions import Edits
from engram.store.queue import PromotionDetail
from engram.tui.keymap import EDIT_ACTIONS, bindings


class EditScreen(ModalScreen[Edits | None]):
    """ctrl+s approves with the edits; Escape cancels."""

    BINDINGS = bindings(EDIT_ACTIONS)

    def __init__(self, detail: PromotionDetail, sensitive: bool) -> None:
        super().__init__()
        self.detail = detail
        self.sensitive = sensitive

    def compose(self) -> ComposeResult:
        d = self.detail
        kind = d.type if d.type in {t.value for t in MemoryType} else MemoryType.DECISION.value
        with Vertical(classes="dialog wide"):
            yield Label(f"Edit promotion #{d.id} before approving", classes="dialog-title")
            with Horizontal(classes="field"):  # a label beside each field; compact, so the body keeps the rows
                yield Label("title", classes="field-label")
                yield Input(d.title, id="title", placeholder="title", compact=True)
            with Horizontal(classes="field"):
                yield Label("type", classes="field-label")
                yield Select(
                    [(t.value, t.value) for t in MemoryType], value=kind, id="type", allow_blank=False, compact=True
                )
            with Horizontal(classes="field"):
                yield Label("triggers", classes="field-label")
                yield Input(", ".join(d.triggers), id="triggers", placeholder="comma separated", compact=True)
            yield Label("body", classes="field-label")
            yield TextArea(d.body, id="body", language="markdown")
            yield Label("ctrl+s approve as edited · ctrl+e body in $EDITOR · esc cancel", classes="hint")

    def action_save(self) -> None:
        title = self.query_one("#title", Input).value.strip()
        if not title:
            self.notify("A memory needs a title", severity="error")
            return
        triggers = [t.strip() for t in self.query_one("#triggers", Input).value.split(",") if t.strip()]
        self.dismiss(
            Edits(
                title=title,
                type=MemoryType(str(self.query_one("#type", Select).value)),
                triggers=triggers,
                body=self.query_one("#body", TextArea).text,
            )
        )

    def action_external(self) -> None:
        body = self.query_one("#body", TextArea)
        try:
            with self.app.suspend():
                body.text = edit_in_editor(body.text, self.sensitive)
        except StoreError as exc:
            self.notify(str(exc), severity="error")

    def action_cancel(self) -> None:
        self.dismiss(None)
