"""Every figure of the scale goals (docs/performance.md, "Scale"), per demo root size, each step in its own process:

- demo build: ``engram demo --memories N`` wall time and peak resident memory (taken when the root is first built,
  kept beside it in ``demo-N.build.json``, since a 1,000,000-memory root takes a while to write);
- launch to the queue's first page in a real terminal: ``engram`` started in tmux (160x45) until the queue's
  status line shows its page (median of 7: one start varies by a tenth of a second either way; skipped without
  tmux): first with no DURA scores kept (a first start: the first page parses every pending score), then after
  what a console's last open keeps (not timed: the persistent index brought up to date, its rows, and the pending
  promotions' DURA scores);
- body search available after open: in a fresh process, the open from the kept rows, and the full read of
  index.db the console does next in the background, each with its resident memory;
- search per keystroke, bodies included: p50 / p95 while typing bench_console's queries a key at a time, on
  the index opened from the kept rows and on the full one, and on the one opened from the kept rows once every
  page of the index's files and of index.db was dropped from the kernel's cache (``POSIX_FADV_DONTNEED``: the
  state after a boot, as far as a process can make it);
- the whole console's resident memory: ``engram`` in tmux (160x45) once its background work is done (5 s in a
  row under a tenth of a core and under 1 MB read from storage, at most 10 minutes), and the share of a core it
  then uses idle over 10 s;
- the change feed: its first look (the snapshot every later look compares with) and what it holds, then one look
  after two writes to index.db that leave every value as it was (the token moved: every row compared, none named);
- ``engram check``: wall time and peak resident memory.

Usage: python bench/bench_scale.py [--sizes 100000,1000000] [--dir bench/roots]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_store import STEP, run

REPO = Path(__file__).resolve().parent.parent
# a tmux server of the bench's own: a person's tmux (its sessions, or a kill-server) and the bench's leave each
# other alone
TMUX, SESSION = ["tmux", "-L", "engram-bench"], "engram-bench"

KEEP = r"""
import sys
from engram.store import queue_scores
from engram.store.queue import pending_queue
from engram.store.search.fulltext import FullText, sync
from engram.store.search.index import SearchIndex
from engram.store.service import Store
with Store.open(sys.argv[1]) as store:
    sync(store)  # up to date first: the figures are those of an open with an up-to-date index
    SearchIndex.load(store, FullText.open(store), keep=True)  # what the console's last open kept
    queue_scores.keep(store, {item.id: item.dura for item in pending_queue(store)})  # and the queue's scores
print("kept")
"""

FORGET = r"""
import sys
from engram.store import queue_scores
from engram.store.service import Store
with Store.open(sys.argv[1]) as store:
    queue_scores.scores_path(store).unlink(missing_ok=True)  # a cache: the next full read keeps them again
print("forgotten")
"""

LOAD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from bench_console import mapped_mb, percentiles, resident_mb, typing
from engram.store.search.fulltext import FullText
from engram.store.search.index import SearchIndex
from engram.store.service import Store
with Store.open(sys.argv[1]) as store:
    before = resident_mb()
    t = time.perf_counter()
    fulltext = FullText.open(store)
    kept = SearchIndex.cached(store, fulltext)
    opened = time.perf_counter() - t
    kept.prepare()  # as the console's loading worker does once it answers
    kept_rss = resident_mb()
    kept_typing = percentiles(typing(kept))
    kept_typed, kept_mapped = resident_mb(), mapped_mb()
    del kept
    t = time.perf_counter()
    index = SearchIndex.load(store, fulltext, keep=True)  # as the console loads it: plain rows read from their files
    load = time.perf_counter() - t
    index.prepare()  # as the console's loading worker does once the index answers (field and tag: bitsets)
    rss, mapped = resident_mb(), mapped_mb()
    full_typing = percentiles(typing(index))
    typed, typed_mapped = resident_mb(), mapped_mb()
    index.release()  # as the console does once typing stops
    print(json.dumps({"open": opened, "load": load, "rss_before": before, "rss_open": kept_rss, "rss": rss,
                      "mapped": mapped, "typing_open": kept_typing, "typing": full_typing,
                      "rss_open_typed": kept_typed, "mapped_open_typed": kept_mapped, "rss_typed": typed,
                      "mapped_typed": typed_mapped, "rss_idle": resident_mb()}))
"""

