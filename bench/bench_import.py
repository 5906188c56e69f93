"""Importing Codex rollouts: time and peak memory of the preview and of the import.

    python bench/bench_import.py [--rollouts 10000]

Writes the rollouts (tests/fixtures/importers/generate.py) and a fresh data root under a temp directory, then
runs the preview and the import as ``engram import codex`` does. Peak memory is the process's maximum resident
set size (ru_maxrss) after each step; ``--trace`` adds tracemalloc's peak of Python allocations (and makes
every step several times slower, so its times are not the figures).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "importers"))

from generate import codex_home  # noqa: E402

from engram.store.importers import importer  # noqa: E402
from engram.store.importers.run import apply_import, preview  # noqa: E402
from engram.store.models import Memory  # noqa: E402
from engram.store.service import Store  # noqa: E402

TRACE = "--trace" in sys.argv


def measured(label: str, step):  # noqa: ANN001, ANN201
    if TRACE:
        tracemalloc.start()
    t = time.perf_counter()
    result = step()
    seconds = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak = f"   python peak {tracemalloc.get_traced_memory()[1] / 2**20:6.1f} MiB" if TRACE else ""
    tracemalloc.stop()
    print(f"{label:<40} {seconds:7.2f} s   max RSS so far {rss:6.0f} MiB{peak}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=10000)
    parser.add_argument("--trace", action="store_true", help="also report tracemalloc's peak (slow)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = codex_home(Path(tmp) / "codex", args.rollouts)
        with Store.open(Path(tmp) / "root", create=True, actor="engram-bench") as store:
            plan = measured(f"preview of {args.rollouts:,} rollouts", lambda: preview(store, importer("codex"), home))
            measured(f"import of {len(plan.sessions):,} sessions", lambda: apply_import(store, plan))
            again = measured("second preview (nothing new)", lambda: preview(store, importer("codex"), home))
            print(f"memories: {Memory.select().count():,}; second run would add {again.items}")


if __name__ == "__main__":
    main()
