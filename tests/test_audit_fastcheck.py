"""Checking a run of lines at once gives what checking them one by one gives (see
``engram.store.audit.fastcheck``): every problem, worded the same, and the state the next line is checked
against, on logs of any content, chained by either rule, whatever was then done to them."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from engram.store.audit import fastcheck
from engram.store.audit.chain import GENESIS, SET_ASIDE, memoryd_link, this_hash
from engram.store.audit.rules import VALID, Chain, Verdict

PLAIN = st.one_of(  # what memoryd's and engram's events hold: what a run is checked at once with
    st.text(max_size=8),
    st.sampled_from(["", "a,\n    b", '"}, {"', "\\", "\u2028", "é", "😀", "\x7f", 'a": 1']),
    st.integers(-(2**63), 2**64 - 1),
    st.booleans(),
    st.none(),
)
VALUES = st.one_of(
    PLAIN,
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(0, 3), max_size=2),
)
KEYS = st.one_of(st.sampled_from(["event_type", "ts", "n", "details", "seq", "é", "a b", 'q"']), st.text(max_size=4))


@st.composite
def chained(draw: st.DrawFn) -> list[bytes]:
    """A log each of whose lines follows its writer's rule: memoryd's (a link to the line before) or engram's
    (seq, the link, and its own hash), written with or without escaped non-ASCII."""
    lines: list[bytes] = []
    prev: dict[str, Any] | None = None
    values = draw(st.sampled_from([PLAIN, PLAIN, VALUES]))
    events = st.dictionaries(KEYS.filter(lambda k: k not in ("prev_hash", "this_hash")), values, max_size=5)
    for n in range(1, draw(st.integers(1, 14)) + 1):
        obj = dict(draw(events))
        if draw(st.booleans()):
            obj.update(seq=n, event_type=draw(st.sampled_from(["memory_edited", SET_ASIDE])))
            obj.update(prev_hash=GENESIS if prev is None else memoryd_link(prev))
            obj["this_hash"] = this_hash(obj)
        else:
            obj["prev_hash"] = GENESIS if prev is None else memoryd_link(prev)
        lines.append(json.dumps(obj, ensure_ascii=draw(st.booleans())).encode())
        prev = obj
    return lines


def changed(draw: st.DrawFn, lines: list[bytes]) -> list[bytes]:
    """``lines``, perhaps with something done to one of them."""
    at = draw(st.integers(0, len(lines) - 1))
    what = draw(st.sampled_from(["none", "none", "none", "edit", "blank", "garbage", "dup", "drop", "swap", "field"]))
    if what == "edit":
        obj = json.loads(lines[at])
        obj[draw(st.sampled_from(sorted(obj)))] = draw(VALUES)
        return [*lines[:at], json.dumps(obj).encode(), *lines[at + 1 :]]
    if what == "field":
        obj = json.loads(lines[at])
        obj[draw(st.sampled_from(["seq", "this_hash", "prev_hash"]))] = draw(st.sampled_from([True, 1, None, at + 1]))
        return [*lines[:at], json.dumps(obj).encode(), *lines[at + 1 :]]
    extra = {"blank": [b"", b"  "], "garbage": [b"[1]", b"{nope", b"\xff"], "dup": [lines[at]]}.get(what)
    if extra is not None:
        return [*lines[:at], draw(st.sampled_from(extra)), *lines[at:]]
    if what == "drop":
        return lines[:at] + lines[at + 1 :]
    if what == "swap" and at + 1 < len(lines):
        return [*lines[:at], lines[at + 1], lines[at], *lines[at + 2 :]]
    return lines


def seen(chain: Chain) -> tuple:
    return (
        chain.verdict.to_json(),
        chain.state(),
        chain.unparsable,
        chain.named,
        chain.log_id,
        chain.consulted,
    )


@settings(max_examples=400, deadline=None)
@given(data=st.data(), mid_log=st.booleans())
def test_a_run_checked_at_once_is_checked_as_line_by_line(data, mid_log):
    lines = data.draw(chained())
    lines = changed(data.draw, lines)
    one, many = Chain(Verdict(VALID)), Chain(Verdict(VALID))
    if mid_log:  # as the second process of a split verify starts: after lines it has not read
        for chain in (one, many):
            chain.started, chain.unknown, chain.prev_line, chain.seq_known, chain.legacy_known = (
                True,
                True,
                0,
                False,
                False,
            )
    for n, raw in enumerate(lines, 1):
        one.check(n, raw)
    accepted, n = 0, 1
    while n <= len(lines):
        size = data.draw(st.integers(1, 6))
        run = lines[n - 1 : n - 1 + size]
        if many.started and not many.unknown and many.link:
            accepted += fastcheck.passes(n, run, many.link) is not None
        many.check_many(n, run)
        n += len(run)
    assert seen(many) == seen(one)
    event("a run taken at once" if accepted else "line by line only")


def test_a_valid_run_is_taken_at_once_and_an_edit_inside_it_is_caught_at_its_line(tmp_path):
    objs = [{"event_type": "gate", "n": i} for i in range(8)]
    lines, prev = [], None
    for obj in objs:
        obj["prev_hash"] = GENESIS if prev is None else memoryd_link(prev)
        lines.append(json.dumps(obj).encode())
        prev = obj
    chain = Chain(Verdict(VALID))
    chain.check(1, lines[0])
    advance = fastcheck.passes(2, lines[1:], memoryd_link(objs[0]))
    assert advance is not None and advance.link == memoryd_link(objs[-1]) and advance.engram_lines == 0
    lines[4] = lines[4].replace(b'"n": 4', b'"n": 44')
    assert fastcheck.passes(2, lines[1:], memoryd_link(objs[0])) is None
    chain.check_many(2, lines[1:])
    assert [(p.line, p.reason.split(":")[0]) for p in chain.verdict.problems] == [(6, "link mismatch")]
