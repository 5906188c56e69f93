"""The audit pane: the hash-chained log, newest first, drawn only where it is on screen (a million lines open
at once); filters; verification in a worker, with the first bad line highlighted and one key away; the signed
checkpoint; and a timeline of events per day."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date, timedelta
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, ProgressBar, Sparkline, Static

from engram.store.audit.ops import current_checkpoint, verify_log
from engram.store.audit.titles import Titles
from engram.store.audit.verify import Verdict
from engram.store.errors import StoreError
from engram.tui.colours import role
from engram.tui.keymap import AUDIT_ACTIONS, bindings
from engram.tui.messages import AuditStateChanged
from engram.tui.panes.base import PaneBase
from engram.tui.shared import Shared
from engram.tui.terminal_safe import visible
from engram.tui.threads import background, deliver, progress
from engram.tui.widgets.linelist import LineList

if TYPE_CHECKING:  # numpy loads with the log, when the pane is first shown
    import numpy as np

    from engram.store.audit.view import AuditFilter, AuditLog

NARROW = 110


class AuditList(LineList):
    """Log lines by number, newest first; the first bad line (after a verify) stands out."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.audit_log: AuditLog | None = None
        self.lines: Sequence[int] | np.ndarray = ()  # line numbers shown, newest first
        self.bad_line: int | None = None

    def show(self, log: AuditLog, lines: np.ndarray, at_line: int | None = None) -> None:
        self.audit_log, self.lines = log, lines[::-1]
        shown = self.lines
        row = int((shown == at_line).argmax()) if at_line is not None and at_line in shown else 0
        self.reset(row)

    @property
    def row_count(self) -> int:
        return len(self.lines)

    @property
    def current_line(self) -> int | None:
        return int(self.lines[self.cursor]) if 0 <= self.cursor < len(self.lines) else None

    def header_text(self) -> Text:
        return self._line("line", "time (UTC)", "actor", "event", "scope", "target")

    def row_text(self, row: int) -> Text:
        assert self.audit_log is not None
        n = int(self.lines[row])
        e = self.audit_log.event(n)
        return self._line(
            str(n),
            str(e.get("ts", ""))[:19].replace("T", " "),
            str(e.get("actor") or "memoryd"),
            str(e.get("event_type", "")),
            str(e.get("scope_hash") or ""),
            str(e.get("target_id") or e.get("tool") or ""),
        )

    def row_style(self, row: int) -> Style | None:
        if self.bad_line is not None and int(self.lines[row]) == self.bad_line:
            return role(self, "bad", bold=True, reverse=True)
        return None

    def _line(self, n: str, ts: str, actor: str, event: str, scope: str, target: str) -> Text:
        if self.size.width < NARROW:  # no actor, and the time without year and seconds: room for the target
            short = ts[5:16] if ts[:4].isdigit() else ts[:11]
            return Text(
                visible(f" {n:>7}  {short:<11}  {event[:24]:<24}  {scope[:12]:<12}  {target}"), no_wrap=True, end=""
            )
        return Text(
            visible(f" {n:>7}  {ts:<19}  {actor[:14]:<14}  {event[:26]:<26}  {scope[:12]:<12}  {target}"),
            no_wrap=True,
            end="",
        )


