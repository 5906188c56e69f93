"""A day's triage on a fresh demo root, pressed key by key: ``python docs/walkthrough.py`` writes the screenshots
docs/triage.md shows (docs/walkthrough/*.svg), at 80x24 and, for the wide steps, 200x50."""

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

OUT = Path(__file__).resolve().parent / "walkthrough"

# (file name, keys pressed before the screenshot); each step goes on from where the one before left the console
SMALL = [
    ("01-queue", []),
    ("02-approve-a-secret", ["a"]),  # the demo's first proposal says a password: engram asks first
    ("03-redacted-and-approved", ["r"]),
    ("04-approve-quarantined", ["a"]),  # the second plants an access key: the screen put it in quarantine
    ("05-rejected-a-secret", ["n", "R"]),
    ("05a-reveal", ["x"]),  # the next hides an instruction in an HTML comment
    ("05b-rejected-poisoned", ["escape", "space", "space", "space", "R", "y"]),  # space marks and moves down
    ("06-approve-plain", ["a"]),
    ("07-reject-with-a-reason", ["r", *"out of date", "enter"]),
    ("08-reject-at-once", ["R"]),
    ("09-snooze-prompt", ["z", *"3d"]),
    ("10-snoozed", ["enter"]),
    ("11-merge-picker", ["m"]),
    ("12-merge-confirm", ["down", "enter"]),
    ("13-merged", ["y"]),
    ("14-undo", ["u"]),
    ("15-bulk-prompt", ["space", "space", "space", "d"]),
    ("16-bulk-deferred", ["enter"]),
    ("17-clusters", ["c"]),
    ("18-unlock", ["ctrl+u"]),
    ("19-unlocked", [*"engram-demo-passphrase", "enter"]),
    ("20-help", ["question_mark"]),
    ("21-audit-verified", ["escape", "6", "v"]),
    ("22-search", ["2", *"rotate", "escape"]),
]
WIDE = [
    ("30-queue-wide", []),
    ("31-search-wide", ["2", *"rotate", "escape", "j"]),
    ("32-session-opened", ["1", "enter"]),
    ("33-back-to-the-queue", ["escape"]),
]


async def walk(store: Store, size: tuple[int, int], steps: list[tuple[str, list[str]]]) -> None:
    app = EngramApp(store)
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        for name, keys in steps:
            for key in keys:
                await pilot.press(key)
                await pilot.pause(0.2)  # a key that opens a dialog: the next one goes to the dialog
            await settle(app, pilot)
            app.save_screenshot(str(OUT / f"{name}.svg"))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        with Store.open(Path(home) / "demo", create=True, actor="engram-demo") as store:
            build_demo(store, 3000, 7)
        with Store.open(Path(home) / "demo") as store:
            asyncio.run(walk(store, (80, 24), SMALL))
            asyncio.run(walk(store, (200, 50), WIDE))


if __name__ == "__main__":
    main()
