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


async def test_textuals_own_notifications_show_no_markup(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+c")  # Textual's hint: how to quit
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert any("ctrl+q" in m and "to quit" in m for m in said) and not any("[b]" in m for m in said)


async def test_a_screenshot_is_saved_where_engram_can_write_and_the_toast_names_it(store):
    from engram.store.paths import engram_state_dir

    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.action_screenshot()
        for _ in range(50):
            await pilot.pause(0.05)
            saved = list((engram_state_dir() / "screenshots").glob("*.svg"))
            if saved and any("Saved screenshot" in str(n.message) for n in app._notifications):
                break
        [shot] = saved
        said = [str(n.message) for n in app._notifications if "Saved screenshot" in str(n.message)]
        assert said and str(shot) in said[0] and "[$" not in said[0]
