"""engram audit verify / log / repair / checkpoint on a copy of memoryd's root."""

from __future__ import annotations

import json

from engram.store.domain import DecayState
from engram.store.memories import set_decay
from engram.store.models import Memory
from engram.store.service import Store
from engram.tui.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_fixture_log_verifies_with_its_line_count_and_head(capsys, fixture_root):
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 0 and out.startswith("valid: 200 lines (200 memoryd, 0 engram), head sha256:")
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root), "--json")
    data = json.loads(out)
    assert (data["status"], data["lines"], data["checkpoint"]) == ("valid", 200, "matched")


def test_mutations_advance_the_checkpoint_and_truncation_is_caught(capsys, fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        set_decay(store, Memory.get(Memory.body_path.endswith(".md")).slug, DecayState.DIM)
        assert store.checkpoints.latest().size == 201
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 0 and "201 lines (200 memoryd, 1 engram)" in out
    log = fixture_root / "audit" / "audit.jsonl"
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:-1]))
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 1 and "truncated" in out


def test_torn_tail_is_moved_aside_and_recorded(capsys, fixture_root):
    log = fixture_root / "audit" / "audit.jsonl"
    valid = log.read_bytes()
    log.write_bytes(valid + b'{"scope_hash": "x", "ev')
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 1 and out.startswith("torn tail after line 200")
    code, out, _ = run(capsys, "audit", "repair", "--root", str(fixture_root))
    assert code == 0 and "moved a torn tail of 23 bytes" in out
    aside = next(log.parent.glob("audit.jsonl.torn-*"))
    assert aside.read_bytes() == b'{"scope_hash": "x", "ev'
    assert log.read_bytes().startswith(valid)  # valid lines untouched
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 0 and "201 lines" in out
    assert json.loads(log.read_bytes().splitlines()[-1])["event_type"] == "audit_tail_repaired"


def test_log_filters(capsys, fixture_root):
    code, out, _ = run(
        capsys,
        "audit",
        "log",
        "--root",
        str(fixture_root),
        "--json",
        "--type",
        "access_denied",
        "--scope",
        "35998c22af79",
        "--since",
        "2026-11-01",
    )
    events = json.loads(out)
    assert code == 0 and events
    assert all(
        e["event_type"] == "access_denied" and e["scope_hash"] == "35998c22af79" and e["ts"] >= "2026-11-01"
        for e in events
    )
    assert all(1 <= e["seq"] <= 200 for e in events)
    import pytest

    with pytest.raises(SystemExit) as bad:  # argparse: usage error, exit 2
        main(["audit", "log", "--root", str(fixture_root), "--since", "yesterday"])
    assert bad.value.code == 2


def test_printed_checkpoint_checks_the_log_later(capsys, fixture_root, tmp_path):
    code, out, _ = run(capsys, "audit", "checkpoint", "--print", "--root", str(fixture_root))
    kept = tmp_path / "kept.json"
    kept.write_text(out)
    assert code == 0 and json.loads(out)["size"] == 200
    code, out, _ = run(capsys, "audit", "checkpoint", "--check", str(kept), "--root", str(fixture_root))
    assert code == 0 and "checkpoint matched" in out
    forged = {**json.loads(kept.read_text()), "size": 150}
    kept.write_text(json.dumps(forged))
    code, out, _ = run(capsys, "audit", "checkpoint", "--check", str(kept), "--root", str(fixture_root))
    assert code == 1 and "checkpoint rejected" in out


def test_forged_stored_checkpoint_is_reported(capsys, fixture_root):
    run(capsys, "audit", "verify", "--root", str(fixture_root))
    with Store.open(fixture_root) as store:
        path = store.checkpoints.path
    path.write_text(json.dumps({**json.loads(path.read_text()), "size": 10}))
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 1 and "checkpoint rejected" in out
