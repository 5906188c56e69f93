"""Malformed frontmatter, index rows and audit lines, fed to every command and to the console.

Each case damages a fresh copy of memoryd's root one way; then every command runs on it in turn. Whatever the
damage, a command ends with an exit code (0, 1 or 2) and at most one line per problem, never a traceback, and
within a time limit (a hang fails the case, by SIGALRM); nothing outside the root changes. The console opens on
each kind of damage, every pane is shown, and it is still running at the end.
"""

from __future__ import annotations

import hashlib
import signal
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import settle
from textual.pilot import Pilot

from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.cli import main

SECONDS = 60  # per command: the slowest (repair, rebuild-index) take about a second on this root
PLAIN_FILE = "scopes/710d5aaf7a15/decisions/2026-11-12-Switch_from_Vite_to_Sentry-1794522153.md"
HEAD = b"---\ntitle: T\nslug: s\ntype: decision\nscope_hash: 710d5aaf7a15\nsource: x\ncreated_at: 2026-01-01\n---\n"

FRONTMATTER: dict[str, bytes] = {
    "empty": b"",
    "no closing fence": b"---\ntitle: T\nslug: s\n",
    "broken yaml": b"---\ntitle: [unclosed\n: :\n---\nbody\n",
    "a list, not a mapping": b"---\n- a\n- b\n---\nbody\n",
    "alias bomb": b"---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    b"f: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n---\nbody\n",
    "invalid utf-8": HEAD.replace(b"title: T", b"title: \xff\xfe") + b"body\n",
    "NUL bytes": HEAD + b"bo\x00dy\n",
    "wrong types": HEAD.replace(b"created_at: 2026-01-01", b"created_at: [1, 2]") + b"body\n",
    "slug climbing out": HEAD.replace(b"slug: s", b"slug: ../../../escape") + b"body\n",
    "escape sequences": HEAD.replace(b"title: T", b'title: "\\e]52;c;cm0=\\a[/x]"') + b"body\n",
    "byte order mark and CRLF": b"\xef\xbb\xbf" + HEAD.replace(b"\n", b"\r\n") + b"body\r\n",
    "a megabyte title": HEAD.replace(b"title: T", b"title: " + b"x" * 1_000_000) + b"body\n",
}

ROWS: dict[str, str] = {
    "body_path escaping the root": "UPDATE memories SET body_path = '../../../etc/passwd' WHERE rowid = 1",
    "body_path absolute": "UPDATE memories SET body_path = '/etc/hostname' WHERE rowid = 2",
    "slug with a slash": "UPDATE memories SET slug = 'a/../../b' WHERE rowid = 3",
    "unknown decay state": "UPDATE memories SET decay_state = 'bogus' WHERE rowid = 4",
    "date that is no date": "UPDATE memories SET created_at = 'yesterday-ish' WHERE rowid = 5",
    "text that is not utf-8": "UPDATE memories SET title = CAST(x'ff00fe' AS TEXT) WHERE rowid = 6",
    "promotion scope climbing out": "UPDATE promotions SET scope_hash = '../x' WHERE status = 'pending'",
    "promotion JSON that is not": "UPDATE promotions SET proposed_triggers = '[unclosed', dura_score = '{'",
    "promotion type unknown and title empty": "UPDATE promotions SET proposed_type = '', proposed_title = ''",
    "promotion status unknown": "UPDATE promotions SET status = 'weird' WHERE rowid = 1",
}

AUDIT: dict[str, Callable[[bytes], bytes]] = {
    "garbage line": lambda log: log + b"not json\n",
    "a JSON array": lambda log: log + b"[1, 2, 3]\n",
    "missing prev_hash": lambda log: log + b'{"event_type": "x"}\n',
    "torn tail": lambda log: log + b'{"scope_hash": "x", "ev',
    "invalid utf-8": lambda log: log + b'{"event_type": "\xff\xfe"}\n',
    "NUL bytes": lambda log: log + b"\x00" * 100 + b"\n",
    "details not a string": lambda log: log + b'{"event_type": "x", "details": {"op_id": 1}, "this_hash": 5}\n',
    "blank lines": lambda log: log + b"\n\n   \n",
    "a megabyte line": lambda log: log + b'{"tool": "' + b"y" * 1_000_000 + b'"}\n',
    "a line in the middle edited": lambda log: log.replace(b"access_granted", b"access_GRANTED", 1),
}

