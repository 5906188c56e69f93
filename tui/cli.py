# PYTHON_ARGCOMPLETE_OK  (argcomplete's global completion looks for this line)
"""The ``engram`` command: opens the console, or runs one store command and reports.

Exit codes: 0 success, 1 a finding (drift, something left unrepaired), 2 could not run. Errors are one line
on stderr. Every command takes ``--root DIR``; every report takes ``--json``.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from engram import __version__
from engram.store import promotions
from engram.store.audit.ops import (
    NotSigned,
    check_printed,
    current_checkpoint,
    repair_log,
    restart_checkpoint,
    verify_log,
)
from engram.store.audit.verify import UNREADABLE, VALID, EventFilter, events
from engram.store.demo import DEMO_PASSPHRASE, build_demo
from engram.store.drift.check import KINDS, check
from engram.store.drift.rebuild import open_for_rebuild, rebuild_index
from engram.store.drift.repair import repair
from engram.store.errors import (
    ENVIRONMENT_ERRORS,
    BadInput,
    KeyUnavailable,
    NoIndex,
    PassphraseUnconfirmed,
    StoreError,
    WrongKey,
)
from engram.store.importers import IMPORTERS, importer
from engram.store.importers.base import Options
from engram.store.importers.run import Preview, apply_import, preview
from engram.store.paths import engram_state_dir
from engram.store.query import QuerySyntaxError
from engram.store.query import parse as parse_query
from engram.store.queue import pending_queue
from engram.store.scopes import default_discovery_dirs, project_dir, resolve_scope, scopes
from engram.store.sensitive.convert import check_key, mark_sensitive, unmark_sensitive
from engram.store.sensitive.crypto import PASSPHRASE_ENV
from engram.store.sensitive.grants import issue_grant, revoke_grant
from engram.store.sensitive.rekey import plan_passphrase_rekey, rekey_passphrase, rekey_random
from engram.store.service import Store
from engram.store.settings import settings_or_defaults
from engram.store.stats import counts, list_memories
from engram.tui.cli_progress import cli_progress
from engram.tui.completion import SHELLS, Completer, autocomplete, complete_pending, complete_scopes, shell_script
from engram.tui.terminal_safe import SafeWriter

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2
NEW_PASSPHRASE_ENV = "ENGRAM_NEW_PASSPHRASE"
SCOPE_HELP = "scope hash, or the project's path"


def _parser() -> argparse.ArgumentParser:
    root_help = "data root (default: $MEMORYD_DATA_ROOT, else ~/.local/share/memoryd)"
    # --root is taken before or after the subcommand: a subcommand's own default must not overwrite the value
    # given before it (argparse's parents would), so there it is only set when given
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=root_help)
    report = argparse.ArgumentParser(add_help=False)
    report.add_argument("--json", action="store_true", help="print JSON for scripts")

    parser = argparse.ArgumentParser(prog="engram", description="Review and keep a memoryd memory store trustworthy.")
    parser.add_argument("--root", metavar="DIR", help=root_help)
    parser.add_argument("--version", action="version", version=f"engram {__version__}")
    sub = parser.add_subparsers(dest="command")
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
    sub.add_parser("check", parents=[common, report], help="report drift between files and index")
    sub.add_parser("repair", parents=[common, report], help="fix what check finds, without loss")
    sub.add_parser(
        "rebuild-index",
        parents=[common, report],
        help="rebuild index rows from the files, keeping promotions, graph, decay and sensitivity",
    )
    sub.add_parser("ls", parents=[common, report], help="list every memory with its type, scope and state")
    sub.add_parser("stats", parents=[common, report], help="counts of memories, promotions and the graph")

    promos = sub.add_parser("promotions", parents=[common], help="the review queue from scripts").add_subparsers(
        dest="promotions_command", required=True
    )
    listing = promos.add_parser("list", parents=[common, report], help="pending promotions, best first")
    listing.add_argument("--sort", default="dura_avg", help="dura_avg, dura_min, D, U, R, A, created, scope, type")
    listing.add_argument("--filter", default="", help="search syntax, as in the console")
    for verb in ("approve", "reject", "defer"):
        p = promos.add_parser(verb, parents=[common, report], help=f"{verb} promotions by id")
        _completed(p.add_argument("ids", nargs="+", type=int, metavar="ID"), complete_pending)
        if verb != "approve":
            p.add_argument("--reason", help="why (kept in engram's notes and the audit event)")

    scope = sub.add_parser("scope", parents=[common], help="sensitive scopes").add_subparsers(
        dest="scope_command", required=True
    )
    for verb, what in (
        ("mark", "mark sensitive and encrypt every memory (resumable)"),
        ("unmark", "decrypt every memory and unmark (needs the key; resumable)"),
        ("unlock-check", "check that the key opens the scope's files (0 opens, 1 wrong key)"),
    ):
        p = scope.add_parser(verb, parents=[common, report], help=what)
        _completed(p.add_argument("scope", metavar="SCOPE", help=SCOPE_HELP), complete_scopes)
    p = scope.add_parser(
        "rekey",
        parents=[common, report],
        help="re-encrypt under a new key: every sensitive scope to a new passphrase (passphrase "
        "mode), or one scope to a new random key (keyring mode); resumable",
    )
    _completed(
        p.add_argument(
            "scope", metavar="SCOPE", nargs="?", help="scope hash, or the project's path (needed in keyring mode only)"
        ),
        complete_scopes,
    )
    p.add_argument(
        "--to",
        choices=["passphrase", "random"],
        default=None,
        help="the key source memoryd's config uses (the default); the other one is refused",
    )
    completion = sub.add_parser("completion", help="print the shell hook for completion: eval it in your shell's rc")
    completion.add_argument("shell", choices=SHELLS)
    scopes_cmd = sub.add_parser(
        "scopes",
        parents=[common, report],
        help="every scope: label, memories, sensitive and lock state, grant, findings",
    )
    scopes_cmd.add_argument(
        "--discover",
        action="append",
        type=Path,
        metavar="DIR",
        default=None,
        help="look for project directories here to label scopes (default: ~ and ~/code, ~/src …)",
    )
    grant = sub.add_parser("grant", parents=[common, report], help="let agents read a sensitive scope for a while")
    _completed(grant.add_argument("scope", metavar="SCOPE", help=SCOPE_HELP), complete_scopes)
    grant.add_argument(
        "--duration",
        required=True,
        choices=["once", "session", "task"],
        help="once: 90 s; session: 8 h; task: until revoked",
    )
    grant.add_argument("--task", metavar="ID", help="the task a 'task' grant is for")
    revoke = sub.add_parser("revoke", parents=[common, report], help="remove a scope's read grant")
    _completed(revoke.add_argument("scope", metavar="SCOPE", help=SCOPE_HELP), complete_scopes)

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
    log.add_argument("--since", type=_timestamp, help="only events at or after this ISO-8601 time or date")
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
    return parser


def _timestamp(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO-8601 date or time") from None


def _completed(action: argparse.Action, completer: Completer) -> None:
    action.completer = completer  # type: ignore[attr-defined]  # where argcomplete looks


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks what can follow: answer and exit (see tui/completion.py)
        autocomplete(parser)
    args = parser.parse_args(argv)
    command = args.command or "open"
    if command in ("open", "demo"):  # the console draws its own screen
        return _run(command, args)
    streams = sys.stdout, sys.stderr  # everything else prints data: nothing in it may drive the terminal
    sys.stdout, sys.stderr = SafeWriter(sys.stdout), SafeWriter(sys.stderr)
    try:
        return _run(command, args)
    finally:
        if sys.stdout is not None:
            sys.stdout, sys.stderr = streams


def _run(command: str, args: argparse.Namespace) -> int:
    if command in ("audit", "promotions", "scope"):
        command = f"{command} {getattr(args, command + '_command')}"
    try:
        return _confirming(COMMANDS[command], args)
    except (StoreError, QuerySyntaxError) as exc:
        print(f"engram: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `engram ls | head`: the reader left; say nothing more (before OSError: it is one)
        sys.stdout = None
        return EXIT_OK
    except ENVIRONMENT_ERRORS as exc:  # disk full, read-only file system, a damaged index page: one line
        print(f"engram: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR
    finally:
        _tell_notices()


_OPENED: list[Store] = []  # every store a command opened: what each left unsaid is told when the command ends


def _store(args: argparse.Namespace, **options: Any) -> Store:
    store = Store.open(args.root, **options)
    _OPENED.append(store)
    return store


def _tell_notices() -> None:
    for notice in dict.fromkeys(store.notice for store in _OPENED if store.notice):
        print(f"engram: {notice}", file=sys.stderr)
    _OPENED.clear()


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2) if getattr(args, "json", False) else text)


def _open(args: argparse.Namespace) -> int:
    from engram.tui.app import EngramApp  # Textual loads only when the console is wanted

    settings, problem = settings_or_defaults()  # a broken config.toml is said in the console, not fatal
    with Store.open(args.root, actor="engram-tui") as store:
        EngramApp(store, settings, warnings=[problem] if problem else []).run()
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    root = Path(args.root) if args.root else engram_state_dir() / "demo-root"
    with Store.open(root, actor="engram-demo", create=True) as store:
        if counts(store).memories:
            print(f"{root} already holds a demo; opening it", file=sys.stderr)
        else:
            made = build_demo(store, args.memories, args.seed)
            print(f"demo root {root}: " + ", ".join(f"{v} {k}" for k, v in made.items()), file=sys.stderr)
        print(f"the sensitive scope's passphrase is {DEMO_PASSPHRASE!r}", file=sys.stderr)
    if args.no_open:
        return EXIT_OK
    args.root = str(root)
    return _open(args)


def _completion(args: argparse.Namespace) -> int:
    print(shell_script(args.shell))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    try:
        opened = _store(args, create_index=False)
    except NoIndex as exc:  # a finding, not a reason to write an empty index.db
        _emit(args, {"drift": True, "index_missing": str(exc)}, f"drift found: {exc}")
        return EXIT_FINDING
    with opened as store:
        with cli_progress("checking files") as advance:
            report = check(store, advance)
    lines = [f"{report.files} files, {report.rows} index rows"]
    for kind, item in report.to_json()["findings"].items():
        lines.append(f"{item['count']:6d}  {kind}: {item['meaning']}" + ("  [repairable]" if item["fixable"] else ""))
        lines.extend(f"          {e['path'] or ''}  {e['detail']}".rstrip() for e in item["examples"])
    lines.append("drift found: run `engram repair`" if report.drift else "no drift")
    _emit(args, report.to_json(), "\n".join(lines))
    return EXIT_FINDING if report.drift else EXIT_OK


def _repair(args: argparse.Namespace) -> int:
    with _store(args) as store:
        result = repair(store)
    remaining = result.remaining.to_json() if result.remaining else {}
    left = {k: v for k, v in remaining.get("findings", {}).items() if k != "locked_file"}
    text = "\n".join(
        [
            *(f"fixed: {m}" for m in result.fixed),
            *(f"failed: {m}" for m in result.failed),
            *(f"left: {v['count']} {k} ({KINDS[k][0]})" for k, v in left.items()),
            f"{len(result.fixed)} fixed, {len(result.failed)} failed, {sum(v['count'] for v in left.values())} left",
        ]
    )
    _emit(args, {"fixed": result.fixed, "failed": result.failed, "remaining": remaining}, text)
    return EXIT_FINDING if left or result.failed else EXIT_OK


def _rebuild(args: argparse.Namespace) -> int:
    store, aside = open_for_rebuild(args.root, "engram-cli")
    with store:
        with cli_progress("reading files") as advance:
            result = rebuild_index(store, advance)
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
    _emit(args, data, "\n".join(lines))
    return EXIT_FINDING if result.skipped else EXIT_OK


def _ls(args: argparse.Namespace) -> int:
    with _store(args) as store:
        items = list_memories(store)
    text = "\n".join(
        f"{i.type:<10} {i.scope_hash:<13} {i.decay_state:<14} {i.state:<22} {i.slug}  {i.title}" for i in items
    )
    _emit(args, [vars(i) for i in items], text)
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    with _store(args) as store:
        c = counts(store)
    text = "\n".join(
        [
            f"memories {c.memories} ({c.encrypted} encrypted)",
            "by type: " + ", ".join(f"{k} {v}" for k, v in c.by_type.items()),
            "by decay: " + ", ".join(f"{k} {v}" for k, v in c.by_decay.items()),
            "promotions: " + ", ".join(f"{k} {v}" for k, v in sorted(c.promotions.items())),
            f"graph: {c.entities} entities, {c.relations} relations, {c.supersedes} supersedes",
            "sensitive scopes: " + (", ".join(c.sensitive_scopes) or "none"),
        ]
    )
    _emit(args, c.to_json(), text)
    return EXIT_OK


def _audit_verify(args: argparse.Namespace) -> int:
    with _store(args) as store:
        with cli_progress("verifying the chain (bytes)") as advance:
            verdict = verify_log(store, None if advance is None else lambda read: advance(read, None))
    listed = [f"  line {p.line}: {p.reason}" if p.line else f"  {p.reason}" for p in verdict.problems[:50]]
    if verdict.problem_count > len(listed):
        listed.append(f"  ... {verdict.problem_count - len(listed)} more (--json lists {len(verdict.problems)})")
    _emit(
        args,
        verdict.to_json(),
        "\n".join([verdict.summary(), *listed]) if verdict.problem_count > 1 else verdict.summary(),
    )
    return {VALID: EXIT_OK, UNREADABLE: EXIT_ERROR}.get(verdict.status, EXIT_FINDING)


def _audit_log(args: argparse.Namespace) -> int:
    where = EventFilter(scope=args.scope, since=args.since, event_type=args.event_type, target=args.target)
    with _store(args) as store:
        found = events(store.layout.audit_path, where)
        if args.json:
            print(json.dumps(list(found), ensure_ascii=False, indent=2))
            return EXIT_OK
        for e in found:
            print(
                f"{e['line']:>7} {e.get('ts', '')[:19]:<19} {e.get('event_type', '?'):<22} "
                f"{e.get('scope_hash') or '-':<13} {e.get('target_id') or e.get('tool') or ''}"
            )
    return EXIT_OK


def _audit_repair(args: argparse.Namespace) -> int:
    with _store(args) as store:
        message = repair_log(store)
        warning = store.audit_warning
    _emit(args, {"result": message, "warning": warning}, message)
    return EXIT_OK


def _audit_checkpoint(args: argparse.Namespace) -> int:
    with _store(args) as store:
        if args.print_:
            print(current_checkpoint(store).to_json())
            return EXIT_OK
        if args.restore or args.reset:
            try:
                message = restart_checkpoint(store, args.restore)
            except NotSigned as exc:
                _emit(args, {**exc.verdict.to_json(), "signed": False}, str(exc))
                return EXIT_FINDING
            _emit(args, {"result": message, "warning": store.audit_warning}, message)
            return EXIT_OK
        verdict, own = check_printed(store, args.check)
    note = "" if own else " (signed by another engram's key)"
    _emit(args, {**verdict.to_json(), "own_key": own}, verdict.summary() + note)
    return {VALID: EXIT_OK, UNREADABLE: EXIT_ERROR}.get(verdict.status, EXIT_FINDING)


def _promotions_list(args: argparse.Namespace) -> int:
    with _store(args) as store:
        items = pending_queue(store, args.sort, parse_query(args.filter))
    data = [{**vars(i), "dura_avg": round(i.dura_avg, 3), "triggers": list(i.triggers)} for i in items]
    text = (
        "\n".join(
            f"{i.id:>6} {i.dura_avg:.2f} {i.type:<10} {i.scope_hash:<13} {'deferred ' if i.deferred else ''}{i.title}"
            for i in items
        )
        or "no pending promotions"
    )
    _emit(args, data, text)
    return EXIT_OK


def _promotions_decide(args: argparse.Namespace) -> int:
    verb = args.promotions_command
    done, failed = [], []
    needs_key = (
        (lambda store: bool(promotions.target_scopes(store, args.ids) & store.sensitive_scopes()))
        if verb == "approve"
        else (lambda store: False)
    )
    with _open_with_key(args, needs_key) as store:
        if verb == "approve":
            promotions.prove_keys(store, args.ids)  # a wrong key refuses them all, before the first
        for pid in args.ids:
            try:
                if verb == "approve":
                    done.append({"id": pid, "slug": promotions.approve(store, pid).slug})
                elif verb == "reject":
                    promotions.reject(store, pid, args.reason)
                    done.append({"id": pid})
                else:
                    promotions.defer(store, pid, args.reason)
                    done.append({"id": pid})
            except StoreError as exc:
                failed.append({"id": pid, "error": str(exc)})
    past = {"approve": "approved", "reject": "rejected", "defer": "deferred"}[verb]
    text = "\n".join(
        [
            *(f"{past} #{d['id']}" + (f" -> {d['slug']}" if "slug" in d else "") for d in done),
            *(f"engram: #{f['id']}: {f['error']}" for f in failed),
        ]
    )
    _emit(args, {"done": done, "failed": failed}, text)
    return EXIT_FINDING if failed else EXIT_OK


def _open_with_key(args: argparse.Namespace, needs_key: Callable[[Store], bool] = lambda store: True) -> Store:
    """The store, with memoryd's passphrase from the environment or, where ``needs_key`` says the command will
    want it, a masked prompt at a terminal (asked once per run, a second time only when :func:`_confirming`
    wants it)."""
    store = _store(args)
    keys = store.keys
    if keys.key_source != "passphrase":
        return store
    if keys.passphrase is None and sys.stdin.isatty() and needs_key(store):
        args.typed_passphrase = getattr(args, "typed_passphrase", None) or getpass.getpass(
            f"memoryd passphrase (or set {PASSPHRASE_ENV}): "
        )
        keys.set_passphrase(args.typed_passphrase)
    again = getattr(args, "passphrase_again", None)
    if again is not None and keys.passphrase is not None:
        if again != keys.passphrase:
            raise PassphraseUnconfirmed("the two passphrases differ: nothing changed")
        keys.confirmed = True
    return store


def _confirming(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``command``; when it stops because nothing on the root can check the passphrase (it stops before
    writing anything), ask for it again at a terminal and run it once more with the two compared."""
    try:
        return command(args)
    except PassphraseUnconfirmed:
        if not sys.stdin.isatty() or getattr(args, "passphrase_again", None) is not None:
            raise
    args.passphrase_again = getpass.getpass("nothing is encrypted yet to check it against: the same passphrase again: ")
    return command(args)


