"""The ``engram`` command: opens the console, or runs one store command and reports.

Exit codes: 0 success, 1 a finding (drift, something left unrepaired) or a refusal (a promotion decided
already), 2 could not run. Errors are one line
on stderr. Every command takes ``--root DIR``; every report takes ``--json``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from engram.store.errors import ENVIRONMENT_ERRORS, Conflict, StoreError
from engram.store.query import QuerySyntaxError
from engram.tui.cli.common import EXIT_ERROR, EXIT_FINDING, EXIT_OK, Handler, confirming, tell_notices
from engram.tui.cli.console import console_args, open_console
from engram.tui.completion import autocomplete, completed_words
from engram.tui.terminal_safe import SafeWriter

# the module that registers each command: a command line imports only the module of the command it runs (each
# brings much of the store with it); the full parser (help, completion, an unknown word) imports them all
COMMANDS = {
    **dict.fromkeys(("check", "completion", "demo", "open", "rebuild-index", "repair"), "root"),
    **dict.fromkeys(("ls", "stats"), "listing"),
    **dict.fromkeys(("search", "show"), "memories"),
    "promotions": "promotions",
    "supersedes": "links",
    "decay": "decay",
    "graph": "graph",
    **dict.fromkeys(("grant", "revoke", "scope", "scopes"), "scopes"),
    "import": "importing",
    "audit": "audit",
    **dict.fromkeys(("history", "diff", "restore", "conflicts"), "history"),
    **dict.fromkeys(("allow", "allowed", "disallow", "quarantine", "quarantined", "release", "screen"), "screening"),
    "thresholds": "triage",
}
MODULES = tuple(dict.fromkeys(COMMANDS.values()))  # in the order the full help lists them


def _parser(command: str | None = None, *, bare: bool = False) -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    """The parser, and each command's handler by its words ("audit verify"): of ``command`` alone when it is one
    (the words after it are its own), of none when ``bare`` (``--version``), else of every command."""
    root_help = "data root (default: $MEMORYD_DATA_ROOT, else ~/.local/share/memoryd)"
    # --root is taken before or after the subcommand: a subcommand's own default must not overwrite the value
    # given before it (argparse's parents would), so there it is only set when given
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help=root_help)
    report = argparse.ArgumentParser(add_help=False)
    report.add_argument("--json", action="store_true", help="print JSON for scripts")

    parser = argparse.ArgumentParser(prog="engram", description="Review and keep a memoryd memory store trustworthy.")
    parser.add_argument("--root", metavar="DIR", help=root_help)
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command")
    handlers: dict[str, Handler] = {}
    for name in () if bare else (COMMANDS[command],) if command in COMMANDS else MODULES:
        module = importlib.import_module(f"engram.tui.cli.{name}")
        handlers.update(module.add_commands(sub, common, report))
    return parser, handlers


def _command(argv: list[str]) -> str | None:
    """The command word of a command line: the first word that is not an option, past ``--root DIR``; None when
    an option comes first (``--help``, ``--version``) or there is none."""
    words = iter(argv)
    for word in words:
        if word == "--root":
            next(words, None)
        elif not word.startswith("--root="):
            return None if word.startswith("-") else word
    return None


class _Version(argparse.Action):
    """``--version``: the package metadata is read only when it is asked for (see engram.__getattr__)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import engram

        print(f"engram {engram.__version__}")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    console = console_args(argv)
    if console is not None and "_ARGCOMPLETE" not in os.environ:  # the console alone: no command line to parse
        return _run(open_console, console)
    completing = "_ARGCOMPLETE" in os.environ
    command = _command(completed_words()) if completing else _command(argv)  # a tab press waits for one module
    version = not completing and command is None and "--version" in argv and not {"-h", "--help"} & set(argv)
    parser, handlers = _parser(command, bare=version)  # --version prints and exits: no command's module
    if completing:  # the shell asks what can follow: answer and exit (see tui/completion.py)
        autocomplete(parser)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser: its usage, not the top one's (which lists only its module's)
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    command = args.command or "open"
    group = getattr(args, f"{command}_command", None)  # "audit" "verify": the handler of "audit verify"
    handler = handlers[f"{command} {group}" if group else command]
    if command in ("open", "demo"):  # the console draws its own screen
        return _run(handler, args)
    streams = sys.stdout, sys.stderr  # everything else prints data: nothing in it may drive the terminal
    sys.stdout, sys.stderr = SafeWriter(sys.stdout), SafeWriter(sys.stderr)
    try:
        return _run(handler, args)
    finally:
        if sys.stdout is not None:
            sys.stdout, sys.stderr = streams


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command ``args`` were parsed for (``engram audit verify``'s, not ``engram``'s)."""
    while True:
        chosen = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
        if chosen is None:
            return parser
        parser = chosen


def _run(handler: Handler, args: argparse.Namespace) -> int:
    try:
        return confirming(handler, args)
    except Conflict as exc:  # a refusal: the store is not in the state the command needs (a decided promotion)
        print(f"engram: {exc}", file=sys.stderr)
        return EXIT_FINDING
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
        tell_notices()
