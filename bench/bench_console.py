"""Console benchmarks on a demo root (default: the 100k root bench_store.py builds):
- open: from starting the app to the queue's first page on screen (headless, 200x50);
- search: the persistent full-text index's sync (a first build when the root has none, then an up-to-date
  one), the index's load (bodies of plain scopes searchable from then on) with resident memory, and the
  per-keystroke time of the search function while typing queries, p50 / p95, before and after the background
  enrichment with unlocked sensitive bodies;
- on screen: in the running app, from a key reaching the search box to the screen having been repainted with
  its results (the refresh after the keystroke), while bodies load in the background and after;
- approve: latency of approving one promotion (file, index, audit, checkpoint), each undone afterwards.

Usage: python bench/bench_console.py [--root bench/roots/demo-100000] [--approvals 20]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.store import promotions  # noqa: E402
from engram.store.demo import DEMO_PASSPHRASE  # noqa: E402
from engram.store.models import Promotion  # noqa: E402
from engram.store.search.fulltext import FullText, sync  # noqa: E402
from engram.store.search.index import SearchIndex  # noqa: E402
from engram.store.sensitive.crypto import KeyRing  # noqa: E402
from engram.store.service import Store  # noqa: E402

QUERIES = [
    "kafka lag",
    "type:fact pinned",
    "^how roll",
    "灰度 30%",
    "!type:session scope:28c4 webhook",
    "rollback | restart",
    "config/ledger.yaml",
    "tag:backend idempotency",
]


def resident_mb() -> float:
    """This process's resident memory now (Linux)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def mapped_mb() -> float:
    """How much of :func:`resident_mb` is pages of mapped files (the search's segments: the kernel's page cache,
    shared and reclaimable, not memory the process holds)."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(status.get("RssFile", "0 kB").split()[0]) / 1024


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    median, top = statistics.median(ordered), ordered[-1]
    return f"p50 {median * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms   max {top * 1000:6.1f} ms"


def typing(index: SearchIndex) -> list[float]:
    """Each of QUERIES typed a key at a time, as the search pane asks: the best SHOWN hits per keystroke."""
    from engram.tui.panes.search import SHOWN

    times = []
    for query in QUERIES:
        index.search("", limit=SHOWN)
        for n in range(1, len(query) + 1):
            t = time.perf_counter()
            index.search(query[:n], limit=SHOWN)
            times.append(time.perf_counter() - t)
    return times


async def open_time(root: Path) -> float:
    from engram.tui.app import EngramApp
    from engram.tui.panes.queue import QueuePane

    with Store.open(root, keys=KeyRing(passphrase=DEMO_PASSPHRASE)) as store:
        start = time.perf_counter()
        app = EngramApp(store)
        async with app.run_test(size=(200, 50)) as pilot:
            while not app.query_one(QueuePane).items:
                await pilot.pause(0.005)
            return time.perf_counter() - start


async def on_screen(root: Path) -> tuple[list[float], list[float]]:
    """Keystroke to repainted results in the app (headless, 200x50), typing every query of QUERIES while the
    pane's bodies load in its worker, then again once they are in. Timed from posting the key to the callback
    Textual runs after the next screen refresh; what Pilot does after posting does not enter the figure."""
    from textual.widgets import Input

    from engram.tui.app import EngramApp
    from engram.tui.panes.search import SearchPane

    samples: list[float] = []
    posted: list[float] = []  # when the key being answered was posted; empty when no key is
    original = SearchPane.run_search

    def timed(pane: SearchPane, text: str) -> None:
        original(pane, text)
        if posted:
            started = posted.pop()
            pane.call_after_refresh(lambda: samples.append(time.perf_counter() - started))

    SearchPane.run_search = timed  # type: ignore[method-assign]
    try:
        with Store.open(root, keys=KeyRing(passphrase=DEMO_PASSPHRASE)) as store:
            app = EngramApp(store)
            async with app.run_test(size=(200, 50)) as pilot:
                await pilot.press("2")  # a pane is built when first shown
                while not app.query(SearchPane):
                    await pilot.pause(0.01)
                pane = app.query_one(SearchPane)
                while pane.index is None:
                    await pilot.pause(0.01)
                runs = []
                for _ in range(2):
                    samples.clear()
                    for query in QUERIES:
                        pane.query_one("#search-query", Input).value = ""
                        await pilot.pause(0.05)
                        for ch in query:
                            posted[:] = [time.perf_counter()]
                            await pilot.press(ch)
                        await pilot.pause(0.05)
                    runs.append(list(samples))
                    while not pane.index.enriched:
                        await pilot.pause(0.5)
                return runs[0], runs[1]
    finally:
        SearchPane.run_search = original  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).parent / "roots" / "demo-100000"))
    parser.add_argument("--approvals", type=int, default=20)
    args = parser.parse_args()
    root = Path(args.root)
    print(f"root: {root}")
    print(f"open to first queue page: {asyncio.run(open_time(root)):.2f} s")
    with Store.open(root, keys=KeyRing(passphrase=DEMO_PASSPHRASE), actor="engram-bench") as store:
        for _ in range(2):  # the first builds the persistent index if this root has none yet
            t = time.perf_counter()
            synced = sync(store)
            print(f"persistent index sync: {time.perf_counter() - t:.1f} s ({synced.read} files read)")
        before = resident_mb()
        t = time.perf_counter()
        index = SearchIndex.load(store, FullText.open(store))
        print(
            f"search index load, bodies of plain scopes searchable: {time.perf_counter() - t:.2f} s "
            f"({len(index.rows)} memories, {int(index.covered.sum())} from the persistent index; "
            f"resident memory {before:.0f} -> {resident_mb():.0f} MB)"
        )
        print(f"search, persistent index:     {percentiles(typing(index))}")
        t = time.perf_counter()
        index.enrich(store)
        print(f"enrichment (unlocked sensitive bodies, in memory): {time.perf_counter() - t:.1f} s")
        print(f"search, with sensitive bodies: {percentiles(typing(index))}  (resident {resident_mb():.0f} MB)")
        pending = [
            p.id
            for p in Promotion.select(Promotion.id)
            .where(Promotion.status == "pending")
            .order_by(Promotion.id)
            .limit(args.approvals)
        ]
        times, done = [], []
        for pid in pending:
            t = time.perf_counter()
            done.append(promotions.approve(store, pid))
            times.append(time.perf_counter() - t)
        for decision in reversed(done):
            promotions.undo(store, decision)
        print(f"approve ({len(times)}): {percentiles(times)}")
    loading, loaded = asyncio.run(on_screen(root))
    print(f"keystroke to results on screen, bodies loading: {percentiles(loading)}")
    print(f"keystroke to results on screen, bodies in:      {percentiles(loaded)}")


if __name__ == "__main__":
    main()
