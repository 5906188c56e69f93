"""The commands on a whole root: open the console, the demo, shell completion, check, repair and
rebuild-index."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.drift.seen import acknowledge
from engram.store.errors import BadInput, NoIndex, StoreError
from engram.store.lazy import lazy_module
from engram.store.paths import engram_state_dir
from engram.store.service import Store
from engram.store.stats import counts
from engram.tui.cli.common import EXIT_FINDING, EXIT_OK, Handler, Parser, Subparsers, caught_up, emit, open_store
from engram.tui.cli.console import open_console
from engram.tui.cli_progress import cli_progress
from engram.tui.completion import SHELLS, shell_script

if TYPE_CHECKING:
    from engram.store import demo
    from engram.store.drift import check, rebuild, repair
    from engram.store.drift.check import Report
else:
    demo = lazy_module("engram.store.demo")  # the demo's writer and the frontmatter's models: for ``demo`` alone
    # every file's parse (the frontmatter's models) and the search index (numpy), for the command that runs them:
    # completing or asking help of ``engram check`` builds this module's parsers and waits for neither
    check = lazy_module("engram.store.drift.check")
    rebuild = lazy_module("engram.store.drift.rebuild")
    repair = lazy_module("engram.store.drift.repair")


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    sub.add_parser("open", parents=[common], help="open the console (the default)")
    demo = sub.add_parser("demo", parents=[common], help="write a synthetic demo root and open it")
    demo.add_argument(
        "--memories",
        type=int,
        default=3000,
        metavar="N",
        help="how many memories (default 3000: every pane with something to show)",
    )
    demo.add_argument("--seed", type=int, default=7, help="random seed (same seed, same root)")
    demo.add_argument("--no-open", action="store_true", help="write the root but do not open the console")
    checking = sub.add_parser("check", parents=[common, report], help="report drift between files and index")
    checking.add_argument("--all", action="store_true", help="list every finding, not a few of each kind")
    checking.add_argument(
        "--ack",
        action="append",
        default=[],
        metavar="KIND[:ID]",
        help="record that you have seen these findings (audited): listed as seen, no longer counted for the exit "
        "code until they change; for findings repair cannot fix",
    )
    sub.add_parser("repair", parents=[common, report], help="fix what check finds, without loss")
    sub.add_parser(
        "rebuild-index",
        parents=[common, report],
        help="rebuild index rows from the files, keeping promotions, graph, decay and sensitivity",
    )
    completion = sub.add_parser("completion", help="print the shell hook for completion: eval it in your shell's rc")
    completion.add_argument("shell", choices=SHELLS)
    return {
        "open": open_console,
        "demo": _demo,
        "completion": _completion,
        "check": _check,
        "repair": _repair,
        "rebuild-index": _rebuild,
    }


def _demo(args: argparse.Namespace) -> int:
    root = Path(args.root) if args.root else engram_state_dir() / "demo-root"
    problem = demo.demo_target_problem(root) if args.root else None  # the default is engram's own directory
    if problem:
        raise BadInput(problem)
    with Store.open(root, actor="engram-demo", create=True) as store:
        if counts(store).memories:
            print(f"{root} already holds a demo; opening it", file=sys.stderr)
        else:
            with cli_progress("writing the demo root") as advance:
                made = demo.build_demo(store, args.memories, args.seed, advance)
            print(f"demo root {root}: " + ", ".join(f"{v} {k}" for k, v in made.items()), file=sys.stderr)
        print(f"the sensitive scope's passphrase is {demo.DEMO_PASSPHRASE!r}", file=sys.stderr)
    if args.no_open:
        return EXIT_OK
    args.root = str(root)
    return open_console(args, [f"demo root: the sensitive scope's passphrase is {demo.DEMO_PASSPHRASE!r}"])


def _completion(args: argparse.Namespace) -> int:
    print(shell_script(args.shell))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    try:
        opened = open_store(args, create_index=False)
    except NoIndex as exc:  # a finding, not a reason to write an empty index.db
        emit(args, {"drift": True, "index_missing": str(exc)}, f"drift found: {exc}")
        return EXIT_FINDING
    with opened as store:
        recorded = _history_caught_up(store)  # first: its memory is given back before the check's workers start
        with cli_progress("checking files") as advance:
            report = check.check(store, advance)
        acked = [_ack(store, report, selector) for selector in args.ack]
    lines = [f"{report.files} files, {report.rows} index rows", *acked, *recorded.values()]
    data = {**report.to_json(every=args.all), **recorded}
    for kind, item in data["findings"].items():
        seen = f" ({item['seen']} seen)" if item["seen"] else ""
        lines.append(
            f"{item['count']:6d}  {kind}{seen}: {item['meaning']}" + ("  [repairable]" if item["fixable"] else "")
        )
        shown = item.get("items", item["examples"])
        lines.extend(
            f"          {e['path'] or ''}  {e['detail']}{'  (seen)' if e.get('seen') else ''}".rstrip() for e in shown
        )
        if len(shown) < item["count"]:
            lines.append(f"          … {item['count'] - len(shown)} more: `engram check --all` lists every one")
    lines.append("drift found: run `engram repair`" if report.drift else "no drift")
    emit(args, data, "\n".join(lines))
    return EXIT_FINDING if report.drift else EXIT_OK


def _ack(store: Store, report: Report, selector: str) -> str:
    """Record the findings ``selector`` names as seen (see engram.store.drift.seen), and mark them so."""
    found = report.selected(selector)
    acknowledge(store, [(f.kind, f.ident, f.fingerprint) for f in found], selector)
    for finding in found:
        finding.seen = True
    return f"seen: {len(found)} {selector} finding{'s' if len(found) != 1 else ''}, recorded in the audit log"


def _history_caught_up(store: Store) -> dict[str, str]:
    """The history brought up to date, said in a line; a failure is told, never the command's own (the history
    is engram's, the root's health is what check and repair report)."""
    try:
        recorded = caught_up(store)
    except (StoreError, OSError) as exc:
        return {"history": f"history: not brought up to date: {exc}"}
    if not recorded:
        return {}
    return {"history": f"history: recorded {len(recorded)} files changed outside engram since engram last looked"}


def _repair(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        result = repair.repair(store)
        recorded = _history_caught_up(store)
    remaining = result.remaining.to_json() if result.remaining else {}
    left = {k: v for k, v in remaining.get("findings", {}).items() if k not in check.NOT_DRIFT}
    text = "\n".join(
        [
            *(f"fixed: {m}" for m in result.fixed),
            *(f"failed: {m}" for m in result.failed),
            *(f"left: {v['count']} {k} ({check.KINDS[k][0]})" for k, v in left.items()),
            f"{len(result.fixed)} fixed, {len(result.failed)} failed, {sum(v['count'] for v in left.values())} left",
            *recorded.values(),
        ]
    )
    emit(args, {"fixed": result.fixed, "failed": result.failed, "remaining": remaining, **recorded}, text)
    return EXIT_FINDING if left or result.failed else EXIT_OK


def _rebuild(args: argparse.Namespace) -> int:
    store, aside = rebuild.open_for_rebuild(args.root, "engram-cli")
    with store:
        with cli_progress("reading files") as advance:
            result = rebuild.rebuild_index(store, advance)
    data = {
        "indexed": result.indexed,
        "removed": result.removed,
        "kept_locked": result.kept_locked,
        "kept_for_promotions": result.kept_for_promotions,
        "skipped": result.skipped,
        "moved_aside": aside,
    }
    lines = [
        f"indexed {result.indexed} files, removed {result.removed} rows without files, "
        f"kept {result.kept_locked} rows of locked encrypted files"
    ]
    if aside:
        lines.insert(0, f"index.db was not a database: moved aside to {aside}")
    lines += [f"kept (promotions refer to it): {s}" for s in result.kept_for_promotions]
    lines += [f"skipped: {s}" for s in result.skipped]
    emit(args, data, "\n".join(lines))
    return EXIT_FINDING if result.skipped else EXIT_OK
