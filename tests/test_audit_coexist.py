"""The audit chain beside memoryd: lines written by memoryd's rule with the fields memoryd's docs describe
(``seq``, ``actor``, ``target_id``, ``details``) and their own numbering, gate lines with none, blank lines and
engram's lines, in any mix. What memoryd's ``verify_chain`` accepts, engram accepts; engram's own lines keep
their strict rules; and every problem is reported, not only the first."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from memoryd_emulation import memoryd_append, memoryd_verify_chain

from engram.store.audit.chain import append_event, memoryd_link, this_hash
from engram.store.audit.verify import TAMPERED, VALID, verify


class Writers:
    """The three kinds of writer sharing one log."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.doc_seq = 0  # the doc-following writer counts its own events from 1

    def gate(self, i: int = 0) -> None:
        memoryd_append(
            self.path,
            {
                "scope_hash": "91c2073b561e",
                "event_type": "access_granted",
                "tool": "search_memory",
                "result": "ok",
                "n": i,
            },
        )

    def doc(self, i: int = 0, seq: object = None) -> None:
        self.doc_seq += 1
        memoryd_append(
            self.path,
            {
                "seq": self.doc_seq if seq is None else seq,
                "actor": "memoryd-mcp",
                "event_type": "memory_saved",
                "scope_hash": "91c2073b561e",
                "target_id": f"mem-{i}",
                "details": json.dumps({"i": i}),
            },
        )

    def engram(self, i: int = 0) -> None:
        append_event(
            self.path,
            actor="engram-test",
            event_type="memory_edited",
            scope_hash="91c2073b561e",
            target_id=f"slug-{i}",
            details={"i": i},
        )

    def blank(self) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write("\n")


def lines(path: Path) -> list[dict]:
    return [json.loads(raw) if raw.strip() else {} for raw in path.read_text(encoding="utf-8").splitlines()]


def test_doc_shaped_lines_with_their_own_numbering_verify_for_both(tmp_path):
    log = tmp_path / "audit.jsonl"
    w = Writers(log)
    for i in range(40):
        w.gate(i)
    for i in range(30):
        (w.doc, w.gate, w.engram)[i % 3](i)
    assert memoryd_verify_chain(log) == (True, -1)
    verdict = verify(log)
    assert verdict.status == VALID, verdict.summary()
    assert verdict.problem_count == 0 and verdict.lines == 70
    # engram's own lines carry their position, never the foreign numbering they follow
    for n, obj in enumerate(lines(log), 1):
        if "this_hash" in obj:
            assert obj["seq"] == n
    assert lines(log)[40]["seq"] == 1  # the doc writer's own numbering, kept as written


def test_a_blank_line_and_a_string_seq_on_a_foreign_line_are_not_tampering(tmp_path):
    log = tmp_path / "audit.jsonl"
    w = Writers(log)
    w.gate()
    w.engram(1)
    w.blank()
    w.doc(2, seq="7")
    w.engram(3)
    w.blank()
    w.blank()
    w.engram(4)
    assert memoryd_verify_chain(log) == (True, -1)
    verdict = verify(log)
    assert verdict.status == VALID, verdict.summary()
    assert [o.get("seq") for o in lines(log)] == [None, 2, None, "7", 5, None, None, 8]


def test_a_string_seq_on_an_engram_line_is_tampering(tmp_path):
    log = tmp_path / "audit.jsonl"
    w = Writers(log)
    w.gate()
    w.engram(1)
    objs = lines(log)
    objs[1]["seq"] = "2"
    objs[1]["this_hash"] = this_hash(objs[1])
    log.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    verdict = verify(log)
    assert (verdict.status, verdict.bad_line) == (TAMPERED, 2) and "seq" in verdict.reason


def test_every_problem_is_reported_an_edit_after_an_oddity_is_named(tmp_path):
    log = tmp_path / "audit.jsonl"
    w = Writers(log)
    for i in range(200):
        (w.gate, w.doc, w.engram, w.gate)[i % 4](i)
    raw = log.read_text(encoding="utf-8").splitlines(keepends=True)

    def edit(n: int) -> None:  # a memoryd line's field changed, hashes left as they were
        obj = json.loads(raw[n - 1])
        assert "this_hash" not in obj
        obj["event_type"] = "edited"
        raw[n - 1] = json.dumps(obj, ensure_ascii=False) + "\n"

    edit(41)
    edit(150)
    log.write_text("".join(raw), encoding="utf-8")
    assert memoryd_verify_chain(log) == (False, 42)  # memoryd stops at its first break
    verdict = verify(log)
    assert verdict.status == TAMPERED and verdict.problem_count == 2
    assert [p.line for p in verdict.problems] == [42, 151]
    assert "line 150" in verdict.problems[1].reason and "line 41" in verdict.problems[0].reason


