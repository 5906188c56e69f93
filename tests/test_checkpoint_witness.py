"""An older checkpoint put back, and the log rewritten after it: caught by the OS keyring's witness where there is
a keyring, and (as the threat model says) not without one or a checkpoint copy."""

from __future__ import annotations

import shutil
from pathlib import Path

from engram.store.audit.witness import SERVICE
from engram.store.domain import DecayState
from engram.store.memories import set_decay
from engram.store.models import Memory
from engram.store.service import Store
from engram.tui.cli import main


def engram_writes(root: Path, keys, state: DecayState) -> Store:
    with Store.open(root, keys=keys) as store:
        set_decay(store, Memory.get(Memory.body_path.endswith(".md")).slug, state)
    return store


def roll_back(root: Path, keys, tmp_path: Path) -> None:
    """Two engram writes; then the first write's checkpoint file is put back and the second write's line cut off,
    so the log and the stored checkpoint agree again."""
    store = engram_writes(root, keys, DecayState.DIM)
    kept = tmp_path / "older-checkpoint.json"
    shutil.copy(store.checkpoints.path, kept)
    engram_writes(root, keys, DecayState.ALIVE)
    log = root / "audit" / "audit.jsonl"
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:-1]))
    shutil.copy(kept, store.checkpoints.path)


def verify(capsys, root: Path) -> tuple[int, str]:
    code = main(["audit", "verify", "--root", str(root)])
    return code, capsys.readouterr().out


def test_the_keyring_witness_catches_a_rolled_back_checkpoint(
    fixture_root, unlocked_keys, tmp_path, memory_keyring, capsys
):
    roll_back(fixture_root, unlocked_keys, tmp_path)
    code, out = verify(capsys, fixture_root)
    assert code == 1 and "checkpoint rolled back" in out and "OS keyring's witness records a checkpoint of 202" in out


def test_without_a_keyring_or_a_copy_such_a_rollback_is_what_cannot_be_seen(
    fixture_root, unlocked_keys, tmp_path, capsys
):
    """The default here is the keyring's fail backend: no witness is kept (docs/threat-model.md says so)."""
    roll_back(fixture_root, unlocked_keys, tmp_path)
    code, out = verify(capsys, fixture_root)
    assert code == 0 and out.startswith("valid: 201 lines")


def test_the_witness_only_rises_and_a_reset_replaces_it(fixture_root, unlocked_keys, tmp_path, memory_keyring, capsys):
    store = engram_writes(fixture_root, unlocked_keys, DecayState.DIM)
    assert memory_keyring.get_password(SERVICE, store.checkpoints.name)
    engram_writes(fixture_root, unlocked_keys, DecayState.ALIVE)
    assert store.checkpoints.witnessed().size == 202
    log = fixture_root / "audit" / "audit.jsonl"
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:-1]))  # a person's own restore, say
    assert verify(capsys, fixture_root)[0] == 1
    assert main(["audit", "checkpoint", "--reset", "--root", str(fixture_root)]) == 0
    capsys.readouterr()
    code, out = verify(capsys, fixture_root)
    assert code == 0, out
    assert store.checkpoints.witnessed().size == 202  # the reset (201) and its own event (202)


def test_a_moved_root_takes_its_witness_along_and_a_new_root_at_the_old_place_is_clean(
    fixture_root, unlocked_keys, tmp_path, memory_keyring, capsys
):
    engram_writes(fixture_root, unlocked_keys, DecayState.DIM)
    moved = tmp_path / "moved"
    shutil.move(fixture_root, moved)
    assert verify(capsys, moved)[0] == 0
    for folder in ("audit", "scopes"):
        (fixture_root / folder).mkdir(parents=True)
    (fixture_root / "audit" / "audit.jsonl").write_text("")
    assert verify(capsys, fixture_root)[0] == 0
    assert verify(capsys, moved)[0] == 0
