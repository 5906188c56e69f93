"""A finding a person has seen can rest: ``check --ack`` records it, and it is news again once it changes."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import events, settle
from memoryd_emulation import memoryd_decides

from engram.store.drift.repair import repair
from engram.store.promotions import approve
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def overridden(root: Path, keys) -> None:
    """A clean root where memoryd then overrode two of engram's decisions (it decides without looking)."""
    with Store.open(root, keys=keys, actor="engram-test") as store:
        repair(store)
        approve(store, 16)
        approve(store, 17)
    memoryd_decides(root, 16, "rejected")
    memoryd_decides(root, 17, "rejected")


def test_an_acknowledged_finding_rests_and_is_recorded(fixture_root, unlocked_keys, capsys):
    overridden(fixture_root, unlocked_keys)
    code, out, _ = run(capsys, "check", "--root", str(fixture_root))
    assert code == 1 and "2  decision_overwritten:" in out

    code, out, _ = run(capsys, "check", "--ack", "decision_overwritten:16", "--root", str(fixture_root))
    assert code == 1 and "seen: 1 decision_overwritten:16 finding" in out  # #17 is still news
    assert "#16: approved by engram" in out and "(seen)" in out and "(1 seen)" in out

    code, out, _ = run(capsys, "check", "--ack", "decision_overwritten", "--root", str(fixture_root))
    assert code == 0 and "(2 seen)" in out and "no drift" in out, out
    [first, second] = [e for e in events(fixture_root) if e["event_type"] == "findings_seen"]
    assert [f["id"] for f in json.loads(first["details"])["findings"]] == ["16"]
    assert [f["id"] for f in json.loads(second["details"])["findings"]] == ["17"]

    code, out, _ = run(capsys, "check", "--json", "--root", str(fixture_root))
    item = json.loads(out)["findings"]["decision_overwritten"]
    assert code == 0 and item["seen"] == 2 and all(i["seen"] for i in item["items"])


def test_a_seen_finding_that_changes_is_news_again(fixture_root, unlocked_keys, capsys):
    overridden(fixture_root, unlocked_keys)
    assert run(capsys, "check", "--ack", "decision_overwritten", "--root", str(fixture_root))[0] == 0
    memoryd_decides(fixture_root, 16, "pending")  # overridden once more: another state than the one seen
    code, out, _ = run(capsys, "check", "--root", str(fixture_root))
    assert code == 1 and "#16: approved by engram" in out and "pending now" in out and "(1 seen)" in out


def test_what_repair_fixes_or_nothing_names_cannot_be_acknowledged(fixture_root, unlocked_keys, capsys):
    overridden(fixture_root, unlocked_keys)
    code, _, err = run(capsys, "check", "--ack", "row_without_file", "--root", str(fixture_root))
    assert code == 2 and "repaired by `engram repair`" in err
    code, _, err = run(capsys, "check", "--ack", "decision_overwritten:99", "--root", str(fixture_root))
    assert code == 2 and "nothing found that 'decision_overwritten:99' names" in err
    code, _, err = run(capsys, "check", "--ack", "no_such_kind", "--root", str(fixture_root))
    assert code == 2 and "no finding kind 'no_such_kind'" in err
    assert not [e for e in events(fixture_root) if e["event_type"] == "findings_seen"]


async def test_s_on_the_scopes_panes_findings_marks_a_kind_seen(fixture_root, unlocked_keys, capsys):
    overridden(fixture_root, unlocked_keys)
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        app = EngramApp(store)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(app, pilot)
            await app.action_show_pane("scopes")
            await settle(app, pilot)
            pane = app.query_one("ScopesPane")
            findings = pane.query_one("#findings")
            findings.focus()
            await pilot.press("s")
            await settle(app, pilot)
            await pilot.press("y")
            await settle(app, pilot)
            assert "2 seen" in str(findings.get_row_at(0))
    assert len([e for e in events(fixture_root) if e["event_type"] == "findings_seen"]) == 1
    assert run(capsys, "check", "--root", str(fixture_root))[0] == 0
