"""What every command shares: exit codes, opening the store (with memoryd's passphrase when a command needs
it), printing text or JSON, and what the stores a command opened left unsaid."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from engram.store.coexist import keep_registered
from engram.store.errors import PassphraseUnconfirmed, StoreError
from engram.store.lazy import lazy_module
from engram.store.sensitive.crypto import PASSPHRASE_ENV
from engram.store.service import Store
from engram.tui.cli_progress import cli_progress
from engram.tui.completion import Completer

if TYPE_CHECKING:
    from engram.store.history import ops as history
else:
    history = lazy_module("engram.store.history.ops")  # pygit2 and the frontmatter's models: for a few commands

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2
NEW_PASSPHRASE_ENV = "ENGRAM_NEW_PASSPHRASE"
SCOPE_HELP = "scope hash, or the project's path"

Handler = Callable[[argparse.Namespace], int]
Parser = argparse.ArgumentParser
Subparsers = argparse._SubParsersAction  # what add_subparsers returns: each command module adds its parsers to it


def count(text: str) -> int:
    """argparse's type for ``--limit N``: a whole number of 1 or more (0 or -3 listed one hit, or all but one)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number}: give 1 or more")
    return number


def timestamp(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO-8601 date or time") from None


def completed(action: argparse.Action, completer: Completer) -> None:
    action.completer = completer  # type: ignore[attr-defined]  # where argcomplete looks


OPENED: list[Store] = []  # every store a command opened: what each left unsaid is told when the command ends


def open_store(args: argparse.Namespace, **options: Any) -> Store:
    store = keep_registered(Store.open(args.root, **options))
    OPENED.append(store)
    return store


def tell_notices() -> None:
    for notice in dict.fromkeys(store.notice for store in OPENED if store.notice):
        print(f"engram: {notice}", file=sys.stderr)
    OPENED.clear()


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(as_json(data) if getattr(args, "json", False) else text)


def as_json(data: Any) -> str:
    """``data`` as indented JSON, character for character as ``json.dumps(data, ensure_ascii=False, indent=2)``
    writes it but for how a float is spelled (``1e16`` for ``1e+16``). orjson writes it in compiled code (the
    standard encoder's indented form is pure Python: most of ``engram ls --json``'s time on a large root); what
    orjson will not write (a lone surrogate, an integer past 64 bits, a key that is not a string) is left to the
    standard encoder."""
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(data, ensure_ascii=False, indent=2)


def open_with_key(args: argparse.Namespace, needs_key: Callable[[Store], bool] = lambda store: True) -> Store:
    """The store, with memoryd's passphrase from the environment or, where ``needs_key`` says the command will
    want it, a masked prompt at a terminal (asked once per run, a second time only when :func:`_confirming`
    wants it)."""
    store = open_store(args)
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


def confirming(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``command``; when it stops because nothing on the root can check the passphrase (it stops before
    writing anything), ask for it again at a terminal and run it once more with the two compared."""
    try:
        return command(args)
    except PassphraseUnconfirmed:
        if not sys.stdin.isatty() or getattr(args, "passphrase_again", None) is not None:
            raise
    args.passphrase_again = getpass.getpass("nothing is encrypted yet to check it against: the same passphrase again: ")
    return command(args)


def caught_up(store: Store) -> list[str]:
    """The history brought up to date with the files before a command reads it (a progress bar on a first,
    long catch-up): memoryd's edits since engram last looked become revisions first."""
    with cli_progress("recording what changed on disk") as advance:
        return history.catch_up(store, advance)


def history_encrypted(slug: str) -> Callable[[Store], bool]:
    """For :func:`open_with_key`: a history command needs the key when a revision of ``slug`` is encrypted (with
    no revision yet, the command says so itself)."""

    def needs(store: Store) -> bool:
        try:
            return any(r.encrypted for r in history.revisions(store, slug))
        except StoreError:
            return False

    return needs


def encrypted(*slugs: str) -> Callable[[Store], bool]:
    """For :func:`open_with_key`: the command needs the key when one of these memories is encrypted (a slug
    that is no memory stops the command here, with the store's one-line error)."""

    def needs(store: Store) -> bool:
        return any(store.memory(slug).body_path.endswith(".md.enc") for slug in slugs)

    return needs