COMMANDS = [
    ["ls"],
    ["stats"],
    ["check"],
    ["scopes"],
    ["promotions", "list"],
    ["audit", "verify"],
    ["audit", "log"],
    ["ls", "--json"],
    ["check", "--json"],
    ["audit", "repair"],
    ["repair"],
    ["rebuild-index"],
    ["check"],
]


class Hang(Exception):
    pass


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expired(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def damage(root: Path, kind: str, case: str) -> None:
    if kind == "frontmatter":
        (root / PLAIN_FILE).write_bytes(FRONTMATTER[case])
    elif kind == "row":
        with sqlite3.connect(root / "index.db") as con:
            con.execute(ROWS[case])
    else:
        log = root / "audit" / "audit.jsonl"
        log.write_bytes(AUDIT[case](log.read_bytes()))


def outside(root: Path) -> dict[str, str]:
    """Every file beside the root (the test's own directory), by content."""
    return {
        str(p.relative_to(root.parent)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.parent.rglob("*"))
        if p.is_file() and root not in p.parents
    }


CASES = [("frontmatter", c) for c in FRONTMATTER] + [("row", c) for c in ROWS] + [("audit", c) for c in AUDIT]


@pytest.mark.parametrize(("kind", "case"), CASES, ids=[f"{k}: {c}" for k, c in CASES])
def test_every_command_answers_in_one_line_on_damage(fixture_root, kind, case, capsys):
    (fixture_root.parent / "neighbour.txt").write_text("not engram's")
    damage(fixture_root, kind, case)
    before = outside(fixture_root)
    each_answers_in_one_line(fixture_root, COMMANDS, capsys)
    assert outside(fixture_root) == before


def each_answers_in_one_line(root: Path, commands: list[list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    """Every command ends with 0, 1 or 2 within the time limit, never a traceback; exit 2 is one line."""
    for command in commands:
        with time_limit(SECONDS):
            code = main([*command, "--root", str(root)])
        said = capsys.readouterr()
        assert code in (0, 1, 2), command
        assert "Traceback" not in said.err and "Traceback" not in said.out, (command, said.err)
        if code == 2:
            assert said.err.startswith("engram: ") and len(said.err.strip().splitlines()) == 1, (command, said.err)


async def every_pane_then_approve(app: EngramApp, pilot: Pilot) -> None:
    """Show every pane, each reading what it shows, then approve whatever is first, damaged or not."""
    await settle(app, pilot)
    for pane in ("search", "supersedes", "decay", "graph", "audit", "scopes", "queue"):
        await app.action_show_pane(pane)
        await settle(app, pilot)
    await pilot.press("a")
    await settle(app, pilot)


@pytest.mark.parametrize("kind", ["frontmatter", "row", "audit"])
async def test_the_console_opens_on_every_damage_at_once_and_keeps_running(fixture_root, unlocked_keys, kind):
    cases = {"frontmatter": FRONTMATTER, "row": ROWS, "audit": AUDIT}[kind]
    for n, case in enumerate(cases):
        if kind == "frontmatter":  # one damaged file per case, side by side
            (fixture_root / PLAIN_FILE.replace(".md", f"-damaged-{n}.md")).write_bytes(FRONTMATTER[case])
        else:
            damage(fixture_root, kind, case)
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        app = EngramApp(store)
        with time_limit(SECONDS * 2):
            async with app.run_test(size=(120, 40)) as pilot:
                await every_pane_then_approve(app, pilot)
                assert app.is_running
