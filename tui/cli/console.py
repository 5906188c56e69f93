"""``engram`` with no command: the console.

Kept apart from the other commands so that opening the console imports only what its first frame needs: the
command modules bring most of the store with them, and ``engram`` alone is how the console is most often
opened. ``engram open`` and ``engram demo`` come here too.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram.store.coexist import keep_registered
from engram.store.service import Store
from engram.store.settings import settings_or_defaults

if TYPE_CHECKING:
    from engram.tui.app import EngramApp

EXIT_OK = 0


def console_args(argv: list[str]) -> argparse.Namespace | None:
    """The arguments when ``argv`` asks for the console and nothing else (no words, at most ``--root DIR``);
    None when the full command line must be parsed (a command, ``--help``, ``--version``, a typo)."""
    if not argv:
        return argparse.Namespace(root=None)
    if len(argv) == 2 and argv[0] == "--root" and not argv[1].startswith("-"):
        return argparse.Namespace(root=argv[1])
    if len(argv) == 1 and argv[0].startswith("--root=") and len(argv[0]) > len("--root="):
        return argparse.Namespace(root=argv[0].removeprefix("--root="))
    return None


def open_console(args: argparse.Namespace, notices: Sequence[str] = ()) -> int:
    """``notices``: what the person should read once the console is up (the demo's passphrase)."""
    app = console_app(args.root, notices)
    try:
        app.run()
    finally:
        app.store.close()
    return EXIT_OK


def console_app(root: str | os.PathLike[str] | None, notices: Sequence[str] = ()) -> EngramApp:
    """The console on ``root``, its store open: a broken config.toml (engram's or memoryd's) or an index.db that
    cannot be opened is said in the console, not fatal."""
    from engram.tui.app import EngramApp  # Textual loads only when the console is wanted

    settings, problem = settings_or_defaults()
    store = keep_registered(Store.open(root, actor="engram-tui", settings=settings, stand_in=True))
    return EngramApp(store, settings, warnings=[problem] if problem else [], notices=notices)
