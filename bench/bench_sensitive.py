"""Marking a scope sensitive: time and per-file cost of encrypting every memory of one ~5k-memory scope of a copy
of the 20k demo root (built by bench_store.py), of rekeying it to a new passphrase, and of unmarking it again.

Usage: python bench/bench_sensitive.py [--root bench/roots/demo-20000]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.store.demo import DEMO_PASSPHRASE, PROJECTS, scope_hash_of  # noqa: E402
from engram.store.sensitive.convert import mark_sensitive, unmark_sensitive  # noqa: E402
from engram.store.sensitive.crypto import KeyRing  # noqa: E402
from engram.store.sensitive.rekey import rekey_passphrase  # noqa: E402
from engram.store.service import Store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).parent / "roots" / "demo-20000"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=Path(args.root).parent) as work:
        root = Path(work) / "root"
        shutil.copytree(args.root, root)
        scope = scope_hash_of(PROJECTS[0][0])
        with Store.open(root, keys=KeyRing(passphrase=DEMO_PASSPHRASE), actor="engram-bench") as store:
            t = time.perf_counter()
            done = mark_sensitive(store, scope)
            marked = time.perf_counter() - t
            t = time.perf_counter()
            rekeyed_files = rekey_passphrase(store, "a-new-bench-passphrase").done  # every sensitive scope
            rekeyed = time.perf_counter() - t
            t = time.perf_counter()
            unmark_sensitive(store, scope)
            unmarked = time.perf_counter() - t
        print(f"scope {scope}: {done.files} memories in {done.batches} batches")
        print(f"mark:   {marked:.1f} s, {1000 * marked / done.files:.2f} ms per file (key derived once: ~0.25 s)")
        print(
            f"rekey:  {rekeyed:.1f} s for {rekeyed_files} files of every sensitive scope, "
            f"{1000 * rekeyed / rekeyed_files:.2f} ms per file (every file read first)"
        )
        print(f"unmark: {unmarked:.1f} s, {1000 * unmarked / done.files:.2f} ms per file")


if __name__ == "__main__":
    main()