COLD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[2])
from bench_console import percentiles, typing
from engram.store.search.fulltext import FullText, cache_path
from engram.store.search.index import SearchIndex
from engram.store.service import Store
with Store.open(sys.argv[1]) as store:
    stem = cache_path(store)
    for directory, _, names in os.walk(stem.parent):  # every page of the index's files and index.db dropped
        for name in names:
            if name.startswith(stem.stem) or directory.startswith(str(stem.with_suffix(""))):
                fd = os.open(os.path.join(directory, name), os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)
    for name in ("index.db", "index.db-wal"):
        if os.path.exists(os.path.join(sys.argv[1], name)):
            fd = os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
    t = time.perf_counter()
    kept = SearchIndex.cached(store, FullText.open(store))
    opened = time.perf_counter() - t
    kept.prepare()
    prepared = time.perf_counter() - t
    print(json.dumps({"open": opened, "prepared": prepared, "typing": percentiles(typing(kept))}))
"""

FEED = r"""
import json, sqlite3, sys, time
sys.path.insert(0, sys.argv[2])
from bench_console import resident_mb
from engram.store.changes import ChangeFeed
from engram.store.service import Store
with Store.open(sys.argv[1]) as store:
    before = resident_mb()
    t = time.perf_counter()
    feed = ChangeFeed(store)
    first, held = time.perf_counter() - t, resident_mb() - before
    con = sqlite3.connect(store.index.path)  # a recall counted and taken back: written, no value changed
    for step in (1, -1):
        con.execute("UPDATE memories SET recall_count = recall_count + ? WHERE rowid = 1", (step,))
        con.commit()
    con.close()
    t = time.perf_counter()
    changes = feed.poll()
    look = time.perf_counter() - t
    print(json.dumps({"first": first, "held": held, "look": look, "named": len(changes.memories) if changes else 0}))
"""


def build(root: Path, size: int) -> dict[str, float]:
    """The root's build figures: measured now if the root is new, else as recorded when it was built."""
    record = root.with_name(root.name + ".build.json")
    if _memories(root) < size:  # none, or a build cut short
        # A build cut short is moved aside and deleted after the new one, not before: on ext4 without a journal,
        # files made just after many were deleted cost the kernel 3 to 5 times the time (it looks past every
        # inode freed in the last half minute), so the build's figure would be of the deletion.
        aside = root.with_name(root.name + ".cut-short")
        if root.exists():
            shutil.rmtree(aside, ignore_errors=True)
            root.rename(aside)
        t = time.perf_counter()
        timed = subprocess.run(
            ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "engram", "demo", "--root", str(root)]
            + ["--memories", str(size), "--no-open"],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        figures = {"s": time.perf_counter() - t, "peak_mb": int(timed.stderr.strip().splitlines()[-1]) / 1024}
        record.write_text(json.dumps(figures))
        shutil.rmtree(aside, ignore_errors=True)
    return json.loads(record.read_text()) if record.exists() else {}


def _memories(root: Path) -> int:
    try:
        with sqlite3.connect(f"file:{root / 'index.db'}?mode=ro", uri=True) as con:
            return int(con.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.Error:
        return 0


def launch(root: Path, runs: int = 7) -> str:
    """Median seconds from starting ``engram`` in tmux to the queue's first page on screen."""
    if shutil.which("tmux") is None:
        return "skipped (no tmux)"
    command = f"env PYTHONPATH={REPO} {sys.executable} -m engram --root {root}"
    times = []
    for _ in range(runs):
        subprocess.run([*TMUX, "kill-session", "-t", SESSION], stderr=subprocess.DEVNULL)
        start = time.perf_counter()
        subprocess.run([*TMUX, "new-session", "-d", "-s", SESSION, "-x", "160", "-y", "45", command], check=True)
        while time.perf_counter() - start < 60:
            screen = subprocess.run([*TMUX, "capture-pane", "-p", "-t", SESSION], capture_output=True, text=True)
            if "page 1/" in screen.stdout:
                break
            time.sleep(0.005)
        times.append(time.perf_counter() - start)
        _end(_console_pid())
        time.sleep(0.5)
    return f"{statistics.median(times):.2f} s (runs: {', '.join(f'{t:.2f}' for t in times)})"


def console(root: Path) -> str:
    """The real console's resident memory once settled, and its CPU use while idle."""
    if shutil.which("tmux") is None:
        return "skipped (no tmux)"
    subprocess.run([*TMUX, "kill-session", "-t", SESSION], stderr=subprocess.DEVNULL)
    command = f"env PYTHONPATH={REPO} {sys.executable} -m engram --root {root}"
    subprocess.run([*TMUX, "new-session", "-d", "-s", SESSION, "-x", "160", "-y", "45", command], check=True)
    pid = _console_pid()
    try:
        ticks, read, started = _cpu_ticks(pid), _read_bytes(pid), time.perf_counter()
        quiet = 0
        while quiet < 5 and time.perf_counter() - started < 600:
            time.sleep(1)
            now, now_read = _cpu_ticks(pid), _read_bytes(pid)
            idle = now - ticks < os.sysconf("SC_CLK_TCK") / 10 and now_read - read < 1 << 20  # not waiting on a disk
            quiet, ticks, read = (quiet + 1 if idle else 0), now, now_read
        rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        time.sleep(10)
        idle = (_cpu_ticks(pid) - ticks) / os.sysconf("SC_CLK_TCK") / 10
        return f"resident {rss:.0f} MB after {time.perf_counter() - started - 10:.0f} s; idle, {idle:.1%} of a core"
    finally:
        _end(pid)


def _console_pid() -> int:
    shown = subprocess.run([*TMUX, "display", "-p", "-t", SESSION, "#{pane_pid}"], capture_output=True, text=True)
    return _python_under(int(shown.stdout))


def _end(pid: int) -> None:
    """Close the tmux session and wait for the console's process to end: at 1M its background work takes a while
    to stop, and the next start or step would share the cores with it."""
    subprocess.run([*TMUX, "kill-session", "-t", SESSION])
    for _ in range(300):
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)


