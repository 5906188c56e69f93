"""Data cannot drive the terminal: escape sequences in titles, bodies and memoryd's audit fields come out of
the CLI as visible ``\\uXXXX`` escapes (text and --json alike), never as the raw bytes a terminal acts on."""

from __future__ import annotations

import json
import sqlite3

from hypothesis import given
from hypothesis import strategies as st
from memoryd_emulation import memoryd_append

from engram.tui.cli import main
from engram.tui.terminal_safe import UNSAFE, visible

OSC52 = "\x1b]52;c;ZXZpbA==\x07"  # write "evil" to the clipboard
CLEAR = "\x1b[2J\x1b[H"
CSI8 = "\x9b2J"  # the 8-bit form of CSI


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def plant(root) -> None:
    """A memory title, a pending promotion and an audit line, each carrying escape sequences."""
    con = sqlite3.connect(root / "index.db")
    con.execute(
        "UPDATE memories SET title = ? WHERE slug = (SELECT slug FROM memories ORDER BY slug LIMIT 1)",
        (f"innocent{OSC52}{CLEAR}",),
    )
    con.execute(
        "UPDATE promotions SET proposed_title = ? WHERE id = (SELECT MIN(id) FROM promotions WHERE status = 'pending')",
        (f"approve me{CSI8}\u202e",),
    )
    con.commit()
    con.close()
    memoryd_append(
        root / "audit" / "audit.jsonl",
        {"actor": "memoryd", "event_type": f"tool{OSC52}", "scope_hash": None, "target_id": CLEAR, "details": "{}"},
    )


def test_listings_show_escapes_instead_of_sending_them(capsys, fixture_root):
    plant(fixture_root)
    for args in (["ls"], ["promotions", "list"], ["audit", "log"]):
        for fmt in ([], ["--json"]):
            code, out, err = run(capsys, *args, *fmt, "--root", str(fixture_root))
            assert not UNSAFE.search(out + err), (args, fmt)
            if fmt:
                json.loads(out)  # still valid JSON, the same strings once parsed
    _, out, _ = run(capsys, "ls", "--root", str(fixture_root))
    assert "innocent\\u001b]52;c;ZXZpbA==\\u0007" in out


@given(st.text())
def test_visible_leaves_nothing_a_terminal_acts_on(text):
    shown = visible(text)
    assert not UNSAFE.search(shown)
    assert visible(shown) == shown  # and showing twice changes nothing more
    assert shown == text or "\\u" in shown
