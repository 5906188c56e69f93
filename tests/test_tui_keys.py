"""One focus and escape model: keys a person expects to work from anywhere do, and esc leaves a text box."""

from __future__ import annotations

from helpers import settle
from textual.command import CommandPalette
from textual.widgets import Input

from engram.tui.app import EngramApp
from engram.tui.screens.prompt import TextPrompt

SIZE = (120, 40)


async def test_ctrl_u_unlocks_from_inside_a_text_box_and_keeps_its_text(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", *"abc", "ctrl+u")
        await pilot.pause()
        assert isinstance(app.screen, TextPrompt) and app.screen.password  # the passphrase prompt
        await pilot.press("escape")
        await pilot.pause()
        assert app.query_one("#queue-filter", Input).value == "abc"


async def test_ctrl_p_opens_the_palette_as_colon_does(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


async def test_esc_leaves_the_search_query_and_the_digits_switch_panes_again(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press(*"kafka")
        await settle(app, pilot)
        query = app.query_one("#search-query", Input)
        assert query.has_focus and query.value == "kafka"
        await pilot.press("escape")
        await pilot.pause()
        assert not query.has_focus
        await pilot.press("1")
        await settle(app, pilot)
        assert app.query_one("TabbedContent").active == "queue" and query.value == "kafka"
