"""Supersedes links from scripts: list them; confirm, reject or undo one; add one. The same store functions as
the supersedes pane: the newer file's frontmatter and the index change together, audited."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING

from engram.store.lazy import lazy_module
from engram.tui.cli.common import EXIT_OK, Handler, Parser, Subparsers, emit, encrypted, open_with_key

if TYPE_CHECKING:
    from engram.store import memories, supersedes
else:  # the frontmatter's models: for the command that runs, not its parser
    memories, supersedes = lazy_module("engram.store.memories"), lazy_module("engram.store.supersedes")

DONE = {"confirm": "confirmed", "reject": "rejected", "undo": "undone", "add": "added"}


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    group = sub.add_parser("supersedes", parents=[common], help="which memory replaces which").add_subparsers(
        dest="supersedes_command", required=True
    )
    listing = group.add_parser("list", parents=[common, report], help="every link, newest decision first")
    listing.add_argument("--proposed", action="store_true", help="only links memoryd's digest proposes")
    for verb, what in (
        ("confirm", "confirm a link (a proposed one becomes your decision; the newer file lists it)"),
        ("reject", "reject a proposed link"),
        ("undo", "take a link back: the older memory is current again"),
        ("add", "record that NEWER supersedes OLDER"),
    ):
        p = group.add_parser(verb, parents=[common, report], help=what)
        p.add_argument("newer", metavar="NEWER", help="the newer memory's slug")
        p.add_argument("older", metavar="OLDER", help="the older memory's slug")
        if verb != "confirm":
            p.add_argument("--reason", help="why (kept with the link and in the audit event)")
    return {"supersedes list": _list, **{f"supersedes {verb}": _change for verb in DONE}}


def _list(args: argparse.Namespace) -> int:
    proposed = supersedes.PROPOSED
    with open_with_key(args, lambda store: False) as store:
        found = [link for link in supersedes.links(store) if not args.proposed or link.decided_by == proposed]
    text = "\n".join(
        f"{link.newer} supersedes {link.older}  [{'PROPOSED' if link.decided_by == proposed else link.decided_by}"
        + (f" {link.confidence:.2f}" if link.confidence is not None else "")
        + "]"
        for link in found
    )
    emit(args, [asdict(link) for link in found], text or "no supersedes links")
    return EXIT_OK


def _change(args: argparse.Namespace) -> int:
    verb = args.supersedes_command
    reason = getattr(args, "reason", None)
    with open_with_key(args, encrypted(args.newer, args.older)) as store:
        if verb == "confirm":
            supersedes.confirm_supersede(store, args.newer, args.older)
        elif verb == "reject":
            supersedes.reject_supersede(store, args.newer, args.older, reason)
        elif verb == "undo":
            supersedes.undo_supersede(store, args.newer, args.older, reason)
        else:
            memories.add_supersede(store, args.newer, args.older, reason=reason)
    emit(
        args,
        {"newer": args.newer, "older": args.older, "done": DONE[verb]},
        f"{args.newer} supersedes {args.older}: {DONE[verb]}",
    )
    return EXIT_OK