def _scope_convert(args: argparse.Namespace) -> int:
    act = mark_sensitive if args.scope_command == "mark" else unmark_sensitive
    with _open_with_key(args) as store:
        with cli_progress("encrypting" if args.scope_command == "mark" else "decrypting") as advance:
            done = act(store, args.scope, advance)
    verb = "encrypted" if args.scope_command == "mark" else "decrypted"
    _emit(args, vars(done), f"scope {done.scope_hash}: {verb} {done.done} memories in {done.batches} batches")
    return EXIT_OK


def _rekey(args: argparse.Namespace) -> int:
    """Passphrase mode: every sensitive scope to one new passphrase, announced first. Random mode: one scope."""
    with _open_with_key(args) as store:
        if (args.to or store.keys.key_source) == "random":
            if not args.scope:
                raise BadInput("memoryd's random-key mode rekeys one scope at a time: give SCOPE")
            with cli_progress("re-encrypting") as advance:
                result = rekey_random(store, args.scope, advance)
            text = f"scope {result.scopes[0].scope_hash}: {result.done} memories under a new key in the OS keyring"
        else:
            if args.scope:
                resolve_scope(store, args.scope)  # a typo is still an error, though every scope changes
            plan = plan_passphrase_rekey(store)
            print(
                f"memoryd keeps one passphrase for every sensitive scope: this re-encrypts all {len(plan)} of them "
                f"({sum(plan.values()):,} memories) under the new passphrase",
                file=sys.stderr,
            )
            new = _new_passphrase()
            with cli_progress("re-encrypting") as advance:
                result = rekey_passphrase(
                    store, new, None if advance is None else lambda scope, n, total: advance(n, total)
                )
            text = (
                "every memory is already under the new passphrase: nothing changed"
                if result.already
                else f"{result.done} memories of {len(result.scopes)} scopes under the new passphrase; "
                "memoryd needs it from now on: "
                + (
                    "the OS keyring holds it"
                    if result.keyring_updated
                    else f"set {PASSPHRASE_ENV} to it, or run `memoryd set-passphrase`"
                )
            )
    _emit(
        args,
        {"scopes": [vars(p) for p in result.scopes], "done": result.done, "keyring_updated": result.keyring_updated},
        text,
    )
    return EXIT_OK


