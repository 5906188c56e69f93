"""The console on bad data and a failing machine: each failure is a notification, and the console keeps running.

A promotion whose scope climbs out of its directory, a title that is not UTF-8, an ``audit`` that is a file and
a read-only file system used to raise through a worker and end the console with a traceback."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from helpers import settle

from engram.store.models import Promotion
from engram.store.service import Store
from engram.store.write.engine import FileEngine
from engram.tui.app import EngramApp
from engram.tui.cli import main
from engram.tui.panes.queue import QueuePane

SIZE = (140, 45)


def pending_first(app) -> int:
    return app.query_one(QueuePane).items[0].id


def messages(app) -> str:
    return "\n".join(n.message for n in app._notifications)


def set_column(root: Path, pid: int, sql: str) -> None:
    with sqlite3.connect(root / "index.db") as con:
        con.execute(f"UPDATE promotions SET {sql} WHERE id = ?", (pid,))


async def test_a_scope_climbing_out_of_the_root_is_refused_with_a_notification(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            pid = pending_first(app)
            set_column(fixture_root, pid, "scope_hash = '../../evil'")
            await pilot.press("a")
            await settle(app, pilot)
            assert app.is_running and "cannot become a memory" in messages(app)
        assert Promotion.get_by_id(pid).status == "pending"
    assert not (fixture_root.parent / "evil").exists()


async def test_a_title_that_is_not_utf8_is_listed(fixture_root, unlocked_keys, capsys):
    with Store.open(fixture_root) as store:
        pid = Promotion.select().where(Promotion.status == "pending").first().id
    set_column(fixture_root, pid, "proposed_title = CAST(x'4e6f7420ff7574662d38' AS TEXT)")
    assert main(["promotions", "list", "--root", str(fixture_root)]) == 0
    assert "Not \ufffdutf-8" in capsys.readouterr().out
    assert main(["check", "--root", str(fixture_root)]) in (0, 1)
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            titles = [item.title for item in app.query_one(QueuePane).items]
            assert "Not \ufffdutf-8" in titles and app.is_running


async def test_an_audit_path_that_is_a_file_is_a_notification(fixture_root, store, capsys):
    audit = fixture_root / "audit"
    (audit / "audit.jsonl").unlink()
    audit.rmdir()
    audit.write_text("not a directory")
    app = EngramApp(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await app.action_show_pane("audit")
        await settle(app, pilot)
        assert app.is_running and "Not a directory" in messages(app)
    code = main(["audit", "verify", "--root", str(fixture_root)])
    err = capsys.readouterr()
    assert code == 2 and "Not a directory" in err.out + err.err


async def test_a_read_only_file_system_fails_the_approval_not_the_console(fixture_root, unlocked_keys, monkeypatch):
    def refuse(self, path, write, durable):  # what the kernel says on a file system mounted read-only
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(FileEngine, "write_file", refuse)
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        app = EngramApp(store)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            pid = pending_first(app)
            await pilot.press("a")
            await settle(app, pilot)
            assert app.is_running and "Read-only file system" in messages(app)
        assert Promotion.get_by_id(pid).status == "pending"


def test_the_cli_says_one_line_for_a_scope_climbing_out(fixture_root, capsys):
    with Store.open(fixture_root):
        pid = Promotion.select().where(Promotion.status == "pending", Promotion.scope_hash == "710d5aaf7a15").first().id
    set_column(fixture_root, pid, "scope_hash = '../../evil'")
    code = main(["promotions", "approve", str(pid), "--root", str(fixture_root)])
    said = capsys.readouterr()
    assert code == 1 and (said.out + said.err).strip() == (
        f"engram: promotion #{pid} cannot become a memory: field scope_hash: "
        "Value error, scope_hash '../../evil' is not a directory name; nothing changed"
    )
