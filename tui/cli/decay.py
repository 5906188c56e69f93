"""Decay from scripts: the lists the decay pane shows; revive, pin, set a ttl or forget one memory; sweep as
memoryd's rule would (``--dry-run`` first). The same store functions as the pane, each change audited."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING

from engram.store.domain import DECAY_LISTS
from engram.store.lazy import lazy_module
from engram.tui.cli.common import EXIT_OK, Handler, Parser, Subparsers, emit, encrypted, open_store, open_with_key
from engram.tui.cli_progress import cli_progress

if TYPE_CHECKING:
    from engram.store import decay
else:
    decay = lazy_module("engram.store.decay")  # the frontmatter's models: for the command that runs, not its parser

DONE = {"revive": "alive again, recall stamped", "pin": "pinned (no ttl)", "forget": "forgotten"}


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    group = sub.add_parser("decay", parents=[common], help="how memories fade").add_subparsers(
        dest="decay_command", required=True
    )
    shown = group.add_parser("list", parents=[common, report], help="memories by decay state")
    shown.add_argument(
        "--kind", choices=DECAY_LISTS, default=DECAY_LISTS[0], help="which list (default: ttl running out)"
    )
    shown.add_argument("--days", type=int, default=14, metavar="N", help="how far ahead 'expiring' looks")
    for verb, what in (
        ("revive", "alive again, recall stamped (back from forgotten/)"),
        ("pin", "no ttl"),
        ("forget", "soft-forgotten now, moved to forgotten/"),
    ):
        group.add_parser(verb, parents=[common, report], help=what).add_argument("slug", metavar="SLUG")
    ttl = group.add_parser("ttl", parents=[common, report], help="set a memory's ttl in days")
    ttl.add_argument("slug", metavar="SLUG")
    ttl.add_argument("days", type=int, metavar="DAYS")
    sweep = group.add_parser("sweep", parents=[common, report], help="apply memoryd's decay rule now")
    sweep.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")
    return {
        "decay list": _list,
        **{f"decay {verb}": _one for verb in (*DONE, "ttl")},
        "decay sweep": _sweep,
    }


def _list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        entries = decay.listing(store, args.kind, args.days)
    text = "\n".join(
        f"{e.state:<15} {'pinned' if e.ttl_days is None else f'{e.ttl_days} d':<7} {e.expires or '':<11} {e.slug}  "
        f"{e.title}"
        for e in entries
    )
    emit(args, [asdict(e) for e in entries], text or f"nothing in the {args.kind} list")
    return EXIT_OK


def _one(args: argparse.Namespace) -> int:
    verb = args.decay_command
    with open_with_key(args, encrypted(args.slug)) as store:
        if verb == "revive":
            decay.revive(store, args.slug)
        elif verb == "pin":
            decay.set_ttl(store, args.slug, None)
        elif verb == "ttl":
            decay.set_ttl(store, args.slug, args.days)
        else:
            decay.forget_now(store, args.slug)
    done = f"ttl {args.days} days" if verb == "ttl" else DONE[verb]
    emit(args, {"slug": args.slug, "done": verb}, f"{args.slug}: {done}")
    return EXIT_OK


def _sweep(args: argparse.Namespace) -> int:
    with open_with_key(args, lambda store: False) as store:
        steps = decay.plan_sweep(store)
        if not args.dry_run and steps:
            with cli_progress("sweeping") as advance:
                decay.apply_sweep(store, steps, advance)
    verb = "would change" if args.dry_run else "changed"
    text = "\n".join(f"{s.before:>14} -> {s.after:<15} {s.slug}  ({s.age_days} d)" for s in steps)
    emit(
        args,
        {"dry_run": args.dry_run, "steps": [asdict(s) for s in steps]},
        (text + "\n" if text else "") + f"{verb} {len(steps)} memories",
    )
    return EXIT_OK