def _new_passphrase() -> str:
    """From ENGRAM_NEW_PASSPHRASE, else typed twice at a terminal (masked)."""
    given = os.environ.get(NEW_PASSPHRASE_ENV)
    if given:
        return given
    if not sys.stdin.isatty():
        raise KeyUnavailable(f"the new passphrase: set {NEW_PASSPHRASE_ENV}, or run this at a terminal")
    first = getpass.getpass("new passphrase: ")
    if not first or getpass.getpass("the same again: ") != first:
        raise KeyUnavailable("the two new passphrases differ (or are empty): nothing changed")
    return first


def _unlock_check(args: argparse.Namespace) -> int:
    with _open_with_key(args) as store:
        scope, _ = resolve_scope(store, args.scope)
        try:
            tried = check_key(store, scope)
        except WrongKey as exc:  # no key at all is "could not run" (2), like every other StoreError
            _emit(args, {"scope_hash": scope, "opens": False, "error": str(exc)}, f"scope {scope}: {exc}")
            return EXIT_FINDING
    text = (
        f"scope {scope}: the key opens its files"
        if tried
        else f"scope {scope}: the key is at hand, but the scope has no encrypted file to try it on"
    )
    _emit(args, {"scope_hash": scope, "opens": True, "checked_against_a_file": tried}, text)
    return EXIT_OK