class AuditPane(PaneBase):
    BINDINGS = bindings(AUDIT_ACTIONS)
    LIST = "#audit-lines"
    WATCHES = frozenset({"audit"})  # every change appends to the log

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="audit-pane")
        self.audit_log: AuditLog | None = None

    def compose(self) -> ComposeResult:
        yield Static("the log is read when this pane is first shown", id="audit-status")
        yield ProgressBar(id="audit-progress", show_eta=False)
        yield Input(
            placeholder="filter, then enter: type: scope: target: actor: since: until: and words", id="audit-filter"
        )
        with Horizontal(id="audit-timeline-row"):
            yield Static("", id="audit-span")
            yield Sparkline([], id="audit-timeline")
        yield AuditList(id="audit-lines")
        with VerticalScroll(id="audit-open"):
            yield Static(id="audit-detail")

    @background("audit-load")
    def load(self) -> None:
        from engram.store.audit.view import AuditLog  # numpy: loaded when the log is first read

        log = AuditLog(self.store.layout.audit_path)
        deliver(self, self.show_log, log, log.per_day())

    def show_log(self, log: AuditLog, per_day: dict[str, int]) -> None:
        if self.audit_log is not None:
            self.audit_log.close()
        self.audit_log = log
        listing = self.query_one(AuditList)
        listing.show(log, log.every_line(), at_line=listing.current_line)  # new lines come in above, not under it
        self.show_timeline(per_day)
        self.query_one("#audit-status", Static).update(f"{len(log):,} lines · v verifies the chain")
        if self.shared.verdict is not None:  # the console checked the log already: say what it found
            self.show_verdict(self.shared.verdict)
        if self.query_one("#audit-filter", Input).value:
            self.run_filter(self.query_one("#audit-filter", Input).value)

    def show_timeline(self, per_day: dict[str, int]) -> None:
        """Every day from the first event to the last, days without events as zero."""
        if not per_day:
            self.query_one("#audit-span", Static).update("no events yet")
            return
        first, last = date.fromisoformat(min(per_day)), date.fromisoformat(max(per_day))
        days = [(first + timedelta(d)).isoformat() for d in range((last - first).days + 1)]
        self.query_one(Sparkline).data = [per_day.get(d, 0) for d in days]
        self.query_one("#audit-span", Static).update(
            f"events per day {first} → {last} (busiest {max(per_day.values())})"
        )

    # ------------------------------------------------------------------ filter

    @on(Input.Submitted, "#audit-filter")
    def _filter(self, event: Input.Submitted) -> None:
        self.run_filter(event.value)
        self.query_one(AuditList).focus()

    def run_filter(self, text: str) -> None:
        try:
            from engram.store.audit.view import parse_filter

            where = parse_filter(text)
        except StoreError as exc:
            self.notify(str(exc), title="Filter", severity="error")
            return
        self.filter_lines(where, text)

    @background("audit-filter")
    def filter_lines(self, where: AuditFilter, text: str) -> None:
        log = self.audit_log
        if log is None:
            return
        with progress(self, "#audit-progress") as report:
            lines = log.matching(where, report)
        deliver(self, self.filtered, log, lines, text)

    def filtered(self, log: AuditLog, lines: np.ndarray, text: str) -> None:
        self.query_one(AuditList).show(log, lines)
        what = f"{len(lines):,} of {len(log):,} lines" + (f" match {text!r}" if text.strip() else "")
        self.query_one("#audit-status", Static).update(Text(what))

    def action_filter(self) -> None:
        self.query_one("#audit-filter", Input).focus()

    # ------------------------------------------------------------------ verify, checkpoint

    @background("audit-verify")
    def action_verify(self) -> None:
        path = self.store.layout.audit_path
        total = path.stat().st_size if path.exists() else 0
        try:
            with progress(self, "#audit-progress") as report:
                verdict = verify_log(self.store, lambda done: report(done, total))
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Audit log", severity="error")
            return
        deliver(self, self.verified, verdict)

    def verified(self, verdict: Verdict) -> None:
        self.show_verdict(verdict)
        if verdict.bad_line:
            self.action_jump_bad()
        self.post_message(AuditStateChanged(verdict))  # the status line follows

    def show_verdict(self, verdict: Verdict) -> None:
        """The verdict in the pane's header and its bad line marked: the pane's own v, or the console's check
        (at start, and each time the log changes), so the pane and the status line never disagree."""
        hint = " · b jumps to it" if verdict.bad_line else ""
        self.query_one("#audit-status", Static).update(
            f"[b]{escape(verdict.status.upper())}[/b] {escape(verdict.summary())}{hint}"
        )
        listing = self.query_one(AuditList)
        listing.bad_line = verdict.bad_line
        listing.refresh()

    def action_jump_bad(self) -> None:
        """Show the first bad line (the filter is cleared if it hid it), its neighbours around it."""
        listing = self.query_one(AuditList)
        if listing.bad_line is None or self.audit_log is None:
            self.notify("no bad line found (v verifies)", timeout=3)
            return
        self.query_one("#audit-filter", Input).value = ""
        listing.show(self.audit_log, self.audit_log.every_line(), at_line=listing.bad_line)
        listing.focus()

    @background("audit-checkpoint")
    def action_checkpoint(self) -> None:
        try:
            text = current_checkpoint(self.store).to_json()
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Checkpoint", severity="error")
            return
        deliver(
            self,
            self.show_detail,
            "Signed checkpoint (keep a copy elsewhere; `engram audit checkpoint --check FILE` compares)",
            text,
        )

    # ------------------------------------------------------------------ one line in full

    @on(AuditList.Selected)
    def _open(self, event: AuditList.Selected) -> None:
        listing = self.query_one(AuditList)
        n = int(listing.lines[event.row])
        assert self.audit_log is not None
        data = self.audit_log.event(n)
        if isinstance(data.get("details"), str):  # memoryd keeps details as a JSON string
            try:
                data["details"] = json.loads(data["details"])
            except json.JSONDecodeError:
                pass
        titles = Titles(self.store)  # engram's lines carry identifiers only: the title, while its scope is readable
        titles.prefetch([data])
        title = titles.title(data)
        heading = f"Line {n}" + (f": {visible(title)}" if title else "")
        self.show_detail(heading, visible(json.dumps(data, indent=2, ensure_ascii=False)))

    def show_detail(self, title: str, body: str) -> None:
        self.query_one("#audit-detail", Static).update(Text.assemble((title, "bold"), "\n\n", body))
        panel = self.query_one("#audit-open")
        panel.display = True

    def action_back(self) -> None:
        panel = self.query_one("#audit-open")
        if panel.display:
            panel.display = False
        self.query_one(AuditList).focus()
