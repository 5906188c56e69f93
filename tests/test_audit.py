"""The audit chain: a golden log of memoryd and engram lines, every case of the verdict table derived from
it mechanically, property tests, concurrent writers, checkpoints and tail repair."""

from __future__ import annotations

import fcntl
import itertools
import json
import multiprocessing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store.audit.chain import GENESIS, TornTail, accumulate, append_event, append_events, memoryd_link, this_hash
from engram.store.audit.checkpoints import CheckpointBook, CheckpointRejected
from engram.store.audit.verify import TAMPERED, TORN, VALID, verify

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def memoryd_append(path: Path, record: dict) -> None:
    """memoryd's writer rule: flock, prev_hash = sha256(previous line minus prev_hash), json.dumps defaults."""
    with path.open("a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        lines = fh.read().splitlines()
        prev = GENESIS if not lines else memoryd_link(json.loads(lines[-1]))
        fh.write((json.dumps({**record, "ts": T0.isoformat(), "prev_hash": prev}) + "\n").encode())
        fh.flush()


def engram_append(path: Path, i: int) -> None:
    append_event(
        path,
        actor="engram-test",
        event_type="memory_edited",
        scope_hash="0123456789ab",
        target_id=f"slug-{i}",
        details={"i": i, "note": "改了标题"},
        ts=T0,
    )


def golden(path: Path, n: int = 12, tag: str = "") -> list[bytes]:
    """Lines 1, 4, 7, ... by memoryd's rule; the others by engram."""
    for i in range(n):
        if i % 3 == 0:
            memoryd_append(
                path,
                {
                    "scope_hash": "91c2073b561e",
                    "event_type": "access_granted",
                    "tool": "search_memory",
                    "result": "ok",
                    "n": f"{tag}{i}",
                },
            )
        else:
            engram_append(path, i)
    return path.read_bytes().splitlines(keepends=True)


@pytest.fixture
def book(tmp_path) -> CheckpointBook:
    return CheckpointBook(tmp_path / "root", tmp_path / "state", tmp_path / "config")


def pin(book: CheckpointBook, log: Path):
    """A checkpoint of the whole log, as engram's first one (later ones advance it)."""
    assert verify(log).status == VALID
    return book.start(log, T0)


def write(log: Path, lines: list[bytes]) -> None:
    log.write_bytes(b"".join(lines))


def edited(raw: bytes) -> dict:
    obj = json.loads(raw)
    key = "details" if "details" in obj else "tool"
    obj[key] = obj[key] + "x"
    return obj


def dump(obj: dict) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode()


def rechain(lines: list[bytes], start: int) -> list[bytes]:
    """Recompute seq, prev_hash and this_hash from line ``start`` (0-based) on: a careful forger."""
    out = lines[:start]
    prev = json.loads(out[-1]) if out else None
    for i, raw in enumerate(lines[start:], start):
        obj = json.loads(raw)
        obj["prev_hash"] = GENESIS if prev is None else memoryd_link(prev)
        if "this_hash" in obj:
            obj["seq"] = i + 1
            obj["this_hash"] = this_hash(obj)
        out.append(dump(obj))
        prev = obj
    return out


def test_golden_log_is_valid_for_both_rules(tmp_path):
    log = tmp_path / "audit.jsonl"
    lines = golden(log)
    verdict = verify(log)
    assert (verdict.status, verdict.lines, verdict.memoryd_lines, verdict.engram_lines) == (VALID, 12, 4, 8)
    head = ""
    for raw in lines:
        head = accumulate(head, raw)
    assert verdict.head == head
    # memoryd's own verification rule holds for every line, engram's included
    objs = [json.loads(raw) for raw in lines]
    assert objs[0]["prev_hash"] == GENESIS
    assert all(b["prev_hash"] == memoryd_link(a) for a, b in itertools.pairwise(objs))
    assert [o.get("seq") for o in objs if "seq" in o] == [i + 1 for i, o in enumerate(objs) if "seq" in o]


def case(tmp_path, book, mutate):
    """Build the golden log, checkpoint it, apply ``mutate(lines) -> lines``, verify with the checkpoint."""
    log = tmp_path / "audit.jsonl"
    lines = golden(log)
    checkpoint = pin(book, log)
    write(log, mutate(list(lines)))
    return verify(log, checkpoint)


ENGRAM, MEMORYD = 4, 6  # 0-based indexes of an engram line and a memoryd line in the golden log


def test_line_edited_hashes_left_is_broken_at_that_line(tmp_path, book):
    v = case(tmp_path, book, lambda ls: ls[:ENGRAM] + [dump(edited(ls[ENGRAM]))] + ls[ENGRAM + 1 :])
    assert (v.status, v.bad_line) == (TAMPERED, ENGRAM + 1) and "this_hash" in v.reason


def test_memoryd_line_edited_is_broken_at_the_next_line(tmp_path, book):
    v = case(tmp_path, book, lambda ls: ls[:MEMORYD] + [dump(edited(ls[MEMORYD]))] + ls[MEMORYD + 1 :])
    assert (v.status, v.bad_line) == (TAMPERED, MEMORYD + 2) and "link mismatch" in v.reason


def test_line_edited_with_own_hash_recomputed_is_broken_at_the_next_line(tmp_path, book):
    def mutate(ls):
        obj = edited(ls[ENGRAM])
        obj["this_hash"] = this_hash(obj)
        return ls[:ENGRAM] + [dump(obj)] + ls[ENGRAM + 1 :]

    v = case(tmp_path, book, mutate)
    assert (v.status, v.bad_line) == (TAMPERED, ENGRAM + 2) and "link mismatch" in v.reason


def test_line_edited_and_every_later_hash_recomputed_is_a_checkpoint_mismatch(tmp_path, book):
    def mutate(ls):
        obj = edited(ls[ENGRAM])
        return rechain(ls[:ENGRAM] + [dump(obj)] + ls[ENGRAM + 1 :], ENGRAM)

    v = case(tmp_path, book, mutate)
    assert v.status == TAMPERED and v.checkpoint == "mismatch" and v.bad_line == 12
    assert verify(tmp_path / "audit.jsonl").status == VALID  # the chain alone cannot see it


@pytest.mark.parametrize("k, words", [(ENGRAM, "seq gap"), (MEMORYD, "seq gap"), (MEMORYD - 1, "link mismatch")])
def test_line_deleted_is_a_seq_gap_or_broken_link(tmp_path, book, k, words):
    v = case(tmp_path, book, lambda ls: ls[:k] + ls[k + 1 :])
    assert v.status == TAMPERED and v.bad_line == k + 1 and words in v.reason


def test_lines_reordered_is_a_seq_or_link_mismatch(tmp_path, book):
    v = case(tmp_path, book, lambda ls: ls[:ENGRAM] + [ls[ENGRAM + 1], ls[ENGRAM]] + ls[ENGRAM + 2 :])
    assert v.status == TAMPERED and v.bad_line == ENGRAM + 1
    assert "seq" in v.reason or "link" in v.reason


def test_tail_truncated_is_caught_by_the_checkpoint(tmp_path, book):
    v = case(tmp_path, book, lambda ls: ls[:-3])
    assert v.status == TAMPERED and v.checkpoint == "larger than log" and "truncated" in v.reason


def test_forged_line_inserted_is_a_link_mismatch(tmp_path, book):
    def mutate(ls):
        forged = {
            "scope_hash": "x",
            "event_type": "access_granted",
            "tool": "forged",
            "prev_hash": memoryd_link(json.loads(ls[MEMORYD - 1])),
        }
        return ls[:MEMORYD] + [dump(forged)] + ls[MEMORYD:]

    v = case(tmp_path, book, mutate)
    assert v.status == TAMPERED and v.bad_line == MEMORYD + 2 and "link mismatch" in v.reason


def test_line_duplicated_is_a_seq_duplicate(tmp_path, book):
    v = case(tmp_path, book, lambda ls: ls[: ENGRAM + 1] + [ls[ENGRAM]] + ls[ENGRAM + 1 :])
    assert (v.status, v.bad_line) == (TAMPERED, ENGRAM + 2) and "seq duplicate" in v.reason


def test_whole_file_replaced_by_a_consistent_chain_is_a_log_id_mismatch(tmp_path, book):
    def mutate(ls):
        other = tmp_path / "other.jsonl"
        golden(other, 14, tag="forged-")
        return other.read_bytes().splitlines(keepends=True)

    v = case(tmp_path, book, mutate)
    assert (v.status, v.bad_line) == (TAMPERED, 1) and "log_id" in v.reason


def test_torn_last_line_is_recoverable_not_tamper(tmp_path, book):
    v = case(tmp_path, book, lambda ls: ls + [b'{"seq": 13, "ts": "2026-1'])
    assert v.status == TORN and v.lines == 12


def test_unparsable_line_in_the_middle_is_broken_at_that_line(tmp_path, book):
    v = case(tmp_path, book, lambda ls: ls[:5] + [b"\x00garbage\n"] + ls[6:])
    assert (v.status, v.bad_line) == (TAMPERED, 6) and "unparsable" in v.reason


def test_forged_or_wrongly_signed_checkpoint_is_rejected(tmp_path, book):
    log = tmp_path / "audit.jsonl"
    golden(log)
    pin(book, log)
    stored = json.loads(book.path.read_text())
    book.path.write_text(json.dumps({**stored, "size": 3}))
    with pytest.raises(CheckpointRejected, match="does not verify"):
        book.latest()
    stranger = CheckpointBook(tmp_path / "root", tmp_path / "state2", tmp_path / "config2")
    foreign = stranger.sign(stored["log_id"], 3, stored["head"], 10, T0)
    book.path.write_text(foreign.to_json())
    with pytest.raises(CheckpointRejected, match="not signed by this engram"):
        book.latest()


def test_advancing_over_a_rewritten_log_keeps_the_evidence(tmp_path, book):
    """The checkpoint folds only new lines into its digest: a later honest append cannot paper over a rewrite."""
    log = tmp_path / "audit.jsonl"
    lines = golden(log)
    pin(book, log)
    write(log, rechain(lines[:ENGRAM] + [dump(edited(lines[ENGRAM]))] + lines[ENGRAM + 1 :], ENGRAM))
    engram_append(log, 99)
    book.advance(log, T0)  # refuses (the old offset is no line end now) or folds only line 13 in
    verdict = verify(log, book.latest())
    assert verdict.status == TAMPERED and verdict.checkpoint == "mismatch"


def test_checkpoint_is_kept_when_the_log_was_cut_below_it(tmp_path, book):
    log = tmp_path / "audit.jsonl"
    lines = golden(log)
    first = pin(book, log)
    write(log, lines[:5])
    assert book.advance(log, T0) is None and book.latest() == first


def test_signing_key_and_checkpoint_are_private(tmp_path, book):
    log = tmp_path / "audit.jsonl"
    golden(log)
    pin(book, log)
    assert book.key_path.stat().st_mode & 0o777 == 0o600
    assert book.path.stat().st_mode & 0o777 == 0o600


def test_appending_never_glues_onto_a_torn_tail(tmp_path):
    log = tmp_path / "audit.jsonl"
    golden(log, 3)
    log.write_bytes(log.read_bytes() + b'{"partial')
    with pytest.raises(TornTail):
        engram_append(log, 4)
    assert log.read_bytes().endswith(b'{"partial')


@settings(max_examples=120, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=25), st.data())
def test_any_append_sequence_verifies_and_any_byte_change_is_detected(tmp_path_factory, writers, data):
    """With the checkpoint engram writes after its appends: memoryd's last line has nothing after it to
    cover it, so the chain alone cannot see an edit there; the checkpoint's digest can."""
    base = tmp_path_factory.mktemp("prop")
    log = base / "audit.jsonl"
    book = CheckpointBook(base / "root", base / "state", base / "config")
    for i, by_engram in enumerate(writers):
        if by_engram:
            engram_append(log, i)
        else:
            memoryd_append(log, {"event_type": "access_granted", "tool": f"t{i}", "result": "ok"})
    clean = verify(log)
    assert clean.status == VALID and clean.lines == len(writers)
    checkpoint = pin(book, log)
    raw = bytearray(log.read_bytes())
    pos = data.draw(st.integers(0, len(raw) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != raw[pos]))
    raw[pos] = new
    log.write_bytes(bytes(raw))
    verdict = verify(log, checkpoint)
    # the last newline changed is a torn tail (and the checkpoint then finds a line missing on repair)
    assert verdict.status == TAMPERED or (verdict.status == TORN and pos == len(raw) - 1)


