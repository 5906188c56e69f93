"""Search every memory as you type; Enter opens one with everything that explains why it is there."""

from __future__ import annotations

import gc

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, Markdown, ProgressBar, Static

from engram.store.errors import StoreError
from engram.store.explain import explain
from engram.store.search import SearchIndex, SearchResult
from engram.store.service import Store
from engram.tui.keymap import SEARCH_ACTIONS, bindings
from engram.tui.panes.base import PaneBase
from engram.tui.terminal_safe import visible
from engram.tui.threads import background, deliver
from engram.tui.widgets.hitlist import HitList

SHOWN = 100


class SearchPane(PaneBase):
    BINDINGS = bindings(SEARCH_ACTIONS)
    LIST = "#search-results"

    def __init__(self, store: Store) -> None:
        super().__init__(store, id="search-pane")
        self.index: SearchIndex | None = None
        self.result = SearchResult([], 0)
        self.shown = False
        self.locked: frozenset[str] = frozenset()  # sensitive scopes without a key, as of the last load

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="search: words · 'exact · ^prefix · suffix$ · !not · a | b · type: scope: tag: state: source:",
            id="search-query",
        )
        yield Static("loading the index…", id="search-status")
        yield ProgressBar(id="search-progress", show_eta=False)
        yield HitList(id="search-results")
        with VerticalScroll(id="search-open"):
            yield Markdown(id="search-memory")

    def on_mount(self) -> None:
        self.query_one("#search-open").display = False
        self.load()

    @background("search-load")
    def load(self) -> None:
        """Titles, triggers and fields (index.db only, quick): the merge picker needs them from the start."""
        index = SearchIndex.load(self.store)
        deliver(self, self.ready, index)

    def ready(self, index: SearchIndex) -> None:
        self.index = index
        self.locked = frozenset(s for s in self.store.sensitive_scopes() if not self.store.keys.can_open(s))
        _keep_out_of_gc()
        self.run_search(self.query_one("#search-query", Input).value)
        if self.shown:
            self.enrich(index)

    def on_show(self) -> None:
        """Bodies and tags are read from every file only once someone opens the pane: at 100k memories that is a
        minute of work, which should not compete with the queue for nothing."""
        if not self.shown:
            self.shown = True
            if self.index is not None:
                self.enrich(self.index)

    def rebuild(self) -> None:
        """Scopes were unlocked or locked, or an import added memories: the index is built again, so bodies of
        scopes just unlocked become searchable, those of scopes just locked leave memory, and imported memories
        are found. Until then the old index is dropped, not kept."""
        self.index = None
        self.query_one("#search-status", Static).update("reloading the index…")
        self.load()

    @background("search-enrich")
    def enrich(self, index: SearchIndex) -> None:
        bar = self.query_one("#search-progress", ProgressBar)
        deliver(self, setattr, bar, "display", True)
        index.enrich(self.store, lambda done, total: deliver(self, bar.update, total=total, progress=done))
        deliver(self, self.enriched)

    def enriched(self) -> None:
        _keep_out_of_gc()
        self.query_one("#search-progress", ProgressBar).display = False
        self.run_search(self.query_one("#search-query", Input).value)

    @on(Input.Changed, "#search-query")
    def _changed(self, event: Input.Changed) -> None:
        self.run_search(event.value)

    def run_search(self, text: str) -> None:
        if self.index is None:
            return
        self.result = self.index.search(text, limit=SHOWN)
        self.show_hits()

    def show_hits(self) -> None:
        if self.index is None:
            return
        self.query_one(HitList).show(self.result.hits, self.result.words, self.locked)
        scope = "titles, triggers, bodies, tags" if self.index.enriched else "titles and triggers (bodies loading)"
        status = self.result.error or (
            f"{self.result.total} memories match · searching {scope}"
            + (f" · showing the best {SHOWN}" if self.result.total > SHOWN else "")
        )
        self.query_one("#search-status", Static).update(Text(status))

    @on(Input.Submitted, "#search-query")
    def _submitted(self) -> None:
        self.query_one(HitList).focus()

    def action_focus_query(self) -> None:
        self.query_one("#search-open").display = False
        self.query_one("#search-query", Input).focus()

    @on(HitList.Selected)
    def _selected(self, event: HitList.Selected) -> None:
        self.open_memory(self.query_one(HitList).hits[event.row].slug)

    def action_open(self) -> None:
        hit = self.query_one(HitList).current
        if hit is not None:
            self.open_memory(hit.slug)

    def open_memory(self, slug: str) -> None:
        """Show the memory; reading (and, in a sensitive scope, decrypting) it happens in a worker."""
        self.query_one("#search-memory", Markdown).update("*opening…*")
        panel = self.query_one("#search-open")
        panel.display = True
        panel.focus()
        self.read_memory(slug)

    @background("search-open")
    def read_memory(self, slug: str) -> None:
        try:
            text = explain(self.store, slug)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Cannot open", severity="error")
            text = f"**{slug} cannot be opened:** {exc}"
        deliver(self, self.query_one("#search-memory", Markdown).update, visible(text))

    def action_back(self) -> None:
        panel = self.query_one("#search-open")
        if panel.display:
            panel.display = False
            self.query_one(HitList).focus()
        else:
            self.query_one("#search-query", Input).focus()


def _keep_out_of_gc() -> None:
    """Move what exists now (the index's hundred thousand rows among it) out of the collector's sight: a full
    collection walking them stalled a keystroke by 150-250 ms every few seconds of typing. They live as long as
    the app does, so there is nothing for the collector to find among them."""
    gc.freeze()
