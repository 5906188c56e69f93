"""The review queue from scripts: list pending promotions; approve, reject or defer them by id or by a filter
(the queue's syntax, with a dry run and a question at a terminal); merge one into a memory; edit one, then
approve it. Every decision goes through the store function the console calls."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.store.domain import MemoryType
from engram.store.errors import BadInput, StoreError
from engram.store.external_edit import edit_in_editor
from engram.store.lazy import lazy_module
from engram.store.queue import QueueItem, pending_findings, pending_queue, promotion_detail, queue_query
from engram.store.secrets import Finding, masked
from engram.store.service import Store
from engram.store.snooze import FORMS as SNOOZE_FORMS
from engram.store.snooze import parse_until
from engram.tui.cli import triage
from engram.tui.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    Handler,
    Parser,
    Subparsers,
    completed,
    emit,
    open_store,
    open_with_key,
)
from engram.tui.completion import complete_pending

if TYPE_CHECKING:
    from engram.store import promotions
    from engram.store.screen import Screening
else:
    promotions = lazy_module("engram.store.promotions")  # the frontmatter's models: for the commands that decide

ACK_HELP = (
    "comma-separated rule ids of the poisoning screen's findings you have read (engram screen, or promotions list): "
    "a promotion in quarantine is approved only with each acknowledged, and never by --where"
)
PAST = {"approve": "approved", "reject": "rejected", "defer": "deferred", "snooze": "snoozed"}
WHERE_HELP = (
    "every pending promotion matching this filter (the queue's syntax: words, type: scope: source: state:, "
    "dura:>0.7, age:>7 ...)"
)


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    promos = sub.add_parser("promotions", parents=[common], help="the review queue from scripts").add_subparsers(
        dest="promotions_command", required=True
    )
    listing = promos.add_parser("list", parents=[common, report], help="pending promotions, best first")
    listing.add_argument("--sort", default="dura_avg", help="dura_avg, dura_min, D, U, R, A, created, scope, type")
    listing.add_argument("--filter", default="", help="the queue's filter syntax, as in the console")
    for verb in PAST:
        p = promos.add_parser(verb, parents=[common, report], help=f"{verb} promotions by id or by --where")
        completed(p.add_argument("ids", nargs="*", type=int, metavar="ID"), complete_pending)
        p.add_argument("--where", metavar="QUERY", help=WHERE_HELP)
        p.add_argument("--dry-run", action="store_true", help="say what would be decided; change nothing")
        p.add_argument("--yes", action="store_true", help="decide what --where matches without asking")
        if verb == "snooze":
            p.add_argument("--until", required=True, metavar="WHEN", help=f"when it comes back: {SNOOZE_FORMS}")
        elif verb != "approve":
            p.add_argument("--reason", help="why (kept in engram's notes and the audit event)")
        else:
            secret = p.add_mutually_exclusive_group()
            secret.add_argument(
                "--redact", action="store_true", help="redact secret-looking text from the memory and the proposal"
            )
            secret.add_argument(
                "--keep-secrets", action="store_true", help="approve secret-looking text as it is (else refused)"
            )
            p.add_argument("--acknowledge", metavar="RULES", help=ACK_HELP)
    merge = promos.add_parser("merge", parents=[common, report], help="fold a pending promotion into a memory")
    completed(merge.add_argument("id", type=int, metavar="ID"), complete_pending)
    merge.add_argument("--into", required=True, metavar="SLUG", help="the memory it joins (same scope)")
    edit = promos.add_parser(
        "edit", parents=[common, report], help="change a pending promotion (options, else $EDITOR), then approve it"
    )
    completed(edit.add_argument("id", type=int, metavar="ID"), complete_pending)
    edit.add_argument("--title", help="the memory's title")
    edit.add_argument("--type", choices=[t.value for t in MemoryType], help="the memory's type")
    edit.add_argument("--triggers", help="comma-separated triggers")
    edit.add_argument("--body-file", type=Path, metavar="FILE", help="the body from this file (- for stdin)")
    edit.add_argument("--approve", action="store_true", help="approve it with the edits (else: only show them)")
    edit.add_argument("--acknowledge", metavar="RULES", help=ACK_HELP)
    return {
        **triage.add_promotion_commands(promos, common, report),
        "promotions list": _list,
        **{f"promotions {verb}": _decide for verb in PAST},
        "promotions merge": _merge,
        "promotions edit": _edit,
    }


def _list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        items = pending_queue(store, args.sort, queue_query(args.filter))
        flagged = pending_findings(store, [i.id for i in items])
        from engram.store.screen import Screening
        from engram.store.screening import pending_screens  # the screen's rules: compiled when asked for

        screened = pending_screens(store, [i.id for i in items])
    clean = Screening("clean")
    emit(
        args,
        [
            {
                **_item_json(i),
                "title": masked(i.title),
                "secrets": _findings_json(flagged.get(i.id, [])),
                "screen": _screen_json(screened.get(i.id, clean)),
            }
            for i in items
        ],
        "\n".join(_line(i, flagged.get(i.id, []), screened.get(i.id, clean)) for i in items) or "no pending promotions",
    )
    return EXIT_OK


def _item_json(item: QueueItem) -> dict[str, object]:
    return {**asdict(item), "dura_avg": round(item.dura_avg, 3), "triggers": list(item.triggers)}


def _findings_json(found: list[tuple[str, Finding]]) -> list[dict[str, object]]:
    """Each finding masked, with where it is (never the matched text itself)."""
    return [{"field": name, "kind": f.kind, "masked": f.masked, "start": f.start, "end": f.end} for name, f in found]


def _screen_json(screening: Screening) -> dict[str, object]:
    """The lane and findings the issue's scripts read: ``{"lane", "findings": [{"rule", "category", "field",
    "excerpt", "revealed"}]}``."""
    return {"lane": screening.lane, "findings": [f.as_json() for f in screening.findings]}


def _line(item: QueueItem, found: Sequence[tuple[str, Finding]] = (), screening: Screening | None = None) -> str:
    state = "deferred " if item.deferred else ""
    kinds = sorted({f.kind for _, f in found})
    flag = f"[secret? {', '.join(kinds)}] " if kinds else ""
    lane = f"[{screening.lane}: {', '.join(screening.rules)}] " if screening and screening.lane != "clean" else ""
    head = f"{item.id:>6} {item.dura_avg:.2f} {item.type:<10} {item.scope_hash:<13}"
    return f"{head} {state}{lane}{flag}{masked(item.title)}"


def _decide(args: argparse.Namespace) -> int:
    verb = args.promotions_command
    if bool(args.ids) == bool(args.where):
        raise BadInput(f"promotions {verb}: give promotion ids or --where QUERY (one of the two)")
    if args.where:
        if _acknowledged(args):
            raise BadInput("--acknowledge approves promotions named by id, never by --where")
        with open_store(args) as store:
            chosen = pending_queue(store, "dura_avg", queue_query(args.where))
            held = _quarantined(store, chosen) if verb == "approve" else {}
        # never approved in bulk: each is approved by id, its findings acknowledged
        chosen, args.held_back = [i for i in chosen if i.id not in held], held
        left_out = "".join(f"\nleft out, in quarantine: #{k} ({', '.join(r)})" for k, r in held.items())
        if not chosen:
            emit(
                args,
                {
                    "matched": [],
                    "done": [],
                    "failed": [],
                    "held_back": [{"id": k, "rules": r} for k, r in held.items()],
                },
                f"no pending promotion matches {args.where!r}" if not held else f"nothing to {verb}{left_out}",
            )
            return EXIT_FINDING
        if args.dry_run or not _agreed(args, verb, chosen):
            listing = "\n".join(_line(i) for i in chosen)
            emit(
                args,
                {"matched": [_item_json(i) for i in chosen], "done": [], "failed": []},
                (f"would {verb} {len(chosen)}:\n{listing}" if args.dry_run else f"nothing {PAST[verb]}") + left_out,
            )
            return EXIT_OK if args.dry_run else EXIT_FINDING
        args.ids = [i.id for i in chosen]
    elif args.dry_run:
        emit(args, {"matched": args.ids, "done": [], "failed": []}, f"would {verb}: " + " ".join(map(str, args.ids)))
        return EXIT_OK
    return _decide_ids(args, verb)


def _agreed(args: argparse.Namespace, verb: str, chosen: list[QueueItem]) -> bool:
    """--yes, or a yes typed at a terminal after seeing the list; off a terminal, --yes is needed."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise BadInput(f"--where matched {len(chosen)}: add --yes to {verb} them (or --dry-run to see them)")
    print("\n".join(_line(i) for i in chosen), file=sys.stderr)
    return input(f"{verb} these {len(chosen)} promotions? [y/N] ").strip().lower() in ("y", "yes")


