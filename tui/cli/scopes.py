"""Scopes from scripts: the list, sensitive scopes (mark, unmark, rekey, unlock-check) and read grants."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engram.store.errors import BadInput, KeyUnavailable, WrongKey
from engram.store.lazy import lazy_module
from engram.store.scopes import default_discovery_dirs, project_dir, resolve_scope, scopes
from engram.store.sensitive.crypto import PASSPHRASE_ENV
from engram.store.sensitive.grants import issue_grant, revoke_grant
from engram.tui.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    NEW_PASSPHRASE_ENV,
    SCOPE_HELP,
    Handler,
    Parser,
    Subparsers,
    completed,
    emit,
    open_store,
    open_with_key,
)
from engram.tui.cli_progress import cli_progress
from engram.tui.completion import complete_scopes

if TYPE_CHECKING:
    from engram.store.sensitive import convert, rekey
else:  # every file's parse and the search index: for the command that runs, not its parser
    convert, rekey = lazy_module("engram.store.sensitive.convert"), lazy_module("engram.store.sensitive.rekey")


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    scope = sub.add_parser("scope", parents=[common], help="sensitive scopes").add_subparsers(
        dest="scope_command", required=True
    )
    for verb, what in (
        ("mark", "mark sensitive and encrypt every memory (resumable)"),
        ("unmark", "decrypt every memory and unmark (needs the key; resumable)"),
        ("unlock-check", "check that the key opens the scope's files (0 opens, 1 wrong key)"),
    ):
        p = scope.add_parser(verb, parents=[common, report], help=what)
        completed(p.add_argument("scope", metavar="SCOPE", help=SCOPE_HELP), complete_scopes)
    p = scope.add_parser(
        "rekey",
        parents=[common, report],
        help="re-encrypt under a new key: every sensitive scope to a new passphrase (passphrase "
        "mode), or one scope to a new random key (keyring mode); resumable",
    )
    completed(
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
    completed(grant.add_argument("scope", metavar="SCOPE", help=SCOPE_HELP), complete_scopes)
    grant.add_argument(
        "--duration",
        required=True,
        choices=["once", "session", "task"],
        help="once: 90 s; session: 8 h; task: until revoked",
    )
    grant.add_argument("--task", metavar="ID", help="the task a 'task' grant is for")
    revoke = sub.add_parser("revoke", parents=[common, report], help="remove a scope's read grant")
    completed(revoke.add_argument("scope", metavar="SCOPE", help=SCOPE_HELP), complete_scopes)
    return {
        "scope mark": _scope_convert,
        "scope unmark": _scope_convert,
        "scope unlock-check": _unlock_check,
        "scope rekey": _rekey,
        "scopes": _scopes,
        "grant": _grant,
        "revoke": _revoke,
    }


def _scope_convert(args: argparse.Namespace) -> int:
    act = convert.mark_sensitive if args.scope_command == "mark" else convert.unmark_sensitive
    with open_with_key(args) as store:
        with cli_progress("encrypting" if args.scope_command == "mark" else "decrypting") as advance:
            done = act(store, args.scope, advance)
    verb = "encrypted" if args.scope_command == "mark" else "decrypted"
    emit(args, vars(done), f"scope {done.scope_hash}: {verb} {done.done} memories in {done.batches} batches")
    return EXIT_OK


def _rekey(args: argparse.Namespace) -> int:
    """Passphrase mode: every sensitive scope to one new passphrase, announced first. Random mode: one scope."""
    with open_with_key(args) as store:
        if (args.to or store.keys.key_source) == "random":
            if not args.scope:
                raise BadInput("memoryd's random-key mode rekeys one scope at a time: give SCOPE")
            with cli_progress("re-encrypting") as advance:
                result = rekey.rekey_random(store, args.scope, advance)
            text = f"scope {result.scopes[0].scope_hash}: {result.done} memories under a new key in the OS keyring"
        else:
            if args.scope:
                resolve_scope(store, args.scope)  # a typo is still an error, though every scope changes
            plan = rekey.plan_passphrase_rekey(store)
            print(
                f"memoryd keeps one passphrase for every sensitive scope: this re-encrypts all {len(plan)} of them "
                f"({sum(plan.values()):,} memories) under the new passphrase",
                file=sys.stderr,
            )
            new = _new_passphrase()
            with cli_progress("re-encrypting") as advance:
                result = rekey.rekey_passphrase(
                    store, new, None if advance is None else lambda scope, n, total: advance(n, total)
                )
            late = f" ({result.late} saved by memoryd under the old one meanwhile)" if result.late else ""
            text = (
                "every memory is already under the new passphrase: nothing changed"
                if result.already
                else f"{result.done} memories of {len(result.scopes)} scopes under the new passphrase{late}; "
                "memoryd needs it from now on: "
                + (
                    "the OS keyring holds it"
                    if result.keyring_updated
                    else f"set {PASSPHRASE_ENV} to it, or run `memoryd set-passphrase`"
                )
                + f". {rekey.RESTART_MEMORYD}"
            )
    emit(
        args,
        {
            "scopes": [vars(p) for p in result.scopes],
            "done": result.done,
            "late": result.late,
            "keyring_updated": result.keyring_updated,
        },
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
    with open_with_key(args) as store:
        scope, _ = resolve_scope(store, args.scope)
        try:
            tried = convert.check_key(store, scope)
        except WrongKey as exc:  # no key at all is "could not run" (2), like every other StoreError
            emit(args, {"scope_hash": scope, "opens": False, "error": str(exc)}, f"scope {scope}: {exc}")
            return EXIT_FINDING
    text = (
        f"scope {scope}: the key opens its files"
        if tried
        else f"scope {scope}: the key is at hand, but the scope has no encrypted file to try it on"
    )
    emit(args, {"scope_hash": scope, "opens": True, "checked_against_a_file": tried}, text)
    return EXIT_OK


def _scopes(args: argparse.Namespace) -> int:
    with open_store(args) as store:
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
    emit(args, data, "\n".join(lines) or "no scopes")
    return EXIT_FINDING if any(i.findings() for i in infos) else EXIT_OK


def _grant(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        scope, root = resolve_scope(store, args.scope)
        grant = issue_grant(store, scope, args.duration, args.task, root or project_dir(store, scope))
        emit(args, grant.to_json(store.now()), f"scope {scope}: grant {grant.describe(store.now())}")
    return EXIT_OK


def _revoke(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        scope, _ = resolve_scope(store, args.scope)
        revoke_grant(store, scope)
    emit(args, {"scope_hash": scope, "revoked": True}, f"scope {scope}: grant revoked")
    return EXIT_OK
