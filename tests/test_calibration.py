"""memoryd's thresholds against a person's decisions (store/calibration.py), the screen that shows them (t in the
queue), and the audited write of memoryd's config.toml."""

from __future__ import annotations

import json
import sqlite3
import tomllib

import pytest
from helpers import events, settle, shown
from hypothesis import given
from hypothesis import strategies as st
from memoryd_emulation import memoryd_proposes
from textual.widgets import Static

from engram.store import calibration
from engram.store.calibration import Decided, decisions, outcome, set_thresholds, suggest
from engram.store.errors import BadInput, Conflict, ReadOnlyStore, StoreError
from engram.store.service import Store
from engram.tui.app import EngramApp
from engram.tui.cli import main
from engram.tui.screens.calibration import CalibrationScreen

CONFIG = """# memoryd, by hand
[llm]
provider = "claude-code"  # keep

[governance]
auto_promote_threshold = 0.85
auto_reject_threshold = 0.5
"""


@pytest.fixture
def memoryd_config(tmp_path, monkeypatch):
    """A writable memoryd config (the fixture's own stays as memoryd wrote it)."""
    home = tmp_path / "memoryd-config"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    monkeypatch.setenv("MEMORYD_CONFIG_HOME", str(home))
    return home / "config.toml"


def decide(root, rows: list[tuple[float, str]]) -> None:
    """Promotions a person decided in memoryd's own console: status flipped, decided_at left empty."""
    for score, status in rows:
        pid = memoryd_proposes(root, dura=score, title=f"t{score}{status}", body=f"b{score}{status}")
        con = sqlite3.connect(root / "index.db")
        con.execute("UPDATE promotions SET status = ? WHERE id = ?", (status, pid))
        con.commit()
        con.close()


def test_memoryds_own_approvals_are_not_a_persons_decisions(store):
    """In the root memoryd wrote, its auto-approvals carry decided_at == created_at; approvals by a person in its
    console carry none."""
    found = decisions(store)
    con = sqlite3.connect(store.layout.root / "index.db")
    person = con.execute(
        "SELECT count(*) FROM promotions WHERE status IN ('approved', 'merged', 'rejected') "
        "AND (decided_at IS NULL OR decided_at != created_at)"
    ).fetchone()[0]
    auto = con.execute("SELECT count(*) FROM promotions WHERE decided_at = created_at").fetchone()[0]
    assert auto and len(found) == person


def test_the_average_is_memoryds():
    assert calibration.memoryd_average(json.dumps({"D": 1, "U": 0.5, "R": 0.5, "A": 0.0})) == 0.5
    assert calibration.memoryd_average("not json") == 0.0


def test_outcome_counts_what_memoryd_would_have_done():
    decided = [Decided(s, k, "fact", "codex") for s, k in [(0.9, True), (0.9, False), (0.4, True), (0.3, False)]]
    decided.append(Decided(0.6, True, "fact", "codex"))
    o = outcome(decided, 0.85, 0.5)
    assert (o.kept_auto_approved, o.dropped_auto_approved, o.kept_auto_rejected, o.dropped_auto_rejected) == (
        1,
        1,
        1,
        1,
    )
    assert o.left_for_review == 1 and o.decided == 5


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=20, max_size=200))
def test_a_suggestion_keeps_its_promises(rows):
    decided = [Decided(s, k, "fact", "") for s, k in rows]
    s = suggest(decided)
    if s.promote_at is not None:
        above = [d for d in decided if d.score >= s.promote_at]
        assert len(above) >= 5 and sum(d.kept for d in above) / len(above) >= calibration.TRUSTED
    if s.reject_below is not None:
        below = [d for d in decided if d.score < s.reject_below]
        assert len(below) >= 5 and sum(d.kept for d in below) / len(below) <= calibration.MISSED
    if s.promote_at is not None and s.reject_below is not None:
        assert s.reject_below <= s.promote_at


def test_a_clear_history_gives_the_line_between_them():
    decided = [Decided(i / 100, i >= 70, "fact", "") for i in range(40, 100)]
    s = suggest(decided)
    # approved from 0.70 up: at 0.69 one rejection among 31 is still within 95 %, and the reject line stops there
    assert s.promote_at == 0.69 and s.reject_below == 0.69
    assert suggest(decided[:5]).promote_at is None


def test_writing_keeps_the_rest_of_memoryds_config_and_audits_the_old_values(store, memoryd_config):
    details = set_thresholds(store, 0.8, 0.55)
    text = memoryd_config.read_text()
    assert "# memoryd, by hand" in text and 'provider = "claude-code"  # keep' in text
    governance = tomllib.loads(text)["governance"]  # memoryd reads it with tomllib and float()
    assert (float(governance["auto_promote_threshold"]), float(governance["auto_reject_threshold"])) == (0.8, 0.55)
    last = events(store.layout.root)[-1]
    assert last["event_type"] == "thresholds_set"
    assert json.loads(last["details"])["old"]["auto_promote_threshold"] == 0.85
    assert details["new"] == {"auto_promote_threshold": 0.8, "auto_reject_threshold": 0.55}
    assert not [p for p in memoryd_config.parent.iterdir() if p.name != "config.toml"]  # no temp file left


def test_a_config_without_governance_gets_one(store, memoryd_config):
    memoryd_config.write_text('[llm]\nprovider = "local"\n')
    set_thresholds(store, 0.9, 0.4)
    assert tomllib.loads(memoryd_config.read_text())["governance"]["auto_reject_threshold"] == 0.4


