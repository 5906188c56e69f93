"""Run engram in a real child process without paying for a new interpreter each time.

The crash tests kill hundreds of processes at named points of the write path, or with SIGKILL at random
moments. What they test is the process's death, not its start-up: an interpreter start plus engram's imports
costs about 0.3 s, more than most of the writes being killed. So each child is forked from a warm server
(multiprocessing's forkserver, which preloads engram once and is itself a fresh single-threaded process, so no
test's threads or state are inherited). A child is still a separate process with its own memory, file
descriptors and exit: ``os._exit`` at a crash point and SIGKILL end it exactly as they end ``engram`` run from a
shell. Tests that check the command line itself (its output, ``python -m engram``) still start real interpreters.

This module is imported by the server, so it imports nothing of the test suite's and nothing of Textual.
"""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing
import multiprocessing.forkserver
import os
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path

_PBKDF2 = hashlib.pbkdf2_hmac
DERIVED: dict[tuple[str, bytes, bytes, int, int | None], bytes] = {}


def pbkdf2_once(hash_name: str, password: bytes, salt: bytes, iterations: int, dklen: int | None = None) -> bytes:
    """PBKDF2, remembered: the fixture keeps memoryd's real 600,000 iterations, and PBKDF2 is a pure function,
    so a remembered result is the same key. Test processes only: engram itself derives per session."""
    key = (hash_name, bytes(password), bytes(salt), iterations, dklen)
    if key not in DERIVED:
        DERIVED[key] = _PBKDF2(hash_name, password, salt, iterations, dklen)
    return DERIVED[key]


def _modules(package: str) -> list[str]:
    """Every module of ``package``: engram imports most of them (and PyYAML, pydantic, numpy with them) only
    when first used, which in a child would be every time (a quarter of a second each)."""
    path = importlib.import_module(package).__path__
    return [package, *(info.name for info in pkgutil.walk_packages(path, f"{package}."))]


_SERVER = multiprocessing.get_context("forkserver")
_SERVER.set_forkserver_preload(["forked", *_modules("engram.store"), *_modules("engram.tui.cli"), "crash_driver"])


def ready() -> None:
    """Start the server now, so that the first child's run is timed without it."""
    multiprocessing.forkserver.ensure_running()


def _child(output: str, environ: dict[str, str], derived: dict, target: Callable[..., object], args: tuple) -> None:
    """In the child: the caller's environment, output to a file the caller reads, fault points armed from that
    environment (they are read at import, which happened in the server), remembered keys, then the work."""
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.environ.clear()
    os.environ.update(environ)
    from engram.store.write import faults

    importlib.reload(faults)
    DERIVED.update(derived)
    hashlib.pbkdf2_hmac = pbkdf2_once  # type: ignore[assignment]
    result = target(*args)
    sys.stdout.flush()
    sys.stderr.flush()
    raise SystemExit(result if isinstance(result, int) else 0)


def run(
    target: Callable[..., object],
    *args: object,
    env: dict[str, str] | None = None,
    kill_after: float | None = None,
    output: Path,
) -> tuple[int, str]:
    """``target(*args)`` in a forked child with the current environment plus ``env``; its exit code and what it
    printed (written to ``output``). The exit code is 137 for a crash point (``os._exit(137)``) and -9 when
    ``kill_after`` seconds passed and it was killed; an int returned by ``target`` is its exit code."""
    child = _SERVER.Process(
        target=_child, args=(str(output), {**os.environ, **(env or {})}, dict(DERIVED), target, args)
    )
    child.start()
    child.join(kill_after if kill_after is not None else 120)
    if child.is_alive():
        child.kill()
        child.join()
        if kill_after is None:
            raise TimeoutError(f"{target.__name__}{args} still running after 120 s")
    assert child.exitcode is not None
    return child.exitcode, output.read_text(errors="replace") if output.exists() else ""


def engram(root: Path, *args: str, env: dict[str, str], crash: str | None = None, output: Path) -> int:
    """``engram ARGS --root ROOT`` in a forked child (a crash point kills it); its exit code."""
    from engram.tui.cli import main

    return run(
        main, [*args, "--root", str(root)], env={**env, **({"ENGRAM_CRASH_AT": crash} if crash else {})}, output=output
    )[0]
