"""The history's costs: the first catch-up of a root (every memory file recorded), a catch-up with nothing to
record, the repository's size beside the root's, and what a revision adds to one approve.

Usage: python bench/bench_history.py [--root ROOT] [--approvals N]
``--root``: a data root (default: the 100k demo, built when missing). Its history is kept in a scratch state
folder, so the root's own is untouched; the approvals are undone after. Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def approvals(store: object, count: int, keep: bool) -> list[float]:
    """Approve ``count`` pending promotions with history kept or not, each timed, then undo them all."""
    from engram.store import promotions
    from engram.store.errors import Quarantined
    from engram.store.models import Promotion

    store.keep_history = keep  # type: ignore[attr-defined]
    done, times = [], []
    for p in Promotion.select(Promotion.id).where(Promotion.status == "pending").order_by(Promotion.id):
        t = time.perf_counter()
        try:
            done.append(promotions.approve(store, p.id))  # type: ignore[arg-type]
        except Quarantined:
            continue
        times.append((time.perf_counter() - t) * 1000)
        if len(times) == count:
            break
    for decision in reversed(done):
        promotions.undo(store, decision)  # type: ignore[arg-type]
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(REPO / "bench" / "roots" / "demo-100000"))
    parser.add_argument("--memories", type=int, default=100_000, help="the demo's size when it is built")
    parser.add_argument("--approvals", type=int, default=30)
    args = parser.parse_args()
    root = Path(args.root)
    with tempfile.TemporaryDirectory(prefix="bench-history-") as scratch:
        os.environ["XDG_STATE_HOME"] = str(Path(scratch) / "state")
        os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
        if not (root / "index.db").exists():
            words = ["demo", "--root", str(root), "--memories", str(args.memories), "--no-open"]
            subprocess.run([sys.executable, "-m", "engram", *words], check=True, capture_output=True)
        from engram.store.demo import DEMO_PASSPHRASE
        from engram.store.history import ops
        from engram.store.sensitive.convert import unlock
        from engram.store.sensitive.crypto import KeyRing
        from engram.store.service import Store

        with Store.open(root, keys=KeyRing(passphrase=DEMO_PASSPHRASE), actor="engram-bench") as store:
            started = time.perf_counter()
            recorded = ops.catch_up(store)
            print(f"first catch-up: {time.perf_counter() - started:.1f} s, {len(recorded):,} files recorded")
            started = time.perf_counter()
            again = ops.catch_up(store)
            print(f"catch-up with nothing new: {time.perf_counter() - started:.2f} s ({len(again)} files)")
            repo, scopes = folder_bytes(store.history.path), folder_bytes(root / "scopes")
            print(
                f"repository {repo / 2**20:.0f} MB, the root's scopes/ {scopes / 2**20:.0f} MB ({repo / scopes:.2f}x)"
            )
            unlock(store)
            approvals(store, 5, True)  # imports and first writes: not timed
            kept, plain = [], []
            for _ in range(3):
                kept += approvals(store, args.approvals // 3, True)
                plain += approvals(store, args.approvals // 3, False)
            added = statistics.median(kept) - statistics.median(plain)
            print(
                f"approve: p50 {statistics.median(kept):.1f} ms with history, {statistics.median(plain):.1f} ms "
                f"without: a revision adds {added:.1f} ms (p95 {sorted(kept)[int(0.95 * (len(kept) - 1))]:.1f} ms)"
            )


if __name__ == "__main__":
    main()
