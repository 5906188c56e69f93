"""A first verify split with a second process, checking runs of lines at once, gives the verdict and the record a
single pass checking each line on its own gives, wherever the log is split and whatever was done to it; the part
is taken from the other process when it can be, and checked here again when it cannot (see
``engram.store.audit.split``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_audit import T0, dump, edited, engram_append, golden, memoryd_append
from test_audit_prefix import MUTATIONS

from engram.store.audit import fastcheck, runs, split
from engram.store.audit.checkpoints import CheckpointBook
from engram.store.audit.verify import TAMPERED, VALID, verify_recording


class InProcess:
    """The other process's work, done here (as the other process does it: before this one reads the part)."""

    def __init__(self, *args: object) -> None:
        self.part = split.check_part(*args)  # type: ignore[arg-type]

    def result(self) -> split.Part:
        return self.part

    def close(self) -> None:
        pass


@contextmanager
def splitting(share: float, warm: int, run: object = InProcess) -> Iterator[list[split.Part]]:
    """Every verify meanwhile is split (two cores, however short the log), at ``share`` of its bytes; yields
    the parts taken from the other process."""
    taken: list[split.Part] = []
    saved = split.SPLIT_BYTES, split.SHARE, split.WARM_LINES, split.run, split._cores, split._take

    def take(part: split.Part, *args: object) -> None:
        taken.append(part)
        saved[5](part, *args)  # type: ignore[arg-type]

    split.SPLIT_BYTES, split.SHARE, split.WARM_LINES, split.run = 0, share, warm, run  # type: ignore[assignment]
    split._cores, split._take = lambda: 2, take  # type: ignore[assignment]
    try:
        yield taken
    finally:
        split.SPLIT_BYTES, split.SHARE, split.WARM_LINES, split.run, split._cores, split._take = saved  # type: ignore[assignment]


def single(log: Path, *args: object, **kwargs: object) -> tuple:
    """A single pass, every line checked on its own (no run at once: see ``engram.store.audit.fastcheck``)."""
    saved = split.SPLIT_BYTES, fastcheck.passes
    split.SPLIT_BYTES, fastcheck.passes = 1 << 62, lambda *args: None
    try:
        return verify_recording(log, *args, **kwargs)  # type: ignore[arg-type]
    finally:
        split.SPLIT_BYTES, fastcheck.passes = saved


@contextmanager
def runs_of(lines: int, block: int) -> Iterator[None]:
    """Lines checked at once, ``lines`` at a time, read ``block`` bytes at a time (shorter than most lines)."""
    saved = runs.RUN_LINES, runs.BLOCK
    runs.RUN_LINES, runs.BLOCK = lines, block
    try:
        yield
    finally:
        runs.RUN_LINES, runs.BLOCK = saved


MORE = {  # what a single pass meets only in the part, or right at its start
    **MUTATIONS,
    "a blank stretch": lambda lines: [*lines[:5], b"\n" * 4, *lines[5:]],
    "unparsable lines in a row": lambda lines: [*lines[:5], b"[1]\n", b"no\n", b"{}\n", *lines[5:]],
    "an engram line renumbered": lambda lines: [*lines[:7], dump(json.loads(lines[7]) | {"seq": 3}), *lines[8:]],
    "a line duplicated": lambda lines: [*lines[:8], lines[7], *lines[8:]],
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    mutation=st.sampled_from(sorted(MORE)),
    share=st.floats(0.0, 0.95),
    warm=st.integers(0, 3),
    checkpointed=st.booleans(),
    resumed=st.booleans(),
    run_lines=st.integers(1, 6),
    block=st.integers(1, 1000),
)
def test_a_split_verify_gives_the_single_passs_verdict_and_record(
    tmp_path_factory, mutation, share, warm, checkpointed, resumed, run_lines, block
):
    base = tmp_path_factory.mktemp("split")
    log = base / "audit.jsonl"
    lines = golden(log, 15)
    book = CheckpointBook(base / "root", base / "state", base / "config")
    checkpoint = book.start(log, T0) if checkpointed else None
    prefix = single(log)[1] if resumed else None
    log.write_bytes(b"".join(MORE[mutation](lines)))
    if mutation != "a torn tail":
        for i in range(6):
            engram_append(log, 100 + i) if i % 2 else memoryd_append(log, {"event_type": "gate", "n": f"a{i}"})
    expected = single(log, checkpoint, prefix=prefix)
    with splitting(share, warm) as taken, runs_of(run_lines, block):
        assert verify_recording(log, checkpoint, prefix=prefix) == expected
    event("the part taken from the other process" if taken else "the part checked here")


def test_a_valid_logs_part_is_taken_from_the_other_process(tmp_path):
    log = tmp_path / "audit.jsonl"
    golden(log, 60)
    with splitting(0.4, 2) as taken:
        verdict, record = verify_recording(log)
    assert taken and verdict.status == VALID and (verdict, record) == single(log)
    assert taken[0].first > 2 and taken[0].last == 60  # the part's lines were checked there, not here


def test_an_edit_in_the_part_is_caught_at_its_line(tmp_path):
    log = tmp_path / "audit.jsonl"
    lines = golden(log, 60)
    log.write_bytes(b"".join([*lines[:49], dump(edited(lines[49])), *lines[50:]]))
    with splitting(0.4, 2) as taken:
        verdict, _ = verify_recording(log)
    assert taken and (verdict.status, verdict.bad_line) == (TAMPERED, 50)


def test_a_part_rewritten_after_the_other_process_read_it_is_checked_as_read_here(tmp_path):
    """The other process checked the bytes as they were; this one reads them changed: its own reading wins."""
    log = tmp_path / "audit.jsonl"
    lines = golden(log, 60)
    edit = [*lines[:49], dump(edited(lines[49])), *lines[50:]]

    class Rewritten(InProcess):
        def __init__(self, *args: object) -> None:
            super().__init__(*args)
            log.write_bytes(b"".join(edit))

    with splitting(0.4, 2, Rewritten) as taken:
        verdict, _ = verify_recording(log)
    assert not taken and (verdict.status, verdict.bad_line) == (TAMPERED, 50)
    assert (verdict, None) == single(log)


def test_the_other_process_is_a_fresh_interpreter(tmp_path):
    """The real second process: ``python -m engram.store.audit.split``, its part read from its output."""
    log = tmp_path / "audit.jsonl"
    golden(log, 60)
    with splitting(0.4, 2, split._Child) as taken:
        result = verify_recording(log)
    assert taken and result == single(log)


def test_with_no_second_process_to_be_had_the_log_is_verified_in_one_pass(tmp_path):
    log = tmp_path / "audit.jsonl"
    golden(log, 60)

    def refused(*args: object) -> InProcess:
        raise OSError("no more processes")

    with splitting(0.4, 2, refused) as taken:
        result = verify_recording(log)
    assert not taken and result == single(log) and result[0].status == VALID
