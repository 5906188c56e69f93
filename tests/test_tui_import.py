"""Importing from the console with real keys: pick OpenRelix, type the path, read the preview (counts,
malformed rows, the secret flagged), import, then approve an imported promotion in the queue."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import events, settle
from textual.widgets import DataTable, Static

from engram.store.models import Memory, Promotion
from engram.tui.app import EngramApp
from engram.tui.panes.queue import QueuePane
from engram.tui.panes.search import SearchPane
from engram.tui.screens.importer import ImportScreen

SIZE = (140, 45)
FIXTURES = Path(__file__).parent / "fixtures" / "importers"


async def test_preview_then_import_then_approve_in_the_queue(store, fixture_root, tmp_path):
    source = tmp_path / "openrelix"
    shutil.copytree(FIXTURES / "openrelix", source)
    pending = Promotion.select().where(Promotion.status == "pending").count()
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("I")
        assert isinstance(app.screen, ImportScreen)
        await pilot.press("enter")  # openrelix is the first system
        await pilot.press(*str(source), "enter")
        await settle(app, pilot)
        summary = str(app.screen.query_one("#import-summary", Static).render())
        assert "4 sessions, 3 pending promotions" in summary and "4 malformed" in summary
        findings = str(app.screen.query_one("#import-findings", Static).render())
        assert "OpenAI-style API key sk-Z" in findings and "ZZZZZZZZ" not in findings
        counts = app.screen.query_one("#import-counts", DataTable)
        assert counts.row_count == 6
        assert Memory.select().where(Memory.source == "importer-openrelix").count() == 0  # a preview writes nothing
        await pilot.press("enter")  # the Import button has the focus
        await settle(app, pilot)
        assert not isinstance(app.screen, ImportScreen)
        queue = app.query_one(QueuePane)
        assert len(queue.items) == pending + 3
        await pilot.press("slash", *"prefer pnpm npm", "enter")
        await settle(app, pilot)
        titles = [i.title for i in queue.items]
        await pilot.press(*["j"] * titles.index("Prefer pnpm over npm"), "a")
        await settle(app, pilot)
        await pilot.press("2", *"sanitized sample")
        await settle(app, pilot)
        assert [h.title for h in app.query_one(SearchPane).result.hits] == ["Design a sanitized sample state"]
    pnpm = Promotion.get(Promotion.proposed_title == "Prefer pnpm over npm")
    assert pnpm.status == "approved"
    memory = store.memory(f"promoted-{pnpm.id}-{pnpm.source_session_slug}")
    assert store.read_doc(memory.body_path).frontmatter.type.value == "preference"
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds.count("import_item") == 7 and "import_run" in kinds and kinds[-1] == "promotion_approved"


async def test_a_bad_path_is_a_notification_and_nothing_changes(store, fixture_root, tmp_path):
    app = EngramApp(store)
    before = len(events(fixture_root))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("I", "down", "down", "enter", *str(tmp_path / "missing"), "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ImportScreen)
        assert any("no such file" in n.message for n in app._notifications)
        await pilot.press("escape")
        assert not isinstance(app.screen, ImportScreen)
    assert len(events(fixture_root)) == before
