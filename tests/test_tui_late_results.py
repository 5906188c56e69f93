"""A worker's result that arrives after its pane, or the whole console, has gone is dropped: no exception, no
notification, nothing drawn (a quick ``q`` while the queue's detail loads used to end in NoMatches)."""

from __future__ import annotations

import threading

from helpers import settle
from textual.widgets import Static

import engram.tui.panes.queue as queue_module
from engram.tui import threads
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
