"""The audit chain from scripts: verify, log, repair a torn tail, checkpoints."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engram.store.audit.ops import (
    NotSigned,
    check_printed,
    current_checkpoint,
    repair_log,
    restart_checkpoint,
    verify_log,
)
from engram.store.audit.titles import Titles
from engram.store.audit.verify import UNREADABLE, VALID, EventFilter, events
from engram.store.service import chunked
from engram.tui.cli.common import (
    EXIT_ERROR,
    EXIT_FINDING,
    EXIT_OK,
    Handler,
    Parser,
    Subparsers,
    emit,
    open_store,
    timestamp,
)
from engram.tui.cli_progress import cli_progress


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    audit = sub.add_parser("audit", parents=[common], help="the audit hash chain").add_subparsers(
        dest="audit_command", required=True
    )
    audit.add_parser(
        "verify",
        parents=[common, report],
        help="verify the chain and the signed checkpoint (0 valid, 1 tampered or torn, 2 unreadable)",
    )
    log = audit.add_parser("log", parents=[common, report], help="list audit events")
    log.add_argument("--scope", help="only this scope hash")
    log.add_argument("--since", type=timestamp, help="only events at or after this ISO-8601 time or date")
    log.add_argument("--type", dest="event_type", help="only this event type")
    log.add_argument("--target", help="only this target id")
    audit.add_parser(
        "repair", parents=[common, report], help="move a torn last line aside (valid lines are never rewritten)"
    )
    checkpoint = audit.add_parser(
        "checkpoint",
        parents=[common, report],
        help="print a signed checkpoint to keep elsewhere, or check the log against one",
    )
    way = checkpoint.add_mutually_exclusive_group(required=True)
    way.add_argument("--print", action="store_true", dest="print_", help="verify, then print the checkpoint")
    way.add_argument("--check", metavar="FILE", type=Path, help="check the log against a kept checkpoint")
    way.add_argument(
        "--restore",
        metavar="FILE",
        type=Path,
        help="after a 'checkpoint missing': check the log against a kept checkpoint, then sign it anew",
    )
    way.add_argument(
        "--reset",
        action="store_true",
        help="after a 'checkpoint missing': trust the log as it is and sign it anew (recorded)",
    )
    return {
        "audit verify": _audit_verify,
        "audit log": _audit_log,
        "audit repair": _audit_repair,
        "audit checkpoint": _audit_checkpoint,
    }


def _audit_verify(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        with cli_progress("verifying the chain (bytes)") as advance:
            verdict = verify_log(store, None if advance is None else lambda read: advance(read, None))
    listed = [f"  line {p.line}: {p.reason}" if p.line else f"  {p.reason}" for p in verdict.problems[:50]]
    if verdict.problem_count > len(listed):
        listed.append(f"  ... {verdict.problem_count - len(listed)} more (--json lists {len(verdict.problems)})")
    emit(
        args,
        verdict.to_json(),
        "\n".join([verdict.summary(), *listed]) if verdict.problem_count > 1 else verdict.summary(),
    )
    return {VALID: EXIT_OK, UNREADABLE: EXIT_ERROR}.get(verdict.status, EXIT_FINDING)


PREFETCH = 500  # lines whose titles are looked up together


def _audit_log(args: argparse.Namespace) -> int:
    where = EventFilter(scope=args.scope, since=args.since, event_type=args.event_type, target=args.target)
    with open_store(args) as store:
        titles = Titles(store)
        if args.json:
            found = list(events(store.layout.audit_path, where))
            titles.prefetch(found)
            print(json.dumps([{**e, "title": titles.title(e)} for e in found], ensure_ascii=False, indent=2))
            return EXIT_OK
        for batch in chunked(events(store.layout.audit_path, where), PREFETCH):
            titles.prefetch(batch)
            for e in batch:  # fields as text whatever JSON type a line gave them: the log is anyone's to append to
                ts, kind, scope, target = (_text(e.get(k)) for k in ("ts", "event_type", "scope_hash", "target_id"))
                what = target or _text(e.get("tool"))
                title = titles.title(e)
                print(
                    f"{e['line']:>7} {ts[:19]:<19} {kind or '?':<22} {scope or '-':<13} {what}"
                    + (f"  {title}" if title else "")
                )
    return EXIT_OK


def _text(value: object) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _audit_repair(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        message = repair_log(store)
        warning = store.audit_warning
    emit(args, {"result": message, "warning": warning}, message)
    return EXIT_OK


def _audit_checkpoint(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        if args.print_:
            print(current_checkpoint(store).to_json())
            return EXIT_OK
        if args.restore or args.reset:
            try:
                message = restart_checkpoint(store, args.restore)
            except NotSigned as exc:
                emit(args, {**exc.verdict.to_json(), "signed": False}, str(exc))
                return EXIT_FINDING
            emit(args, {"result": message, "warning": store.audit_warning}, message)
            return EXIT_OK
        verdict, own = check_printed(store, args.check)
    note = "" if own else " (signed by another engram's key)"
    emit(args, {**verdict.to_json(), "own_key": own}, verdict.summary() + note)
    return {VALID: EXIT_OK, UNREADABLE: EXIT_ERROR}.get(verdict.status, EXIT_FINDING)
