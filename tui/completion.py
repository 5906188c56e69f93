"""Shell completion for the CLI (bash, zsh, fish, through argcomplete): subcommands and options come from the
parser itself; scope hashes and pending promotion ids from the root named on the command line so far.

A completer never prints an error and never writes: a root that does not open (or has no index.db yet) simply
completes nothing."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from engram.store.errors import ENVIRONMENT_ERRORS, StoreError
from engram.store.lazy import lazy_module
from engram.store.service import Store

if TYPE_CHECKING:
    from engram.store import queue, scopes
else:  # asked only while a shell completes: every command's parser names a completer, few commands run one
    queue, scopes = lazy_module("engram.store.queue"), lazy_module("engram.store.scopes")

Completer = Callable[..., list[str]]


def _from_root(listing: Callable[[Store], list]) -> Completer:
    def complete(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
        try:
            with Store.open(getattr(parsed_args, "root", None), create_index=False) as store:
                return [str(item) for item in listing(store) if str(item).startswith(prefix)]
        except (StoreError, *ENVIRONMENT_ERRORS):
            return []

    return complete


complete_scopes = _from_root(lambda store: scopes.scope_hashes(store))
complete_pending = _from_root(lambda store: queue.pending_ids(store))


SHELLS = ("bash", "zsh", "fish")


def shell_script(shell: str) -> str:
    """The hook that makes ``shell`` ask engram for completions (``engram completion SHELL``: one command
    whatever installed engram, pip, pipx or uv, where argcomplete's own script may not be on the PATH)."""
    import argcomplete

    return argcomplete.shellcode(["engram"], shell=shell)


def completed_words() -> list[str]:
    """The words the shell's line holds after the program's name and before the word being completed (none when
    the line cannot be read): once the command's word is among them, its module's parser alone answers."""
    from argcomplete import split_line

    try:
        line, point, start = os.environ["COMP_LINE"], int(os.environ["COMP_POINT"]), int(os.environ["_ARGCOMPLETE"])
    except (KeyError, ValueError):
        return []
    return split_line(line, point)[3][start:]


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit (argcomplete does both); loaded only when asked."""
    import argcomplete

    argcomplete.autocomplete(parser)