def _decide_ids(args: argparse.Namespace, verb: str) -> int:
    done: list[dict[str, object]] = []
    failed: list[dict[str, Any]] = []

    def act(store: Store, pid: int) -> dict[str, object]:
        if verb == "approve":
            flagged = pending_findings(store, [pid]).get(pid)
            if flagged and not (args.redact or args.keep_secrets or _sensitive_target(store, pid)):
                kinds = ", ".join(sorted({f.kind for _, f in flagged}))
                raise StoreError(f"holds secret-looking text ({kinds}): approve with --redact, or --keep-secrets")
            approved = promotions.approve(
                store, pid, redact_secrets=bool(flagged and args.redact), acknowledged=_acknowledged(args)
            )
            return {"id": pid, "slug": approved.slug}
        if verb == "snooze":
            until = parse_until(args.until, store.now())
            promotions.snooze(store, pid, until)
            return {"id": pid, "until": until.isoformat()}
        decided = (promotions.reject if verb == "reject" else promotions.defer)(store, pid, args.reason)
        return {"id": pid, **({"reason_kept": False} if decided.reason_dropped else {})}

    with open_with_key(args, _needs_key(args.ids) if verb == "approve" else (lambda store: False)) as store:
        if verb == "approve":
            promotions.prove_keys(store, args.ids)  # a wrong key refuses them all, before the first
        for pid in args.ids:
            try:
                done.append(act(store, pid))
            except StoreError as exc:
                failed.append({"id": pid, "error": str(exc)})
    held = getattr(args, "held_back", {})
    text = "\n".join(
        [
            *(f"{PAST[verb]} #{d['id']}" + (f" -> {d['slug']}" if "slug" in d else "") + _dropped(d) for d in done),
            *(f"engram: {_about(f['id'], f['error'])}" for f in failed),
            *(f"left out, in quarantine: #{pid} ({', '.join(rules)})" for pid, rules in held.items()),
        ]
    )
    data = {"done": done, "failed": failed, "held_back": [{"id": pid, "rules": rules} for pid, rules in held.items()]}
    emit(args, data, text)
    return EXIT_FINDING if failed or held else EXIT_OK


