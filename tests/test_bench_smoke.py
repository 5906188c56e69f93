"""Every bench script runs, at a tiny size: a bench that does not run measures nothing (one failed for weeks after
the console began building panes when first shown). The figures are not checked, only that each prints them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "bench"


def run(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=BENCH.parent, env=os.environ.copy(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "printed no figure"
    return done.stdout


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench") / "demo"
    from engram.tui.cli import main

    assert main(["demo", "--root", str(root), "--memories", "300", "--no-open"]) == 0
    return root


@pytest.mark.parametrize(
    "script, args",
    [
        ("bench_console.py", ["--approvals", "2"]),
        ("bench_panes.py", []),
        ("bench_sensitive.py", []),
        ("bench_triage.py", ["--pending", "10", "--probes", "5"]),
        ("bench_screen.py", []),
        ("bench_history.py", ["--approvals", "3"]),
    ],
)
def test_each_bench_on_a_root_runs(script, args, small, tmp_path):
    run(str(BENCH / script), "--root", str(small), *args, cwd=tmp_path)


def test_the_command_line_bench_runs_without_memoryd(small, tmp_path):
    """Without memoryd's code the demo root stands in for memoryd's, and memoryd's column says n/a."""
    words = ["--md", str(small), "--md-passphrase", "engram-demo-passphrase", "--demo", str(small)]
    words += ["--log-lines", "300", "--runs", "1", "--approvals", "1", "--warm", "1"]
    printed = run(str(BENCH / "bench_cli.py"), *words, cwd=tmp_path)
    assert "failed" not in printed and printed.count("engram ") == 16


def test_the_benches_that_build_their_own_data_run(tmp_path):
    run(str(BENCH / "bench_store.py"), "--sizes", "300", "--dir", str(tmp_path), cwd=tmp_path)
    run(str(BENCH / "bench_scale.py"), "--sizes", "300", "--dir", str(tmp_path), cwd=tmp_path)
    run(str(BENCH / "bench_audit.py"), "--lines", "1000", "--appends", "5", "--dir", str(tmp_path), cwd=tmp_path)
    run(str(BENCH / "bench_audit_pane.py"), "--log", str(tmp_path / "audit-1000.jsonl"), cwd=tmp_path)
    run(str(BENCH / "bench_import.py"), "--rollouts", "10", cwd=tmp_path)


def test_every_bench_script_is_smoke_run():
    here = Path(__file__).read_text(encoding="utf-8")
    assert [p.name for p in BENCH.glob("bench_*.py") if p.name not in here] == []
