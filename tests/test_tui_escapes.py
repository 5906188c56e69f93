"""The console on hostile data: titles, entity names and audit fields holding escape sequences and Rich markup are
shown as text, never sent to the terminal and never parsed (a stray ``[/x]`` used to raise)."""

from __future__ import annotations

import html
import re

from helpers import settle
from rich.segment import Segment
from textual.color import Color
from textual.widgets import Input

from engram.store.audit.chain import append_event
from engram.store.domain import MemoryType
from engram.store.models import Entity, Memory
from engram.store.promotions import Proposal, propose
from engram.tui.app import EngramApp
from engram.tui.widgets.safe import ControlFilter

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # writes "rm -rf ~" to the clipboard
HOSTILE = f"[/x] [bold red]loud[/] {OSC52}\x1b[2J\u202eevil"
SIZE = (160, 45)
PLAIN = "710d5aaf7a15"


def plant(store) -> int:
    session = Memory.get((Memory.scope_hash == PLAIN) & (Memory.type == "session"))
    pid = propose(
        store,
        Proposal(
            session.slug,
            MemoryType.FACT,
            "AAA " + HOSTILE,
            "body " + HOSTILE,
            ["x"],
            {"D": 1.0, "U": 1.0, "R": 1.0, "A": 1.0},
            HOSTILE,
            PLAIN,
        ),
    )
    Entity.update(name="AAA " + HOSTILE).where(Entity.id == Entity.select().first().id).execute()
    append_event(
        store.layout.audit_path,
        actor="memoryd",
        event_type="access_granted",
        scope_hash=PLAIN,
        target_id=HOSTILE,
        details={"tool": HOSTILE},
    )
    return pid


def screen(app) -> str:
    """What the screen shows, as text (the screenshot's SVG without its tags)."""
    svg = app.export_screenshot()
    assert not any(ch in svg for ch in "\x1b\x07\u202e"), "a control character reached the screen"
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def test_every_pane_shows_hostile_data_as_text(store):
    plant(store)
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        shown = screen(app)
        assert "[/x] [bold red]loud[/]" in shown and "\\u001b]52" in shown  # brackets kept, escape visible
        for pane in ("search", "supersedes", "decay", "audit", "scopes", "graph"):
            await app.action_show_pane(pane)
            await settle(app, pilot)
            screen(app)
        app.query_one("#graph-filter", Input).value = "AAA"
        await settle(app, pilot)
        assert "AAA [/x]" in screen(app)
        await app.action_show_pane("audit")
        await settle(app, pilot)
        assert "\\u001b]52" in screen(app)  # the planted line: newest, at the top
        assert app.is_running


async def test_a_notification_quoting_data_is_text(store):
    """Widgets ask for markup; the console turns it off, and shows control characters as escapes."""
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#status").notify(f"cannot open {HOSTILE}", title=HOSTILE, severity="error")
        await pilot.pause()
        toast = list(app._notifications)[-1]
        assert not toast.markup and toast.message.startswith("cannot open [/x] [bold red]loud[/] \\u001b]52")
        assert "\x1b" not in toast.title
        screen(app)


def test_the_line_filter_drops_controls_and_keeps_widths():
    segments = [Segment("ok \x1b]2;title\x07 ok"), Segment("\x1b[?25l", None, [(1,)])]  # the second: a control
    text, control = ControlFilter().apply(segments, Color(0, 0, 0))
    assert text.text == "ok ]2;title ok" and text.cell_length == segments[0].cell_length
    assert control == segments[1]  # Textual's own sequences are untouched
