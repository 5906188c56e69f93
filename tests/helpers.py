"""Helpers shared by the test modules (a plain module: pytest puts tests/ on the import path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from textual.app import App
from textual.pilot import Pilot
from textual.worker import WorkerCancelled


def events(root: Path) -> list[dict]:
    """Every event of the root's audit log, parsed."""
    return [json.loads(line) for line in (root / "audit" / "audit.jsonl").read_text().splitlines()]


async def settle(app: App, pilot: Pilot) -> None:
    """Let workers (loading, decisions, the audit check) finish and the screen catch up."""
    for _ in range(3):
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # an exclusive worker (detail, load) replaced by a newer one
            pass
        await pilot.pause()


def run_engram(root: Path, *args: str, env: dict[str, str], crash: str | None = None) -> int:
    """``engram ARGS --root ROOT`` in a real process (so a crash point can kill it); its exit code."""
    full = {**os.environ, **env, "PYTHONPATH": str(Path(__file__).parent.parent)}
    if crash:
        full["ENGRAM_CRASH_AT"] = crash
    return subprocess.run([sys.executable, "-m", "engram", *args, "--root", str(root)], env=full,
                          capture_output=True).returncode
