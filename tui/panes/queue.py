"""The review queue: pending promotions in a paged table, the one under the cursor in detail, and the keys
that decide them (approve, reject, defer, edit, merge; marks for bulk; undo and redo)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import DataTable, Input, Static
from textual.widgets.data_table import CellDoesNotExist
from textual.worker import get_current_worker

from engram.store.errors import ENVIRONMENT_ERRORS, StoreError
from engram.store.lazy import lazy_module
from engram.store.query import QuerySyntaxError
from engram.store.queue import (
    SORTS,
    PromotionDetail,
    QueueItem,
    first_page,
    next_wake,
    pending_findings,
    pending_queue,
    promotion_detail,
    queue_query,
)
from engram.store.queue_scores import keep as keep_scores
from engram.store.secrets import Finding, masked
from engram.store.service import Store
from engram.store.views import DEFAULTS, View, load_views, save_view
from engram.tui.actions import changed_elsewhere, succeeded
from engram.tui.decisions import History, Kind, Outcome, decide_each, short, told, undo_step
from engram.tui.keymap import QUEUE_ACTIONS, bindings
from engram.tui.messages import OpenMemory, Settled
from engram.tui.panes.base import PaneBase
from engram.tui.screens.prompt import Confirm, SecretsPrompt, TextPrompt
from engram.tui.shared import Shared
from engram.tui.tables import FitTable, fit_columns
from engram.tui.threads import background, deliver, painted
from engram.tui.widgets.promotion import PromotionView
from engram.tui.widgets.safe import plain
from engram.tui.widgets.similar import SimilarList

if TYPE_CHECKING:
    from engram.store import promotions
    from engram.store.screen import Screening
    from engram.store.similar import Clusters, Similar, Similarity
else:  # the write path of decisions (and the frontmatter's pydantic and PyYAML): not for the first page
    promotions = lazy_module("engram.store.promotions")

SCREEN_BATCH = 200  # promotions screened between two updates of the page's lanes
PAGE = 200  # rows in the table at once; pages move by key, so 100k pending never sit in one widget


_NO_KINDS: frozenset[str] = frozenset()


def _kinds(found: list[tuple[str, Finding]]) -> frozenset[str]:
    """The kinds of secret-looking text of one promotion's findings. Most hold none: they share one empty set
    (a set each was 10 MB for the 50,000 pending of the 1M demo)."""
    return frozenset(f.kind for _, f in found) or _NO_KINDS


def _what(label: str, items: list[QueueItem]) -> str:
    """ "Reject #12 'Keep PRs small'" or "Reject 3 promotions (#4, #7, #9)": a prompt that acts says on what."""
    if len(items) == 1:
        return f"{label.capitalize()} #{items[0].id} '{short(items[0].title)}'"
    ids = ", ".join(f"#{i.id}" for i in items[:6]) + (", …" if len(items) > 6 else "")
    return f"{label.capitalize()} {len(items)} promotions ({ids})"


class QueuePane(PaneBase):
    BINDINGS = bindings(QUEUE_ACTIONS)
    WATCHES = frozenset({"promotions", "index"})

    sort: reactive[str] = reactive("dura_avg")

    def __init__(self, shared: Shared) -> None:
        super().__init__(shared, id="queue-pane")
        self.items: list[QueueItem] = []
        self.total: int | None = None  # while only the first page is read: how many are pending
        self.painting = False  # the first page is on its way to the screen: the detail waits for it
        self.page_no = 0
        self.marked: set[int] = set()
        self.range_anchor: int | None = None
        self.filter_text = ""
        self.history = History()
        self.busy = False  # a decision, an undo or a redo runs: the next waits (set and read on the UI thread)
        self.land_on: int | None = None  # where the cursor goes once the running step's queue is shown
        self.titles: dict[int, str] = {}  # the titles of the rows when the running step started
        self.wake_at: str | None = None  # when the first snoozed promotion comes back: the queue is read again
        self.settled_once = False  # the first load has told the console (messages.Settled)
        self.detail: PromotionDetail | None = None
        # promotion id -> kinds of secret-looking text it holds, for those scanned while pending (a reload after each
        # decision scans only what it has not seen: tens of thousands pending take seconds); those holding any
        self.scanned: dict[int, frozenset[str]] = {}
        self.flagged: dict[int, frozenset[str]] = {}
        self.lanes: dict[int, str] = {}  # promotion id -> the poisoning screen's lane, screened while pending
        self.views: list[View] | None = None  # read on first use (the first frame does without them)
        self.similarity: Similarity | None = None  # made in a worker once the queue is read; None until then
        self.clustered = False  # the cluster view: near-duplicates grouped, best first (c)
        self.clusters: Clusters | None = None  # found while the cluster view is on

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="filter: words, 'exact, ^prefix, !not, type: scope: state:  (enter apply, esc clear)",
            id="queue-filter",
        )
        yield Static(id="queue-status")
        with Horizontal(id="queue-body"):
            yield FitTable(id="queue-table", cursor_type="row", zebra_stripes=True)
            yield PromotionView(id="queue-detail")

    @on(FitTable.Resized, "#queue-table")
    def setup_columns(self) -> None:
        table = self.query_one("#queue-table", DataTable)
        row = table.cursor_row
        fit_columns(
            table,
            [("mark", " ", 1), ("id", "#", 5), ("dura", "DURA", 4), ("type", "type", 10), ("state", "state", 10)],
            ("title", "title"),
        )
        if self.items:
            self.fill_page(row)

    def load(self) -> None:
        if not self.settled_once and not self.filter_text:  # the first page, read by SQLite here: in the first frame
            try:
                self.show_first(*first_page(self.store, self.sort, PAGE))
            except (StoreError, *ENVIRONMENT_ERRORS):
                pass  # the read of every pending promotion that follows says what stopped it
        self.reload()

    # ------------------------------------------------------------------ loading

    @background("queue-load")
    def reload(self, keep: int | None = None) -> None:
        """Load the pending promotions off the UI thread, then show the page holding ``keep`` (or the cursor)."""
        try:
            if self.painting:  # the first page is on its way to the screen: this read would hold it back
                painted(self)
                deliver(self, self.first_painted)
            items = pending_queue(self.store, self.sort, queue_query(self.filter_text), self.clusters)
            self.wake_at = next_wake(self.store)
            known = frozenset(self.scanned)  # scanned while pending: their text has not changed since
            found = pending_findings(self.store, [i.id for i in items if i.id not in known])
            scanned = {i.id: _kinds(found.get(i.id, [])) for i in items if i.id not in known}
        except (StoreError, QuerySyntaxError) as exc:
            deliver(self, self.notify, str(exc), severity="error")
        else:
            deliver(self, self.show_items, items, keep, scanned)
            if not self.settled_once and not self.filter_text:  # every score parsed: the next start's first page
                keep_scores(self.store, {item.id: item.dura for item in items})
        if not self.settled_once:
            self.settled_once = True
            self.post_message(Settled())

    def show_first(self, items: list[QueueItem], total: int) -> None:
        """The first page, and how many are pending, while every pending promotion is read (the keys that move
        between pages wait for that)."""
        self.items, self.total = items, total
        self.painting = True
        self.fill_page()

    def first_painted(self) -> None:
        """The first page is on the screen: now the detail of the promotion under the cursor (reading it
        imports the frontmatter's parser, which would have held the first page back)."""
        self.painting = False
        self._highlighted()

    def show_items(self, items: list[QueueItem], keep: int | None, scanned: dict[int, frozenset[str]]) -> None:
        """Show ``items`` at ``keep``; without one, the cursor stays on the promotion it was on (memoryd may have
        added or decided rows above it: the row under the cursor must not silently become another one), or at
        its position when that promotion is gone."""
        table = self.query_one("#queue-table", DataTable)
        land, self.land_on = self.land_on, None
        current = self.current() if keep is None and table.row_count and self.items else None
        if current is not None:
            keep = next((i for i, item in enumerate(items) if item.id == current.id), self.current_index())
        if land is not None:  # after a decision, an undo or a redo: the row it said, not the one it left
            keep = next((i for i, item in enumerate(items) if item.id == land), keep)
        self.items, self.total = items, None
        pending = {i.id for i in items}
        self.scanned = {pid: kinds for pid, kinds in (self.scanned | scanned).items() if pid in pending}
        self.flagged = {pid: kinds for pid, kinds in self.scanned.items() if kinds}
        self.marked &= pending
        if self.clusters is not None:
            self.items = self.grouped(items)
            target = land if land is not None else (current.id if current is not None else None)
            if target is not None:
                keep = next((i for i, item in enumerate(self.items) if item.id == target), keep)
        index = min(keep or 0, max(len(items) - 1, 0))
        self.page_no = index // PAGE
        self.fill_page(index % PAGE)
        self.find_similar()
        self.lanes = {pid: lane for pid, lane in self.lanes.items() if pid in pending}
        unscreened = [i.id for i in items if i.id not in self.lanes]
        if unscreened:
            self.screen_pending(unscreened)

    @background("queue-screen")
    def screen_pending(self, ids: list[int]) -> None:
        """The poisoning screen's lane of each promotion not screened yet, a batch at a time (a millisecond each:
        a large first queue fills in while a person reads it); those in quarantine are held out of memoryd's
        reach (audited) until a person decides them. A newer reload's batch replaces this one."""
        from engram.store.quarantine import hold_quarantined
        from engram.store.screening import pending_screens  # the screen's rules: compiled here, off the first frame

        worker = get_current_worker()
        for start in range(0, len(ids), SCREEN_BATCH):
            if worker.is_cancelled:
                return
            found = pending_screens(self.store, ids[start : start + SCREEN_BATCH])
            deliver(self, self.screened, {pid: screening.lane for pid, screening in found.items()})
            if not self.store.read_only:  # out of memoryd's reach (its injection pastes pending titles)
                hold_quarantined(self.store, found)

    def screened(self, lanes: dict[int, str]) -> None:
        self.lanes.update(lanes)
        table = self.query_one("#queue-table", DataTable)
        for item in self.page_items():
            if lanes.get(item.id, "clean") != "clean":
                try:
                    table.update_cell(str(item.id), "state", self.state(item))
                except (KeyError, CellDoesNotExist):
                    pass  # the page changed meanwhile: the next fill shows it

    # ------------------------------------------------------------------ similar and clusters

    @background("queue-similar")
    def find_similar(self) -> None:
        """Bring the blocks of near-duplicates up to date (the first time: every memory; then what
        changed), and find the clusters while their view is on."""
        from engram.store.similar import Similarity  # numpy and rapidfuzz: loaded here, off the first frame

        similarity = Similarity.build(self.store, self.similarity)
        clusters = similarity.clusters() if self.clustered else None
        deliver(self, self.similar_found, similarity, clusters)

    def similar_found(self, similarity: Similarity, clusters: Clusters | None) -> None:
        self.similarity = similarity
        if self.clustered and clusters is not None:
            current = self.current()
            self.clusters = clusters
            self.items = self.grouped(self.items)
            index = next((i for i, item in enumerate(self.items) if current and item.id == current.id), 0)
            self.page_no = index // PAGE
            self.fill_page(index % PAGE)
        if self.detail is not None:
            self.load_similar(similarity, self.detail.id)

    def grouped(self, items: list[QueueItem]) -> list[QueueItem]:
        """``items`` in the cluster view's order: each cluster together, best first, the largest first."""
        from engram.store.similar import cluster_order

        if self.clusters is None:
            return items
        by_id = {item.id: item for item in items}
        return [by_id[pid] for pid in cluster_order([item.id for item in items], self.clusters)]

    def action_clusters(self) -> None:
        """Toggle the cluster view (finding the clusters takes a second or two on a large queue, in a worker)."""
        self.clustered = not self.clustered
        self.clusters = None
        if self.clustered:
            self.notify("finding clusters of near-duplicates…", timeout=2)
            self.update_status()
            self.find_similar()
        else:
            self.reload(keep=0)

    def action_similar(self) -> None:
        listed = self.query_one(SimilarList)
        if listed.option_count:
            listed.focus()
            listed.highlighted = 0
        else:
            self.notify("Nothing similar to this promotion is known", timeout=2)

    @on(SimilarList.Left)
    def _similar_left(self) -> None:
        self.query_one("#queue-table", DataTable).focus()

    @on(SimilarList.Chosen)
    def _similar_chosen(self, event: SimilarList.Chosen) -> None:
        found = event.found
        if not event.merge:
            if found.kind == "memory":
                self.post_message(OpenMemory(found.key))
            else:
                self.go_to(int(found.key))
            return
        if found.kind != "memory":
            self.notify(
                f"A promotion merges into a memory: approve #{found.key} first, or merge the cluster (c, then M)",
                severity="warning",
            )
        elif not self.marked and (item := self.current()) is not None:
            self.query_one("#queue-table", DataTable).focus()
            self.confirm_merge(item, found.key)

    def action_calibrate(self) -> None:
        from engram.tui.screens.calibration import CalibrationScreen  # a screen of an action: imported by it

        self.app.push_screen(CalibrationScreen(self.store))

    def go_to(self, promotion_id: int) -> None:
        """Put the cursor on ``promotion_id`` (if the queue, as filtered, shows it)."""
        index = next((i for i, item in enumerate(self.items) if item.id == promotion_id), None)
        if index is None:
            self.notify(f"#{promotion_id} is not in the queue as filtered", severity="warning")
            return
        self.page_no = index // PAGE
        self.fill_page(index % PAGE)
        self.query_one("#queue-table", DataTable).focus()

    def action_cluster(self, how: str) -> None:
        """Decide the cluster under the cursor as one step (one undo): approve its best and reject the rest as
        duplicates of it, or approve its best and merge the rest into it."""
        item = self.current()
        if item is None or self.busy:
            return
        if self.clusters is None:
            self.notify("Press c to find the clusters first", severity="warning")
            return
        shown = {i.id: i for i in self.items}
        members = [pid for pid in self.clusters.of(item.id) if pid in shown]
        if len(members) < 2:
            self.notify(f"#{item.id} is in no cluster", severity="warning")
            return
        best = members[0]
        from engram.store.screening import pending_screens  # the screen's rules: compiled on first use

        if any(found.lane == "quarantine" for found in pending_screens(self.store, [best]).values()):
            self.notify(f"#{best}, the best of this cluster, is in quarantine: decide it alone (a) first")
            return
        if best in self.flagged:
            self.notify(f"#{best}, the best of this cluster, holds secret-looking text: decide it alone (a) first")
            return
        act = promotions.cluster_decider(self.store, best, "reject" if how == "approve" else "merge")
        others = len(members) - 1
        question = (
            f"Approve #{best} and reject {others} as duplicates of it?"
            if how == "approve"
            else f"Approve #{best} and merge {others} into it?"
        )
        label = "approve best of cluster" if how == "approve" else "merge cluster"  # approve…, merge…: unlock first
        self.decide(label, act, items=[shown[pid] for pid in members], question=question)

    def fill_page(self, row: int = 0) -> None:
        table = self.query_one("#queue-table", DataTable)
        if not table.columns:
            return  # the table has not been laid out yet: its Resized message fits the columns and fills it
        table.clear()
        for item in self.page_items():
            table.add_row(*self.cells(item), key=str(item.id))
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1))
        else:
            self.show_detail(None)
        self.update_status()

    def page_items(self) -> list[QueueItem]:
        return self.items[self.page_no * PAGE : (self.page_no + 1) * PAGE]

    def state(self, item: QueueItem) -> str:
        """One word for the state column (what most needs a person's eye first)."""
        lane = self.lanes.get(item.id, "clean")
        if lane != "clean":
            return lane
        if item.sensitive:
            return "locked" if not self.store.keys.can_open(item.scope_hash) else "sensitive"
        if item.id in self.flagged:
            return "secret?"
        if self.clusters is not None:
            if members := self.clusters.of(item.id):
                return f"best of {len(members)}" if members[0] == item.id else "dup"
            if item.id in self.clusters.repeats_memory:
                return "known"
        return "deferred" if item.deferred else ""

    def cells(self, item: QueueItem) -> tuple:
        state = self.state(item)
        return (
            "●" if item.id in self.marked else " ",
            str(item.id),
            f"{item.dura_avg:.2f}",
            item.type,
            state,
            plain(masked(item.title)),  # a title holding a key shows it masked, from the first frame on
        )

    def update_status(self) -> None:
        pending = len(self.items) if self.total is None else self.total
        pages = max(1, -(-pending // PAGE))
        parts = [f"{pending} pending", f"sort: {self.sort}", f"page {self.page_no + 1}/{pages}"]
        if view := self.showing_view():
            parts.append(f"view: {view.name}")
        elif self.filter_text:
            parts.append(f"filter: {self.filter_text}")
        if self.clustered:
            found = len(self.clusters.members) if self.clusters else 0
            parts.append(f"{found} cluster{'s' if found != 1 else ''}" if self.clusters else "clusters: finding…")
        if self.marked:
            parts.append(f"{len(self.marked)} marked")
        if self.history.decided:  # progress: what this session decided, and what is left here (deferred ones aside)
            left = sum(not item.deferred for item in self.items)
            parts.append(f"{len(self.history.decided)} decided this session, {left} left")
        if self.history.undo_stack:
            parts.append(f"undo: {self.history.undo_stack[-1].label}")
        self.query_one("#queue-status", Static).update(Text("  ·  ".join(parts)))

    # ------------------------------------------------------------------ cursor and detail

    def current_index(self) -> int:
        return self.page_no * PAGE + self.query_one("#queue-table", DataTable).cursor_row

    def current(self) -> QueueItem | None:
        page = self.page_items()
        row = self.query_one("#queue-table", DataTable).cursor_row
        return page[row] if 0 <= row < len(page) else None

    @on(DataTable.RowHighlighted, "#queue-table")
    def _highlighted(self) -> None:
        item = self.current()
        if item is not None and not self.painting:
            self.load_detail(item.id)

    @background("queue-detail")
    def load_detail(self, promotion_id: int) -> None:
        try:
            detail = promotion_detail(self.store, promotion_id)
        except StoreError as exc:
            deliver(self, self.notify, str(exc), severity="error")
            return
        deliver(self, self.show_detail, detail)

    @background("queue-similar-one")
    def load_similar(self, similarity: Similarity, promotion_id: int) -> None:
        """What the promotion shown resembles (a few ms: a query of the blocks, then the rows of the handful
        found); shown only if that promotion is still the one in detail."""
        found = similarity.similar(promotion_id)
        deliver(self, self.show_similar, promotion_id, found)

    def show_similar(self, promotion_id: int, found: tuple[list[Similar], list[Similar]]) -> None:
        if self.detail is not None and self.detail.id == promotion_id:
            self.query_one(PromotionView).show_similar(found, self.detail.scope_hash)

    def show_detail(self, detail: PromotionDetail | None) -> None:
        if detail is None or self.detail is None or detail.id != self.detail.id:
            self.query_one(PromotionView).show_similar(None)  # another promotion's list must not stay under it
        self.detail = detail
        empty = (
            "Nothing matches the filter (esc in the filter clears it)."
            if self.filter_text
            else "Nothing pending. (q quits, 2 searches)"
        )
        self.query_one(PromotionView).show(detail, empty)
        if detail is not None and self.similarity is not None:
            self.load_similar(self.similarity, detail.id)

    # ------------------------------------------------------------------ movement and marks

    def action_cursor(self, delta: int) -> None:
        table = self.query_one("#queue-table", DataTable)
        target = table.cursor_row + delta
        if target >= table.row_count and (self.page_no + 1) * PAGE < len(self.items):
            self.action_page(1)
        elif target < 0 and self.page_no:
            self.action_page(-1)
            table.move_cursor(row=table.row_count - 1)
        else:
            table.move_cursor(row=max(0, min(target, table.row_count - 1)))

    def action_page(self, delta: int) -> None:
        pages = max(1, -(-len(self.items) // PAGE))
        new = max(0, min(self.page_no + delta, pages - 1))
        if new != self.page_no:
            self.page_no = new
            self.fill_page(0)

    def action_jump(self, where: str) -> None:
        if where == "top":
            self.page_no = 0
            self.fill_page(0)
        else:
            self.page_no = max(0, (len(self.items) - 1) // PAGE)
            self.fill_page(len(self.page_items()) - 1)

    def action_mark(self) -> None:
        item = self.current()
        if item is None:
            return
        self.marked ^= {item.id}
        self.range_anchor = self.current_index()
        self.refresh_row(item)
        self.action_cursor(1)

    def action_mark_range(self) -> None:
        if self.range_anchor is None:
            self.action_mark()
            return
        here = self.current_index()
        low, high = sorted((self.range_anchor, here))
        for item in self.items[low : high + 1]:
            self.marked.add(item.id)
        self.fill_page(self.query_one("#queue-table", DataTable).cursor_row)

    def action_mark_all(self) -> None:
        page = {i.id for i in self.page_items()}
        self.marked = set() if page <= self.marked else self.marked | page
        self.fill_page(self.query_one("#queue-table", DataTable).cursor_row)

    def refresh_row(self, item: QueueItem) -> None:
        table = self.query_one("#queue-table", DataTable)
        table.update_cell(str(item.id), "mark", self.cells(item)[0])
        self.update_status()

    def action_cycle_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.notify(f"sorted by {self.sort}", timeout=2)
        self.reload(keep=0)

    # ------------------------------------------------------------------ saved views

    def known_views(self) -> list[View]:
        """The saved views (engram's defaults when the person's file cannot be read: said once)."""
        if self.views is None:
            try:
                self.views = load_views()
            except StoreError as exc:
                self.views = list(DEFAULTS)
                self.notify(str(exc), severity="warning")
        return self.views

    def showing_view(self) -> View | None:
        """The view whose filter and sort the queue shows (none before views were first asked for)."""
        return next((v for v in self.views or () if (v.filter, v.sort) == (self.filter_text, self.sort)), None)

    def action_next_view(self) -> None:
        views = self.known_views()
        current = self.showing_view()
        self.action_view(views[(views.index(current) + 1) % len(views)].name if current else views[0].name)

    def action_view(self, name: str) -> None:
        """Show the view ``name``: its filter (in the filter box) and its sort."""
        view = next((v for v in self.known_views() if v.name == name), None)
        if view is not None:
            self.filter_text, self.sort = view.filter, view.sort
            self.query_one("#queue-filter", Input).value = view.filter
            self.notify(f"view: {view.name}", timeout=2)
            self.reload(keep=0)

    def action_save_view(self) -> None:
        def save(name: str | None) -> None:
            if name:
                try:
                    self.views = save_view(View(name.strip(), self.filter_text, self.sort))
                except (StoreError, OSError) as exc:
                    self.notify(str(exc), severity="error")
                    return
                self.notify(f"view saved: {name.strip()}", timeout=3)
                self.update_status()

        current = self.showing_view()
        question = f"Save as a view (filter: {self.filter_text or 'none'}, sort: {self.sort}), named:"
        self.app.push_screen(TextPrompt(question, "a name", value=current.name if current else ""), save)

    # ------------------------------------------------------------------ filter

    def action_filter(self) -> None:
        box = self.query_one("#queue-filter", Input)
        box.display = True
        box.focus()

    @on(Input.Submitted, "#queue-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        try:
            queue_query(event.value)
        except QuerySyntaxError as exc:
            self.notify(str(exc), severity="error")
            return
        self.filter_text = event.value.strip()
        self.query_one("#queue-table", DataTable).focus()
        event.input.display = bool(self.filter_text)
        self.reload(keep=0)

    def key_escape(self) -> None:
        box = self.query_one("#queue-filter", Input)
        if box.has_focus or self.filter_text:
            box.value = ""
            box.display = False
            self.filter_text = ""
            self.query_one("#queue-table", DataTable).focus()
            self.reload(keep=0)

    # ------------------------------------------------------------------ decisions

    def targets(self) -> list[QueueItem]:
        if self.marked:
            return [i for i in self.items if i.id in self.marked]
        item = self.current()
        return [item] if item else []

    def decide(
        self,
        label: str,
        act: Callable[[int], promotions.Decision],
        confirm_over: int = 1,
        items: list[QueueItem] | None = None,
        question: str | None = None,
    ) -> None:
        """Run ``act`` on ``items`` (by default the marked promotions, or the cursor's), asking first when there
        are several (``question``, or how many)."""
        items = items if items is not None else self.targets()
        if not items or self.busy:
            return
        locked = sorted({i.scope_hash for i in items if i.sensitive and not self.store.keys.can_open(i.scope_hash)})
        if locked and label.startswith(("approve", "merge", "edit")):
            from engram.tui.screens.unlock import ask_unlock  # screens of an action: imported by it

            ask_unlock(self, self.store, locked, lambda: self.decide(label, act, confirm_over, items, question))
            return
        ids = [i.id for i in items]
        if len(ids) > confirm_over:
            self.app.push_screen(
                Confirm(question or f"{label.capitalize()} {len(ids)} promotions?"),
                lambda yes: self.run_decisions(label, act, ids) if yes else None,
            )
        else:
            self.run_decisions(label, act, ids)

    def run_decisions(self, label: str, act: Callable[[int], promotions.Decision], ids: list[int]) -> None:
        """Decide in a worker. Until it is done, another key that decides, undoes or redoes does nothing (so a
        second ``a`` pressed while the first runs never decides twice)."""
        self.run_step(lambda: decide_each(label, act, ids), Kind.DECIDE, label, land=self.next_undecided(set(ids)))

    def run_step(self, work: Callable[[], Outcome], kind: Kind, message: str, land: int | None = None) -> None:
        """The one path of decisions, undo and redo: ``work`` runs in a worker and returns the step it made, which
        the history then files by ``kind`` (an undo's or redo's step leaves its stack only once the work
        succeeded). The cursor then lands on ``land`` (a promotion id), whatever order the queue has once
        reloaded."""
        if self.busy:
            return
        self.busy = True
        self.land_on = land
        self.titles = {item.id: item.title for item in self.items}  # for saying what was decided, once it is gone
        self.step_in_worker(work, kind, message)

    def next_undecided(self, decided: set[int]) -> int | None:
        """The promotion the cursor goes to once ``decided`` are decided: the next one below the cursor in the
        current order that is not among them, else the nearest above. (A deferred promotion sinks to the end of
        the default order: following it there would lose the person's place.)"""
        index = self.current_index()
        below = (item.id for item in self.items[index:] if item.id not in decided)
        above = (item.id for item in reversed(self.items[:index]) if item.id not in decided)
        return next(below, next(above, None))

    @background("queue-act", exclusive=False)
    def step_in_worker(self, work: Callable[[], Outcome], kind: Kind, message: str) -> None:
        outcome: Outcome | None = None
        try:
            outcome = work()
        finally:  # whatever happened, the queue takes keys again
            deliver(self, self.stepped, outcome, kind, message)

    def stepped(self, outcome: Outcome | None, kind: Kind, message: str) -> None:
        """On the UI thread: file the step in the history, say what was skipped or stopped it, and show what is
        pending now (a row decided elsewhere leaves the list; the cursor keeps its place, so it rests on the next
        one)."""
        self.busy = False
        if outcome is None:
            self.reload()
            return
        if outcome.skipped:
            more = f" (and {len(outcome.skipped) - 1} more)" if len(outcome.skipped) > 1 else ""
            self.notify(outcome.skipped[0] + more, title="Changed elsewhere: skipped", severity="warning", timeout=8)
        if outcome.stopped:
            self.notify(outcome.stopped, title="Stopped", severity="error", timeout=8)
        if self.history.settle(outcome, kind):
            self.marked.clear()
        step, undone = outcome.step, kind is Kind.UNDO
        if step.decisions or undone:
            succeeded(self, told(message, step, undone, self.titles), self.reload)
        else:  # everything was skipped (and said): engram changed nothing, but the store had changed
            changed_elsewhere(self, self.reload)
        dropped = promotions.reasons_dropped(step.decisions) if kind is Kind.DECIDE else []
        if dropped:
            ids = ", ".join(f"#{pid}" for pid in dropped)
            self.notify(
                f"the reason for {ids} is not kept: its scope is sensitive and locked (ctrl+u unlocks it)",
                severity="warning",
                timeout=8,
            )
        if self.store.audit_warning:
            self.notify(self.store.audit_warning, severity="warning")

    def action_approve(self) -> None:
        """Approve. A promotion the poisoning screen puts in quarantine is approved only alone, each finding
        acknowledged (:meth:`acknowledge`): several marked leave it out and say so. Promotions that hold
        secret-looking text ask first (:class:`SecretsPrompt`)."""
        from engram.store.screening import pending_screens  # the screen's rules: compiled on first use

        targets = self.targets()
        if not targets or self.busy:
            return
        screens = pending_screens(self.store, [i.id for i in targets])
        self.lanes.update({pid: found.lane for pid, found in screens.items()})
        held = [i for i in targets if self.lanes.get(i.id) == "quarantine"]
        if held and len(targets) == 1:
            self.acknowledge(held[0], screens[held[0].id])
            return
        if held:
            names = ", ".join(f"#{i.id}" for i in held)
            self.notify(
                f"left out, in quarantine: {names} (approve each alone to see its findings)", severity="warning"
            )
            targets = [i for i in targets if i not in held]
            if not targets:
                return
        self.approve_items(targets)

    def action_reveal(self) -> None:
        """The promotion under the cursor with its hidden text shown, beside it as rendered (x)."""
        from engram.tui.screens.reveal import RevealScreen  # a screen of an action: imported by it

        detail = self.detail
        item = self.current()
        if detail is None or item is None or detail.id != item.id:
            self.notify("put the cursor on a promotion first (its detail is still loading)", severity="warning")
            return
        self.app.push_screen(RevealScreen(f"#{detail.id}", detail.title, detail.triggers, detail.body, detail.screen))

    def acknowledge(self, item: QueueItem, found: Screening) -> None:
        """Approve one quarantined promotion only once the person has read each finding and said yes to all: the
        audit event records the rule ids acknowledged."""
        listing = "\n".join(
            f"  {f.rule} ({f.field}{', ' + f.revealed if f.revealed else ''}): {f.excerpt}" for f in found.findings
        )
        question = (
            f"#{item.id} '{short(item.title)}' is in quarantine. Its findings:\n{listing}\n"
            "Approve it anyway, acknowledging each finding (recorded in the audit log)? (y/n)"
        )
        rules = found.rules
        self.app.push_screen(
            Confirm(question),
            lambda yes: (
                self.decide(
                    "approve (acknowledged)",
                    lambda pid: promotions.approve(self.store, pid, acknowledged=rules),
                    items=[item],
                )
                if yes
                else None
            ),
        )

    def approve_items(self, targets: list[QueueItem]) -> None:
        flagged = [i for i in targets if i.id in self.flagged]
        count = len(targets)
        if not flagged:
            self.decide("approve", lambda pid: promotions.approve(self.store, pid), items=targets)
            return
        ids = {i.id for i in flagged}

        def chosen(answer: str | None) -> None:
            if answer == "redact":
                self.decide("approve (redacted)", lambda pid: self.approve_redacted(pid, ids), count, targets)
            elif answer == "sensitive":
                self.decide("approve", lambda pid: promotions.approve(self.store, pid), count, targets)
            elif answer == "reject":
                reason = "holds secret-looking text"
                self.run_decisions("reject", lambda pid: promotions.reject(self.store, pid, reason), sorted(ids))

        kinds = sorted(set().union(*(self.flagged[i] for i in ids)))
        self.app.push_screen(SecretsPrompt(len(flagged), kinds, all(i.sensitive for i in flagged)), chosen)

    def approve_redacted(self, pid: int, flagged: set[int]) -> promotions.Decision:
        return promotions.approve(self.store, pid, redact_secrets=pid in flagged)

    def action_reject_now(self) -> None:
        self.decide_now("reject", promotions.reject)

    def action_defer_now(self) -> None:
        self.decide_now("defer", promotions.defer)

    def decide_now(self, label: str, act: Callable[[Store, int], promotions.Decision]) -> None:
        """One key, no reason asked; several marked are named in a confirmation first."""
        targets = self.targets()
        self.decide(label, lambda pid: act(self.store, pid), items=targets, question=f"{_what(label, targets)}?")

    def action_snooze(self) -> None:
        """Out of the queue until a time the person says (memoryd still sees it pending); it comes back on its
        own."""
        from engram.store.snooze import FORMS, parse_until

        targets = self.targets()
        if not targets or self.busy:
            return

        def until(text: str | None) -> None:
            if not text:
                return
            try:
                when = parse_until(text, self.store.now())
            except StoreError as exc:
                self.notify(str(exc), title="Snooze", severity="warning")
                return
            self.decide("snooze", lambda pid: promotions.snooze(self.store, pid, when), len(targets), targets)

        self.app.push_screen(TextPrompt(f"{_what('snooze', targets)} until? ({FORMS})", "3d"), until)

    def action_reject(self) -> None:
        self.decide_with_reason("reject", promotions.reject, "duplicate, wrong, too vague …")

    def action_defer(self) -> None:
        self.decide_with_reason("defer", promotions.defer, "ask someone, check later …")

    def decide_with_reason(
        self, label: str, act: Callable[[Store, int, str | None], promotions.Decision], hint: str
    ) -> None:
        """Ask for an optional reason, then decide (the prompt is the confirmation, for one or many)."""

        targets = self.targets()
        if not targets or self.busy:
            return

        def with_reason(reason: str | None) -> None:
            if reason is not None:
                self.decide(label, lambda pid: act(self.store, pid, reason or None), len(targets), targets)

        self.app.push_screen(TextPrompt(f"{_what(label, targets)}: why? (optional)", hint), with_reason)

    def action_edit(self) -> None:
        if self.marked:
            self.notify("Edit works on one promotion: clear the marks first", severity="warning")
            return
        if self.detail is None:
            return
        detail = self.detail
        from engram.tui.screens.edit import EditScreen

        def approve_edited(edits: promotions.Edits | None) -> None:
            if edits is not None:
                self.decide("approve (edited)", lambda pid: promotions.approve(self.store, pid, edits))

        self.app.push_screen(EditScreen(detail, detail.scope_hash in self.store.sensitive_scopes()), approve_edited)

    def action_merge(self) -> None:
        """Pick the memory to merge into: the similar ones of the promotion's scope first (the detail ranked
        them), the scope fixed; then a preview of the target and a confirmation naming it."""
        item = self.current()
        if item is None or self.marked:
            return
        index = self.shared.search
        if index is None:
            self.notify("The search index is still loading; try again in a moment", severity="warning")
            return
        from engram.tui.screens.pick import Candidate, MemoryPicker

        similar = [
            Candidate(found.key, f"{found.score:.0%} alike", found.title)
            for found in self.query_one(SimilarList).found
            if found.kind == "memory" and found.scope_hash == item.scope_hash
        ]

        def picked(slug: str | None) -> None:
            if slug:
                self.confirm_merge(item, slug)

        question = f"Merge #{item.id} '{short(item.title)}' into which memory?"
        self.app.push_screen(MemoryPicker(question, index, scope=item.scope_hash, first=similar), picked)

    def confirm_merge(self, item: QueueItem, slug: str) -> None:
        """What the promotion would be merged into, shown before anything changes."""
        try:
            target = self.store.memory(slug)
            body = self.store.read_doc(self.store.safe_relpath(target.body_path)).body
        except StoreError as exc:  # a locked scope, a file gone: said, nothing merged
            self.notify(str(exc), title="Merge", severity="warning")
            return
        preview = "\n".join(masked(line) for line in body.strip().splitlines()[:6])

        def answered(yes: bool | None) -> None:
            if yes:
                self.decide("merge", lambda pid: promotions.merge(self.store, pid, slug), items=[item])

        self.app.push_screen(Confirm(f"Merge #{item.id} into '{short(target.title, 60)}'?\n\n{preview}"), answered)

    def action_undo(self) -> None:
        """Undo the newest step; the cursor lands on the promotion it restores (the first, for a bulk step)."""
        step = self.history.next_undo()
        if step is not None:
            restored = step.decisions[0].promotion_id if step.decisions else None
            self.run_step(lambda: undo_step(self.store, step), Kind.UNDO, f"undid {step.label}", land=restored)

    def action_redo(self) -> None:
        step = self.history.next_redo()
        if step is not None:
            again = self.next_undecided({d.promotion_id for d in step.decisions})
            self.run_step(step.redo, Kind.REDO, step.label, land=again)

    # ------------------------------------------------------------------ sensitive scopes

    def wake_if_due(self) -> None:
        """Called every few seconds: a snoozed promotion whose time has come is back in the queue, in an idle
        console too."""
        if self.wake_at is not None and self.store.now().isoformat() >= self.wake_at:
            self.wake_at = None
            self.reload()

    def keys_changed(self, showing: bool) -> None:
        """Scopes were unlocked or locked: the page's lock marks follow."""
        self.fill_page(self.query_one("#queue-table", DataTable).cursor_row)

    @on(DataTable.RowSelected, "#queue-table")
    def action_open_session(self) -> None:
        if self.detail is not None:
            self.post_message(OpenMemory(self.detail.source_session_slug))