def _python_under(pid: int) -> int:
    """The console's process: ``pid`` itself, or the child a shell started it as."""
    for _ in range(50):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if "python" in Path(f"/proc/{pid}/cmdline").read_text() or not children:
            return pid
        pid = int(children[0])
    return pid


def _read_bytes(pid: int) -> int:
    """Bytes ``pid`` had read from storage so far (a process waiting on a slow disk uses no CPU, yet is busy)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--dir", default=str(Path(__file__).parent / "roots"))
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        root = Path(args.dir) / f"demo-{size}"
        print(f"== {size:,} memories ({root})", flush=True)
        made = build(root, size)
        if made:
            print(f"demo build: {made['s']:.0f} s, peak {made['peak_mb']:.0f} MB", flush=True)
        run(FORGET, str(root))
        print(f"launch to first queue page, no DURA scores kept (a first start): {launch(root)}", flush=True)
        run(KEEP, str(root))
        print(f"launch to first queue page (tmux 160x45): {launch(root)}", flush=True)
        loaded = json.loads(run(LOAD, str(root), str(Path(__file__).parent)))
        print(
            f"body search available after open (rows of plain scopes kept by the last open): {loaded['open']:.2f} s, "
            f"resident {loaded['rss_before']:.0f} -> {loaded['rss_open']:.0f} MB; keystrokes {loaded['typing_open']}; "
            f"resident after typing {loaded['rss_open_typed']:.0f} MB, {loaded['mapped_open_typed']:.0f} MB of it "
            "mapped index files",
            flush=True,
        )
        print(
            f"every row read from index.db (in the background in the console): {loaded['load']:.2f} s, "
            f"resident {loaded['rss']:.0f} MB ({loaded['mapped']:.0f} MB of it mapped index files); "
            f"keystrokes {loaded['typing']}; resident after typing "
            f"{loaded['rss_typed']:.0f} MB, {loaded['mapped_typed']:.0f} MB of it mapped index files; "
            f"once typing stops (mapped pages released) {loaded['rss_idle']:.0f} MB",
            flush=True,
        )
        cold = json.loads(run(COLD, str(root), str(Path(__file__).parent)))
        print(
            f"the same open with the pages of the index's files and index.db dropped first (as after a boot): "
            f"{cold['open']:.2f} s, prepared after {cold['prepared']:.1f} s; keystrokes {cold['typing']}",
            flush=True,
        )
        print(f"the whole console (tmux 160x45), its background work done: {console(root)}", flush=True)
        feed = json.loads(run(FEED, str(root), str(Path(__file__).parent)))
        print(
            f"change feed: first look {feed['first']:.2f} s, holding {feed['held']:.0f} MB; a look after a write "
            f"{feed['look']:.2f} s ({feed['named']} memories named)",
            flush=True,
        )
        checked = json.loads(run(STEP, str(root), "check"))
        print(f"engram check: {checked['s']:.1f} s, peak {checked['rss_mb']:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
