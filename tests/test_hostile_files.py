"""Something other than a regular file where a memory should be: a FIFO (which would block a reader forever) or
a symlink (which could lead out of the root). Every command finishes with one line per problem, never hangs,
never follows it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PASSPHRASE

from engram.store.audit.chain import append_events
from engram.store.errors import StoreError
from engram.store.models import Memory
from engram.store.service import Store


def engram(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent), "MEMORYD_MASTER_PASSPHRASE": PASSPHRASE}
    return subprocess.run(
        [sys.executable, "-m", "engram", *args, "--root", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )  # a hang fails here, not forever


@pytest.fixture(params=["fifo", "symlink"])
def hostile(request, fixture_root: Path, tmp_path: Path) -> Path:
    """A memory's file replaced by a FIFO, or by a symlink to a file outside the root."""
    with Store.open(fixture_root):
        row = Memory.select().where(Memory.body_path.endswith(".md")).order_by(Memory.slug).first()
    path = fixture_root / row.body_path
    path.unlink()
    if request.param == "fifo":
        os.mkfifo(path)
    else:
        outside = tmp_path / "outside.md"
        outside.write_text("---\ntitle: not yours\n---\n")
        path.symlink_to(outside)
    return path


def test_reading_it_is_a_clear_error_not_a_hang(fixture_root, hostile):
    with Store.open(fixture_root) as store:
        with pytest.raises(StoreError, match="not a regular file|symlink|escapes the data root"):
            store.read_file(str(hostile.relative_to(fixture_root)))


@pytest.mark.parametrize("command", [["check"], ["repair"], ["ls"], ["stats"]])
def test_commands_finish_without_a_traceback(fixture_root, hostile, command):
    done = engram(fixture_root, *command)
    assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr
    assert hostile.is_fifo() or hostile.is_symlink()  # left where it is, for a person to look at


@pytest.mark.parametrize("command", [["check"], ["ls"], ["promotions", "list"]])
def test_a_damaged_index_page_is_one_line_not_a_traceback(fixture_root, command):
    index = fixture_root / "index.db"
    data = bytearray(index.read_bytes())
    data[4096 * 3 : 4096 * 6] = b"\xa5" * (4096 * 3)  # pages in the middle of memoryd's tables
    index.write_bytes(bytes(data))
    done = engram(fixture_root, *command)
    assert "Traceback" not in done.stderr
    if command == ["check"]:  # reads every table: the damage is met
        assert done.returncode == 2
    if done.returncode == 2:
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("engram: ")


@pytest.fixture(params=["fifo", "symlink"])
def hostile_log(request, fixture_root: Path, tmp_path: Path) -> tuple[Path, Path | None]:
    """The audit log replaced by a FIFO, or by a symlink to a file outside the root (returned too)."""
    log = fixture_root / "audit" / "audit.jsonl"
    log.unlink()
    if request.param == "fifo":
        os.mkfifo(log)
        return log, None
    outside = tmp_path / "notes.txt"
    outside.write_text("my own notes\n")
    log.symlink_to(outside)
    return log, outside


def test_a_log_that_is_not_a_regular_file_is_unreadable_not_a_hang(fixture_root, hostile_log):
    log, outside = hostile_log
    done = engram(fixture_root, "audit", "verify")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    reason = "a symlink; not followed" if outside else "not a regular file (a FIFO"
    said = (done.stdout + done.stderr).strip().splitlines()  # the verdict, or the store's open meeting it first
    assert said and all(f"{log}: {reason}" in line for line in said)
    assert not any("more problem" in line for line in said)  # no count of problems that were never read
    assert log.is_fifo() or log.is_symlink()


def test_nothing_is_appended_through_a_symlinked_log(fixture_root, hostile_log):
    log, outside = hostile_log
    with Store.open(fixture_root) as store, pytest.raises(OSError, match="not followed|not a regular file"):
        append_events(store.layout.audit_path, [{"actor": "engram", "event_type": "x", "scope_hash": "s"}])
    if outside is not None:
        assert outside.read_text() == "my own notes\n"
    assert log.is_fifo() or log.is_symlink()