def _dropped(decided: dict[str, object]) -> str:
    return " (its reason is not kept: the scope is sensitive and locked)" if decided.get("reason_kept") is False else ""


def _acknowledged(args: argparse.Namespace) -> list[str]:
    return [rule.strip() for rule in (getattr(args, "acknowledge", None) or "").split(",") if rule.strip()]


def _quarantined(store: Store, items: Sequence[QueueItem]) -> dict[int, list[str]]:
    """The items of ``items`` the poisoning screen puts in quarantine, with their findings' rule ids."""
    from engram.store.screening import pending_screens

    screened = pending_screens(store, [i.id for i in items])
    return {pid: found.rules for pid, found in screened.items() if found.lane == "quarantine"}


def _sensitive_target(store: Store, pid: int) -> bool:
    """Does promotion ``pid`` go into a sensitive scope (its memory encrypted: secret-looking text may stay)?"""
    return bool(promotions.target_scopes(store, [pid]) & store.sensitive_scopes())


def _needs_key(ids: list[int]) -> Callable[[Store], bool]:
    return lambda store: bool(promotions.target_scopes(store, ids) & store.sensitive_scopes())


def _merge(args: argparse.Namespace) -> int:
    with open_with_key(args, _needs_key([args.id])) as store:
        merged = promotions.merge(store, args.id, args.into)
    emit(args, {"id": args.id, "merged_into": merged.into}, f"merged #{args.id} into {merged.into}")
    return EXIT_OK


def _edit(args: argparse.Namespace) -> int:
    with open_with_key(args, _needs_key([args.id])) as store:
        detail = promotion_detail(store, args.id)
        if detail.status != "pending":
            raise BadInput(f"promotion #{args.id} is {detail.status}: only a pending one can be edited")
        body = _body(args)
        if body is None and not any((args.title, args.type, args.triggers)):
            body = edit_in_editor(detail.body, detail.scope_hash in store.sensitive_scopes())
        edits = promotions.Edits(
            title=args.title,
            type=MemoryType(args.type) if args.type else None,
            triggers=[t.strip() for t in args.triggers.split(",") if t.strip()] if args.triggers else None,
            body=body,
        )
        shown = {
            "id": args.id,
            "title": edits.title or detail.title,
            "type": (edits.type.value if edits.type else detail.type),
            "triggers": edits.triggers if edits.triggers is not None else detail.triggers,
            "body": edits.body if edits.body is not None else detail.body,
        }
        if not args.approve:
            emit(
                args,
                {**shown, "approved": False},
                f"#{args.id} as it would be approved (add --approve):\n"
                f"{shown['title']} ({shown['type']})\n\n{shown['body']}",
            )
            return EXIT_OK
        done = promotions.approve(store, args.id, edits, acknowledged=_acknowledged(args))
    emit(args, {**shown, "approved": True, "slug": done.slug}, f"approved #{args.id} with edits -> {done.slug}")
    return EXIT_OK


def _body(args: argparse.Namespace) -> str | None:
    if args.body_file is None:
        return None
    if str(args.body_file) == "-":
        return sys.stdin.read()
    try:
        return args.body_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"--body-file {args.body_file}: {exc}") from None


def _about(pid: int, error: str) -> str:
    """A refusal about promotion ``pid``, naming it once ("no promotion #9", not "#9: no promotion #9")."""
    return error if f"#{pid}" in error else f"#{pid}: {error}"