def _scopes(args: argparse.Namespace) -> int:
    with _store(args) as store:
        infos = scopes(store, args.discover if args.discover is not None else default_discovery_dirs())
        data = [i.to_json(store) for i in infos]
        now = store.now()
    lines = []
    for info in infos:
        state = ("sensitive, locked" if info.locked else "sensitive, unlocked") if info.sensitive else "-"
        grant = "" if info.grant is None else info.grant if isinstance(info.grant, str) else info.grant.describe(now)
        lines.append(
            f"{info.scope_hash:<14} {info.memories:>7,}  {state:<19} {info.name}"
            + (f"\n{'':<24}grant: {grant}" if grant else "")
            + "".join(f"\n{'':<24}! {f}" for f in info.findings())
        )
    _emit(args, data, "\n".join(lines) or "no scopes")
    return EXIT_FINDING if any(i.findings() for i in infos) else EXIT_OK


def _grant(args: argparse.Namespace) -> int:
    with _store(args) as store:
        scope, root = resolve_scope(store, args.scope)
        grant = issue_grant(store, scope, args.duration, args.task, root or project_dir(store, scope))
        _emit(args, grant.to_json(store.now()), f"scope {scope}: grant {grant.describe(store.now())}")
    return EXIT_OK


def _revoke(args: argparse.Namespace) -> int:
    with _store(args) as store:
        scope, _ = resolve_scope(store, args.scope)
        revoke_grant(store, scope)
    _emit(args, {"scope_hash": scope, "revoked": True}, f"scope {scope}: grant revoked")
    return EXIT_OK


