"""The documentation's screenshots, taken from a fresh demo root: ``python docs/screenshots.py`` writes
docs/queue.svg, docs/cluster.svg, docs/calibration.svg, docs/reveal.svg, one of each other pane
(docs/search.svg, supersedes, decay, graph, audit, scopes, poison) and docs/history.svg (a search result's
history), a console 132x36 in the default theme."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers.settle: the tests' own wait


from helpers import settle  # noqa: E402

from engram.store.demo import build_demo  # noqa: E402
from engram.store.memories import edit_memory  # noqa: E402
from engram.store.service import Store  # noqa: E402
from engram.tui.app import EngramApp  # noqa: E402
from engram.tui.widgets.hitlist import HitList  # noqa: E402

DOCS = Path(__file__).resolve().parent
SIZE = (132, 36)


async def shoot(store: Store) -> None:
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.save_screenshot(str(DOCS / "queue.svg"))
        await pilot.press("c")
        await settle(app, pilot)
        await pilot.press("g", "j", "j")  # the first cluster outside the locked scope: its best
        await settle(app, pilot)
        app.save_screenshot(str(DOCS / "cluster.svg"))
        await pilot.press("t")
        await settle(app, pilot)
        app.save_screenshot(str(DOCS / "calibration.svg"))
        await pilot.press("escape", "c", "slash", *"screen:quarantine", "enter")
        await settle(app, pilot)
        await pilot.press("G", "x")  # the demo's last poisoned proposal: an instruction in Unicode tag characters
        await settle(app, pilot)
        app.save_screenshot(str(DOCS / "reveal.svg"))
        await pilot.press("escape")
        for key, name, typed in PANES:
            await pilot.press(key, *typed)
            await settle(app, pilot)
            app.save_screenshot(str(DOCS / f"{name}.svg"))
            if name == "search":  # the highlighted result's history, once edited, over the search
                slug = app.query_one(HitList).current.slug
                body = store.read_doc(store.memory(slug).body_path).body
                edit_memory(store, slug, body=body.replace("Context", "Background", 1) + "\nChecked again in June.\n")
                await pilot.press("h", "j")  # the revision before the edit, against the file now
                await settle(app, pilot)
                app.save_screenshot(str(DOCS / "history.svg"))
                await pilot.press("escape")


# each pane's key, its screenshot's name, and what is typed there first
PANES = [
    ("2", "search", (*"kafka", "enter")),  # enter: to the results, so the next pane keys are not typed
    ("3", "supersedes", ()),
    ("4", "decay", ()),
    ("5", "graph", ()),
    ("6", "audit", ()),
    ("7", "scopes", ()),
    ("8", "poison", ()),
]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "demo"
        with Store.open(root, create=True, actor="engram-demo") as store:
            build_demo(store, 3000)
        with Store.open(root, actor="engram-tui") as store:
            asyncio.run(shoot(store))


if __name__ == "__main__":
    main()
