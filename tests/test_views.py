"""Saved views of the queue: the three defaults, a person's own kept atomically in engram's config folder (one
with a default's name replaces it), a broken file one clear error with the defaults still there, and bad views
refused without writing; in the console, `w` cycles them, `W` saves one, the palette lists them and the status
line names the one shown."""

from __future__ import annotations

import pytest
from helpers import settle
from memoryd_emulation import memoryd_proposes
from textual.widgets import Static

from engram.store.errors import BadInput, StoreError
from engram.store.views import DEFAULTS, View, load_views, save_view, views_path
from engram.tui.app import EngramApp
from engram.tui.panes.queue import QueuePane
from engram.tui.screens.prompt import TextPrompt


def test_defaults_then_a_persons_own_which_replace_a_default_of_their_name(tmp_path):
    path = tmp_path / "views.json"
    assert load_views(path) == list(DEFAULTS)
    mine = View("mine", "type:fact", "created")
    assert save_view(mine, path)[-1] == mine
    replaced = View("secrets", "secret:e-mail", "dura_min")
    views = save_view(replaced, path)
    assert [v.name for v in views] == [
        "low DURA from codex",
        "duplicates of approved",
        "waiting longest",
        "mine",
        "secrets",
    ]
    assert replaced in views and DEFAULTS[1] not in views
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "view", [View("", "type:fact", "created"), View("x", "nosuch:1", "created"), View("x", "", "sideways")]
)
def test_a_view_the_queue_could_not_use_is_refused_and_nothing_written(tmp_path, view):
    path = tmp_path / "views.json"
    with pytest.raises(BadInput):
        save_view(view, path)
    assert not path.exists()


@pytest.mark.parametrize(
    "text",
    ["{not json", '{"views": [{"name": "x"}]}', '{"views": [{"name": "x", "filter": "bad:1", "sort": "created"}]}'],
)
def test_a_broken_file_is_one_clear_error_and_saving_replaces_it(tmp_path, text):
    path = tmp_path / "views.json"
    path.write_text(text)
    with pytest.raises(StoreError, match="views.json: not a list of saved views"):
        load_views(path)
    assert save_view(View("mine", "", "type"), path)[-1].name == "mine"


async def test_w_cycles_views_W_saves_one_and_the_status_names_it(store):
    memoryd_proposes(store.layout.root, dura=0.4)
    app = EngramApp(store)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        pane = app.query_one(QueuePane)
        await pilot.press("w")
        await settle(app, pilot)
        assert (pane.filter_text, pane.sort) == (DEFAULTS[0].filter, DEFAULTS[0].sort)
        assert "view: low DURA from codex" in str(app.query_one("#queue-status", Static).render())
        await pilot.press("w")
        await settle(app, pilot)
        assert pane.filter_text == "secret:yes"
        await pilot.press("slash", *"type:fact", "enter")
        await settle(app, pilot)
        await pilot.press("W")
        await settle(app, pilot)
        assert isinstance(app.screen, TextPrompt)
        await pilot.press(*"facts", "enter")
        await settle(app, pilot)
        assert View("facts", "type:fact", "created") in load_views(views_path())
        assert "view: facts" in str(app.query_one("#queue-status", Static).render())
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Queue view: facts" in commands and "Queue view: secrets" in commands
