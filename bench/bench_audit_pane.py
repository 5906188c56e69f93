"""The audit pane on a large log (default: the million-line log bench_audit.py builds): time to find every line,
to count events per day for the timeline, to draw a screen of lines, and to filter the whole log.

Usage: python bench/bench_audit_pane.py [--log bench/logs/audit-1000000.jsonl]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.store.audit.view import AuditLog, parse_filter  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", default=str(Path(__file__).parent / "logs" / "audit-1000000.jsonl"))
    args = parser.parse_args()
    path = Path(args.log)
    t = time.perf_counter()
    with AuditLog(path) as log:
        opened = time.perf_counter() - t
        print(f"{path.name}: {len(log):,} lines, {path.stat().st_size / 1e6:.0f} MB")
        print(f"open (every line found, nothing parsed): {opened * 1000:.0f} ms")
        t = time.perf_counter()
        for n in range(len(log), len(log) - 50, -1):  # a 200x50 screen, newest first
            log.event(n)
        print(f"one screen of 50 lines parsed: {(time.perf_counter() - t) * 1000:.1f} ms")
        t = time.perf_counter()
        days = log.per_day()
        print(f"events per day for the timeline ({len(days)} days): {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        found = log.matching(parse_filter("type:memory_edited"))
        print(f"filter type:memory_edited over every line ({len(found):,} match): {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
