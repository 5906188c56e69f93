"""Memories from scripts: search them with the console's query syntax and ranking, and show one with
everything that explains it. Both use the store code the console uses (``SearchIndex``, ``explanation``)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC
from typing import TYPE_CHECKING

from engram.store.lazy import lazy_module
from engram.store.query import QuerySyntaxError
from engram.store.service import Store
from engram.tui.cli.common import (
    EXIT_OK,
    Handler,
    Parser,
    Subparsers,
    caught_up,
    count,
    emit,
    encrypted,
    history_encrypted,
    open_with_key,
    timestamp,
)
from engram.tui.cli_progress import cli_progress

if TYPE_CHECKING:
    from engram.store import explain
    from engram.store.history import ops as history
    from engram.store.search.rows import Hit
else:
    explain = lazy_module("engram.store.explain")  # the frontmatter's models and more: for ``show`` alone
    history = lazy_module("engram.store.history.ops")  # pygit2: for ``show --at`` alone


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    search = sub.add_parser(
        "search",
        parents=[common, report],
        help="search memories as the console does (bodies of locked sensitive scopes are never read)",
    )
    search.add_argument(
        "query",
        help='words, "a phrase", \'exact, ^prefix, suffix$, !not or -not, a | b, type: scope: tag: state: source: '
        "(a query that starts with - goes after --)",
    )
    search.add_argument("--limit", type=count, default=20, metavar="N", help="at most N hits (default 20)")
    search.add_argument(
        "--rescan",
        action="store_true",
        help="look at every memory file for changes first (a file edited in place, without memoryd, is seen then)",
    )
    show = sub.add_parser("show", parents=[common, report], help="one memory and why it is there")
    show.add_argument("slug", metavar="SLUG")
    show.add_argument(
        "--at",
        metavar="DATE",
        type=timestamp,
        help="the memory's text as it was then (ISO date or time), from its history",
    )
    return {"search": _search, "show": _show}


def _search(args: argparse.Namespace) -> int:
    """The key, if any, comes from the environment: a search never prompts, and a locked scope's hits are
    titles only (index.db holds them in clear for memoryd anyway)."""
    from engram.store.search.lookup import Lookup  # numpy and rapidfuzz: loaded by the command

    with open_with_key(args, lambda store: False) as store, Lookup(store) as lookup:
        with cli_progress("updating the search index") as advance:
            lookup.refresh(rescan=args.rescan, progress=advance)
        with cli_progress("reading bodies") as advance:
            result = lookup.search(args.query, args.limit, advance)
        if result.error:
            raise QuerySyntaxError(result.error)
        hits = [
            {**_hit(store, hit, lookup.body(hit), result.words), "rank": rank, "score": score}
            for rank, (hit, score) in enumerate(zip(result.hits, result.scores, strict=True), 1)
        ]
    text = "\n".join(
        f"{h['rank']:>3} {h['type']:<10} {h['scope']:<13} {h['slug']}  {h['title']}"
        + (f"\n      {h['snippet']}" if h["snippet"] else "")
        for h in hits
    )
    emit(args, {"total": result.total, "hits": hits}, text or f"no memory matches {args.query!r}")
    return EXIT_OK


def _hit(store: Store, hit: Hit, body: str | None, words: list[str]) -> dict[str, object]:
    """A hit with a snippet of its body around the match; none for a locked scope."""
    from engram.store.search.index import snippet

    return {
        "slug": hit.slug,
        "title": hit.title,
        "type": hit.type,
        "scope": hit.scope_hash,
        "state": hit.decay_state,
        "locked": hit.encrypted and not store.keys.can_open(hit.scope_hash),
        "snippet": None if body is None else snippet(body, words),
    }


def _show(args: argparse.Namespace) -> int:
    if args.at is not None:
        return _show_at(args)
    with open_with_key(args, encrypted(args.slug)) as store:
        found = explain.explanation(store, args.slug)
    if args.json:
        print(json.dumps(found.to_json(), ensure_ascii=False, indent=2, default=str))
    else:
        print(found.markdown())
    return EXIT_OK


def _show_at(args: argparse.Namespace) -> int:
    when = args.at if args.at.tzinfo is not None else args.at.replace(tzinfo=UTC)
    with open_with_key(args, history_encrypted(args.slug)) as store:
        caught_up(store)
        found = history.at(store, args.slug, when)
        text = history.text(store, found)
    emit(args, {**found.to_json(), "text": text}, text.rstrip("\n"))
    return EXIT_OK
