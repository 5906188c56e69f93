"""A real process killed at each step of the write path leaves a root that opens; repair (or re-running the
action) completes it, with the change audited exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.models import Memory, Promotion
from engram.store.promotions import approve
from engram.store.service import Store
from engram.store.write import faults

APPROVE = """
import sys
from engram.store.service import Store
from engram.store.promotions import approve
with Store.open(sys.argv[1], actor="engram-crash") as s:
    approve(s, int(sys.argv[2]))
"""


def approve_and_die(root: Path, pid: int, point: str) -> int:
    env = {**os.environ, "ENGRAM_CRASH_AT": point, "PYTHONPATH": str(Path(__file__).parent.parent)}
    return subprocess.run([sys.executable, "-c", APPROVE, str(root), str(pid)], env=env).returncode


def approval_events(root: Path, pid: int) -> int:
    lines = [json.loads(line) for line in (root / "audit" / "audit.jsonl").read_text().splitlines()]
    return sum(
        1
        for line in lines
        if line.get("event_type") == "promotion_approved" and json.loads(line["details"]).get("promotion_id") == pid
    )


@pytest.mark.parametrize("point", faults.POINTS)
def test_crash_at_each_step_is_recoverable(fixture_root, point):
    with Store.open(fixture_root) as store:
        pid = Promotion.select().where(Promotion.status == "pending").order_by(Promotion.id).first().id
    assert approve_and_die(fixture_root, pid, point) == 137

    with Store.open(fixture_root) as store:  # the root still opens
        report = check(store)
        half_done = {
            "temp_written": "temp_file",
            "renamed": "file_without_row",
            "index_committed": "audit_pending",
            "audit_appended": "audit_pending",
        }[point]
        assert report.counts().get(half_done), report.counts()
        repair(store)
        if Promotion.get_by_id(pid).status == "pending":  # crashed before anything took effect: re-run it
            approve(store, pid)
        assert Promotion.get_by_id(pid).status == "approved"
        row = Memory.get(Memory.slug.startswith(f"promoted-{pid}-"))
        assert (fixture_root / row.body_path).exists()
        remaining = check(store).counts()
        assert not {"temp_file", "file_without_row", "audit_pending", "pending_already_written"} & set(remaining)
    assert approval_events(fixture_root, pid) == 1
