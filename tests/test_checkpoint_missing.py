"""A deleted checkpoint is a finding, never a reason to sign the log afresh; a copy kept elsewhere backs it up."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_engram

from engram.store.audit.ops import verify_log
from engram.store.audit.verify import TAMPERED, VALID
from engram.store.domain import DecayState
from engram.store.memories import set_decay
from engram.store.models import Memory, Promotion
from engram.store.paths import engram_config_dir
from engram.store.service import Store
from engram.tui.cli import main

PLAIN = "710d5aaf7a15"  # a scope that is not sensitive: a decision there needs no key


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def write_once(root: Path, keys, state: DecayState = DecayState.DIM) -> Store:
    """One engram write (one event, one checkpoint); returns the closed store for its paths."""
    with Store.open(root, keys=keys) as store:
        set_decay(store, Memory.get(Memory.body_path.endswith(".md")).slug, state)
    return store


def forge_without_engram_lines(log: Path) -> None:
    """What someone able to write the root does to hide engram's decision: drop engram's lines, keep a chain
    memoryd's verifier accepts (engram's lines are the only ones after memoryd's here)."""
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(line for line in lines if b'"this_hash"' not in line))


def test_a_fresh_memoryd_root_gets_its_first_checkpoint_without_an_alarm(fixture_root, store):
    verdict = verify_log(store)
    assert verdict.status == VALID and verdict.checkpoint == "none"
    assert store.checkpoints.latest().size == 200


def test_a_deleted_checkpoint_is_a_finding_and_nothing_is_signed(fixture_root, unlocked_keys, capsys):
    store = write_once(fixture_root, unlocked_keys)
    store.checkpoints.path.unlink()
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 1 and out.startswith("tampered: checkpoint missing:") and "line 201" in out
    assert not store.checkpoints.path.exists()  # the forged history would be signed here before
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root), "--json")
    assert code == 1 and json.loads(out)["checkpoint"] == "missing"


def test_a_write_after_the_deletion_warns_and_does_not_start_a_checkpoint(fixture_root, unlocked_keys):
    store = write_once(fixture_root, unlocked_keys)
    store.checkpoints.path.unlink()
    with Store.open(fixture_root, keys=unlocked_keys) as again:
        set_decay(again, Memory.get(Memory.body_path.endswith(".md")).slug, DecayState.ALIVE)
        assert again.audit_warning and "checkpoint missing" in again.audit_warning
    assert not store.checkpoints.path.exists()


def test_a_first_write_killed_before_its_checkpoint_is_no_alarm(fixture_root, unlocked_keys):
    """The event reached the log, the process died before dequeuing it: its line is engram's, but no write had
    finished before, so the next run starts the checkpoint as usual."""
    with Store.open(fixture_root) as store:
        pending = Promotion.select().where(Promotion.status == "pending", Promotion.scope_hash == PLAIN).first().id
    assert run_engram(fixture_root, "promotions", "reject", str(pending), env={}, crash="audit_appended") == 137
    assert not store.checkpoints.path.exists()
    assert b'"this_hash"' in (fixture_root / "audit" / "audit.jsonl").read_bytes()
    with Store.open(fixture_root, keys=unlocked_keys) as again:
        verdict = verify_log(again)
        assert verdict.status == VALID, verdict.summary()
        again.flush_audit_outbox()
        assert again.audit_warning is None and again.checkpoints.latest().size == 201


def test_the_copy_is_kept_and_catches_a_history_rewritten_with_the_checkpoint_deleted(
    fixture_root, unlocked_keys, tmp_path, monkeypatch, capsys
):
    copies = tmp_path / "elsewhere"
    copies.mkdir()
    monkeypatch.setenv("ENGRAM_CHECKPOINT_COPY", str(copies))
    store = write_once(fixture_root, unlocked_keys)
    copy = copies / store.checkpoints.path.name
    assert copy.read_text() == store.checkpoints.path.read_text()
    store.checkpoints.path.unlink()
    forge_without_engram_lines(fixture_root / "audit" / "audit.jsonl")  # no engram line left as evidence
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 1 and "checkpoint missing" in out and str(copy) in out and "truncated" in out


