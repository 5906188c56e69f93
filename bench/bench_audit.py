"""Audit benchmarks: verify time and peak memory for 100k and 1M-line logs, and the append rate of four
concurrent writer processes (two by engram's writer, two by memoryd's rule) on one log.

Usage: python bench/bench_audit.py [--lines 100000,1000000] [--appends 500] [--dir bench/logs]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from engram.store.audit.chain import GENESIS, append_event, canonical_json, memoryd_link, this_hash  # noqa: E402

VERIFY = r"""
import json, resource, sys, time
from pathlib import Path
from engram.store.audit.verify import verify
t = time.perf_counter()
v = verify(Path(sys.argv[1]))
print(json.dumps({"s": time.perf_counter() - t, "status": v.status, "lines": v.lines,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build_log(path: Path, lines: int) -> None:
    """A mixed log (every third line by memoryd's rule), written in one pass without locking."""
    prev = None
    with path.open("wb") as fh:
        for n in range(1, lines + 1):
            link = GENESIS if prev is None else memoryd_link(prev)
            if n % 3 == 1:
                obj = {
                    "scope_hash": "91c2073b561e",
                    "event_type": "access_granted",
                    "tool": "search_memory",
                    "result": "ok",
                    "ts": "2026-11-20T12:00:00+00:00",
                    "prev_hash": link,
                }
                fh.write((json.dumps(obj) + "\n").encode())
            else:
                obj = {
                    "seq": n,
                    "ts": "2026-11-20T12:00:00+00:00",
                    "actor": "engram-bench",
                    "event_type": "memory_edited",
                    "scope_hash": "0123456789ab",
                    "target_id": f"slug-{n}",
                    "details": canonical_json({"fields": ["title"]}),
                    "prev_hash": link,
                }
                obj["this_hash"] = this_hash(obj)
                fh.write((json.dumps(obj, ensure_ascii=False) + "\n").encode())
            prev = obj


def memoryd_append(path: Path, record: dict) -> None:
    """memoryd's rule, reading only the last line, under the same flock."""
    with path.open("a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        size = fh.seek(0, os.SEEK_END)
        prev = GENESIS
        if size:
            fh.seek(max(0, size - 65536))
            prev = memoryd_link(json.loads(fh.read().splitlines()[-1]))
        fh.write((json.dumps({**record, "prev_hash": prev}) + "\n").encode())
        fh.flush()
        os.fsync(fh.fileno())


def writer(args: tuple[str, int, bool]) -> None:
    path, count, as_engram = Path(args[0]), args[1], args[2]
    for i in range(count):
        if as_engram:
            append_event(
                path,
                actor="engram-bench",
                event_type="memory_edited",
                scope_hash=None,
                target_id=str(i),
                details={"i": i},
            )
        else:
            memoryd_append(path, {"event_type": "access_granted", "tool": f"t{i}", "result": "ok"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", default="100000,1000000")
    parser.add_argument("--appends", type=int, default=500, help="appends per writer process")
    parser.add_argument("--dir", default=str(Path(__file__).parent / "logs"))
    args = parser.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    print(f"{'lines':>9} {'MB':>7} {'verify s':>9} {'lines/s':>10} {'peak RSS MB':>12}")
    for lines in (int(x) for x in args.lines.split(",")):
        log = folder / f"audit-{lines}.jsonl"
        if not log.exists():
            build_log(log, lines)
        out = subprocess.run(
            [sys.executable, "-c", VERIFY, str(log)],
            check=True,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        ).stdout
        r = json.loads(out)
        assert r["status"] == "valid" and r["lines"] == lines, r
        print(
            f"{lines:>9} {log.stat().st_size / 1e6:>7.1f} {r['s']:>9.2f} {lines / r['s']:>10.0f} {r['rss_mb']:>12.0f}",
            flush=True,
        )
    log = folder / "concurrent.jsonl"
    log.unlink(missing_ok=True)
    t = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(writer, [(str(log), args.appends, e) for e in (True, False, True, False)])
    elapsed = time.perf_counter() - t
    total = 4 * args.appends
    print(
        f"4 writers x {args.appends} appends (2 engram, 2 memoryd rule, each fsynced): "
        f"{elapsed:.2f} s, {total / elapsed:.0f} appends/s"
    )


if __name__ == "__main__":
    main()
