"""A memory's history from scripts: list its revisions, compare two, restore one, read one at a date; push the
history to a git remote; forget a memory's past. The store's history functions, as the console uses them.

Every command first records what changed on disk since engram last looked (memoryd's edits, merges and sync
imports), so the list is current."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.domain import KEEP_SIDES
from engram.store.errors import BadInput
from engram.store.lazy import lazy_module
from engram.tui.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    Handler,
    Parser,
    Subparsers,
    caught_up,
    emit,
    history_encrypted,
    open_with_key,
)

if TYPE_CHECKING:
    from engram.store import conflicts as inbox
    from engram.store.history import ops
else:  # the frontmatter's models and pygit2: for the command that runs, not its parser
    inbox, ops = lazy_module("engram.store.conflicts"), lazy_module("engram.store.history.ops")

ACTIONS = ("push", "forget")  # `engram history push REMOTE`, `engram history forget SLUG`


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    history = sub.add_parser(
        "history",
        parents=[common, report],
        help="a memory's revisions, newest first (`history push REMOTE`, `history forget SLUG`)",
    )
    history.add_argument("target", metavar="SLUG", help="the memory's slug, or push / forget")
    history.add_argument("argument", nargs="?", metavar="REMOTE|SLUG", help="after push: a git remote; forget: a slug")
    diff = sub.add_parser("diff", parents=[common, report], help="what changed between two revisions of a memory")
    diff.add_argument("slug", metavar="SLUG")
    diff.add_argument("old", metavar="REV", help="a revision id (its first characters will do)")
    diff.add_argument("new", metavar="REV", nargs="?", help="another revision (default: the file as it is now)")
    restore = sub.add_parser(
        "restore", parents=[common, report], help="write an earlier revision back as the memory's current text"
    )
    restore.add_argument("slug", metavar="SLUG")
    restore.add_argument("rev", metavar="REV", help="the revision to bring back")
    conflicts = sub.add_parser(
        "conflicts", parents=[common, report], help="local versions a sync set aside, and what to keep"
    ).add_subparsers(dest="conflicts_command")
    conflicts.add_parser("list", parents=[common, report], help="every conflict (the default)")
    show = conflicts.add_parser("show", parents=[common, report], help="the local and the remote version, compared")
    show.add_argument("id", metavar="ID", help="the conflict's id, as `engram conflicts` lists it")
    resolve = conflicts.add_parser("resolve", parents=[common, report], help="keep one version; the other goes")
    resolve.add_argument("id", metavar="ID")
    keep = resolve.add_mutually_exclusive_group(required=True)
    keep.add_argument("--keep", choices=KEEP_SIDES, help="local: write it back; remote: keep the one in place")
    keep.add_argument(
        "--merged", metavar="FILE", type=Path, help="write this file's text (a whole memory file, merged by you)"
    )
    return {
        "history": _history,
        "diff": _diff,
        "restore": _restore,
        "conflicts": _conflicts,
        "conflicts list": _conflicts,
        "conflicts show": _conflict_show,
        "conflicts resolve": _conflict_resolve,
    }


def _history(args: argparse.Namespace) -> int:
    action = args.target if args.target in ACTIONS and args.argument else None
    if action == "push":
        with open_with_key(args, lambda store: False) as store:
            caught_up(store)
            pushed = ops.push(store, args.argument)
        emit(
            args,
            {"remote": args.argument, "revision": pushed},
            f"pushed the history ({pushed[:10]}) to {args.argument}",
        )
        return EXIT_OK
    if action == "forget":
        with open_with_key(args, lambda store: False) as store:
            caught_up(store)
            removed = ops.forget(store, args.argument)
        emit(
            args, {"slug": args.argument, "removed": removed}, f"removed {removed} earlier versions of {args.argument}"
        )
        return EXIT_OK
    slug = args.argument or args.target
    with open_with_key(args, lambda store: False) as store:
        caught_up(store)
        found = ops.revisions(store, slug)
    lines = [
        f"{r.short}  {r.commit.when:%Y-%m-%d %H:%M}  {r.commit.author:<16} {'(removed) ' if r.removed else ''}"
        f"{r.commit.summary}"
        for r in found
    ]
    emit(args, [r.to_json() for r in found], "\n".join(lines))
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    with open_with_key(args, history_encrypted(args.slug)) as store:
        caught_up(store)
        text = ops.diff(store, args.slug, args.old, args.new)
    emit(args, {"slug": args.slug, "diff": text}, text.rstrip("\n") or "no difference")
    return EXIT_OK


def _restore(args: argparse.Namespace) -> int:
    with open_with_key(args, history_encrypted(args.slug)) as store:
        caught_up(store)
        relpath = ops.restore(store, args.slug, args.rev)
    emit(args, {"slug": args.slug, "revision": args.rev, "path": relpath}, f"restored {args.slug} from {args.rev}")
    return EXIT_OK


def _conflicts(args: argparse.Namespace) -> int:
    with open_with_key(args, lambda store: False) as store:
        found = inbox.conflicts(store)
    lines = [f"{c.id}  {c.slug}  (set aside by {c.source}; in place: {c.relpath or 'nothing'})" for c in found]
    emit(args, [c.to_json() for c in found], "\n".join(lines) or "no sync conflicts")
    return EXIT_FINDING if found else EXIT_OK


def _conflict_show(args: argparse.Namespace) -> int:
    with open_with_key(args, lambda store: True) as store:
        found = inbox.conflict(store, args.id)
        local, remote = inbox.versions(store, found)
    text = "".join(
        difflib.unified_diff(
            (remote or "").splitlines(keepends=True),
            local.splitlines(keepends=True),
            f"{found.slug} in place (remote)",
            f"{found.slug} set aside (local)",
        )
    )
    emit(args, {**found.to_json(), "local": local, "remote": remote}, text.rstrip("\n") or "the two are the same")
    return EXIT_OK


def _conflict_resolve(args: argparse.Namespace) -> int:
    keep = args.keep or "merged"
    try:
        merged = args.merged.read_text(encoding="utf-8") if args.merged is not None else None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{args.merged}: cannot be read as text: {exc}") from None
    with open_with_key(args, lambda store: keep != "remote") as store:
        done = inbox.resolve(store, inbox.conflict(store, args.id), keep, merged)
    emit(args, {"id": args.id, "kept": keep, "done": done}, done)
    return EXIT_OK
