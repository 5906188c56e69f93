"""The command line beside memoryd: every figure of docs/performance.md's command-line table, in one run.

Each command runs as a whole process, several times; a row prints the median wall time and the peak resident
memory of engram's command and, where memoryd does the same work and its code is at hand, of memoryd's:

- search: ``engram search QUERY`` on the memoryd-written root (once its search index is built) and on the 100k
  demo; memoryd's ``search QUERY``; and the first search of each with no search index in engram's cache;
- search after a save: the same, on a copy of the memoryd-written root, each run right after memoryd's own save of
  one memory (untimed; without memoryd's code, an edit through engram's store stands in);
- audit verify of a generated log: the first verify, and one after it (a signed record of the prefix it
  checked); memoryd's ``audit --verify``;
- rebuild-index of a copy of the memoryd-written root (copying is not timed); memoryd's rebuild_index; and
  engram's with no search index in its cache (it builds one);
- check of the memoryd-written root; memoryd's own reading of every file (the peers' check_dataroot.py);
- promotions list of the memoryd-written root, every pending promotion screened: the first, and one after it;
- approve one promotion in the console's store, p50 / p95 over many, on the 100k demo (each undone after), once
  the queue has screened them, as the console's has before a person approves;
- scope mark of the memoryd-written root's largest plain scope, on a copy (engram only: memoryd's
  mark-sensitive is given a project folder, which a generated root does not have);
- start-up: ``--help`` (every command's parser), memoryd's ``--help``; a tab press after a command's word, as the
  shell's completion hook asks it.

Usage: python bench/bench_cli.py --md ROOT --md-home HOME [--demo ROOT] [--log-lines N] [--runs N]
       [--memoryd-src DIR --memoryd-python PY --peers DIR]
``--md``: a root written by memoryd's own code (the peers' make_dataroot.py), with ``--md-home`` the home it was
made in; without memoryd's code, any root (a demo root) stands in and the memoryd columns say n/a. ``--demo``:
the 100k demo root, built when missing. Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_audit import build_log  # noqa: E402

MEASURE = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
took = time.perf_counter() - t
if done.returncode not in (0, 1):
    sys.exit(done.stderr.decode(errors="replace")[-800:])
print(json.dumps({"s": took, "mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

APPROVE = r"""
import json, statistics, sys, time
from engram.store import promotions, screening
from engram.store.demo import DEMO_PASSPHRASE
from engram.store.errors import Quarantined
from engram.store.models import Promotion
from engram.store.sensitive.convert import unlock
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
with Store.open(sys.argv[1], keys=KeyRing(passphrase=DEMO_PASSPHRASE)) as store:
    unlock(store)  # as the console's ctrl+u: keys are derived before a person approves
    count = int(sys.argv[2])
    done, times = [], []
    pending = [p.id for p in Promotion.select(Promotion.id).where(Promotion.status == "pending").order_by(Promotion.id)]
    screening.pending_screens(store, pending[: 2 * (count + int(sys.argv[3]))])  # as the queue lists them first
    for pid in pending:
        t = time.perf_counter()
        try:
            done.append(promotions.approve(store, pid))
        except Quarantined:  # the screen holds it: approving needs a person's acknowledgement
            continue
        if len(done) > int(sys.argv[3]):  # the first ones pay for imports: not timed
            times.append((time.perf_counter() - t) * 1000)
        if len(times) == count:
            break
    for decision in reversed(done):
        promotions.undo(store, decision)
times.sort()
print(json.dumps({"p50": statistics.median(times), "p95": times[int(0.95 * (len(times) - 1))], "n": len(times)}))
"""


CHANGE_ONE = r"""
import sys, time
from engram.store.memories import edit_memory
from engram.store.models import Memory
from engram.store.service import Store
with Store.open(sys.argv[1]) as store:
    plain = Memory.select().where(~Memory.body_path.endswith(".md.enc")).order_by(Memory.slug).first()
    edit_memory(store, plain.slug, body=f"Edited for the bench at {time.time_ns()}.\n")
