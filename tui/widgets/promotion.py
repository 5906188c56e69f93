"""One promotion in detail: title, DURA scores as bars, the proposed body, and what explains it. Text that looks
like a credential or personal data is shown masked, and named above the scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from engram.store.queue import DURA_LABELS, PromotionDetail
from engram.store.secrets import kinds_in, masked
from engram.tui.colours import Paint, role
from engram.tui.terminal_safe import visible
from engram.tui.widgets.findings import findings_grid
from engram.tui.widgets.similar import SimilarList

if TYPE_CHECKING:  # numpy and rapidfuzz load with the first look for similar promotions
    from engram.store.similar import Similar


def dura_bar(value: float, paint: Paint, width: int = 20) -> Text:
    """A score as a bar, its number beside it (the colour only repeats what the number says)."""
    filled = round(value * width)
    style = paint("good" if value >= 0.8 else "warn" if value >= 0.6 else "bad")
    return Text.assemble(("█" * filled, style), ("░" * (width - filled), "dim"), f" {value:.2f}")


class PromotionView(VerticalScroll):
    """The body and what explains it are Markdown, made on the first detail shown: the Markdown widgets bring
    markdown-it and Pygments, which the console's first frame (the queue's first page, no detail yet) does
    without."""

    def compose(self) -> ComposeResult:
        yield Static(id="detail-head")
        yield Static(id="detail-findings")
        yield Static(id="detail-dura")
        yield Static(id="similar-head")
        yield SimilarList(id="similar")

    def _texts(self, body: str, meta: str) -> None:
        from textual.widgets import Markdown

        found = self.query(Markdown)
        if found:
            found.first().update(body)
            found.last().update(meta)
        else:
            self.mount(Markdown(body, id="detail-body"), Markdown(meta, id="detail-meta"))

    def show(self, detail: PromotionDetail | None, empty: str = "") -> None:
        """Show ``detail``; with None, show the ``empty`` message instead."""
        head = self.query_one("#detail-head", Static)
        if detail is None:
            head.update(Text(empty))
            self._show_screened(None)
            self.query_one("#detail-dura", Static).update("")
            self.show_similar(None)
            if self.query("Markdown"):
                self._texts("", "")
            return
        kinds = kinds_in(detail.title, detail.body, *detail.triggers)
        head.update(
            Text.assemble(
                (f"#{detail.id} ", "dim"),
                (masked(detail.title), "bold"),
                "\n",
                (f"{detail.type} · scope {detail.scope_hash} · proposed {detail.created_at[:16]}", "dim"),
                *(("\n", (f"secret? {', '.join(kinds)}: masked below", role(self, "warn"))) if kinds else ()),
            )
        )
        self._show_screened(detail)
        dura = Text()
        for key, label in DURA_LABELS.items():
            dura.append(f"{key} {label:<15}")
            dura.append_text(dura_bar(detail.dura.get(key, 0.0), lambda name: role(self, name)))
            dura.append("\n")
        self.query_one("#detail-dura", Static).update(dura)
        self._texts(visible(masked(detail.body, "`{}`")), visible(masked("\n\n".join(_meta(detail)), "`{}`")))

    def _show_screened(self, detail: PromotionDetail | None) -> None:
        """The poisoning screen's lane and each finding, under the head (hidden for a clean promotion)."""
        found = detail.screen if detail is not None else None
        shown = self.query_one("#detail-findings", Static)
        screened = found is not None and found.lane != "clean"
        shown.display = screened
        self.query_one("#detail-head", Static).set_class(screened, "-screened")
        if found is None or not screened:
            return
        colour = role(self, "bad" if found.lane == "quarantine" else "warn")
        lane = Text(f"{found.lane}: {len(found.findings)} finding(s) · x reveals hidden text", colour)
        shown.update(Group(lane, findings_grid(found.findings, colour, (f"context: {s}" for s in found.signals))))

    def show_similar(self, found: tuple[list[Similar], list[Similar]] | None, scope: str = "") -> None:
        """The closest memories and pending promotions (None: not known yet, or no promotion shown)."""
        head = self.query_one("#similar-head", Static)
        listed = self.query_one(SimilarList)
        if found is None:
            head.update("")
            listed.show([], [], scope)
            return
        memories, pending = found
        head.update(
            Text.assemble(("Similar ", "bold"), ("(tab: enter opens, m merges)", "dim"))
            if memories or pending
            else Text("Nothing similar known.", style="dim")
        )
        listed.show(memories, pending, scope)


def _meta(detail: PromotionDetail) -> list[str]:
    meta = [f"**Triggers:** {', '.join(detail.triggers) or '—'}", f"**Reasoning:** {detail.reasoning or '—'}"]
    if detail.defer_reason:
        meta.append(f"**Deferred:** {detail.defer_reason}")
    meta.append(
        f"**Source session:** {detail.source_title or '(missing)'} `{detail.source_session_slug}` (enter opens it)"
    )
    if detail.source_excerpt:
        meta.append("> " + detail.source_excerpt.replace("\n", "\n> ")[:400])
    for old in detail.supersedes:
        meta.append(f"**Supersedes** {old.title} `{old.slug}`" + (" (locked)" if old.locked else ""))
        if old.diff:
            meta.append("```diff\n" + "\n".join(old.diff[:60]) + "\n```")
    return meta
