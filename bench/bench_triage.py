"""What the queue's triage help costs on a large root: the blocks of near-duplicates, similar-for-one (the
detail's list), clustering a given number of pending promotions against every memory, and reading a person's
decisions for the thresholds screen. Each figure is the work of the worker that does it in the console.

Usage: python bench/bench_triage.py [--root bench/roots/demo-100000] [--pending 2000] [--probes 500]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.store.calibration import decisions, suggest  # noqa: E402
from engram.store.service import Store  # noqa: E402
from engram.store.similar import Block, Similarity  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).parent / "roots" / "demo-100000"))
    parser.add_argument("--pending", type=int, default=2000, help="pending promotions to cluster")
    parser.add_argument("--probes", type=int, default=500, help="promotions to ask similar-for-one of")
    args = parser.parse_args()
    with Store.open(args.root) as store:
        t = time.perf_counter()
        built = Similarity.build(store)
        build = time.perf_counter() - t
        print(
            f"root: {args.root}: {built.memories.size:,} memories (sessions left out), {len(built.pending):,} pending"
        )
        held = (built.memories.nbytes + built.pending_block.nbytes) / 1e6
        print(f"blocks of every memory and pending promotion      {build:8.2f} s, {held:.0f} MB of arrays")

        times = []
        for promotion in built.pending[: args.probes]:
            t = time.perf_counter()
            built.similar(promotion.id)
            times.append(1000 * (time.perf_counter() - t))
        times.sort()
        p95 = times[int(0.95 * (len(times) - 1))]
        print(
            f"similar-for-one over {len(times)} promotions          "
            f"p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, max {times[-1]:.1f} ms"
        )

        t = time.perf_counter()
        memories = Similarity.build(store)  # the worker's whole work: memory blocks, pending, then clusters
        pending = memories.pending[: args.pending]
        some = Similarity(
            memories.memories,
            memories.added,
            pending,
            Block((p.id, p.text.norm, p.text.fp, p.text.scope_hash) for p in pending),
            {p.id: p for p in pending},
        )
        clusters = some.clusters()
        whole = time.perf_counter() - t
        print(
            f"clusters of {len(pending):,} pending against every memory, blocks included "
            f"{whole:6.2f} s ({len(clusters.members)} clusters, {len(clusters.repeats_memory)} repeat a memory)"
        )

        t = time.perf_counter()
        decided = decisions(store)
        suggestion = suggest(decided)
        print(f"thresholds: {len(decided):,} decisions read and a suggestion made   {time.perf_counter() - t:6.2f} s")
        print(f"  {suggestion.why}")


if __name__ == "__main__":
    main()
