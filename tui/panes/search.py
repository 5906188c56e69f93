"""Search every memory as you type; Enter opens one with everything that explains why it is there."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Markdown, ProgressBar, Static
from textual.worker import get_current_worker

from engram.store.changes import Changes
from engram.store.errors import StoreError
from engram.store.explain import explain
from engram.store.secrets import masked
from engram.tui.keymap import SEARCH_ACTIONS, bindings
from engram.tui.messages import Closed
from engram.tui.panes.base import PaneBase
from engram.tui.screens.history import HistoryScreen
from engram.tui.shared import Shared
from engram.tui.terminal_safe import visible
from engram.tui.threads import background, deliver, progress
from engram.tui.widgets.hitlist import HitList
from engram.tui.widgets.safe import plain

if TYPE_CHECKING:
    from textual.timer import Timer

    # numpy and rapidfuzz load with the index's worker, not with the console
    from engram.store.search.index import SearchIndex, SearchResult
    from engram.store.search.rows import Hit

SHOWN = 100  # hits listed at first; the cursor reaching the last one lists as many more
SNIPPETS_AT_ONCE = 25  # results whose body lines are read and shown together
SNIPPET_WIDTH = 160  # characters of body kept around a match; the list crops them to its width
IDLE = 30.0  # seconds without a key after which the index lets go of the pages of its files it mapped in
# (mapping them again costs the next broad term a visible pause at 1M: a pause to read the results must not pay it)
INLINE = 50_000  # memories up to which a keystroke's search runs on the UI thread (a few ms); above, in a worker


class SearchPane(PaneBase):
    """The search index is the console's, not only this pane's (the merge picker and "add link" use it), so it
    follows every change of memories even while the pane is hidden: in a worker, the old index answering until
    the new one is ready."""

    BINDINGS = bindings(SEARCH_ACTIONS)
    LIST = "#search-results"

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="search-pane")
        self.result: SearchResult | None = None  # the last search's, once the index is loaded
        self.shown = SHOWN  # hits asked for: more once the cursor reaches the last, SHOWN again for a new query
        self.listed = ""  # the query the list shows: the same query again keeps the cursor on its hit
        self.locked: frozenset[str] = frozenset()  # sensitive scopes without a key, as of the last load
        self.changed: set[str] = set()  # memories changed and not yet in the index
        self.pending = threading.Lock()  # guards ``changed`` (the UI thread adds, a refresh takes)
        self.refreshing = threading.Lock()
        self.quiet_until = 0.0  # monotonic time before which the next refresh waits (see refresh_index)
        self.started = False  # the index's first load has begun
        self.syncing = False  # the persistent index is being brought up to date (and loaded again after)
        self._idle: Timer | None = None  # lets the index release its mapped pages once typing stops

    @property
    def index(self) -> SearchIndex | None:
        return self.shared.search

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="search: words · 'exact · ^prefix · suffix$ · !not · a | b · type: scope: tag: state: source:",
            id="search-query",
        )
        yield Static("loading the index…", id="search-status")
        yield ProgressBar(id="search-progress", show_eta=False)
        with Horizontal(id="search-body"):
            yield HitList(id="search-results")
            with VerticalScroll(id="search-preview"):  # at 120 columns and more: why the result under the cursor
                yield Static(id="search-preview-text")
        with VerticalScroll(id="search-open"):
            yield Markdown(id="search-memory")

    def on_mount(self) -> None:
        for listing in self.query(HitList):  # composed by now; none if the pane is being torn down
            self.watch(listing, "cursor", self.preview_current, init=False)
            self.watch(listing, "cursor", self.more_at_the_end, init=False)

    def more_at_the_end(self, row: int) -> None:
        """The cursor on the last hit listed, with more found: list as many more, the cursor staying put."""
        result = self.result
        if result is not None and row >= len(result.hits) - 1 and result.total > len(result.hits):
            self.shown = len(result.hits) + SHOWN
            self.run_search(self.query_one("#search-query", Input).value)

    def preview_current(self, _row: int = 0) -> None:
        found = self.query(HitList)
        listing = found.first() if found else None
        hit = listing.current if listing is not None and self.screen.has_class("-roomy") else None
        if hit is not None and listing is not None:
            self.preview(hit, list(listing.words))

    @background("search-preview")
    def preview(self, hit: Hit, words: list[str]) -> None:
        """The highlighted result beside the list: what it is, the words found in its body, its first lines. A
        sensitive memory is not read for a preview (opening it is audited): enter opens it."""
        title = plain(hit.title, "bold")
        title.highlight_words([w for w in words if w], style="bold reverse", case_sensitive=False)
        head = Text.assemble(title, "\n", (f"{hit.type} · scope {hit.scope_hash} · {hit.decay_state}", "dim"))
        from engram.store.search.index import snippet  # with the index, loaded by now

        if hit.encrypted:
            body = Text("\n\nsensitive scope: enter opens it (recorded in the audit log)", style="dim")
        else:
            try:
                text = self.body(hit)
            except StoreError as exc:
                body = Text(f"\n\n{exc}", style="dim")
            else:
                said = [w for w in words if w and w.lower() in text.lower()]
                found = plain(snippet(masked(text), said)) if said else Text()
                found.highlight_words(said, style="bold reverse", case_sensitive=False)
                first = "\n".join(masked(text).strip().splitlines()[:12])
                body = Text.assemble("\n\n", found, "\n\n" if said else "", plain(first, "dim"))
        deliver(self, self.query_one("#search-preview-text", Static).update, Text.assemble(head, body))

    def body(self, hit: Hit) -> str:
        """The body of a plain memory found, from its file (raises StoreError)."""
        return self.store.read_doc(self.store.safe_relpath(self.store.memory(hit.slug).body_path)).body

    @background("search-snippets")
    def read_snippets(self, hits: Sequence[Hit], words: list[str]) -> None:
        """Each plain result's line of body around the words found in it, read from its file, best results first
        and a screenful at a time so the first are shown at once. A newer search cancels the rest."""
        from engram.store.search.index import snippet  # with the index, loaded by now

        worker = get_current_worker()
        listing = self.query_one(HitList)
        for start in range(0, len(hits), SNIPPETS_AT_ONCE):
            found: dict[str, str] = {}
            for hit in hits[start : start + SNIPPETS_AT_ONCE]:
                if worker.is_cancelled:
                    return
                if hit.encrypted:
                    continue
                try:
                    text = masked(self.body(hit))
                except StoreError:
                    continue
                said = [w for w in words if w and w.lower() in text.lower()]
                found[hit.slug] = snippet(text, said, width=SNIPPET_WIDTH)
            deliver(self, listing.add_snippets, hits, found)

    def settled(self) -> None:
        """The index loads once the queue has its first page (it would compete with it), or when the pane is
        first shown, whichever comes first."""
        if not self.started:
            self.started = True
            self.load_index()

    @background("search-load")
    def load_index(self) -> None:
        """What the last open kept of the rows of plain scopes answers first, with their bodies from engram's
        persistent index as its last sync left it. Then titles, triggers and fields of every memory from index.db,
        those of plain scopes kept for the next open and read from there. Then the persistent index is brought up
        to date (only files whose fingerprint moved are read) and, if anything changed, the index loaded again."""
        from engram.store.search.fulltext import FullText  # numpy and rapidfuzz: loaded here, off the first frame
        from engram.store.search.index import SearchIndex

        fulltext = FullText.open(self.store)
        cached = SearchIndex.cached(self.store, fulltext) if fulltext is not None else None
        if cached is not None:  # what the last open kept of plain scopes answers while index.db is read
            deliver(self, self.ready, cached)
            cached.prepare()
        index = SearchIndex.load(self.store, fulltext, keep=True)
        deliver(self, self.ready, index)
        index.prepare()
        if fulltext is not None:
            self.sync_fulltext()

    def sync_fulltext(self) -> None:
        """Runs in the loading worker. A sync that cannot write now (another engram syncing) is left to the next
        open: the index already answers from what it holds."""
        from engram.store.search.fulltext import sync

        deliver(self, self.show_syncing, True)
        try:
            with progress(self, "#search-progress") as report:
                result = sync(self.store, progress=report)
            if result.changed:
                with self.refreshing:
                    if self.index is not None:
                        deliver(self, self.ready, self.index.refreshed(self.store, ()))
        except StoreError as exc:
            deliver(self, self.notify, str(exc), title="Search index", severity="warning")
        finally:
            deliver(self, self.show_syncing, False)

    def show_syncing(self, syncing: bool) -> None:
        """Say so while the persistent index is brought up to date and loaded again: meanwhile the index that
        answers holds bodies only as its last sync left them (none on a root's first open), and a body term
        found nowhere yet is not found nowhere."""
        self.syncing = syncing
        self.show_hits()

    def ready(self, index: SearchIndex) -> None:
        self.shared.search = index
        self.locked = frozenset(s for s in self.store.sensitive_scopes() if not self.store.keys.can_open(s))
        self.run_search(self.query_one("#search-query", Input).value)
        if self.loaded and not index.enriched and not index.partial:  # a partial one is replaced in a moment
            self.enrich(index)

    def load(self) -> None:
        """Bodies of unlocked sensitive scopes (and of every memory, without a persistent index) are read only
        once someone opens the pane: at 100k memories that can be a minute of work, which should not compete with
        the queue for nothing."""
        self.settled()
        if self.index is not None and not self.index.enriched and not self.index.partial:
            self.enrich(self.index)

    def store_changed(self, changes: Changes, showing: bool) -> None:
        """Memories came, changed or went: a fresh index, carrying over what did not change. A rebuilt index.db
        may hold other rows for the same slugs: everything is read again."""
        if changes.index_replaced:
            self.rebuild()
        elif changes.memories and self.index is not None:
            with self.pending:
                self.changed |= changes.memories
            self.refresh_index()

    def keys_changed(self, showing: bool) -> None:
        self.rebuild()

    @background("search-refresh", exclusive=False)
    def refresh_index(self) -> None:
        """One refresh at a time, each from the index the last one delivered (``deliver`` waits for it), so an
        older index never replaces a newer one; a refresh that finds its changes taken by the one before has
        nothing left to do. Back to back, a refresh waits as long as the last one took: changes arriving
        meanwhile are taken in together."""
        with self.refreshing:
            time.sleep(max(0.0, self.quiet_until - time.monotonic()))
            with self.pending:
                changed, self.changed = self.changed, set()
            index = self.index
            if not changed or index is None:
                return
            started = time.monotonic()
            fresh = index.refreshed(self.store, changed)
            # a root memoryd writes to all the time: refreshes at most half the time, so typing keeps its share
            self.quiet_until = 2 * time.monotonic() - started
            deliver(self, self.ready, fresh)

    def rebuild(self) -> None:
        """Scopes were unlocked or locked, or index.db was rebuilt: the index is built again, so bodies of scopes
        just unlocked become searchable and those of scopes just locked leave memory. Until then the old index is
        dropped, not kept."""
        self.shared.search = None
        self.query_one("#search-status", Static).update("reloading the index…")
        self.load_index()

    @background("search-enrich")
    def enrich(self, index: SearchIndex) -> None:
        with progress(self, "#search-progress") as report:
            index.enrich(self.store, report)
        deliver(self, self.enriched, index)

    def enriched(self, index: SearchIndex) -> None:
        if index is self.index:
            self.run_search(self.query_one("#search-query", Input).value)

    @on(Input.Changed, "#search-query")
    def _changed(self, event: Input.Changed) -> None:
        self.shown = SHOWN
        self.run_search(event.value)

    def run_search(self, text: str) -> None:
        """A small index answers on the UI thread, at once; a large one (tens of milliseconds a broad term at a
        million memories) in a worker, so the query box echoes every key meanwhile and only the answer to the
        query as it now reads is shown."""
        index = self.index
        if index is None:
            return
        if self._idle is not None:
            self._idle.stop()
        self._idle = self.set_timer(IDLE, index.release)
        if len(index.rows) <= INLINE:
            self.result = index.search(text, limit=self.shown)
            self.show_hits()
        else:
            self.search_in_background(index, text)

    @background("search-query")
    def search_in_background(self, index: SearchIndex, text: str) -> None:
        deliver(self, self.searched, index, text, index.search(text, limit=self.shown))

    def searched(self, index: SearchIndex, text: str, result: SearchResult) -> None:
        if index is self.index and text == self.query_one("#search-query", Input).value:
            self.result = result
            self.show_hits()

    def show_hits(self) -> None:
        if self.index is None or self.result is None:
            return
        listing = self.query_one(HitList)
        text = self.query_one("#search-query", Input).value
        again = text == self.listed  # more hits listed, or a fresh index: the cursor stays on its hit
        self.listed = text
        current = listing.current if again else None
        listing.show(self.result.hits, self.result.words, self.locked, keep=current.slug if current else None)
        if self.result.hits:
            self.read_snippets(listing.hits, list(listing.words))
        self.preview_current()
        total = self.result.total
        matches = "match" if total == 1 else "matches"
        # while bodies are indexed the hits are those found so far, whatever the index searches: said in place of
        # where it looks, so that a line of 80 columns holds it (after it, the note was cut off there)
        where = " so far" if self.syncing else ""
        status = self.result.error or (
            f"{total:,} {matches}{where}"
            + (f" (best {len(self.result.hits)} shown)" if total > len(self.result.hits) else "")
            + (" · indexing bodies…" if self.syncing else f" · in {self.index.searching}")
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

    def action_history(self) -> None:
        """h: the history of the memory under the cursor (or the one open): its revisions, compared, restored."""
        hit = self.query_one(HitList).current
        if hit is None:
            self.notify("No memory under the cursor", severity="warning")
            return
        self.app.push_screen(HistoryScreen(self.store, hit.slug))

    def action_back(self) -> None:
        """esc: close the opened memory, else leave the query for the results (where the pane digits, j and k
        work), else go back to the query."""
        panel = self.query_one("#search-open")
        query = self.query_one("#search-query", Input)
        if panel.display:
            panel.display = False
            self.query_one(HitList).focus()
            self.post_message(Closed())  # opened from another pane (the queue's enter): back there
        elif query.has_focus:
            self.query_one(HitList).focus()
        else:
            query.focus()