def test_an_edited_engram_line_is_named_once(tmp_path):
    log = tmp_path / "audit.jsonl"
    w = Writers(log)
    for i in range(9):
        (w.gate, w.engram, w.doc)[i % 3](i)
    objs = lines(log)
    objs[4]["target_id"] = "forged"
    log.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")
    verdict = verify(log)
    assert [(p.line, "this_hash" in p.reason) for p in verdict.problems] == [(5, True)]


def test_lines_written_by_engram_01_after_a_foreign_seq_still_verify(tmp_path):
    """engram 0.1 continued the last seq it found (seq 27 at line 221): such a log verifies, and new lines
    carry their position again."""
    log = tmp_path / "audit.jsonl"
    w = Writers(log)
    for i in range(5):
        w.gate(i)
    w.doc(5)  # seq 1 at line 6
    w.gate(6)
    prev = lines(log)[-1]
    old = {
        "seq": 3,
        "ts": "2026-11-20T12:00:00+00:00",
        "actor": "engram-tui",
        "event_type": "promotion_approved",
        "scope_hash": "91c2073b561e",
        "target_id": "7",
        "details": "{}",
        "prev_hash": memoryd_link(prev),
    }
    old["this_hash"] = this_hash(old)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(old, ensure_ascii=False) + "\n")
    w.engram(9)
    verdict = verify(log)
    assert verdict.status == VALID and verdict.legacy_numbered == 1, verdict.summary()
    assert lines(log)[-1]["seq"] == 9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["gate", "doc", "engram", "blank"]), min_size=1, max_size=40))
def test_any_mix_of_writers_verifies_for_memoryd_and_engram(tmp_path_factory, plan):
    log = tmp_path_factory.mktemp("mix") / "audit.jsonl"
    w = Writers(log)
    for i, kind in enumerate(plan):
        getattr(w, kind)(*(() if kind == "blank" else (i,)))
    assert memoryd_verify_chain(log) == (True, -1)
    verdict = verify(log)
    assert verdict.status == VALID, verdict.summary()
    assert verdict.lines == len(plan)


def test_a_log_the_real_memoryd_wrote_with_doc_events_verifies_and_takes_engram_lines(tmp_path):
    """``audit.jsonl`` written by memoryd's own ``append_event`` (gate lines, and doc-shaped events numbered
    from 1 by their writer): valid as it is, and still valid for both after engram appends."""
    log = tmp_path / "audit.jsonl"
    log.write_bytes((Path(__file__).parent / "fixtures" / "memoryd-doc-events" / "audit.jsonl").read_bytes())
    assert any(isinstance(o.get("seq"), int) for o in lines(log))
    assert verify(log).status == VALID
    w = Writers(log)
    w.engram(1)
    w.gate(2)
    w.engram(3)
    assert memoryd_verify_chain(log) == (True, -1)
    verdict = verify(log)
    assert verdict.status == VALID and verdict.engram_lines == 2, verdict.summary()
    assert lines(log)[-1]["seq"] == verdict.lines


def test_a_line_memoryd_cannot_hash_restarts_its_chain_and_verifies(tmp_path):
    """A lone surrogate escape in a string (a writer with ``ensure_ascii``, or a hand) cannot be written as
    UTF-8: memoryd's writer links the next line to genesis, and engram's verify used to crash on the line."""
    log = tmp_path / "audit.jsonl"
    w = Writers(log)
    w.gate(1)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event_type": "note", "text": "\ud800", "prev_hash": memoryd_link(lines(log)[0])}) + "\n")
    w.gate(2)
    w.engram(3)
    assert lines(log)[2]["prev_hash"] == "0" * 64
    assert verify(log).status == VALID

    edited = lines(log)[3] | {"details": "\ud800"}  # an engram line engram could not have written
    raw = log.read_text(encoding="utf-8").splitlines()
    log.write_text("\n".join([*raw[:3], json.dumps(edited)]) + "\n", encoding="utf-8")
    verdict = verify(log)
    assert (verdict.status, verdict.bad_line) == (TAMPERED, 4)
    assert "this_hash" in (verdict.reason or "")