"""


class Bench:
    def __init__(self, args: argparse.Namespace, scratch: Path) -> None:
        self.args, self.scratch = args, scratch
        state = scratch / "engram-home"
        # each program runs as installed: from its compiled bytecode, written on its first run (an environment
        # that forbids writing it would time compiling every module at every start, for memoryd and engram)
        self.plain_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.engram_env = {
            **self.plain_env,
            "XDG_CACHE_HOME": str(state / "cache"),
            "XDG_STATE_HOME": str(state / "state"),
            "XDG_CONFIG_HOME": str(state / "config"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        }
        self.memoryd = bool(args.memoryd_src and args.memoryd_python and args.peers and args.md_home)

    def engram(self, *words: str) -> list[str]:
        return [sys.executable, "-m", "engram", *words]

    def memoryd_env(self, root: Path) -> dict[str, str]:
        home = Path(self.args.md_home)
        return {
            **self.plain_env,
            "HOME": str(home),
            "MEMORYD_DATA_ROOT": str(root),
            "MEMORYD_CONFIG_HOME": str(home / ".config" / "memoryd"),
            "MEMORYD_MASTER_PASSPHRASE": self.args.md_passphrase,
            "PYTHONPATH": str(Path(self.args.memoryd_src) / "memoryd" / "src"),
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }

    def memoryd_cli(self, *words: str) -> list[str]:
        code = "import sys; from memoryd.cli import main; sys.exit(main())"
        return [self.args.memoryd_python, "-c", code, *words]

    def peer(self, script: str, *words: str) -> list[str]:
        return [self.args.memoryd_python, str(Path(self.args.peers) / script), *words]

    def measure(self, command: list[str], env: dict[str, str], before: Callable[[], None] | None = None) -> str:
        """Median seconds and peak MB of ``command`` over the runs; ``before`` runs untimed before each."""
        seconds, peaks = [], []
        for _ in range(self.args.runs):
            if before is not None:
                before()
            done = subprocess.run(
                [sys.executable, "-c", MEASURE, *command], env=env, capture_output=True, text=True, check=False
            )
            if done.returncode:
                return f"failed: {done.stderr.strip()[-300:]}"
            figure = json.loads(done.stdout)
            seconds.append(figure["s"])
            peaks.append(figure["mb"])
        return f"{statistics.median(seconds):.2f} s, {max(peaks):.0f} MB"

    def forget_search(self) -> None:
        """Remove engram's search indexes (of every root): the next search or rebuild builds its own from nothing."""
        shutil.rmtree(Path(self.engram_env["XDG_CACHE_HOME"]) / "engram" / "search", ignore_errors=True)

    def row(self, work: str, engram: str, memoryd: str | None = None) -> None:
        print(f"{work:<44} engram {engram:<24} memoryd {memoryd or 'n/a'}", flush=True)


def demo_root(path: Path, memories: int, env: dict[str, str]) -> Path:
    if not (path / "index.db").exists():
        words = ["demo", "--root", str(path), "--memories", str(memories), "--no-open"]
        subprocess.run([sys.executable, "-m", "engram", *words], env=env, check=True, capture_output=True)
    return path


