"""Reading the audit log by line number: every line found (a torn last one too, across chunk boundaries),
filters as the pane's filter line says them, events per day."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from helpers import open_after_letting_go
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.audit import view as audit_view
from engram.store.audit.view import AuditLog, parse_filter
from engram.store.errors import BadInput


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    torn=st.booleans(),
    chunk=st.integers(1, 64),
)
def test_every_line_is_found_whatever_the_chunking(tmp_path_factory, lines, torn, chunk):
    path = tmp_path_factory.mktemp("log") / "audit.jsonl"
    data = b"".join(line + b"\n" for line in lines) + (b"torn" if torn else b"")
    path.write_bytes(data)
    original, audit_view.CHUNK = audit_view.CHUNK, chunk
    try:
        with AuditLog(path) as log:
            expected = [line + b"\n" for line in lines] + ([b"torn"] if torn else [])
            assert [log.raw(n) for n in range(1, len(log) + 1)] == expected
    finally:
        audit_view.CHUNK = original


def test_filters_and_days(tmp_path):
    path = tmp_path / "audit.jsonl"
    events = [
        {
            "ts": "2026-11-01T10:00:00+00:00",
            "event_type": "grant_issued",
            "actor": "engram-tui",
            "scope_hash": "aaa",
            "target_id": "aaa",
        },
        {
            "ts": "2026-11-03T10:00:00+00:00",
            "event_type": "promotion_approved",
            "actor": "engram-cli",
            "scope_hash": "bbb",
            "target_id": "7",
            "details": {"reason": "Kafka lag"},
        },
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + "not json\n")
    with AuditLog(path) as log:
        assert len(log) == 3 and log.event(3)["event_type"] == "(unparsable line)"
        assert list(log.matching(parse_filter(""))) == [1, 2, 3]
        assert list(log.matching(parse_filter("actor:engram-cli"))) == [2]
        assert list(log.matching(parse_filter("until:2026-11-02"))) == [1]
        assert list(log.matching(parse_filter("since:2026-11-02 kafka"))) == [2]
        assert list(log.matching(parse_filter("type:grant_issued scope:bbb"))) == []
        assert log.per_day() == {"2026-11-01": 1, "2026-11-03": 1}
    assert parse_filter("since:2026-11-02").since == datetime(2026, 11, 2)
    with pytest.raises(BadInput):
        parse_filter("since:yesterday")
    with pytest.raises(BadInput):
        parse_filter("type:")
    assert parse_filter("until:2026-11-02T00:00:00Z").until == datetime(2026, 11, 2, tzinfo=UTC)


def test_a_log_let_go_of_leaves_no_file_open_nor_a_warning(tmp_path):
    """The audit pane replaces its view of the log as the log grows without closing the old one: the view holds
    the log only through its map, so dropping it closes everything, with no ResourceWarning."""
    log = tmp_path / "audit.jsonl"
    log.write_text('{"event_type": "a"}\n{"event_type": "b"}\n')

    def used() -> AuditLog:
        view = AuditLog(log)
        assert view.event(2)["event_type"] == "b"
        return view

    assert open_after_letting_go(used, str(log)) == (set(), [])


def test_a_missing_log_is_empty(tmp_path):
    with AuditLog(tmp_path / "none.jsonl") as log:
        assert len(log) == 0 and log.per_day() == {}
