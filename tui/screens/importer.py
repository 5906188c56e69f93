"""Import from another memory system: pick the system and its path, read a preview (counts per type and scope,
the first items, what is malformed, skipped or refused, and secret-looking strings), then import with a
progress bar. Reading and writing run in workers; nothing is written before the person presses Import."""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, DataTable, Input, Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from engram.store.errors import StoreError
from engram.store.importers import IMPORTERS, importer
from engram.store.importers.base import Options
from engram.store.importers.run import ImportResult, Preview, apply_import, preview
from engram.store.service import Store
from engram.tui.colours import role
from engram.tui.keymap import IMPORT_ACTIONS, bindings
from engram.tui.tables import PlainTable
from engram.tui.threads import background, deliver, progress

SYSTEMS = {
    "openrelix": "OpenRelix state root",
    "cognirelay": "CogniRelay repository",
    "codex": "Codex home (~/.codex)",
    "eternego": "eternego persona home/",
}
SHOWN = 12  # findings listed per kind; the rest are counted


class ImportScreen(ModalScreen[ImportResult | None]):
    """Escape goes back from the preview to the form, and from the form out."""

    BINDINGS = bindings(IMPORT_ACTIONS)

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.plan: Preview | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="import-dialog"):
            yield Label("Import into the review queue", classes="dialog-title")
            with Vertical(id="import-form"):
                yield OptionList(
                    *(Option(f"{name}  [dim]{what}[/]", id=name) for name, what in SYSTEMS.items()), id="import-system"
                )
                yield Input(placeholder="path to its files, then enter", id="import-path")
                yield Input(
                    placeholder="scope (optional): a scope hash, global, or a project directory", id="import-scope"
                )
                with Horizontal(id="import-flags"):
                    yield Checkbox(
                        "read what it keeps aside",
                        id="import-everything",
                        tooltip="OpenRelix rows with injection_policy never; archived CogniRelay capsules",
                    )
                    yield Checkbox(
                        "redact secrets",
                        id="import-redact",
                        tooltip="replace secret-looking strings before anything is written",
                    )
            yield ProgressBar(id="import-progress", show_eta=False)
            yield Static("", id="import-summary")
            with Horizontal(id="import-preview"):
                yield PlainTable(id="import-counts", cursor_type="row", zebra_stripes=True)
                with VerticalScroll(id="import-findings-box"):
                    yield Static("", id="import-findings")
            yield Button("Import", id="import-go", variant="primary")
            yield Label("pick a system · type its path · enter previews · esc back", id="import-hint", classes="hint")

    def on_mount(self) -> None:
        for hidden in ("#import-progress", "#import-preview", "#import-go"):
            self.query_one(hidden).display = False
        self.query_one("#import-system", OptionList).highlighted = 0

    @on(OptionList.OptionSelected, "#import-system")
    def _system(self) -> None:
        self.query_one("#import-path", Input).focus()

    @on(Input.Submitted)
    def _submitted(self) -> None:
        path = self.query_one("#import-path", Input).value.strip()
        if not path:
            self.notify("type the path of the system's files", timeout=3)
            self.query_one("#import-path", Input).focus()
            return
        system = self.query_one("#import-system", OptionList).highlighted_option
        options = Options(
            scope=self.query_one("#import-scope", Input).value.strip() or None,
            everything=self.query_one("#import-everything", Checkbox).value,
            redact=self.query_one("#import-redact", Checkbox).value,
        )
        self.read_preview(system.id if system and system.id in IMPORTERS else "codex", path, options)

    @background("import")
    def read_preview(self, system: str, path: str, options: Options) -> None:
        deliver(self, self._say, f"reading {system} at {path}…")
        try:
            with progress(self, "#import-progress"):  # how many items there are is known only at the end
                plan = preview(
                    self.store, importer(system), path, options, lambda n: deliver(self, self._read_so_far, n)
                )
        except StoreError as exc:
            deliver(self, self._failed, str(exc))
            return
        deliver(self, self.show_preview, plan)

    def _say(self, text: str) -> None:
        self.query_one("#import-summary", Static).update(escape(text))

    def _read_so_far(self, n: int) -> None:
        self.query_one("#import-summary", Static).update(f"read {n:,} items…")

    def _failed(self, message: str) -> None:
        self.query_one("#import-summary", Static).update(Text(message, style=role(self, "bad", bold=True)))
        self.notify(message, title="Nothing imported", severity="error")

    def show_preview(self, plan: Preview) -> None:
        self.plan = plan
        self.query_one("#import-form").display = False
        self.query_one("#import-preview").display = True
        self.query_one("#import-summary", Static).update(
            f"[b]{plan.system}[/b]: {len(plan.sessions):,} sessions, {len(plan.promotions):,} pending promotions, "
            f"{len(plan.supersedes):,} proposed supersedes to write · {plan.already:,} already imported · "
            f"{len(plan.malformed):,} malformed · {len(plan.skipped):,} skipped · {len(plan.refused):,} refused · "
            f"[b{' yellow' if plan.secrets else ''}]{len(plan.secrets):,} secret-looking[/]"
        )
        table = self.query_one("#import-counts", DataTable)
        table.clear(columns=True)
        table.add_columns("type", "scope", "count")
        for (kind, scope), n in plan.counts().items():
            table.add_row(kind, scope, f"{n:,}")
        self.query_one("#import-findings", Static).update(_findings(plan))
        button = self.query_one("#import-go", Button)
        button.label = f"Import {plan.items:,} items" if plan.items else "Nothing new to import"
        button.disabled = not plan.items
        button.display = True
        self.query_one("#import-hint", Label).update("enter imports · esc back to the form")
        (button if plan.items else table).focus()

    @on(Button.Pressed, "#import-go")
    def _go(self) -> None:
        if self.plan is not None and self.plan.items:
            self.query_one("#import-go", Button).disabled = True
            self.write(self.plan)

    @background("import-write", exclusive=False)
    def write(self, plan: Preview) -> None:
        deliver(self, self._say, f"importing {plan.items:,} items…")
        try:
            with progress(self, "#import-progress") as report:
                result = apply_import(self.store, plan, report)
        except StoreError as exc:
            deliver(self, self._failed, f"{exc} (what was written stays; running it again finishes)")
            return
        deliver(self, self.dismiss, result)

    def action_back(self) -> None:
        if self.plan is not None and not self.query_one("#import-progress").display:
            self.plan = None
            self.query_one("#import-form").display = True
            self.query_one("#import-preview").display = False
            self.query_one("#import-go").display = False
            self.query_one("#import-summary", Static).update("")
            self.query_one("#import-hint", Label).update("pick a system · type its path · enter previews · esc back")
            self.query_one("#import-path", Input).focus()
            return
        if not self.query_one("#import-progress").display:
            self.dismiss(None)


def _findings(plan: Preview) -> str:
    """The first items, then everything a person should look at before importing (markup-escaped)."""
    parts = ["[b]First items[/b]"] + [
        f"  {escape(f'[{kind}]')} {escape(title)}  [dim]{escape(origin)}[/]" for kind, title, origin in plan.first()
    ]
    sections = (
        ("Secret-looking strings", [f"{h.kind} {h.masked} in {o}" for o, _, h in plan.secrets]),
        ("Malformed (skipped)", [f"{m.origin}: {m.reason}" for m in plan.malformed]),
        ("Refused", [f"{o}: {why}" for o, why in plan.refused]),
        ("Kept aside (esc, then tick 'read what it keeps aside')", [f"{k.origin}: {k.reason}" for k in plan.skipped]),
    )
    for title, lines in sections:
        if lines:
            parts += ["", f"[b]{title}[/b] ({len(lines):,})"] + [f"  {escape(x)}" for x in lines[:SHOWN]]
            if len(lines) > SHOWN:
                parts.append(f"  … and {len(lines) - SHOWN:,} more (engram import --dry-run --json lists all)")
    return "\n".join(parts)
