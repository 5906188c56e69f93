"""The README's screenshots, taken from a fresh demo root: ``python docs/screenshots.py`` writes docs/queue.svg,
docs/cluster.svg, docs/calibration.svg and docs/reveal.svg (a console 132x36, the default theme)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers.settle: the tests' own wait


from helpers import settle  # noqa: E402

from engram.store.demo import build_demo  # noqa: E402
from engram.store.service import Store  # noqa: E402
from engram.tui.app import EngramApp  # noqa: E402

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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "demo"
        with Store.open(root, create=True, actor="engram-demo") as store:
            build_demo(store, 3000)
        with Store.open(root) as store:
            asyncio.run(shoot(store))


if __name__ == "__main__":
    main()
