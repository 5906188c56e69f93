"""The queue's first page, ordered by SQLite for the console's first frame, is the first page of the full read in
every sort, whatever memoryd's hand-editable DURA column holds; and the console shows it before that read."""

from __future__ import annotations

import json
import threading

from helpers import held, until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.store import promotions, queue_scores
from engram.store.models import Memory, Promotion
from engram.store.queue import SORTS, first_page, pending_queue
from engram.tui.app import EngramApp
from engram.tui.panes import queue as queue_pane
from engram.tui.panes.queue import QueuePane

_scores = st.one_of(
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
)
_dura_texts = st.one_of(
    st.dictionaries(st.sampled_from(["D", "U", "R", "A", "X", "d"]), _scores, max_size=5).map(json.dumps),
    st.sampled_from(["", "not json", "[0.5, 0.9]", "null", "0.7", "{", '"D"', "{}"]),
)


_rows = st.lists(st.tuples(_dura_texts, st.booleans(), st.sampled_from(["fact", "decision", "zz"])), max_size=25)


def _propose(store, rows) -> list[int]:
    """Pending promotions with these DURA texts, deferred or not, and types; their ids."""
    added = []
    session = Memory.get(Memory.type == "session").slug
    for dura, deferred, ptype in rows:
        pid = Promotion.insert(
            source_session_slug=session,
            proposed_type=ptype,
            proposed_title="t",
            proposed_body="b",
            proposed_triggers='["x"]',
            dura_score=dura,
            scope_hash="710d5aaf7a15",
            created_at="2026-11-0" + str(len(added) % 3 + 1),
        ).execute()
        added.append(pid)
        if deferred:
            promotions.defer(store, pid, "later")
    return added


def _assert_first_pages(store) -> None:
    for sort in SORTS:
        full = pending_queue(store, sort)
        for limit in (3, 1000):
            assert first_page(store, sort, limit) == (full[:limit], len(full)), sort


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_rows)
def test_the_first_page_is_the_full_reads_first_page_in_every_sort(store, rows):
    added = _propose(store, rows)
    try:
        _assert_first_pages(store)
    finally:
        Promotion.delete().where(Promotion.id.in_(added)).execute()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_rows, _rows, st.data())
def test_with_kept_scores_the_first_page_is_still_the_full_reads(store, kept, proposed_since, data):
    """The scores the last full read kept stand for the JSON of the promotions they hold; those proposed since,
    and those decided since, are as if none were kept."""
    added = _propose(store, kept)
    try:
        queue_scores.keep(store, {item.id: item.dura for item in pending_queue(store)})
        added += _propose(store, proposed_since)
        decided = data.draw(st.lists(st.sampled_from(added), max_size=3) if added else st.just([]))
        Promotion.update(status="rejected").where(Promotion.id.in_(decided)).execute()
        _assert_first_pages(store)
    finally:
        Promotion.delete().where(Promotion.id.in_(added)).execute()


async def test_the_console_shows_the_first_page_before_every_pending_promotion_is_read(store, monkeypatch):
    """The full read is held back: the first page, the count and the page number are on the screen all the
    same, and the detail follows the first page; once the read is in, the list is the full one."""
    release = threading.Event()
    full_read = queue_pane.pending_queue
    monkeypatch.setattr(queue_pane, "pending_queue", held(release, full_read))
    expected = full_read(store)
    app = EngramApp(store)
    async with app.run_test(size=(140, 40)) as pilot:
        pane = app.query_one(QueuePane)
        await until(pilot, lambda: pane.detail is not None)
        status = str(app.query_one("#queue-status").render())
        assert f"{len(expected)} pending" in status and "page 1/1" in status
        assert [i.id for i in pane.items] == [i.id for i in expected] and pane.total == len(expected)
        assert pane.detail is not None and pane.detail.id == expected[0].id
        release.set()
        await until(pilot, lambda: pane.total is None)
        assert pane.total is None and pane.items == expected


def test_queue_items_share_one_string_per_repeated_value(store):
    """A large queue holds a type, a scope and each trigger once, not once per item (about 15 MB of 50,000
    pending promotions): items that repeat a value hold the same string object."""
    items = pending_queue(store)
    for name in ("type", "scope_hash"):
        by_value: dict[str, str] = {}
        for item in items:
            value = getattr(item, name)
            assert by_value.setdefault(value, value) is value, name
    triggers: dict[str, str] = {}
    for trigger in (t for item in items for t in item.triggers):
        assert triggers.setdefault(trigger, trigger) is trigger
    assert len(items) > len({i.scope_hash for i in items})  # the control: values do repeat


def test_a_promotion_proposed_again_shares_its_title_scores_and_triggers_with_the_first(store):
    """An agent proposing the same memory again (the same title, DURA scores and triggers, as memoryd's hooks do
    within a session) costs the queue and the near-duplicates' texts no second copy: each repeated value is one
    object, and the two hold one title between them."""
    from engram.store.similar import Similarity

    session = Memory.get(Memory.type == "session").slug
    again = [
        Promotion.insert(
            source_session_slug=session,
            proposed_type="fact",
            proposed_title="".join(["Deploys go out ", "on Tuesdays"]),  # made at run time: not one constant
            proposed_body="b",
            proposed_triggers='["deploy", "tuesday"]',
            dura_score='{"D": 0.8, "U": 0.7, "R": 0.6, "A": 0.9}',
            scope_hash="710d5aaf7a15",
            created_at="2026-11-23T10:00:00+00:00",
        ).execute()
        for _ in range(2)
    ]
    try:
        for items in (pending_queue(store), first_page(store, "dura_avg", 1000)[0]):
            first, second = (next(i for i in items if i.id == pid) for pid in again)
            assert first.title is second.title and first.created_at is second.created_at
            assert first.triggers is second.triggers
            assert all(first.dura[k] is second.dura[k] for k in "DURA")
        texts = Similarity.build(store).by_id
        one, other = texts[again[0]].text, texts[again[1]].text
        assert one.title is other.title is first.title and one.norm is other.norm
        assert one.triggers is other.triggers
    finally:
        Promotion.delete().where(Promotion.id.in_(again)).execute()
