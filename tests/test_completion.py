"""Shell completion: subcommands from the parser, scope hashes and pending promotion ids from the root named on
the command line; a root that does not open completes nothing and gets nothing written."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from engram.store.models import Promotion
from engram.store.service import Store
from engram.tui.completion import complete_pending, complete_scopes

REPO = Path(__file__).parent.parent


def completions(line: str, tmp_path: Path) -> list[str]:
    """What the shell gets for ``line`` (the cursor at its end), asked the way argcomplete's shell hooks ask."""
    out = tmp_path / "completions"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_IFS": "\n",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
    }
    subprocess.run([sys.executable, "-m", "engram"], env=env, capture_output=True, timeout=60)
    return [word.strip() for word in out.read_text().split("\n")] if out.exists() else []


def test_subcommands_and_scope_hashes_complete(fixture_root, tmp_path):
    assert {"scope", "scopes", "stats"} <= set(completions("engram s", tmp_path))
    assert completions(f"engram scope mark --root {fixture_root} 359", tmp_path) == ["35998c22af79"]


def test_a_command_completes_from_its_own_parser(fixture_root, tmp_path):
    """Past the command's word only that command's parser is built: its words, options and values still
    complete, wherever ``--root`` stands."""
    assert completions("engram audit ve", tmp_path) == ["verify"]
    assert "--rescan" in completions("engram search --", tmp_path)
    assert completions("engram decay list --kind s", tmp_path) == ["soft-forgotten"]
    assert completions(f"engram --root {fixture_root} scope mark 359", tmp_path) == ["35998c22af79"]


def test_a_line_the_shell_did_not_send_whole_names_no_command(monkeypatch):
    from engram.tui.completion import completed_words

    for name, value in (("COMP_LINE", "engram audit "), ("COMP_POINT", "13"), ("_ARGCOMPLETE", "1")):
        monkeypatch.setenv(name, value)
    assert completed_words() == ["audit"]
    monkeypatch.setenv("COMP_POINT", "thirteen")
    assert completed_words() == []
    monkeypatch.delenv("COMP_LINE")
    assert completed_words() == []


def test_completers_read_the_root_named_so_far(fixture_root):
    named = argparse.Namespace(root=str(fixture_root))
    assert complete_scopes("9", named) == ["91c2073b561e"]
    with Store.open(fixture_root):
        pending = [str(p.id) for p in Promotion.select().where(Promotion.status == "pending").order_by(Promotion.id)]
    assert complete_pending("", named) == pending


def test_a_root_that_does_not_open_completes_nothing_and_is_not_created(tmp_path):
    missing = tmp_path / "nowhere"
    assert complete_scopes("", argparse.Namespace(root=str(missing))) == []
    bare = tmp_path / "bare"
    (bare / "scopes").mkdir(parents=True)
    assert complete_pending("", argparse.Namespace(root=str(bare))) == []
    assert not missing.exists() and sorted(p.name for p in bare.iterdir()) == ["scopes"]


def test_the_hook_for_each_shell_is_one_command(capsys):
    from engram.tui.cli import main

    for shell in ("bash", "zsh", "fish"):
        assert main(["completion", shell]) == 0
        hook = capsys.readouterr().out
        assert "_ARGCOMPLETE" in hook and "engram" in hook


def test_a_reader_that_leaves_early_gets_no_error(fixture_root, monkeypatch, capsys):
    """`engram ls | head`: the closed pipe ends the command quietly (BrokenPipeError is an OSError, which the
    CLI otherwise reports as a failure of the machine)."""
    from engram.tui.cli import main

    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["ls", "--root", str(fixture_root)]) == 0
    assert capsys.readouterr().err == ""
