"""Progress of a long CLI job (mark, unmark, rekey, import, check, rebuild-index, audit verify): a Rich bar on
stderr when stderr is a terminal, nothing at all when it is not, so a script or ``--json`` reader gets only the
result. Rich loads only when the bar is drawn: a piped command starts without it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[[int, int | None], None]  # (done, total or None while unknown)


@contextmanager
def cli_progress(label: str) -> Iterator[Advance | None]:
    """Yields a callback that moves the bar, or None when there is no terminal to draw it on. The bar goes to
    the real stderr: the CLI's escaping writer (see :mod:`engram.tui.terminal_safe`) would show Rich's own
    escape sequences as text. The label is engram's text, never data."""
    stream = sys.__stderr__
    if stream is None or not stream.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(file=stream), transient=True) as bar:
        task = bar.add_task(label, total=None)

        def advance(done: int, total: int | None = None) -> None:
            bar.update(task, completed=done, total=total)

        yield advance