@pytest.mark.parametrize("text", ["[governance\nauto = ", b"\xff\xfe".decode("latin-1")])
def test_a_broken_config_is_refused_and_left_as_it_was(store, memoryd_config, text):
    memoryd_config.write_text(text)
    before = len(events(store.layout.root))
    with pytest.raises(StoreError, match="config.toml"):
        set_thresholds(store, 0.9, 0.4)
    assert memoryd_config.read_text() == text and len(events(store.layout.root)) == before


def test_values_memoryd_would_misread_are_refused(store, memoryd_config):
    with pytest.raises(BadInput):
        set_thresholds(store, 0.4, 0.6)
    assert memoryd_config.read_text() == CONFIG


def test_a_config_changed_meanwhile_is_not_overwritten(store, memoryd_config, monkeypatch):
    real = calibration._config_bytes
    reads = []

    def edited_after_first_read(path):
        reads.append(path)
        if len(reads) == 2:  # someone saves the file between engram's read and its write
            memoryd_config.write_text(CONFIG + "# edited\n")
        return real(path)

    monkeypatch.setattr(calibration, "_config_bytes", edited_after_first_read)
    with pytest.raises(Conflict):
        set_thresholds(store, 0.9, 0.4)
    assert memoryd_config.read_text().endswith("# edited\n")


async def test_t_shows_the_plot_s_takes_the_suggestion_w_writes_it(store, memoryd_config):
    root = store.layout.root
    decide(root, [(i / 100, "approved" if i >= 70 else "rejected") for i in range(40, 100, 2)])
    app = EngramApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, CalibrationScreen)
        body = shown(screen.query_one("#calibration-body", Static))
        assert "▲A" in body and "memoryd now" in body and "suggested" in body
        assert screen.trying == (0.85, 0.5)  # memoryd's, from its config
        await pilot.press("s")
        promote, reject = screen.suggestion.promote_at, screen.suggestion.reject_below
        assert screen.trying == (promote, reject) != (0.85, 0.5)
        await pilot.press("right", "right", "comma")
        assert screen.trying == (round(promote + 0.02, 2), round(reject - 0.01, 2))
        await pilot.press("g")
        assert "approval rate by DURA average" in shown(screen.query_one("#calibration-body", Static))
        await pilot.press("w")
        await settle(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        governance = tomllib.loads(memoryd_config.read_text())["governance"]
        assert (governance["auto_promote_threshold"], governance["auto_reject_threshold"]) == screen.trying
        assert events(root)[-1]["event_type"] == "thresholds_set"
        await pilot.press("escape")
        assert not isinstance(app.screen, CalibrationScreen)


async def test_a_broken_memoryd_config_is_a_notification_on_the_screen(store, memoryd_config):
    memoryd_config.write_text("[governance\n")
    app = EngramApp(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("t")
        await settle(app, pilot)
        assert "not valid TOML" in shown(app.screen.query_one("#calibration-body", Static))
        assert any("not valid TOML" in str(n.message) for n in app._notifications)


def test_the_cli_shows_the_outcomes_and_sets_only_when_told(capsys, fixture_root, memoryd_config, monkeypatch):
    decide(fixture_root, [(i / 100, "approved" if i >= 70 else "rejected") for i in range(40, 100, 2)])
    code = main(["thresholds", "show", "--by", "type", "--try", "0.9", "0.6", "--json", "--root", str(fixture_root)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["current"]["auto_promote_threshold"] == 0.85
    assert set(report["outcomes"]["all"]) == {"memoryd now", "trying", "suggested"}
    assert report["outcomes"]["all"]["trying"]["promote_at"] == 0.9 and "fact" in report["outcomes"]
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code = main(["thresholds", "set", "--approve", "0.8", "--reject", "0.6", "--root", str(fixture_root)])
    assert code == 2 and "--yes" in capsys.readouterr().err and memoryd_config.read_text() == CONFIG
    code = main(["thresholds", "set", "--approve", "0.8", "--reject", "0.6", "--yes", "--root", str(fixture_root)])
    assert code == 0 and tomllib.loads(memoryd_config.read_text())["governance"]["auto_reject_threshold"] == 0.6


def test_a_root_opened_read_only_writes_no_thresholds(fixture_root, memoryd_config, unlocked_keys):
    """The thresholds are memoryd's config, but the change is the root's (its audit event): a root engram may
    not write leaves the config as it was."""
    con = sqlite3.connect(fixture_root / "index.db")
    con.execute("INSERT INTO _schema_migrations VALUES ('006_future.sql', '2027-01-01 00:00:00')")
    con.commit()
    con.close()
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        assert store.read_only
        with pytest.raises(ReadOnlyStore):
            set_thresholds(store, 0.9, 0.4)
    assert memoryd_config.read_text() == CONFIG


@pytest.mark.parametrize(
    "args, config, says",
    [
        (["thresholds", "set", "--approve", "0.4", "--reject", "0.6", "--yes"], CONFIG, "thresholds must satisfy"),
        (["thresholds", "show"], "[governance\n", "not valid TOML"),
        (["thresholds", "set", "--approve", "0.9", "--reject", "0.4", "--yes"], "[governance\n", "not valid TOML"),
    ],
)
def test_the_cli_says_what_is_wrong_in_one_line_and_changes_nothing(
    capsys, fixture_root, memoryd_config, args, config, says
):
    memoryd_config.write_text(config)
    before = len(events(fixture_root))
    code = main([*args, "--root", str(fixture_root)])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert memoryd_config.read_text() == config and len(events(fixture_root)) == before
