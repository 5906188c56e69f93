"""Long CLI jobs draw a Rich bar on a terminal's stderr, and nothing at all when stderr is not a terminal."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.tui.cli import main

REPO = Path(__file__).parent.parent


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("command", "label"),
    [(["check"], "checking files"), (["rebuild-index"], "reading files"), (["audit", "verify"], "verifying the chain")],
)
def test_a_terminal_gets_a_progress_bar_and_stdout_only_the_result(fixture_root, monkeypatch, capsys, command, label):
    terminal = Terminal()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    assert main([*command, "--root", str(fixture_root)]) in (0, 1)  # locked files are a finding
    out = capsys.readouterr().out
    assert label in terminal.getvalue() and label not in out and "\x1b" not in out


def test_piped_there_is_no_bar_and_rich_is_never_loaded(fixture_root):
    code = (
        "import sys; from engram.tui.cli import main; code = main(['check', '--root', sys.argv[1]]); "
        "print('rich loaded' if 'rich' in sys.modules else 'no rich', code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fixture_root)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout.strip().endswith(("no rich 0", "no rich 1")) and done.stderr == ""