def test_without_the_copy_such_a_rewrite_is_what_cannot_be_seen(fixture_root, unlocked_keys, capsys):
    """The reason the copy exists: the same attack, no copy configured, verifies (documented in the threat model)."""
    store = write_once(fixture_root, unlocked_keys)
    store.checkpoints.path.unlink()
    forge_without_engram_lines(fixture_root / "audit" / "audit.jsonl")
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 0 and "200 lines" in out


def test_a_copy_directory_that_is_gone_is_a_warning_and_is_never_created(
    fixture_root, unlocked_keys, tmp_path, monkeypatch
):
    unmounted = tmp_path / "usb" / "engram"
    monkeypatch.setenv("ENGRAM_CHECKPOINT_COPY", str(unmounted))
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        set_decay(store, Memory.get(Memory.body_path.endswith(".md")).slug, DecayState.DIM)
        assert store.audit_warning and "not a directory" in store.audit_warning
        assert store.checkpoints.latest().size == 201
    assert not unmounted.exists() and not unmounted.parent.exists()


def test_the_copy_setting_comes_from_config_toml(fixture_root, unlocked_keys, tmp_path):
    copies = tmp_path / "kept"
    copies.mkdir()

    engram_config_dir().mkdir(parents=True, exist_ok=True)
    (engram_config_dir() / "config.toml").write_text(f'[audit]\ncheckpoint_copy = "{copies}"\n')
    store = write_once(fixture_root, unlocked_keys)
    assert (copies / store.checkpoints.path.name).exists()


def test_reset_signs_the_log_anew_and_records_it(fixture_root, unlocked_keys, capsys):
    store = write_once(fixture_root, unlocked_keys)
    store.checkpoints.path.unlink()
    code, out, _ = run(capsys, "audit", "checkpoint", "--reset", "--root", str(fixture_root))
    assert code == 0 and "new checkpoint at line 201" in out
    last = json.loads((fixture_root / "audit" / "audit.jsonl").read_bytes().splitlines()[-1])
    assert last["event_type"] == "audit_checkpoint_reset" and json.loads(last["details"])["lines"] == 201
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 0 and "202 lines" in out and "checkpoint matched" in out


def test_restore_checks_the_log_against_the_kept_checkpoint_first(fixture_root, unlocked_keys, tmp_path, capsys):
    store = write_once(fixture_root, unlocked_keys)
    kept = tmp_path / "kept.json"
    code, out, _ = run(capsys, "audit", "checkpoint", "--print", "--root", str(fixture_root))
    kept.write_text(out)
    store.checkpoints.path.unlink()
    log = fixture_root / "audit" / "audit.jsonl"
    honest = log.read_bytes()
    forge_without_engram_lines(log)
    code, out, _ = run(capsys, "audit", "checkpoint", "--restore", str(kept), "--root", str(fixture_root))
    assert code == 1 and out.startswith("nothing signed") and "truncated" in out
    assert not store.checkpoints.path.exists()
    log.write_bytes(honest)
    code, out, _ = run(capsys, "audit", "checkpoint", "--restore", str(kept), "--root", str(fixture_root))
    assert code == 0 and f"checked against {kept}" in out
    assert run(capsys, "audit", "verify", "--root", str(fixture_root))[0] == 0


def test_a_broken_copy_setting_is_one_clear_line(fixture_root, capsys):
    engram_config_dir().mkdir(parents=True, exist_ok=True)
    (engram_config_dir() / "config.toml").write_text("[audit]\ncheckpoint_copy = 3\n")
    code, _, err = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 2 and "checkpoint_copy is a directory" in err and len(err.strip().splitlines()) == 1


def test_a_rejected_copy_is_tampering(fixture_root, unlocked_keys, tmp_path, monkeypatch):
    copies = tmp_path / "elsewhere"
    copies.mkdir()
    monkeypatch.setenv("ENGRAM_CHECKPOINT_COPY", str(copies))
    store = write_once(fixture_root, unlocked_keys)
    copy = copies / store.checkpoints.path.name
    data = json.loads(copy.read_text())
    copy.write_text(json.dumps({**data, "size": data["size"] - 1}))
    with Store.open(fixture_root, keys=unlocked_keys) as again:
        verdict = verify_log(again)
    assert verdict.status == TAMPERED and verdict.checkpoint == "rejected"