def _import(args: argparse.Namespace) -> int:
    with _store(args, actor="engram-import") as store:
        plan = preview(
            store,
            importer(args.system),
            args.path,
            Options(scope=args.scope, everything=args.everything, redact=args.redact),
        )
        data = plan.to_json()
        if not args.dry_run and plan.items:
            with cli_progress("importing") as advance:
                apply_import(store, plan, advance)
        data["written"] = not args.dry_run
    _emit(args, data, _preview_text(plan, args.dry_run))
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "open": _open,
    "demo": _demo,
    "completion": _completion,
    "check": _check,
    "repair": _repair,
    "rebuild-index": _rebuild,
    "ls": _ls,
    "stats": _stats,
    "audit verify": _audit_verify,
    "audit log": _audit_log,
    "audit repair": _audit_repair,
    "audit checkpoint": _audit_checkpoint,
    "promotions list": _promotions_list,
    "promotions approve": _promotions_decide,
    "promotions reject": _promotions_decide,
    "promotions defer": _promotions_decide,
    "scope mark": _scope_convert,
    "scope unmark": _scope_convert,
    "scope unlock-check": _unlock_check,
    "scope rekey": _rekey,
    "scopes": _scopes,
    "grant": _grant,
    "revoke": _revoke,
    "import": _import,
}

if __name__ == "__main__":
    sys.exit(main())
