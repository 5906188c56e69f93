"""Importing another memory system's state: a preview, then the import."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.importers import IMPORTERS, importer
from engram.store.importers.base import Options
from engram.store.lazy import lazy_module
from engram.tui.cli.common import EXIT_FINDING, EXIT_OK, Handler, Parser, Subparsers, emit, open_store
from engram.tui.cli_progress import cli_progress

if TYPE_CHECKING:
    from engram.store.importers import run
    from engram.store.importers.run import Preview
else:
    run = lazy_module("engram.store.importers.run")  # the frontmatter's models: for the import, not its parser


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    imp = sub.add_parser(
        "import", parents=[common, report], help="bring another system's memories in as sessions and pending promotions"
    )
    imp.add_argument("system", choices=sorted(IMPORTERS))
    imp.add_argument("path", type=Path, help="the system's state directory (or one file)")
    imp.add_argument("--dry-run", action="store_true", help="show what would be imported; write nothing")
    imp.add_argument("--scope", metavar="HASH|DIR", help="put everything in this scope")
    imp.add_argument(
        "--everything",
        action="store_true",
        help="also read what the system keeps aside (OpenRelix `never` rows, archived capsules)",
    )
    imp.add_argument("--redact", action="store_true", help="replace secret-looking strings before writing")
    return {
        "import": _import,
    }


def _import(args: argparse.Namespace) -> int:
    with open_store(args, actor="engram-import") as store:
        plan = run.preview(
            store,
            importer(args.system),
            args.path,
            Options(scope=args.scope, everything=args.everything, redact=args.redact),
        )
        data = plan.to_json()
        if not args.dry_run and plan.items:
            with cli_progress("importing") as advance:
                run.apply_import(store, plan, advance)
        data["written"] = not args.dry_run
    emit(args, data, _preview_text(plan, args.dry_run))
    return EXIT_FINDING if plan.malformed else EXIT_OK


def _preview_text(plan: Preview, dry_run: bool) -> str:
    verb = "would import" if dry_run else "imported"
    lines = [
        f"{plan.system}: {verb} {len(plan.sessions):,} sessions, {len(plan.promotions):,} pending promotions, "
        f"{len(plan.supersedes):,} proposed supersedes; {plan.already:,} already imported"
    ]
    lines += [f"  {n:>6,}  {kind:<11} scope {scope}" for (kind, scope), n in plan.counts().items()]
    lines += [f"  first: [{kind}] {title}  ({origin})" for kind, title, origin in plan.first()]
    lines += [f"  secret? {hit.kind} {hit.masked} in {origin}" for origin, _, hit in plan.secrets]
    lines += [f"  refused: {origin}: {why}" for origin, why in plan.refused]
    lines += [f"  skipped: {k.origin}: {k.reason}" for k in plan.skipped]
    lines += [f"  malformed: {m.origin}: {m.reason}" for m in plan.malformed]
    return "\n".join(lines)
