"""The queue's steps without a screen: a bulk decision recorded as one step, undone and redone through the two
stacks; a promotion memoryd decided meanwhile skipped and named, never forced."""

from __future__ import annotations

from memoryd_emulation import memoryd_decides

from engram.store import promotions
from engram.store.models import Promotion
from engram.store.queue import pending_ids
from engram.tui.decisions import History, Kind, decide_each, told, undo_step


def status(pid: int) -> str:
    return Promotion.get_by_id(pid).status


def test_a_bulk_rejection_is_one_step_undone_and_redone(store):
    first, second, third = pending_ids(store)[:3]
    history = History()
    outcome = decide_each("reject", lambda pid: promotions.reject(store, pid, "dup"), [first, second])
    assert history.settle(outcome, Kind.DECIDE)  # a new decision: the pane clears its marks
    assert [status(first), status(second), status(third)] == ["rejected", "rejected", "pending"]
    assert history.decided == {first, second}
    assert told("reject", outcome.step, False, {}) == f"rejected 2: #{first}, #{second}"

    step = history.next_undo()
    assert step is not None and not history.settle(undo_step(store, step), Kind.UNDO)
    assert [status(first), status(second)] == ["pending", "pending"]
    assert history.undo_stack == [] and history.redo_stack == [step] and history.decided == set()

    again = history.next_redo()
    assert again is not None and not history.settle(again.redo(), Kind.REDO)
    assert [status(first), status(second)] == ["rejected", "rejected"] and history.redo_stack == []
    assert len(history.undo_stack) == 1 and history.decided == {first, second}


def test_a_promotion_memoryd_decided_meanwhile_is_skipped_and_named(store):
    first, second = pending_ids(store)[:2]
    memoryd_decides(store.layout.root, first, "approved")
    outcome = decide_each("defer", lambda pid: promotions.defer(store, pid), [first, second])
    assert len(outcome.skipped) == 1 and str(first) in outcome.skipped[0]
    assert outcome.stopped is None and [d.promotion_id for d in outcome.step.decisions] == [second]
    assert status(first) == "approved"
