"""One focus and escape model: keys a person expects to work from anywhere do, and esc leaves a text box."""

from __future__ import annotations

from helpers import settle, until
from textual.command import CommandPalette
from textual.widgets import Input

from engram.tui.app import EngramApp
from engram.tui.screens.help import HelpScreen
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


def footer_keys(app: EngramApp) -> set[str]:
    """The keys the footer shows whole within 80 columns."""
    from textual.widgets._footer import FooterKey

    return {key.key_display for key in app.query(FooterKey) if key.region.right <= 80 and key.region.width}


async def test_help_opens_from_inside_a_text_box_by_f1_and_the_footer_says_so(store):
    """In a text box ``?`` is typed: f1 opens help there, and the footer names it, so help is never out of reach."""
    app = EngramApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("question_mark")
        assert app.query_one("#search-query", Input).value == "?"
        assert "f1" in footer_keys(app)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


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
        await until(
            pilot,
            lambda: (
                list((engram_state_dir() / "screenshots").glob("*.svg"))
                and any("Saved screenshot" in str(n.message) for n in app._notifications)
            ),
        )
        saved = list((engram_state_dir() / "screenshots").glob("*.svg"))
        [shot] = saved
        said = [str(n.message) for n in app._notifications if "Saved screenshot" in str(n.message)]
        assert said and str(shot) in said[0] and "[$" not in said[0]


async def test_the_palette_shows_keys_where_it_showed_action_ids(store):
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Queue: Approve"] == "key: a"
        assert commands["Commands"] == "key: : or ^p"  # as the footer and help show keys
        assert not any(str(help).startswith(("queue.", "app.")) for help in commands.values())


async def test_a_theme_picked_in_the_console_is_kept_for_the_next_start(store):
    from engram.store.settings import load_settings, settings_path

    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text('# my settings\n[keys]\n"queue.approve" = "a,y"\n')
    app = EngramApp(store, load_settings())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.theme = "engram-light"  # what the palette's theme picker does
        await settle(app, pilot)
    kept = load_settings()
    assert kept.theme == "engram-light" and kept.keys == {"queue.approve": "a,y"}
    assert settings_path().read_text().startswith("# my settings")


async def test_at_80x24_the_footer_holds_filter_sort_clusters_and_help(store):
    app = EngramApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        shown = footer_keys(app)
        assert {"a", "r", "d", "m", "u", "/", "s", "c", "?"} <= shown, shown


async def test_a_long_confirmation_keeps_its_answer_line_in_view_at_80x24(store):
    from engram.tui.screens.prompt import Confirm

    app = EngramApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.push_screen(Confirm("\n".join(f"line {n} of a long sweep plan" for n in range(40))))
        await pilot.pause()
        hint = app.screen.query(".hint").last()
        assert hint.region.bottom <= 24 and hint.region.height


async def test_at_120_columns_search_previews_the_result_under_the_cursor_with_its_words(store):
    from engram.tui.panes.search import SearchPane
    from engram.tui.widgets.hitlist import HitList

    app = EngramApp(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press(*"kafka")
        await settle(app, pilot)
        listing = app.query_one(HitList)
        titled = next(i for i, h in enumerate(listing.hits) if "kafka" in h.title.lower())
        await pilot.press("escape", *["j"] * titled)  # the cursor on a result whose title says the word
        await settle(app, pilot)
        hit = listing.current
        preview = app.query_one(SearchPane).query_one("#search-preview-text").content
        assert hit is not None and hit.title[:15] in str(preview)
        assert any(str(span.style) == "bold reverse" for span in preview.spans)  # the word, highlighted
    narrow = EngramApp(store)
    async with narrow.run_test(size=(100, 30)) as pilot:
        await settle(narrow, pilot)
        await pilot.press("2")
        await settle(narrow, pilot)
        assert not narrow.query_one("#search-preview").display
