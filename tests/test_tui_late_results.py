"""A worker's result that arrives after its pane, or the whole console, has gone is dropped: no exception, no
notification, nothing drawn (a quick ``q`` while the queue's detail loads used to end in NoMatches)."""

from __future__ import annotations

import threading

from helpers import settle, until
from textual.widgets import Static

import engram.tui.panes.queue as queue_module
from engram.tui import threads
from engram.tui.actions import attempt_in_worker
from engram.tui.app import EngramApp
from engram.tui.panes.queue import QueuePane

SIZE = (140, 45)


async def test_a_detail_that_loads_after_q_is_dropped(store, monkeypatch):
    gate, finished = threading.Event(), threading.Event()
    real = queue_module.promotion_detail
    told: list[Exception] = []
    shown: list[object] = []

    def slow_detail(*args):
        gate.wait(10)
        return real(*args)

    def deliver_then_say_so(*args, **kwargs):
        try:
            threads.deliver(*args, **kwargs)
        finally:
            finished.set()

    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        monkeypatch.setattr(queue_module, "promotion_detail", slow_detail)
        monkeypatch.setattr(queue_module, "deliver", deliver_then_say_so)
        monkeypatch.setattr(threads, "_tell", lambda widget, exc: told.append(exc))
        monkeypatch.setattr(QueuePane, "show_detail", lambda pane, detail: shown.append(detail))
        await pilot.press("j")  # the next row's detail starts loading, and waits
        threading.Timer(0.3, gate.set).start()  # it arrives while the console closes
        await pilot.press("q")
    assert finished.wait(10)
    assert told == [] and shown == []


async def test_a_result_for_a_widget_that_left_the_screen_is_not_applied(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        gone = Static("gone")
        await app.query_one(QueuePane).mount(gone)
        await gone.remove()
        applied: list[str] = []
        runner = threading.Thread(target=threads.deliver, args=(gone, applied.append, "late"))
        runner.start()
        while runner.is_alive():
            await pilot.pause(0.01)
        stays = app.query_one("#status", Static)
        runner = threading.Thread(target=threads.deliver, args=(stays, applied.append, "in time"))
        runner.start()
        while runner.is_alive():
            await pilot.pause(0.01)
        assert applied == ["in time"]


async def test_a_detail_that_arrives_after_the_next_ones_is_dropped(store, monkeypatch):
    """j j: the second row's detail, slow to load (a cold file, a long scan), must not replace the third's,
    which came first: the detail shown is always the row under the cursor's."""
    gate, slow_done = threading.Event(), threading.Event()
    real = queue_module.promotion_detail
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)
        slow, fast = (item.id for item in pane.page_items()[1:3])

        def detail(store_, promotion_id):
            if promotion_id == slow:
                gate.wait(10)
                slow_done.set()
            return real(store_, promotion_id)

        monkeypatch.setattr(queue_module, "promotion_detail", detail)
        await pilot.press("j", "j")
        # the third row's detail is shown while the second's still loads
        await until(pilot, lambda: pane.detail is not None and pane.detail.id == fast)
        gate.set()
        assert slow_done.wait(10)
        await settle(app, pilot)
        assert pane.current().id == fast
        assert pane.detail is not None and pane.detail.id == fast


async def test_what_a_replaced_worker_wrote_is_still_said(store):
    """A worker a newer one of its group replaced runs on (a thread cannot be stopped): its read is dropped, but
    the outcome of a write it made still reaches the person, and the panes still follow the change."""
    started, gate, ended = threading.Event(), threading.Event(), threading.Event()
    said: list[str] = []
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)

        def replaced() -> None:
            started.set()
            gate.wait(10)
            threads.deliver(pane, said.append, "read")
            attempt_in_worker(pane, lambda: None, "wrote", lambda: said.append("refreshed"))
            ended.set()

        first = pane.run_worker(replaced, thread=True, exclusive=True, group="test-replaced")
        await until(pilot, started.is_set)
        pane.run_worker(lambda: None, thread=True, exclusive=True, group="test-replaced")
        assert first.is_cancelled
        gate.set()
        await until(pilot, ended.is_set)  # the thread runs on, though its worker is cancelled
        await settle(app, pilot)
        assert said == ["refreshed"]
        assert "wrote" in [n.message for n in app._notifications]
