"""The poisoning screen's figures: recall by category and false positives on the labelled corpus (tests/poisoning)
and the second set written after the rules, and the time it takes, per memory and over a whole root.

Usage: python bench/bench_screen.py [--root DIR] [--memories N]
Without --root, a demo root of N memories (default 3000) is written to a temporary directory and screened.
Latest figures: docs/poisoning.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from poisoning.corpus import cases  # noqa: E402
from poisoning.second import BENIGN as SECOND_BENIGN  # noqa: E402
from poisoning.second import POISONED as SECOND_POISONED  # noqa: E402

from engram.store.screen import Item  # noqa: E402
from engram.store.screen.screen import screen  # noqa: E402
from engram.store.screening import Tally, screen_root  # noqa: E402
from engram.store.service import Store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="a data root to screen (default: a fresh demo root)")
    parser.add_argument("--memories", type=int, default=3000, help="the demo root's size, without --root")
    args = parser.parse_args()
    corpus()
    if args.root:
        whole_root(Path(args.root))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            from engram.store.demo import build_demo

            root = Path(tmp) / "demo"
            with Store.open(root, create=True, actor="engram-demo") as store:
                build_demo(store, args.memories)
            whole_root(root)


def corpus() -> None:
    caught, total, lanes = Counter(), Counter(), Counter()
    times = []
    for category, item in cases():
        started = time.perf_counter()
        lane = screen(item).lane
        times.append(1000 * (time.perf_counter() - started))
        if category is None:
            lanes[lane] += 1
        else:
            total[category] += 1
            caught[category] += lane != "clean"
    print("recall on the corpus (flagged: review or quarantine)")
    for category in sorted(total):
        share = 100 * caught[category] / total[category]
        print(f"  {category:<16} {caught[category]:>3}/{total[category]:<3} {share:6.1f} %")
    all_caught, all_total = sum(caught.values()), sum(total.values())
    print(f"  {'overall':<16} {all_caught:>3}/{all_total:<3} {100 * all_caught / all_total:6.1f} %")
    benign = sum(lanes.values())
    quarantined, review = lanes["quarantine"], lanes["review"]
    print(
        f"benign corpus cases: {benign}, in quarantine {quarantined} ({100 * quarantined / benign:.1f} %),"
        f" to review {review} ({100 * review / benign:.1f} %)"
    )
    second = sum(screen(Item(title="Note", body=t)).lane != "clean" for t in SECOND_POISONED)
    flagged = sum(screen(Item(title="Note", body=t)).lane != "clean" for t in SECOND_BENIGN)
    print(
        f"second set: {second}/{len(SECOND_POISONED)} poisoned flagged, {flagged}/{len(SECOND_BENIGN)} benign flagged"
    )
    times.sort()
    print(
        f"screen one corpus item: median {statistics.median(times):.2f} ms, "
        f"p95 {times[int(0.95 * (len(times) - 1))]:.2f} ms, max {times[-1]:.2f} ms"
    )


def whole_root(root: Path) -> None:
    tally = Tally()
    lanes = Counter()
    with Store.open(root) as store:
        started = time.perf_counter()
        for item in screen_root(store, tally=tally):
            lanes[item.screening.lane] += 1
        took = time.perf_counter() - started
    screened = tally.promotions + tally.memories
    print(
        f"root {root.name}: {tally.promotions} pending + {tally.memories} memories screened in {took:.2f} s "
        f"({1000 * took / max(screened, 1):.2f} ms each, files read included; {tally.locked} locked not read): "
        f"{lanes['quarantine']} in quarantine, {lanes['review']} to review"
    )


if __name__ == "__main__":
    main()