def largest_plain_scope(root: Path) -> tuple[str, int]:
    import sqlite3

    con = sqlite3.connect(f"file:{root / 'index.db'}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT scope_hash, count(*) FROM memories WHERE scope_hash NOT IN "
            "(SELECT scope_hash FROM sensitive_scopes) GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        ).fetchone()
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--md", required=True, help="a root written by memoryd's code (or any root)")
    parser.add_argument("--md-home", help="the home make_dataroot.py wrote --md in (for memoryd's columns)")
    parser.add_argument("--md-passphrase", default="engram-fixture-passphrase-2026", help="its sensitive scopes'")
    parser.add_argument("--demo", default=str(REPO / "bench" / "roots" / "demo-100000"))
    parser.add_argument("--demo-memories", type=int, default=100_000, help="the demo's size when it is built")
    parser.add_argument("--query", default="kafka")
    parser.add_argument("--log-lines", type=int, default=1_000_000)
    parser.add_argument("--approvals", type=int, default=50)
    parser.add_argument("--warm", type=int, default=5, help="approvals before the timed ones")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--memoryd-src", help="a checkout of memoryd's repository")
    parser.add_argument("--memoryd-python", help="a Python with memoryd's dependencies")
    parser.add_argument("--peers", help="the folder of make_dataroot.py, md_ops.py and check_dataroot.py")
    parser.add_argument("--only", nargs="+", choices=list(ROWS), help="these rows only (all by default)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch:
        run(Bench(args, Path(scratch)))


def search_rows(bench: Bench) -> None:
    """The first run builds engram's search index (not timed, as memoryd's own index is built already); each
    program is run once untimed, so its bytecode is written."""
    args, env, md = bench.args, bench.engram_env, Path(bench.args.md)
    demo = demo_root(Path(args.demo), args.demo_memories, env)
    query = args.query
    for root in (md, demo):
        subprocess.run(bench.engram("search", query, "--root", str(root)), env=env, capture_output=True, check=True)
    if bench.memoryd:
        subprocess.run(bench.memoryd_cli("search", query), env=bench.memoryd_env(md), capture_output=True)
    theirs = bench.measure(bench.memoryd_cli("search", query), bench.memoryd_env(md)) if bench.memoryd else None
    bench.row(
        f"search {query!r}, {md.name}", bench.measure(bench.engram("search", query, "--root", str(md)), env), theirs
    )
    bench.row(f"search {query!r}, {demo.name}", bench.measure(bench.engram("search", query, "--root", str(demo)), env))
    for root in (md, demo):  # last: the index is left built, as the rows after these have it
        search = bench.engram("search", query, "--root", str(root))
        bench.row(f"first search, no search index, {root.name}", bench.measure(search, env, bench.forget_search))


def search_after_rows(bench: Bench) -> None:
    """Both programs' search right after a save of one memory, on a copy of the memoryd-written root: engram's
    brings its persistent index up to date first."""
    env, md, query = bench.engram_env, Path(bench.args.md), bench.args.query
    copy, _ = _fresh_copy(bench)
    search = bench.engram("search", query, "--root", str(copy))
    subprocess.run(search, env=env, capture_output=True, check=True)
    if bench.memoryd:
        change = bench.peer("md_ops.py", "save", str(copy), largest_plain_scope(copy)[0], "1")
        change_env = bench.memoryd_env(copy)
    else:
        change, change_env = [sys.executable, "-c", CHANGE_ONE, str(copy)], env

    def save_one() -> None:
        subprocess.run(change, env=change_env, capture_output=True, check=True)

    theirs = None
    if bench.memoryd:
        theirs = bench.measure(bench.memoryd_cli("search", query), bench.memoryd_env(copy), save_one)
    bench.row(f"search {query!r} after a save, {md.name}", bench.measure(search, env, save_one), theirs)


def verify_rows(bench: Bench) -> None:
    """audit verify of a generated log, in a root of its own."""
    args, env = bench.args, bench.engram_env
    logs = bench.scratch / "log-root"
    (logs / "audit").mkdir(parents=True)
    (logs / "scopes").mkdir()
    build_log(logs / "audit" / "audit.jsonl", args.log_lines)
    verify = bench.engram("audit", "verify", "--root", str(logs))
    subprocess.run(bench.engram("audit", "checkpoint", "--reset", "--root", str(logs)), env=env, capture_output=True)
    records = Path(env["XDG_STATE_HOME"])

    def forget_records() -> None:
        for record in records.rglob("*.verified.json"):
            record.unlink()

    theirs = bench.measure(bench.memoryd_cli("audit", "--verify"), bench.memoryd_env(logs)) if bench.memoryd else None
    bench.row(f"audit verify, {args.log_lines:,} lines, first", bench.measure(verify, env, forget_records), theirs)
    subprocess.run(verify, env=env, capture_output=True)
    bench.row(f"audit verify, {args.log_lines:,} lines, after one", bench.measure(verify, env))


def _fresh_copy(bench: Bench) -> tuple[Path, Callable[[], None]]:
    """A copy of the memoryd-written root, and how to make it afresh (before each run that changes it)."""
    md, copy = Path(bench.args.md), bench.scratch / "copy"

    def fresh_copy() -> None:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(md, copy, symlinks=True)

    fresh_copy()
    return copy, fresh_copy


def rebuild_rows(bench: Bench) -> None:
    env, md = bench.engram_env, Path(bench.args.md)
    copy, fresh_copy = _fresh_copy(bench)
    subprocess.run(bench.engram("search", bench.args.query, "--root", str(copy)), env=env, capture_output=True)
    rebuild = bench.engram("rebuild-index", "--root", str(copy))
    theirs = None
    if bench.memoryd:
        theirs = bench.measure(bench.peer("md_ops.py", "rebuild", str(copy)), bench.memoryd_env(copy), fresh_copy)
    bench.row(f"rebuild-index, {md.name}", bench.measure(rebuild, env, fresh_copy), theirs)

    def from_nothing() -> None:
        fresh_copy()
        bench.forget_search()

    bench.row(f"rebuild-index, no search index, {md.name}", bench.measure(rebuild, env, from_nothing))


def check_rows(bench: Bench) -> None:
    args, env, md = bench.args, bench.engram_env, Path(bench.args.md)
    check = bench.engram("check", "--root", str(md))
    theirs = None
    if bench.memoryd:
        home = Path(args.md_home) / ".config" / "memoryd"
        reading = bench.peer("check_dataroot.py", "--root", str(md), "--config-home", str(home), "--json")
        theirs = bench.measure(reading, bench.memoryd_env(md))
    bench.row(f"check, {md.name}", bench.measure(check, env), theirs)


def list_rows(bench: Bench) -> None:
    """``promotions list --json`` of the memoryd-written root: the first, with no text kept as screened clean,
    and one after it (memoryd's own listing screens nothing: no memoryd column)."""
    env, md = bench.engram_env, Path(bench.args.md)
    listing = bench.engram("promotions", "list", "--json", "--root", str(md))
    kept = Path(env["XDG_CACHE_HOME"]) / "engram" / "screen"

    def forget_kept() -> None:
        shutil.rmtree(kept, ignore_errors=True)

    bench.row(f"promotions list, {md.name}, first", bench.measure(listing, env, forget_kept))
    subprocess.run(listing, env=env, capture_output=True)
    bench.row(f"promotions list, {md.name}, after one", bench.measure(listing, env))


def mark_rows(bench: Bench) -> None:
    args, env, md = bench.args, bench.engram_env, Path(bench.args.md)
    copy, fresh_copy = _fresh_copy(bench)
    scope, count = largest_plain_scope(md)
    mark = bench.engram("scope", "mark", scope, "--root", str(copy))
    marking_env = {**env, "MEMORYD_MASTER_PASSPHRASE": args.md_passphrase}
    bench.row(f"scope mark, {count:,} memories", bench.measure(mark, marking_env, fresh_copy))


def approve_rows(bench: Bench) -> None:
    args, env = bench.args, bench.engram_env
    demo = demo_root(Path(args.demo), args.demo_memories, env)
    done = subprocess.run(
        [sys.executable, "-c", APPROVE, str(demo), str(args.approvals), str(args.warm)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        bench.row(f"approve one, {demo.name}", f"failed: {done.stderr.strip()[-300:]}")
    else:
        figure = json.loads(done.stdout)
        bench.row(
            f"approve one, {demo.name} (of {figure['n']})", f"p50 {figure['p50']:.1f} ms, p95 {figure['p95']:.1f} ms"
        )


def startup_rows(bench: Bench) -> None:
    """What a command line waits for before its work: the parsers of every command, and the parser a tab press
    after ``engram audit ve`` builds (the shell's hook runs the program with the line in its environment)."""
    env, line = bench.engram_env, "engram audit ve"
    theirs = None
    if bench.memoryd:
        theirs = bench.measure(bench.memoryd_cli("--help"), bench.memoryd_env(Path(bench.args.md)))
    bench.row("--help", bench.measure(bench.engram("--help"), env), theirs)
    shell = {"_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line))}
    tab = {**env, **shell, "_ARGCOMPLETE_STDOUT_FILENAME": os.devnull}
    bench.row(f"a tab press after {line.removeprefix('engram ')!r}", bench.measure(bench.engram(), tab))


ROWS: dict[str, Callable[[Bench], None]] = {
    "search": search_rows,
    "search-after": search_after_rows,
    "verify": verify_rows,
    "rebuild": rebuild_rows,
    "check": check_rows,
    "list": list_rows,
    "mark": mark_rows,
    "approve": approve_rows,
    "startup": startup_rows,
}


def run(bench: Bench) -> None:
    for name in bench.args.only or ROWS:
        ROWS[name](bench)


if __name__ == "__main__":
    main()
