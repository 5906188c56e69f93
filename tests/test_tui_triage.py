"""Triage slips a person must never meet, pressed with real keys: where the cursor lands after every decision and
undo, what a bulk action says before it acts, and what a toast says was done to what."""

from __future__ import annotations

import pytest
from helpers import settle
from textual.widgets import DataTable, Label

from engram.tui.app import EngramApp
from engram.tui.panes.queue import QueuePane
from engram.tui.screens.prompt import TextPrompt

SIZE = (120, 40)


@pytest.fixture
def console(store):
    return EngramApp(store)


def queue(app: EngramApp) -> QueuePane:
    return app.query_one(QueuePane)


def at_cursor(app: EngramApp) -> int:
    item = queue(app).current()
    assert item is not None
    return item.id


def toasts(app: EngramApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


@pytest.mark.parametrize("keys", [("a",), ("r", "enter"), ("d", "enter"), ("d", *"ask bob", "enter")])
async def test_every_decision_lands_on_the_next_undecided_row(console, keys):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("j")  # the second row: the next one is below it, and one is above it too
        order = [item.id for item in queue(console).items]
        decided, following = order[1], order[2]
        assert at_cursor(console) == decided
        await pilot.press(*keys)
        await settle(console, pilot)
        assert at_cursor(console) == following, keys  # a deferred row sinks; the cursor does not follow it


async def test_undo_lands_on_the_restored_row(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("j", "j")
        decided = at_cursor(console)
        await pilot.press("d", "enter")
        await settle(console, pilot)
        assert at_cursor(console) != decided
        await pilot.press("u")
        await settle(console, pilot)
        assert at_cursor(console) == decided


async def test_the_last_row_decided_lands_on_the_one_above(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("G")
        order = [item.id for item in queue(console).items]
        await pilot.press("r", "enter")
        await settle(console, pilot)
        assert at_cursor(console) == order[-2]


async def test_a_bulk_reject_and_defer_name_their_count_before_acting(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        chosen = [item.id for item in queue(console).items[:3]]
        await pilot.press("space", "space", "space", "r")
        await pilot.pause()
        prompt = console.screen
        assert isinstance(prompt, TextPrompt)
        title = " ".join(str(label.render()) for label in prompt.query(Label))
        assert "Reject 3 promotions" in title and all(f"#{pid}" in title for pid in chosen)
        await pilot.press("escape")
        await settle(console, pilot)
        await pilot.press("d")
        await pilot.pause()
        title = " ".join(str(label.render()) for label in console.screen.query(Label))
        assert "Defer 3 promotions" in title


async def test_a_toast_says_what_happened_to_what(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        first = queue(console).items[0]
        await pilot.press("r", "enter")
        await settle(console, pilot)
        assert any(t.startswith(f"rejected #{first.id} '{first.title[:20]}") for t in toasts(console)), toasts(console)
        await pilot.press("space", "space", "a", "y")
        await settle(console, pilot)
        assert any(t.startswith("approved 2: #") for t in toasts(console)), toasts(console)


async def test_capital_r_and_d_decide_at_once_and_the_status_counts_progress(console):
    from engram.store.models import Promotion, PromotionNote

    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        first, second = (item.id for item in queue(console).items[:2])
        await pilot.press("R")  # no prompt: rejected at once
        await settle(console, pilot)
        assert Promotion.get_by_id(first).status == "rejected" and at_cursor(console) == second
        await pilot.press("D")
        await settle(console, pilot)
        assert PromotionNote.get_by_id(second).deferred_at is not None
        status = str(console.query_one("#queue-status").render())
        assert "2 decided this session, 5 left" in status, status
        await pilot.press("u")
        await settle(console, pilot)
        assert "1 decided this session, 6 left" in str(console.query_one("#queue-status").render())


async def test_esc_on_a_session_opened_from_the_queue_goes_back_to_the_same_row(console):
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("j", "j")
        row = at_cursor(console)
        await pilot.press("enter")  # the source session, in the search pane's reader
        await settle(console, pilot)
        assert console.showing == "search"
        await pilot.press("escape")
        await settle(console, pilot)
        assert console.showing == "queue" and at_cursor(console) == row


async def test_esc_on_a_memory_opened_from_the_decay_pane_goes_back_to_its_row(console):
    """The back stack is the console's, not the queue's: a memory opened from the decay pane's list returns there."""
    async with console.run_test(size=SIZE) as pilot:
        await settle(console, pilot)
        await pilot.press("4")
        await settle(console, pilot)
        listing = console.query_one("#decay-list", DataTable)
        listing.focus()
        await pilot.press("down")
        row = listing.cursor_row
        await pilot.press("enter")
        await settle(console, pilot)
        assert console.showing == "search"
        await pilot.press("escape")
        await settle(console, pilot)
        assert console.showing == "decay" and listing.has_focus and listing.cursor_row == row == 1
