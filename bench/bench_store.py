"""Store benchmarks: build 1k / 20k / 100k demo roots once, then time the store's whole-root operations.

Prints one row per root size: open + counts, reading every memory file, `engram check`, `engram
rebuild-index`, and the peak RSS of each step (each runs in its own process so peaks do not mix).
Usage: python bench/bench_store.py [--sizes 1000,20000,100000] [--dir bench/roots]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

STEP = r"""
import json, resource, sys, time
from engram.store.sensitive.crypto import KeyRing
from engram.store.demo import DEMO_PASSPHRASE
from engram.store.service import Store
root, step = sys.argv[1], sys.argv[2]
t = time.perf_counter()
with Store.open(root, keys=KeyRing(passphrase=DEMO_PASSPHRASE)) as store:
    if step == "open":
        from engram.store.stats import counts
        counts(store)
    elif step == "read":
        from engram.store.frontmatter import parse
        from engram.store.drift.scan import FileEntry, walk
        for e in walk(store.layout):
            if isinstance(e, FileEntry):
                parse(store.read_bytes(e.relpath), e.relpath)
    elif step == "check":
        from engram.store.drift.check import check
        check(store)
    elif step == "rebuild":
        from engram.store.drift.rebuild import rebuild_index
        rebuild_index(store)
print(json.dumps({"s": time.perf_counter() - t, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

BUILD = r"""
import sys, time
from engram.store.demo import build_demo
from engram.store.service import Store
t = time.perf_counter()
with Store.open(sys.argv[1], create=True, actor="engram-bench") as store:
    build_demo(store, int(sys.argv[2]))
print(time.perf_counter() - t)
"""


def run(code: str, *args: str) -> str:
    repo = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": repo, "PATH": "/usr/bin:/bin"},
    )
    return out.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000,100000")
    parser.add_argument("--dir", default=str(Path(__file__).parent / "roots"))
    args = parser.parse_args()
    print(
        f"{'memories':>9} {'build s':>8} {'open+counts s':>14} {'read all s':>11} {'check s':>8} "
        f"{'rebuild s':>10} {'peak RSS MB (open/read/check/rebuild)':>40}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        root = Path(args.dir) / f"demo-{size}"
        build = "(cached)"
        if not (root / "audit" / "audit.jsonl").exists():  # written once the demo batch has committed
            build = f"{float(run(BUILD, str(root), str(size))):.1f}"
        steps = {s: json.loads(run(STEP, str(root), s)) for s in ("open", "read", "check", "rebuild")}
        rss = "/".join(f"{steps[s]['rss_mb']:.0f}" for s in steps)
        print(
            f"{size:>9} {build:>8} {steps['open']['s']:>14.2f} {steps['read']['s']:>11.2f} "
            f"{steps['check']['s']:>8.2f} {steps['rebuild']['s']:>10.2f} {rss:>40}",
            flush=True,
        )


if __name__ == "__main__":
    main()
