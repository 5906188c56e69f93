"""The scopes pane: every scope with a readable label, what it holds, whether it is sensitive and unlocked, its
read grant and what leaks; marking and unmarking sensitive (confirmed, with a progress bar), grants; and the
drift report of `engram check`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, ProgressBar, Static

from engram.store.drift.check import KINDS, Finding, Report, check
from engram.store.drift.seen import acknowledge
from engram.store.errors import PassphraseUnconfirmed, StoreError
from engram.store.scopes import ScopeInfo, default_discovery_dirs, scopes, set_label
from engram.store.sensitive.convert import Progress, mark_sensitive, unmark_sensitive
from engram.store.sensitive.grants import Grant, issue_grant, revoke_grant
from engram.store.sensitive.rekey import RESTART_MEMORYD, rekey_passphrase, rekey_random
from engram.store.stats import Counts, counts
from engram.tui.actions import attempt, attempt_in_worker, refused, succeeded
from engram.tui.keymap import SCOPES_ACTIONS, bindings
from engram.tui.messages import KeysChanged
from engram.tui.panes.base import PaneBase
from engram.tui.screens.grant import GrantScreen
from engram.tui.screens.prompt import Confirm, TextPrompt
from engram.tui.screens.unlock import ask_new_passphrase, ask_unlock
from engram.tui.shared import Shared
from engram.tui.tables import FitTable, PlainTable, fit_columns
from engram.tui.threads import background, deliver, deliver_outcome, progress


class ScopesPane(PaneBase):
    BINDINGS = bindings(SCOPES_ACTIONS)
    LIST = "#scope-list"
    WATCHES = frozenset({"memories", "index"})

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="scopes-pane")
        self.infos: list[ScopeInfo] = []
        self.report: Report | None = None  # the last drift check's

    def compose(self) -> ComposeResult:
        with Horizontal(id="scopes-body"):
            with Vertical(id="scopes-left"):
                yield Static("Loading…", id="summary")
                yield FitTable(id="scope-list", cursor_type="row", zebra_stripes=True)
                yield ProgressBar(id="scope-progress", show_eta=True)
            with VerticalScroll(id="scopes-right"):
                yield Static("", id="scope-detail")
                yield Static("Drift between files and index", classes="title")
                yield ProgressBar(id="progress", show_eta=False)
                yield PlainTable(id="findings", cursor_type="row", zebra_stripes=True)

    def load(self) -> None:
        """The check reads every file: it starts when the pane is first looked at, not with the console
        (a background thread still takes a share of the interpreter from the keys being typed elsewhere)."""
        self.action_recheck()

    def follow(self) -> None:
        """The counts and the list again; the drift check runs again on r."""
        self.load_scopes()

    def keys_changed(self, showing: bool) -> None:
        if self.loaded:
            self.load_scopes()

    # ------------------------------------------------------------------ the list of scopes

    @background("scopes-list")
    def load_scopes(self) -> None:
        """Labels may need a look at session files and project directories: off the UI thread."""
        try:
            infos = scopes(self.store, default_discovery_dirs())
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Scopes", severity="error")
            return
        deliver(self, self.show_scopes, infos)

    @on(FitTable.Resized, "#scope-list")
    def setup_columns(self) -> None:
        fit_columns(
            self.query_one("#scope-list", DataTable),
            [("memories", "memories", 8), ("sensitive", "sensitive", 16), ("grant", "grant", 10)],
            ("scope", "scope"),
        )
        self.show_scopes(self.infos)

    def show_scopes(self, infos: list[ScopeInfo]) -> None:
        self.infos = infos
        table = self.query_one("#scope-list", DataTable)
        row = table.cursor_row
        table.clear()
        if not table.columns:
            return
        now = self.store.now()
        for info in infos:
            state = ("locked" if info.locked else "unlocked") if info.sensitive else ""
            state = f"yes, {state}" if info.sensitive else ""
            if info.findings():
                state += " !"
            grant = (
                ""
                if info.grant is None
                else "bad file"
                if isinstance(info.grant, str)
                else (info.grant.duration if info.grant.valid(now) else "expired")
            )
            name = Text(PurePath(info.label).name or info.label) if info.label else Text()
            name.append(("  " if info.label else "") + info.scope_hash, style="dim")
            table.add_row(f"{info.memories:,}", state, grant, name, key=info.scope_hash)
        if infos:
            table.move_cursor(row=min(row, len(infos) - 1))
            self.show_detail(infos[table.cursor_row])

    @on(DataTable.RowHighlighted, "#scope-list")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.infos):
            self.show_detail(self.infos[event.cursor_row])

    def show_detail(self, info: ScopeInfo) -> None:
        now = self.store.now()
        lines = [
            f"[b]{escape(info.name)}[/b]",
            f"scope {info.scope_hash}"
            + (f" · label from {info.label_from}" if info.label else " · no label found (l names it)"),
            f"{info.memories:,} memories: " + ", ".join(f"{n} {t}" for t, n in info.by_type.items()),
        ]
        if info.sensitive:
            lock = "LOCKED (ctrl+u unlocks)" if info.locked else "unlocked (ctrl+l locks every scope)"
            lines.append(f"sensitive · {info.encrypted:,} encrypted, {info.bound:,} bound by engram · {lock}")
        else:
            lines.append("not sensitive (m marks it and encrypts every memory)")
        if isinstance(info.grant, Grant):
            lines.append(f"grant: {info.grant.describe(now)}, issued by {info.grant.issued_by or '?'}")
        elif info.grant is None and info.sensitive:
            lines.append("grant: none (i issues one)")
        lines += [f"[b]! [/b]{escape(f)}" for f in info.findings()]
        self.query_one("#scope-detail", Static).update("\n".join(lines))

    @property
    def current(self) -> ScopeInfo | None:
        row = self.query_one("#scope-list", DataTable).cursor_row
        return self.infos[row] if 0 <= row < len(self.infos) else None

    # ------------------------------------------------------------------ actions

    def action_mark(self) -> None:
        info = self.current
        if info is None:
            return
        if info.sensitive and not info.plaintext_files:
            self.notify(f"{info.name} is already sensitive and every memory is encrypted", timeout=4)
            return
        todo = info.plaintext_files if info.sensitive else info.memories
        question = (
            f"Mark {info.name} sensitive and encrypt its {todo:,} memories? Each plaintext file is zeroed "
            "and removed once its encrypted copy has been read back. (y/n)"
        )
        self._confirmed_with_key(info, question, lambda: self.convert(info.scope_hash, True))

    def action_unmark(self) -> None:
        info = self.current
        if info is None or not info.sensitive:
            self.notify("this scope is not sensitive", timeout=3)
            return
        question = (
            f"Unmark {info.name}: decrypt its {info.encrypted:,} memories back to plaintext files and "
            "stop treating it as sensitive? (y/n)"
        )
        self._confirmed_with_key(info, question, lambda: self.convert(info.scope_hash, False))

    def _confirmed_with_key(self, info: ScopeInfo, question: str, then: Callable[[], None]) -> None:
        """Ask first; then make sure the key is at hand (unlocking if needed) before any work starts."""

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            if self.store.keys.can_open(info.scope_hash):
                then()
            elif self.store.keys.key_source == "passphrase" and not any(i.encrypted for i in self.infos):
                ask_new_passphrase(self, self.store, then)  # nothing encrypted yet to check a typed one against
            else:
                ask_unlock(self, self.store, [info.scope_hash], then)

        self.app.push_screen(Confirm(question), answered)

    @background("scopes-convert", exclusive=False)
    def convert(self, scope_hash: str, encrypt: bool) -> None:
        try:
            with progress(self, "#scope-progress") as report:
                convert = mark_sensitive if encrypt else unmark_sensitive
                done: Progress = convert(self.store, scope_hash, report)
        except PassphraseUnconfirmed:  # given once, from the environment: typed a second time, it is taken
            deliver(self, ask_new_passphrase, self, self.store, lambda: self.convert(scope_hash, encrypt))
        except StoreError as exc:  # what was converted before it stopped stays converted: shown, and told
            deliver_outcome(self, refused, self, exc, "Nothing more changed")
            deliver_outcome(self, succeeded, self, "the scope's list is up to date", lambda: self.reloaded(True))
        else:
            verb = "encrypted" if encrypt else "decrypted"
            said = f"scope {scope_hash}: {verb} {done.done:,} memories"
            deliver_outcome(self, succeeded, self, said, lambda: self.reloaded(True), 5)

    def action_label(self) -> None:
        info = self.current
        if info is None:
            return

        def named(text: str | None) -> None:
            if text is None:
                return
            attempt(
                self, lambda: set_label(self.store, info.scope_hash, text), f"{info.scope_hash}: named", self.reloaded
            )

        self.app.push_screen(
            TextPrompt(
                f"Name for scope {info.scope_hash} (empty: no name)",
                value=(info.label or "") if info.label_from == "you" else "",
            ),
            named,
        )

    def action_rekey(self) -> None:
        """A new key. Passphrase mode: one new passphrase for every sensitive scope (memoryd keeps one), typed
        twice. Keyring mode: a new random key for this scope. Every file is re-encrypted in a worker."""
        info = self.current
        if info is None or not info.sensitive:
            self.notify("only a sensitive scope has a key to change", timeout=3)
            return
        if self.store.keys.key_source == "random":
            self._confirmed_with_key(
                info,
                f"Re-encrypt the {info.encrypted:,} memories of {info.name} under a new "
                "random key, kept in the OS keyring for memoryd? (y/n)",
                lambda: self.run_rekey(info.scope_hash, None),
            )
            return
        sensitive = [i for i in self.infos if i.sensitive]

        def second(first: str | None) -> None:
            if first:
                self.app.push_screen(
                    TextPrompt("The new passphrase again", password=True), lambda again: self.start_rekey(first, again)
                )

        def go() -> None:
            self.app.push_screen(TextPrompt("New master passphrase", password=True), second)

        self._confirmed_with_key(
            info,
            f"memoryd keeps one passphrase for every sensitive scope: re-encrypt all {len(sensitive)} of them "
            f"({sum(i.encrypted for i in sensitive):,} memories) under a new passphrase? memoryd then needs "
            "it for every scope. (y/n)",
            go,
        )

    def start_rekey(self, first: str, again: str | None) -> None:
        if again != first:
            self.notify("the two passphrases differ: nothing changed", severity="error")
            return
        self.run_rekey(None, first)

    @background("scopes-convert", exclusive=False)
    def run_rekey(self, scope_hash: str | None, passphrase: str | None) -> None:
        """``passphrase``: every sensitive scope to it; else ``scope_hash`` to a new random key."""
        try:
            with progress(self, "#scope-progress") as report:
                if passphrase is not None:
                    done = rekey_passphrase(self.store, passphrase, lambda _scope, n, total: report(n, total))
                else:
                    done = rekey_random(self.store, scope_hash or "", report)
        except StoreError as exc:  # the scopes rekeyed before it stopped stay so: shown, and told
            deliver_outcome(self, refused, self, exc, "Rekey stopped")
            deliver_outcome(self, succeeded, self, "the scope's list is up to date", lambda: self.reloaded(True))
        else:
            where = f"{len(done.scopes)} scopes" if passphrase is not None else f"scope {scope_hash}"
            restart = f". {RESTART_MEMORYD}" if passphrase is not None else ""
            said = f"{where}: {done.done:,} memories under the new key{restart}"
            deliver_outcome(self, succeeded, self, said, lambda: self.reloaded(True), 15)

    def action_grant(self) -> None:
        info = self.current
        if info is None:
            return
        if not info.sensitive:
            self.notify("agents read a scope that is not sensitive without a grant", timeout=4)
            return

        def chosen(answer: tuple[str, str | None] | None) -> None:
            if answer is None:
                return
            try:
                grant = issue_grant(self.store, info.scope_hash, answer[0], answer[1], info.label)
            except StoreError as exc:
                refused(self, exc, "No grant")
                return
            succeeded(self, f"{info.name}: grant {grant.describe(self.store.now())}", self.reloaded, 4)

        self.app.push_screen(GrantScreen(info.name), chosen)

    def action_revoke(self) -> None:
        info = self.current
        if info is None or info.grant is None:
            self.notify("this scope has no grant to revoke", timeout=3)
            return

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            attempt(
                self, lambda: revoke_grant(self.store, info.scope_hash), f"{info.name}: grant revoked", self.reloaded
            )

        self.app.push_screen(Confirm(f"Revoke the read grant of {info.name}? (y/n)"), answered)

    def reloaded(self, files_changed: bool = False) -> None:
        """Reload the list; when memories were encrypted or decrypted, the queue's lock marks and the search
        index follow (the same as after an unlock)."""
        self.load_scopes()
        if files_changed:
            self.post_message(KeysChanged())

    # ------------------------------------------------------------------ the drift check

    def action_recheck(self) -> None:
        self.load_scopes()
        self.run_check()

    @background("scopes-check")
    def run_check(self) -> None:
        """Load the counts, then read every file and compare it with the index, all off the UI thread."""
        try:
            deliver(self, self.show_counts, counts(self.store))
            with progress(self, "#progress") as report:
                found = check(self.store, report)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Check failed", severity="error")
            return
        deliver(self, self.show_report, found)

    def action_seen(self) -> None:
        """Mark the findings of the kind under the drift table's cursor as seen by a person (audited): true, nothing
        repair can fix, and no longer news until they change (see engram.store.drift.seen)."""
        table = self.query_one("#findings", DataTable)
        if self.report is None or not table.row_count:
            return
        kind = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        if kind not in KINDS:
            return
        try:
            found = self.report.selected(kind)
        except StoreError as exc:
            self.notify(str(exc), title="Mark seen", severity="warning")
            return
        if not found:
            self.notify(f"every {kind} finding is marked seen already", title="Mark seen")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.mark_seen(kind, found)

        many = f"{len(found)} {kind} finding{'s' if len(found) != 1 else ''}"
        self.app.push_screen(
            Confirm(f"Mark {many} as seen? They stay listed, marked seen, until they change."), answered
        )

    @background("scopes-seen", exclusive=False)
    def mark_seen(self, kind: str, found: list[Finding]) -> None:
        seen = [(f.kind, f.ident, f.fingerprint) for f in found]
        attempt_in_worker(
            self,
            lambda: acknowledge(self.store, seen, kind),
            f"marked {len(found)} {kind} finding(s) seen",
            self.run_check,
        )

    def show_counts(self, c: Counts) -> None:
        promos = ", ".join(f"{n} {s}" for s, n in sorted(c.promotions.items())) or "none"
        decay = ", ".join(f"{n:,} {s}" for s, n in c.by_decay.items())
        self.query_one("#summary", Static).update(
            f"[b]{c.memories:,} memories[/b]  ({c.encrypted:,} encrypted, {decay})\n"
            f"promotions: {promos}\n"
            f"graph: {c.entities} entities, {c.relations} relations, {c.supersedes} supersedes"
        )

    def show_report(self, report: Report) -> None:
        self.report = report
        table = self.query_one("#findings", DataTable)
        table.clear(columns=True)
        table.add_columns("count", "repair", "finding")
        for kind, n in sorted(report.counts().items(), key=lambda kv: -kv[1]):
            meaning, fixable = KINDS[kind]
            seen = sum(f.seen for f in report.of(kind))
            table.add_row(f"{n} ({seen} seen)" if seen else str(n), "yes" if fixable else "-", meaning, key=kind)
        if not report.drift:
            table.add_row("0", "", f"no drift in {report.files} files")
