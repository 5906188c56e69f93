"""``engram screen``: what the poisoning screen finds in a root's pending promotions and long-term memories, for a
person or a script (exit 1 when anything is in quarantine); ``engram quarantine`` / ``release`` / ``quarantined``:
a stored memory kept out of memoryd's injection and search, and brought back."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import TYPE_CHECKING

from engram.store.service import Store
from engram.tui.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    PASSPHRASE_ENV,
    Handler,
    Parser,
    Subparsers,
    emit,
    open_store,
    open_with_key,
)
from engram.tui.cli_progress import cli_progress

if TYPE_CHECKING:
    from engram.store.screening import Screened


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    screening = sub.add_parser(
        "screen",
        parents=[common, report],
        help="screen pending promotions and long-term memories for poisoning (prompt injection, exfiltration...)",
    )
    screening.add_argument("--since", metavar="WHEN", help="only what was created at or after WHEN (ISO date or time)")
    screening.add_argument("--all", action="store_true", help="list clean items too (with --json: every item)")
    screening.add_argument(
        "--hold",
        action="store_true",
        help="also hold pending promotions in quarantine out of memoryd's reach until a person decides them (audited)",
    )
    return {
        "screen": _screen,
        **add_quarantine_commands(sub, common, report),
        **add_allowlist_commands(sub, common, report),
    }


def _screen(args: argparse.Namespace) -> int:
    from engram.store.screening import Tally, screen_root  # the screen's rules: compiled when asked for

    tally = Tally()
    with open_with_key(args, lambda store: bool(store.sensitive_scopes())) as store:
        with cli_progress("screening") as advance:
            items = list(screen_root(store, args.since, advance, tally))
        held = _hold(store, items) if args.hold else []
    shown = items if args.all else [i for i in items if i.screening.lane != "clean"]
    quarantined = sum(i.screening.lane == "quarantine" for i in items)
    review = sum(i.screening.lane == "review" for i in items)
    summary = (
        f"screened {tally.promotions} pending promotion{'s' * (tally.promotions != 1)} and {tally.memories} "
        f"memor{'ies' if tally.memories != 1 else 'y'}: {quarantined} in quarantine, {review} to review"
        + (f"; {tally.locked} of locked scopes not read (set {PASSPHRASE_ENV})" if tally.locked else "")
        + (f"; {tally.unreadable} unreadable (engram check)" if tally.unreadable else "")
    )
    data = {
        "items": [i.as_json() for i in shown],
        "screened": {"promotions": tally.promotions, "memories": tally.memories},
        "not_read": {"locked": tally.locked, "unreadable": tally.unreadable},
        "quarantine": quarantined,
        "review": review,
        "held": held,
    }
    said = [f"held out of memoryd's reach: {', '.join(f'#{pid}' for pid in held)}"] if held else []
    emit(args, data, "\n".join([*(_lines(i) for i in shown), summary, *said]))
    return EXIT_FINDING if quarantined else EXIT_OK


def _hold(store: Store, items: list[Screened]) -> list[int]:
    from engram.store.quarantine import hold_quarantined

    return hold_quarantined(store, {int(i.key): i.screening for i in items if i.kind == "promotion"})


def _lines(item: Screened) -> str:
    name = f"#{item.key}" if item.kind == "promotion" else item.key
    found = item.screening
    return "\n".join(
        [
            f"{found.lane:<10} {item.kind:<9} {name}  {item.title}",
            *(
                f"           {f.rule} ({f.field}{', ' + f.revealed if f.revealed else ''}): {f.excerpt}"
                for f in found.findings
            ),
            *(f"           context: {signal}" for signal in found.signals),
        ]
    )


def add_quarantine_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    held = sub.add_parser(
        "quarantine",
        parents=[common, report],
        help="keep a memory out of what memoryd injects and searches (soft-forgotten, recorded; engram release undoes)",
    )
    held.add_argument("slug", metavar="SLUG")
    freed = sub.add_parser("release", parents=[common, report], help="bring a memory back from engram's quarantine")
    freed.add_argument("slug", metavar="SLUG")
    sub.add_parser("quarantined", parents=[common, report], help="list the memories in engram's quarantine")
    return {"quarantine": _quarantine, "release": _release, "quarantined": _quarantined}


def _with_key_for(args: argparse.Namespace) -> Store:
    """The store, with the key of memory ``args.slug``'s scope asked for when it is sensitive (its file is
    rewritten)."""
    return open_with_key(args, lambda store: store.memory(args.slug).scope_hash in store.sensitive_scopes())


def _quarantine(args: argparse.Namespace) -> int:
    from engram.store.quarantine import quarantine

    with _with_key_for(args) as store:
        held = quarantine(store, args.slug)
    said = f" ({', '.join(held.rules)})" if held.rules else ""
    emit(args, asdict(held), f"quarantined {held.slug}{said}: memoryd no longer injects or finds it")
    return EXIT_OK


def _release(args: argparse.Namespace) -> int:
    from engram.store.quarantine import release

    with _with_key_for(args) as store:
        state = release(store, args.slug)
    emit(args, {"slug": args.slug, "state": state}, f"released {args.slug}: {state} again")
    return EXIT_OK


def _quarantined(args: argparse.Namespace) -> int:
    from engram.store.quarantine import held_memories

    with open_store(args) as store:
        held = held_memories(store)
    text = "\n".join(f"{h.at[:16]}  {h.slug}  (was {h.was}; {', '.join(h.rules) or 'by hand'})" for h in held)
    emit(args, [asdict(h) for h in held], text or "no memory is in engram's quarantine")
    return EXIT_OK


def add_allowlist_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    allowing = sub.add_parser(
        "allow",
        parents=[common, report],
        help="trust a host: poisoning findings whose addresses are all trusted hosts go to review, not quarantine",
    )
    allowing.add_argument("host", metavar="HOST", help="a host name (its subdomains are trusted too)")
    allowing.add_argument("--note", help="why (kept beside it)")
    disallowing = sub.add_parser("disallow", parents=[common, report], help="stop trusting a host")
    disallowing.add_argument("host", metavar="HOST")
    sub.add_parser("allowed", parents=[common, report], help="list the hosts the poisoning screen trusts")
    return {"allow": _allow, "disallow": _disallow, "allowed": _allowed}


def _allow(args: argparse.Namespace) -> int:
    from engram.store.allowlist import allow

    with open_store(args) as store:
        host = allow(store, args.host, args.note)
    emit(args, {"host": host}, f"allowed {host} (and its subdomains): findings about it go to review")
    return EXIT_OK


def _disallow(args: argparse.Namespace) -> int:
    from engram.store.allowlist import disallow

    with open_store(args) as store:
        host = disallow(store, args.host)
    emit(args, {"host": host}, f"{host} is no longer trusted")
    return EXIT_OK


def _allowed(args: argparse.Namespace) -> int:
    from engram.store.allowlist import allowed_hosts

    with open_store(args) as store:
        hosts = sorted(allowed_hosts(store))
    emit(args, hosts, "\n".join(hosts) or "no host is on the allowlist")
    return EXIT_OK
