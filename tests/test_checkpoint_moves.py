"""A root copied, moved or restored from a backup is not tampering: its checkpoint is found by what it proves.

Every case starts from the memoryd-written fixture root after one engram write (so engram has checkpointed its
log), then does what a person does with directories: ``mv``, ``cp -r``, restore a backup.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import events
from memoryd_emulation import memoryd_append

from engram.store.audit.chain import first_line, line_hash
from engram.store.audit.checkpoints import CheckpointBook
from engram.store.domain import DecayState
from engram.store.memories import set_decay
from engram.store.models import Memory
from engram.store.paths import engram_config_dir, engram_state_dir
from engram.store.service import Store
from engram.tui.cli import main


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, _ = capsys.readouterr()
    return code, out


def engram_writes(root: Path, keys, state: DecayState = DecayState.DIM) -> Store:
    """One engram write at ``root`` (an event, a checkpoint); returns the closed store for its paths."""
    with Store.open(root, keys=keys) as store:
        set_decay(store, Memory.get(Memory.body_path.endswith(".md")).slug, state)
    return store


def verify(capsys, root: Path) -> tuple[int, str]:
    return run(capsys, "audit", "verify", "--root", str(root))


def book(root: Path) -> CheckpointBook:
    return CheckpointBook(root, engram_state_dir(), engram_config_dir())


def moves(root: Path) -> list[dict]:
    return [e for e in events(root) if e["event_type"] in ("audit_root_moved", "audit_root_copied")]


def test_a_moved_root_verifies_clean_and_records_the_move(fixture_root, unlocked_keys, tmp_path, capsys):
    old = engram_writes(fixture_root, unlocked_keys)
    moved = tmp_path / "new-laptop" / "memoryd"
    moved.parent.mkdir()
    shutil.move(fixture_root, moved)
    code, out = verify(capsys, moved)
    assert code == 0 and out.startswith("valid:"), out
    [event] = moves(moved)
    details = json.loads(event["details"])
    assert event["event_type"] == "audit_root_moved"
    assert details["from"] == str(fixture_root.resolve()) and details["to"] == str(moved.resolve())
    assert book(moved).latest().root == str(moved.resolve())  # signed anew for where it lives now
    assert not old.checkpoints.path.exists()  # a new root made at the old place is not a "replaced" log
    assert verify(capsys, moved)[0] == 0 and len(moves(moved)) == 1  # recorded once


def test_a_new_root_at_the_old_place_after_a_move_is_no_alarm(fixture_root, unlocked_keys, tmp_path, capsys):
    engram_writes(fixture_root, unlocked_keys)
    moved = tmp_path / "moved"
    shutil.move(fixture_root, moved)
    assert verify(capsys, moved)[0] == 0
    for folder in ("audit", "scopes"):  # memoryd, still on its default path, starts afresh there
        (fixture_root / folder).mkdir(parents=True)
    memoryd_append(fixture_root / "audit" / "audit.jsonl", {"event_type": "memoryd_started"})
    code, out = verify(capsys, fixture_root)
    assert code == 0 and out.startswith("valid: 1 lines"), out
    assert verify(capsys, moved)[0] == 0


def test_a_write_before_any_verify_adopts_the_checkpoint_too(fixture_root, unlocked_keys, tmp_path, capsys):
    engram_writes(fixture_root, unlocked_keys)
    moved = tmp_path / "moved"
    shutil.move(fixture_root, moved)
    with Store.open(moved, keys=unlocked_keys) as store:
        set_decay(store, Memory.get(Memory.body_path.endswith(".md")).slug, DecayState.ALIVE)
        assert store.audit_warning is None
    assert [e["event_type"] for e in events(moved)[-2:]] == ["audit_root_moved", "decay_changed"]
    assert verify(capsys, moved)[0] == 0


def test_a_copy_and_its_original_each_verify_and_each_keep_a_checkpoint(fixture_root, unlocked_keys, tmp_path, capsys):
    engram_writes(fixture_root, unlocked_keys)
    copy = tmp_path / "copy"
    shutil.copytree(fixture_root, copy)
    code, out = verify(capsys, copy)
    assert code == 0, out
    assert [e["event_type"] for e in moves(copy)] == ["audit_root_copied"]
    assert book(fixture_root).latest().root == str(fixture_root.resolve())  # the original's is kept
    assert book(copy).latest().root == str(copy.resolve())
    assert verify(capsys, fixture_root)[0] == 0


def test_two_copies_that_diverge_never_make_each_other_look_tampered(fixture_root, unlocked_keys, tmp_path, capsys):
    engram_writes(fixture_root, unlocked_keys)
    copy = tmp_path / "copy"
    shutil.copytree(fixture_root, copy)
    engram_writes(copy, unlocked_keys, DecayState.ALIVE)  # the copy's history goes one way
    engram_writes(fixture_root, unlocked_keys, DecayState.ALIVE)  # the original's another
    memoryd_append(fixture_root / "audit" / "audit.jsonl", {"event_type": "memory_saved"})
    for root in (fixture_root, copy, fixture_root, copy):
        code, out = verify(capsys, root)
        assert code == 0, f"{root}: {out}"
    assert events(copy)[-1]["event_type"] == "decay_changed" and not moves(fixture_root)


def test_a_backup_restored_in_place_verifies_when_it_holds_the_checkpointed_lines(
    fixture_root, unlocked_keys, tmp_path, capsys
):
    engram_writes(fixture_root, unlocked_keys)
    backup = tmp_path / "backup"
    shutil.copytree(fixture_root, backup)
    memoryd_append(fixture_root / "audit" / "audit.jsonl", {"event_type": "memory_saved"})  # lost with the disk
    shutil.rmtree(fixture_root)
    shutil.copytree(backup, fixture_root)
    code, out = verify(capsys, fixture_root)
    assert code == 0 and not moves(fixture_root), out


def test_a_backup_restored_to_a_new_disk_adopts_the_lost_roots_checkpoint(
    fixture_root, unlocked_keys, tmp_path, capsys
):
    engram_writes(fixture_root, unlocked_keys)
    backup = tmp_path / "backup"
    shutil.copytree(fixture_root, backup)
    shutil.rmtree(fixture_root)  # the disk is gone
    code, out = verify(capsys, backup)
    assert code == 0 and [e["event_type"] for e in moves(backup)] == ["audit_root_moved"], out


def test_a_backup_older_than_the_checkpoint_names_both_causes_and_reset_settles_it(
    fixture_root, unlocked_keys, tmp_path, capsys
):
    engram_writes(fixture_root, unlocked_keys)
    backup = tmp_path / "backup"
    shutil.copytree(fixture_root, backup)
    engram_writes(fixture_root, unlocked_keys, DecayState.ALIVE)  # checkpointed after the backup was taken
    shutil.rmtree(fixture_root)
    shutil.copytree(backup, fixture_root)
    code, out = verify(capsys, fixture_root)
    assert code == 1 and out.startswith("tampered: truncated"), out
    assert "lines were removed, or this root was restored from a backup" in out
    assert "engram audit checkpoint --reset" in out
    assert run(capsys, "audit", "checkpoint", "--reset", "--root", str(fixture_root))[0] == 0
    assert verify(capsys, fixture_root)[0] == 0


def test_an_old_backup_restored_elsewhere_is_missing_with_both_causes_named(
    fixture_root, unlocked_keys, tmp_path, capsys
):
    engram_writes(fixture_root, unlocked_keys)
    backup = tmp_path / "backup"
    shutil.copytree(fixture_root, backup)
    engram_writes(fixture_root, unlocked_keys, DecayState.ALIVE)
    code, out = verify(capsys, backup)
    assert code == 1 and out.startswith("tampered: checkpoint missing:"), out
    assert f"the checkpoint of {fixture_root.resolve()}" in out
    assert "records 202 lines of this log and it has 201" in out
    assert "a backup from before that checkpoint, or lines were removed" in out
    assert not moves(backup) and not book(backup).path.exists()


# ----------------------------------------------------------------- what is still caught


def test_a_root_rewritten_while_it_moved_adopts_nothing(fixture_root, unlocked_keys, tmp_path, capsys):
    """Dropping engram's line and recomputing nothing else: the chain memoryd checks still holds, the checkpoint
    signed for the old place does not pin this log, so it is not adopted."""
    engram_writes(fixture_root, unlocked_keys)
    engram_writes(fixture_root, unlocked_keys, DecayState.ALIVE)
    moved = tmp_path / "moved"
    shutil.move(fixture_root, moved)
    log = moved / "audit" / "audit.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-1]))  # engram's last decision, gone
    code, out = verify(capsys, moved)
    assert code == 1 and "checkpoint missing" in out and "a backup from before that checkpoint" in out
    assert not moves(moved)


def test_a_history_rewritten_with_recomputed_hashes_is_still_caught_after_a_copy(
    fixture_root, unlocked_keys, tmp_path, capsys
):
    engram_writes(fixture_root, unlocked_keys)
    copy = tmp_path / "copy"
    shutil.copytree(fixture_root, copy)
    assert verify(capsys, copy)[0] == 0
    log = copy / "audit" / "audit.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    rows[5]["details"] = '{"title": "something else"}'
    from engram.store.audit.chain import GENESIS, memoryd_link

    prev = GENESIS
    for row in rows:  # a forger's chain: every later link recomputed, memoryd's rule satisfied
        row["prev_hash"] = prev
        row.pop("this_hash", None)
        prev = memoryd_link(row)
    log.write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, out = verify(capsys, copy)
    assert code == 1 and "checkpoint" in out, out


def test_a_deleted_checkpoint_with_no_copy_anywhere_is_still_missing(fixture_root, unlocked_keys, capsys):
    store = engram_writes(fixture_root, unlocked_keys)
    store.checkpoints.path.unlink()
    code, out = verify(capsys, fixture_root)
    assert code == 1 and out.startswith("tampered: checkpoint missing: engram has written to this log (line 201)")
    assert out.index("Likely innocent causes") < out.index("deleted to hide a rewrite") < out.index("--reset")


def test_a_checkpoint_signed_by_another_key_is_never_adopted(fixture_root, unlocked_keys, tmp_path, capsys):
    """Someone who can write engram's state directory, but not read its key, files a checkpoint for the log."""
    engram_writes(fixture_root, unlocked_keys)
    moved = tmp_path / "moved"
    shutil.move(fixture_root, moved)
    own = book(fixture_root)
    forged_key = tmp_path / "forger"
    forger = CheckpointBook(Path("/elsewhere"), tmp_path / "forger-state", forged_key)
    log = moved / "audit" / "audit.jsonl"
    from datetime import UTC, datetime

    from engram.store.audit.chain import fold_lines

    forged = forger.sign(line_hash(first_line(log)), *fold_lines(log, 0, "", 0), datetime.now(UTC))
    own.path.write_text(forged.to_json())  # under the old root's name, where adoption looks
    code, out = verify(capsys, moved)
    assert code == 1 and "checkpoint missing" in out and not moves(moved)
