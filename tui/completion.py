"""Shell completion for the CLI (bash, zsh, fish, through argcomplete): subcommands and options come from the
parser itself; scope hashes and pending promotion ids from the root named on the command line so far.

A completer never prints an error and never writes: a root that does not open (or has no index.db yet) simply
completes nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from engram.store.errors import ENVIRONMENT_ERRORS, StoreError
from engram.store.queue import pending_ids
from engram.store.scopes import scope_hashes
from engram.store.service import Store

Completer = Callable[..., list[str]]


def _from_root(listing: Callable[[Store], list]) -> Completer:
    def complete(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
        try:
            with Store.open(getattr(parsed_args, "root", None), create_index=False) as store:
                return [str(item) for item in listing(store) if str(item).startswith(prefix)]
        except (StoreError, *ENVIRONMENT_ERRORS):
            return []

    return complete


complete_scopes = _from_root(scope_hashes)
complete_pending = _from_root(pending_ids)


SHELLS = ("bash", "zsh", "fish")


def shell_script(shell: str) -> str:
    """The hook that makes ``shell`` ask engram for completions (``engram completion SHELL``: one command
    whatever installed engram, pip, pipx or uv, where argcomplete's own script may not be on the PATH)."""
    import argcomplete

    return argcomplete.shellcode(["engram"], shell=shell)


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit (argcomplete does both); loaded only when asked."""
    import argcomplete

    argcomplete.autocomplete(parser)
