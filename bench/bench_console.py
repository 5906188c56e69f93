"""Console benchmarks on a demo root (default: the 100k root bench_store.py builds):
- open: from starting the app to the queue's first page on screen (headless, 200x50);
- search: per-keystroke time of the search function while typing queries, p50 / p95, over titles and
  triggers (at once) and after the background enrichment with bodies and tags;
- on screen: in the running app, from a key reaching the search box to the screen having been repainted with
  its results (the refresh after the keystroke), while bodies load in the background and after;
- approve: latency of approving one promotion (file, index, audit, checkpoint), each undone afterwards.

Usage: python bench/bench_console.py [--root bench/roots/demo-100000] [--approvals 20]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.store import promotions  # noqa: E402
from engram.store.demo import DEMO_PASSPHRASE  # noqa: E402
from engram.store.index import Promotion  # noqa: E402
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


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    median, top = statistics.median(ordered), ordered[-1]
    return f"p50 {median * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms   max {top * 1000:6.1f} ms"


def typing(index: SearchIndex) -> list[float]:
    times = []
    for query in QUERIES:
        index.search("")
        for n in range(1, len(query) + 1):
            t = time.perf_counter()
            index.search(query[:n])
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
                pane = app.query_one(SearchPane)
                await pilot.press("2")
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
        t = time.perf_counter()
        index = SearchIndex.load(store)
        print(f"search index load: {time.perf_counter() - t:.2f} s ({len(index.rows)} memories)")
        print(f"search, titles and triggers:  {percentiles(typing(index))}")
        t = time.perf_counter()
        index.enrich(store)
        print(f"search enrichment (bodies, tags; in the background in the console): {time.perf_counter() - t:.1f} s")
        print(f"search, with bodies and tags: {percentiles(typing(index))}")
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
