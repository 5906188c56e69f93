"""The reveal view: a memory or proposal as it is written, with what a reader cannot see made visible (invisible
characters as ``⟨U+200B⟩``, tag characters spelled out, comments and styled-away text left in place, encoded
payloads decoded), beside the Markdown as an agent's renderer shows it, and the screen's findings above both."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Markdown, Static

from engram.store.screen import Screening
from engram.store.screen.reveal import annotated
from engram.store.secrets import masked
from engram.tui.keymap import REVEAL_ACTIONS, bindings
from engram.tui.widgets.safe import plain


class RevealScreen(ModalScreen[None]):
    BINDINGS = bindings(REVEAL_ACTIONS)

    def __init__(self, name: str, title: str, triggers: list[str], body: str, found: Screening | None) -> None:
        super().__init__()
        self.label, self.title_text, self.triggers, self.body, self.found = name, title, triggers, body, found

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="reveal"):
            yield Label(f"{self.label} revealed · esc closes", classes="dialog-title", markup=False)
            with VerticalScroll(id="reveal-findings"):
                yield Static(self.findings(), id="reveal-findings-text")
            with Horizontal(id="reveal-sides"):
                with VerticalScroll(id="reveal-raw"):
                    yield Label("as written, hidden text shown", classes="hint")
                    yield Static(plain(self.raw()), id="reveal-raw-text")
                with VerticalScroll(id="reveal-rendered"):
                    yield Label("as rendered", classes="hint")
                    yield Markdown(masked(self.body, "`{}`"), id="reveal-markdown")

    def raw(self) -> str:
        triggers = "\n".join(f"  - {annotated(t)}" for t in self.triggers)
        shown = f"title: {annotated(self.title_text)}\ntriggers:\n{triggers}\n\n{annotated(self.body)}"
        return masked(shown)  # a secret stays masked here as everywhere in the console

    def findings(self) -> Text:
        found = self.found
        if found is None or not found.findings:
            return Text("clean: the screen found nothing", style="dim")
        out = Text(f"{found.lane}:", style="bold")
        for f in found.findings:
            how = f", {f.revealed}" if f.revealed else ""
            out.append(f"\n  {f.rule} ({f.field}{how}): ")
            out.append_text(plain(f.excerpt, "dim"))
        return out

    def action_close(self) -> None:
        self.dismiss(None)
