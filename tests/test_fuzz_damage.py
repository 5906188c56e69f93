"""Damaged databases and broken config files (engram's and memoryd's), fed to every command and to the console.

As in ``test_fuzz.py``: each case damages a fresh copy of memoryd's root (or a copy of its config) one way, then
every command runs on it; a command ends with 0, 1 or 2 and one line, never a traceback or a hang, and the
console opens through the same path ``engram`` takes, shows every pane, and is still running at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FIXTURE
from helpers import settle
from test_fuzz import COMMANDS, SECONDS, each_answers_in_one_line, every_pane_then_approve, outside, time_limit

from engram.store.service import Store
from engram.store.settings import Settings, settings_or_defaults
from engram.tui.app import EngramApp
from engram.tui.cli import main

EXTRA = [["promotions", "approve", "16"], ["audit", "log", "--json"], ["scopes", "--json"]]


def _checkpointed(root: Path) -> Path:
    """index.db with its WAL folded in, so damage to the file is damage to the database."""
    db = root / "index.db"
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for side in ("index.db-wal", "index.db-shm"):
        (root / side).unlink(missing_ok=True)
    return db


def _corrupt_pages(root: Path) -> None:
    db = _checkpointed(root)
    data = bytearray(db.read_bytes())
    for page in range(2, len(data) // 4096, 3):  # every third page from the second: the b-trees' own bytes
        data[page * 4096 + 8 : page * 4096 + 64] = b"\xa5" * 56
    db.write_bytes(bytes(data))


def _replace(root: Path, make: Callable[[Path], None]) -> None:
    db = _checkpointed(root)
    db.unlink()
    make(db)


def _sql(statement: str) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        with sqlite3.connect(root / "index.db") as con:
            con.executescript(statement)

    return damage


DATABASE: dict[str, Callable[[Path], None]] = {
    "corrupt pages": _corrupt_pages,
    "an empty file": lambda root: _replace(root, lambda db: db.write_bytes(b"")),
    "not a database": lambda root: _replace(root, lambda db: db.write_text("these are my notes\n" * 300)),
    "a directory": lambda root: _replace(root, lambda db: db.mkdir()),
    "a FIFO": lambda root: _replace(root, os.mkfifo),
    "the promotions table dropped": _sql("DROP TABLE promotions"),
    "a column dropped": _sql("ALTER TABLE relations DROP COLUMN confidence; ALTER TABLE entities DROP COLUMN aliases"),
    "fields of the wrong type": _sql(
        "UPDATE memories SET title = 42, created_at = x'00ff', recall_count = 'many', ttl_days = 'x', "
        "decay_state = 3.5, updated_at = 7 WHERE rowid IN (1, 2, 3);"
        "UPDATE promotions SET dura_score = 12, proposed_triggers = 5, created_at = 1.5 WHERE rowid <= 3"
    ),
    "audit lines of the wrong types": lambda root: (
        (root / "audit" / "audit.jsonl")
        .open("a")
        .write(
            '{"ts": 5, "event_type": ["x"], "actor": {"a": 1}, "scope_hash": 7, "target_id": [], "details": 3}\n'
            '{"ts": null, "event_type": null, "details": "{not json", "seq": "x"}\n'
        )
    ),
}

MEMORYD_CONFIG: dict[str, str] = {
    "not TOML": "[sensitive\nkey_source = passphrase\n",
    "kdf_iters = 0": '[sensitive]\nkey_source = "passphrase"\nkdf_iters = 0\n',
    "kdf_iters a string": '[sensitive]\nkey_source = "passphrase"\nkdf_iters = "many"\n',
    "kdf_iters a table": '[sensitive]\nkey_source = "passphrase"\n[sensitive.kdf_iters]\nx = 1\n',
    "key_source a number": "[sensitive]\nkey_source = 3\nkdf_iters = 600000\n",
    "key_source unknown": '[sensitive]\nkey_source = "tpm"\nkdf_iters = 600000\n',
    "sensitive not a table": 'sensitive = "yes"\n',
}

ENGRAM_CONFIG: dict[str, str] = {
    "not TOML": "[ui\ntheme = \n",
    "unknown keys": 'theme = "engram-dark"\nsparkles = true\n[nonsense]\nx = 1\n',
    "values of the wrong type": "theme = 5\n[audit]\ncheckpoint_copy = []\n",
    "not UTF-8": "[ui]\ntheme = '\udcff'\n",
}


def _memoryd_config(root: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    home = root.parent / "memoryd-config"
    shutil.copytree(FIXTURE / "config" / "memoryd", home)
    (home / "config.toml").write_text(text)
    monkeypatch.setenv("MEMORYD_CONFIG_HOME", str(home))


def _engram_config(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    from engram.store.paths import engram_config_dir

    folder = engram_config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_bytes(text.encode("utf-8", "surrogateescape"))


PYTHON_ERROR = re.compile(r"[A-Za-z_.]+(Error|Exception|Warning): ")
CASES = (
    [("database", c) for c in DATABASE]
    + [("memoryd config", c) for c in MEMORYD_CONFIG]
    + [("engram config", c) for c in ENGRAM_CONFIG]
)


def damage(root: Path, monkeypatch: pytest.MonkeyPatch, kind: str, case: str) -> None:
    if kind == "database":
        DATABASE[case](root)
    elif kind == "memoryd config":
        _memoryd_config(root, monkeypatch, MEMORYD_CONFIG[case])
    else:
        _engram_config(monkeypatch, ENGRAM_CONFIG[case])


@pytest.mark.parametrize(("kind", "case"), CASES, ids=[f"{k}: {c}" for k, c in CASES])
def test_every_command_answers_in_one_line_on_damage(fixture_root, kind, case, capsys, monkeypatch):
    (fixture_root.parent / "neighbour.txt").write_text("not engram's")
    damage(fixture_root, monkeypatch, kind, case)
    before = outside(fixture_root)
    each_answers_in_one_line(fixture_root, [*COMMANDS, *EXTRA], capsys)
    after = {k: v for k, v in outside(fixture_root).items() if not k.startswith("memoryd-config")}
    assert after == {k: v for k, v in before.items() if not k.startswith("memoryd-config")}


def open_as_engram_does(root: Path) -> EngramApp:
    """What ``engram --root ROOT`` builds before it runs the app (see :func:`engram.tui.cli.console.open_console`)."""
    from engram.tui.cli.console import console_app

    return console_app(root)


@pytest.mark.parametrize(("kind", "case"), CASES, ids=[f"{k}: {c}" for k, c in CASES])
async def test_the_console_opens_on_each_damage_and_keeps_running(fixture_root, kind, case, monkeypatch):
    damage(fixture_root, monkeypatch, kind, case)
    with time_limit(SECONDS * 2):
        app = open_as_engram_does(fixture_root)
        async with app.run_test(size=(120, 40)) as pilot:
            await every_pane_then_approve(app, pilot)
            assert app.is_running and not raw_failures(app)
    app.store.close()


def raw_failures(app: EngramApp) -> list[str]:
    """What the console said of a failure no store error explains (a Python error's kind and message): each is
    a damage engram did not expect and cannot word for a person."""
    return [n.message for n in app._notifications if n.title == "That did not work" and PYTHON_ERROR.match(n.message)]


def test_a_broken_engram_config_is_named_and_the_defaults_used(monkeypatch):
    _engram_config(monkeypatch, ENGRAM_CONFIG["unknown keys"])
    settings, problem = settings_or_defaults()
    assert problem and "unknown setting 'sparkles'" in problem and "using the defaults" in problem
    assert settings == Settings()


def test_store_opens_with_a_broken_memoryd_config_read_only_for_keys(fixture_root, monkeypatch):
    _memoryd_config(fixture_root, monkeypatch, MEMORYD_CONFIG["kdf_iters = 0"])
    with Store.open(fixture_root) as store:
        assert store.keys.problem and "kdf_iters" in store.keys.problem


# ----------------------------------------------------------------- a root nothing can write, a locked index


@pytest.fixture
def read_only_root(fixture_root: Path, tmp_path: Path):
    """The root on a read-only bind mount (which stops root too); without mounts, as a user with no write bit."""
    target = tmp_path / "mounted-ro"
    target.mkdir()
    if os.geteuid() != 0:
        for path in [fixture_root, *fixture_root.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        yield fixture_root
        return
    mounted = subprocess.run(["mount", "--bind", str(fixture_root), str(target)], capture_output=True).returncode == 0
    if not mounted or subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], capture_output=True).returncode:
        if mounted:
            subprocess.run(["umount", str(target)], check=False)
        pytest.skip("no read-only bind mount here, and running as root: no way to make a root read-only")
    try:
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_every_command_on_a_read_only_root_answers_and_repair_refuses_whole(read_only_root, capsys):
    before = {p: p.read_bytes() for p in read_only_root.rglob("*") if p.is_file()}
    for command in [*COMMANDS, *EXTRA]:
        with time_limit(SECONDS):
            code = main([*command, "--root", str(read_only_root)])
        said = capsys.readouterr()
        assert code in (0, 1, 2) and "Traceback" not in said.err, (command, said.err)
        if command == ["repair"]:
            assert code == 2 and said.err.startswith("engram: nothing repaired: the data root") and "read" in said.err
    assert main(["ls", "--root", str(read_only_root)]) == 0 and "Keep PRs" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in read_only_root.rglob("*") if p.is_file()} == before


async def test_the_console_opens_a_read_only_root_read_only(read_only_root):
    app = open_as_engram_does(read_only_root)
    assert app.store.read_only and "read-only" in str(app.store.read_only_reason)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert "READ-ONLY" in str(app.query_one("#status").render())
        await pilot.press("a")  # an approval: refused with a notification, the console stays
        await settle(app, pilot)
        assert app.is_running and any("read-only" in str(n.message) for n in app._notifications)
    app.store.close()


def test_repair_on_a_locked_index_says_so_within_seconds(fixture_root, capsys):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(fixture_root / 'index.db')!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with time_limit(30):
            code = main(["repair", "--root", str(fixture_root)])
        err = capsys.readouterr().err
        assert code == 2 and "locked by another process" in err and "run it again" in err
    finally:
        holder.kill()
        holder.wait()