def batch_event(op_id: str) -> dict:
    return {
        "actor": "engram-test",
        "event_type": "import_item",
        "scope_hash": None,
        "target_id": op_id,
        "details": {"op_id": op_id},
    }


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 5), st.integers(0, 8), st.integers(1, 5))
def test_a_batch_replayed_after_a_crash_appends_only_what_is_missing(tmp_path_factory, before, done, more):
    """A writer appended a batch and died before dequeuing it: replaying the queue (the same events, maybe more
    queued since) writes each event exactly once, in order, and the chain verifies."""
    log = tmp_path_factory.mktemp("batch") / "audit.jsonl"
    for i in range(before):
        memoryd_append(log, {"event_type": "access_granted", "tool": f"t{i}", "result": "ok"})
    queue = [batch_event(f"op{i}") for i in range(done + more)]
    append_events(log, queue[:done])
    written, _ = append_events(log, queue)
    assert [line["target_id"] for line in written] == [f"op{i}" for i in range(done, done + more)]
    lines = [json.loads(raw) for raw in log.read_bytes().splitlines()]
    assert [line["target_id"] for line in lines[before:]] == [e["target_id"] for e in queue]
    assert verify(log).status == VALID and verify(log).lines == before + done + more


def _writer(args: tuple[str, int, bool]) -> None:
    path, count, as_engram = args
    for i in range(count):
        if as_engram:
            engram_append(Path(path), i)
        else:
            memoryd_append(Path(path), {"event_type": "access_granted", "tool": f"w{i}", "result": "ok"})


