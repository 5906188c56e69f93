"""`engram audit repair` on lines that are whole but not JSON: a garbage last line, and memoryd's event glued
onto a torn tail. Valid lines are never rewritten; every later event is appended; every command says so while
events wait."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import events
from memoryd_emulation import memoryd_append, memoryd_verify_chain

from engram.store.audit.ops import repair_log, verify_log
from engram.store.audit.verify import TAMPERED, VALID
from engram.store.domain import DecayState
from engram.store.memories import set_decay
from engram.store.models import Memory
from engram.store.service import Store
from engram.tui.cli import main

EVENT = {"scope_hash": "710d5aaf7a15", "event_type": "access_granted", "tool": "search_memory", "result": "ok"}


def log_of(root: Path) -> Path:
    return root / "audit" / "audit.jsonl"


def decide(root: Path, keys, state: DecayState = DecayState.DIM) -> Store:
    with Store.open(root, keys=keys) as store:
        set_decay(store, Memory.get(Memory.body_path.endswith(".md")).slug, state)
    return store


def glue(root: Path) -> bytes:
    """A writer died mid-line, then memoryd appended: one whole line that is neither event."""
    with log_of(root).open("ab") as fh:
        fh.write(b'{"scope_hash": "710d5aaf7a15", "event_ty')
    memoryd_append(log_of(root), EVENT)
    return log_of(root).read_bytes().splitlines(keepends=True)[-1]


def test_a_garbage_last_line_no_longer_blocks_engrams_events(fixture_root, unlocked_keys):
    log = log_of(fixture_root)
    log.write_bytes(log.read_bytes() + b"not json at all\n")
    store = decide(fixture_root, unlocked_keys)
    assert store.notice is None and events_after(fixture_root, 201)[0]["event_type"] == "decay_changed"
    assert events_after(fixture_root, 201)[0]["prev_hash"] == "0" * 64  # memoryd's rule after a corrupt line


def events_after(root: Path, line: int) -> list[dict]:
    return [json.loads(raw) for raw in log_of(root).read_bytes().splitlines()[line:]]


def test_memoryds_glued_last_line_is_cut_off_into_a_sidecar(fixture_root, store):
    valid = log_of(fixture_root).read_bytes()
    glued = glue(fixture_root)
    assert verify_log(store).status == TAMPERED and not memoryd_verify_chain(log_of(fixture_root))[0]
    message = repair_log(store)
    assert "set 1 unreadable lines aside" in message and "cut off the end" in message
    log = log_of(fixture_root).read_bytes()
    assert log.startswith(valid) and len(log.splitlines()) == 201  # valid lines untouched, the event after them
    sidecar = next(log_of(fixture_root).parent.glob("audit.jsonl.aside-*"))
    assert sidecar.read_bytes() == glued
    event = events(fixture_root)[-1]
    assert event["event_type"] == "audit_lines_set_aside"
    assert json.loads(event["details"])["lines"][0]["line"] == 201
    assert verify_log(store).status == VALID and memoryd_verify_chain(log_of(fixture_root)) == (True, -1)


def test_a_bad_line_with_lines_after_it_stays_and_is_named_by_the_repair(fixture_root, store):
    glue(fixture_root)
    memoryd_append(log_of(fixture_root), EVENT)
    before = log_of(fixture_root).read_bytes()
    assert verify_log(store).status == TAMPERED
    assert "left in place" in repair_log(store)
    assert log_of(fixture_root).read_bytes().startswith(before)  # nothing moved: engram's seq is a position
    verdict = verify_log(store)
    assert verdict.status == VALID and verdict.set_aside == 1 and "1 set aside by repair" in verdict.summary()
    assert repair_log(store) == "the audit log is whole: nothing to repair"


def test_a_set_aside_line_edited_afterwards_is_tampering_again(fixture_root, store):
    glue(fixture_root)
    memoryd_append(log_of(fixture_root), EVENT)
    repair_log(store)
    log = log_of(fixture_root)
    lines = log.read_bytes().splitlines(keepends=True)
    lines[200] = lines[200].replace(b"event_ty", b"event_TY")
    log.write_bytes(b"".join(lines))
    verdict = verify_log(store)
    assert verdict.status == TAMPERED and verdict.bad_line == 201


def test_a_line_covered_by_the_checkpoint_is_never_cut(fixture_root, store):
    log = log_of(fixture_root)
    log.write_bytes(log.read_bytes() + b"garbage\n")
    store.checkpoints.start(log, store.now())  # someone signed it meanwhile: those bytes are history now
    repair_log(store)
    assert log.read_bytes().splitlines()[200] == b"garbage"


def test_every_command_warns_while_events_wait(fixture_root, unlocked_keys, capsys):
    log = log_of(fixture_root)
    log.write_bytes(log.read_bytes() + b'{"torn')
    decide(fixture_root, unlocked_keys)
    capsys.readouterr()
    for command in (["ls"], ["stats"], ["check"], ["promotions", "list"]):
        main([*command, "--root", str(fixture_root)])
        err = capsys.readouterr().err
        assert "1 audit event saved but not yet in audit/audit.jsonl" in err, command
    assert main(["audit", "repair", "--root", str(fixture_root)]) == 0
    out, err = capsys.readouterr()
    assert "moved a torn tail" in out and "appended 1 queued events" in out and "not yet" not in err
    main(["ls", "--root", str(fixture_root)])
    assert "audit" not in capsys.readouterr().err
