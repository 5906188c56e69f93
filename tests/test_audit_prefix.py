"""A verify resumed after a verified prefix: the prefix's lines are not parsed again when its bytes are unchanged,
and whatever was done to the log, the verdict is the one a full read gives (an edited line is still caught at
its line)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_audit import T0, book, dump, edited, engram_append, golden, memoryd_append  # noqa: F401  (fixture)

from engram.store.audit import fastcheck, fastjson
from engram.store.audit.ops import verify_log
from engram.store.audit.prefix import record_path
from engram.store.audit.verify import VALID, verify, verify_recording

MUTATIONS = {
    "unchanged": lambda lines: lines,
    "an engram line edited": lambda lines: [*lines[:4], dump(edited(lines[4])), *lines[5:]],
    "a memoryd line edited": lambda lines: [*lines[:6], dump(edited(lines[6])), *lines[7:]],
    "a line removed": lambda lines: [*lines[:5], *lines[6:]],
    "two lines swapped": lambda lines: [*lines[:3], lines[4], lines[3], *lines[5:]],
    "a line made unparsable": lambda lines: [*lines[:5], b"not json\n", *lines[6:]],
    "cut short": lambda lines: lines[:7],
    "a torn tail": lambda lines: [*lines, b'{"half'],
    "replaced": lambda lines: [dump({"other": "log"}), *lines[1:]],
}


def counting(parsed: list[bytes], loads):
    """A parse, noting each log line it reads."""

    def parse(raw, *args, **kwargs):
        if isinstance(raw, bytes):
            parsed.append(raw.rstrip(b"\n"))
        return loads(raw, *args, **kwargs)

    return parse


def watching_parses(monkeypatch) -> list[bytes]:
    """The log lines every verify from now on parses, whether line by line or a run at a time (a run the fast
    check turns down is parsed again, line by line)."""
    parsed: list[bytes] = []
    monkeypatch.setattr(fastjson, "loads", counting(parsed, fastjson.loads))
    shim = SimpleNamespace(
        loads=counting(parsed, orjson.loads), dumps=orjson.dumps, JSONDecodeError=orjson.JSONDecodeError
    )
    monkeypatch.setattr(fastcheck, "orjson", shim)
    return parsed


def judged(verdict) -> dict:
    return verdict.to_json()


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_resumed_verify_gives_the_full_reads_verdict(tmp_path, book, mutation):  # noqa: F811
    log = tmp_path / "audit.jsonl"
    lines = golden(log)
    checkpoint = book.start(log, T0)
    verdict, record = verify_recording(log, checkpoint)
    assert verdict.status == VALID and record is not None and record.lines == len(lines)
    log.write_bytes(b"".join(MUTATIONS[mutation](lines)))
    if mutation != "a torn tail":
        engram_append(log, 99)
        memoryd_append(log, {"event_type": "access_granted", "n": "after"})
    assert judged(verify(log, checkpoint, prefix=record)) == judged(verify(log, checkpoint))


def test_an_unchanged_prefix_is_not_parsed_again_and_an_edit_inside_it_is_caught_at_its_line(
    tmp_path,
    book,  # noqa: F811
    monkeypatch,
):
    log = tmp_path / "audit.jsonl"
    lines = golden(log)
    record = verify_recording(log)[1]
    engram_append(log, 99)
    memoryd_append(log, {"event_type": "access_granted", "n": "after"})
    edit = [*lines[:4], dump(edited(lines[4])), *lines[5:]]
    parsed = watching_parses(monkeypatch)
    assert verify(log, prefix=record).status == VALID
    after = log.read_bytes().splitlines()[len(lines) :]
    assert len(after) == 2 and set(parsed) == set(after)  # the two lines after the prefix, and no other
    parsed.clear()
    log.write_bytes(b"".join(edit))
    caught = verify(log, prefix=record)
    assert caught.bad_line == 5 and set(parsed) == set(log.read_bytes().splitlines())  # every line read again


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_byte_changed_gives_the_full_reads_verdict(tmp_path_factory, data):
    log = tmp_path_factory.mktemp("log") / "audit.jsonl"
    raw = b"".join(golden(log))
    record = verify_recording(log)[1]
    at = data.draw(st.integers(0, len(raw) - 1))
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != raw[at]))
    log.write_bytes(raw[:at] + bytes([byte]) + raw[at + 1 :])
    assert judged(verify(log, prefix=record)) == judged(verify(log))


def test_verify_keeps_a_signed_record_and_ignores_one_altered(store, monkeypatch):
    verify_log(store)  # the first signs a checkpoint: the later ones match it
    first = verify_log(store)
    path = record_path(store.checkpoints.path)
    kept = json.loads(path.read_text())
    assert first.status == VALID and kept["lines"] == first.lines and kept["sig"]
    parsed = watching_parses(monkeypatch)
    assert verify_log(store).summary() == first.summary()
    assert parsed == []
    path.write_text(json.dumps({**kept, "engram_lines": kept["engram_lines"] + 1}))  # the signature breaks
    assert verify_log(store).summary() == first.summary()
    assert set(parsed) == {raw for raw in store.layout.audit_path.read_bytes().splitlines() if raw}