def test_four_concurrent_writers_leave_a_valid_contiguous_chain(tmp_path):
    log = tmp_path / "audit.jsonl"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_writer, [(str(log), 500, as_engram) for as_engram in (True, False, True, False)])
    verdict = verify(log)
    assert (verdict.status, verdict.lines, verdict.engram_lines) == (VALID, 2000, 1000)
    seqs = [json.loads(raw).get("seq", n) for n, raw in enumerate(log.read_bytes().splitlines(), 1)]
    assert seqs == list(range(1, 2001))


def test_a_line_missing_fields_is_tampering_not_a_crash(tmp_path):
    log = tmp_path / "audit.jsonl"
    golden(log, 3)
    obj = json.loads(log.read_bytes().splitlines()[1])
    del obj["prev_hash"]
    lines = log.read_bytes().splitlines(keepends=True)
    write(log, [lines[0], dump(obj), lines[2]])
    verdict = verify(log)
    assert (verdict.status, verdict.bad_line) == (TAMPERED, 2)


def test_a_checkpoint_of_another_format_is_rejected_not_ignored(tmp_path, book):
    log = tmp_path / "audit.jsonl"
    golden(log)
    pin(book, log)
    stored = json.loads(book.path.read_text())
    book.path.write_text(json.dumps({**stored, "format": "engram-checkpoint/0"}))
    with pytest.raises(CheckpointRejected, match="another engram version, or forged"):
        book.latest()
