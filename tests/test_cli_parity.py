"""Everything the console does, a script can do: search, show, merge, edit, bulk decisions by filter,
supersedes, decay and the graph on the CLI, on a copy of memoryd's fixture root. Each write goes through the
store function the console calls (one audit event per change), memoryd's reader still loads the root after
it, and bad input is one line that changes nothing."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from conftest import PASSPHRASE
from helpers import events
from memoryd_emulation import memoryd_load_failures

from engram.store.models import Memory, Promotion, SupersedesChain
from engram.tui.cli import _parser, main
from engram.tui.panes.table import ALL_ACTIONS

PLAIN = "710d5aaf7a15"
FINANCE = "35998c22af79"
OLD = "2026-04-04-PR_175-1775329572"
NEWER = "2026-04-15-Don_t_risk_calling_fetch_in_useEffect_wi-1776211759"


def run(capsys, root: Path, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--root", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


def unchanged(root: Path) -> tuple[int, int]:
    return len(events(root)), sum(1 for _ in (root / "scopes").rglob("*.md*"))


def loads_in_memoryd(root: Path) -> None:
    assert memoryd_load_failures(root, PASSPHRASE) == []


def test_search_ranks_like_the_console_and_gives_a_snippet(capsys, fixture_root):
    code, out, _ = run(capsys, fixture_root, "search", "kafka", "--limit", "3", "--json")
    data = json.loads(out)
    assert code == 0 and data["total"] > 3 and len(data["hits"]) == 3
    first = data["hits"][0]
    assert set(first) == {"rank", "score", "slug", "title", "type", "scope", "state", "locked", "snippet"}
    assert all(0 <= h["score"] <= 100 for h in data["hits"])  # ranked by rapidfuzz, as the console ranks
    assert "kafka" in (first["title"] + first["snippet"]).lower()


def test_search_never_prints_a_locked_scopes_body(capsys, fixture_root):
    code, out, _ = run(capsys, fixture_root, "search", f"scope:{FINANCE}", "--limit", "50", "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and hits and all(h["locked"] and h["snippet"] is None for h in hits)


def test_search_of_an_unlocked_scope_shows_the_snippet_and_audits_the_read(capsys, fixture_root, monkeypatch):
    monkeypatch.setenv("MEMORYD_MASTER_PASSPHRASE", PASSPHRASE)
    before = len(events(fixture_root))
    code, out, _ = run(capsys, fixture_root, "search", f"scope:{FINANCE}", "--limit", "2", "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and all(h["snippet"] for h in hits)
    assert [e["event_type"] for e in events(fixture_root)[before:]] == ["sensitive_viewed"] * 2


def test_a_query_that_cannot_mean_anything_is_one_line(capsys, fixture_root):
    code, out, err = run(capsys, fixture_root, "search", "colour:red")
    assert code == 2 and out == "" and err.count("\n") == 1 and "unknown field" in err


def test_show_explains_a_promoted_memory(capsys, fixture_root):
    code, out, _ = run(capsys, fixture_root, "search", "^promoted-35-", "--limit", "1", "--json")
    slug = json.loads(out)["hits"][0]["slug"]
    code, out, _ = run(capsys, fixture_root, "show", slug, "--json")
    data = json.loads(out)
    assert code == 0 and data["slug"] == slug and data["promotion"]["id"] == 35
    assert set(data["promotion"]["dura"]) == {"D", "U", "R", "A"} and data["body"]
    code, out, _ = run(capsys, fixture_root, "show", slug)
    assert "## Why is this here" in out and "promotion #35" in out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["show", "no-such-memory"], "no memory with slug"),
        (["promotions", "merge", "4", "--into", "no-such-memory"], "no memory with slug"),
        (["supersedes", "undo", "no-such", OLD], ""),
        (["decay", "pin", "no-such-memory"], ""),
        (["graph", "rename", "entity:nothing:here", "x"], ""),
    ],
)
def test_unknown_names_are_one_line_and_change_nothing(capsys, fixture_root, args, said):
    before = unchanged(fixture_root)
    code, out, err = run(capsys, fixture_root, *args)
    assert code in (1, 2) and err.count("\n") == 1 and err.startswith("engram: ") and said in err
    assert unchanged(fixture_root) == before


def test_show_of_a_locked_memory_is_one_line_and_reads_nothing(capsys, fixture_root):
    code, out, _ = run(capsys, fixture_root, "search", f"scope:{FINANCE}", "--limit", "1", "--json")
    slug = json.loads(out)["hits"][0]["slug"]
    before = unchanged(fixture_root)
    code, out, err = run(capsys, fixture_root, "show", slug)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert unchanged(fixture_root) == before


@pytest.mark.usefixtures("reading_root")
def test_merge_a_promotion_into_a_memory(capsys, fixture_root):
    target = run(capsys, fixture_root, "search", f"scope:{PLAIN} type:fact", "--limit", "1", "--json")[1]
    slug = json.loads(target)["hits"][0]["slug"]
    code, out, _ = run(capsys, fixture_root, "promotions", "merge", "18", "--into", slug, "--json")
    assert code == 0 and json.loads(out) == {"id": 18, "merged_into": slug}
    assert Promotion.get_by_id(18).status == "merged" and events(fixture_root)[-1]["event_type"] == "memories_merged"
    assert "merged from promotion #18" in (fixture_root / Memory.get(Memory.slug == slug).body_path).read_text()
    loads_in_memoryd(fixture_root)
    code, _, err = run(capsys, fixture_root, "promotions", "merge", "18", "--into", slug)
    assert code == 1 and "already merged" in err  # a refusal: decided already


@pytest.mark.usefixtures("reading_root")
def test_edit_shows_first_and_approves_with_edits(capsys, fixture_root, tmp_path):
    body = tmp_path / "body.md"
    body.write_text("Keep pull requests under 300 lines.\n", encoding="utf-8")
    before = unchanged(fixture_root)
    args = ["promotions", "edit", "16", "--title", "Small PRs", "--body-file", str(body), "--json"]
    code, out, _ = run(capsys, fixture_root, *args)
    assert code == 0 and json.loads(out)["approved"] is False and unchanged(fixture_root) == before
    code, out, _ = run(capsys, fixture_root, *args, "--approve")
    made = json.loads(out)
    assert code == 0 and made["approved"] and Promotion.get_by_id(16).status == "approved"
    text = (fixture_root / Memory.get(Memory.slug == made["slug"]).body_path).read_text()
    assert "title: Small PRs" in text and "under 300 lines" in text
    loads_in_memoryd(fixture_root)


@pytest.mark.usefixtures("reading_root")
def test_bulk_decisions_by_filter(capsys, fixture_root, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    before = unchanged(fixture_root)
    listed = json.loads(run(capsys, fixture_root, "promotions", "list", "--json")[1])
    best = sorted(i["id"] for i in listed if i["dura_avg"] >= 0.79)
    code, out, _ = run(capsys, fixture_root, "promotions", "reject", "--where", "dura:>=0.79", "--dry-run", "--json")
    assert code == 0 and sorted(i["id"] for i in json.loads(out)["matched"]) == best and len(best) == 2
    assert unchanged(fixture_root) == before
    code, _, err = run(capsys, fixture_root, "promotions", "reject", "--where", "dura:>=0.8")
    assert code == 2 and "--yes" in err and unchanged(fixture_root) == before  # off a terminal: --yes or nothing
    code, _, err = run(capsys, fixture_root, "promotions", "approve", "--where", "dura:>0.99", "--yes")
    assert code == 1 and "no pending promotion matches" in err + _ and unchanged(fixture_root) == before
    code, out, _ = run(
        capsys, fixture_root, "promotions", "reject", "--where", f"scope:{PLAIN} age:>1", "--reason", "dup", "--yes"
    )
    assert code == 0 and {Promotion.get_by_id(p).status for p in (16, 17, 18)} == {"rejected"}
    assert Promotion.get_by_id(22).status == "pending"


@pytest.mark.usefixtures("reading_root")
def test_supersedes_add_list_undo(capsys, fixture_root):
    code, out, _ = run(capsys, fixture_root, "supersedes", "add", NEWER, OLD, "--reason", "newer advice", "--json")
    assert code == 0 and json.loads(out)["done"] == "added"
    assert SupersedesChain.get_or_none(newer_memory_id=NEWER, older_memory_id=OLD) is not None
    assert OLD in (fixture_root / Memory.get(Memory.slug == NEWER).body_path).read_text()
    code, out, _ = run(capsys, fixture_root, "supersedes", "list", "--json")
    assert any(link["newer"] == NEWER and link["older"] == OLD for link in json.loads(out))
    code, out, _ = run(capsys, fixture_root, "supersedes", "undo", NEWER, OLD)
    assert code == 0 and SupersedesChain.get_or_none(newer_memory_id=NEWER, older_memory_id=OLD) is None
    loads_in_memoryd(fixture_root)


@pytest.mark.usefixtures("reading_root")
def test_decay_ttl_pin_forget_revive_and_sweep(capsys, fixture_root):
    code, _, _ = run(capsys, fixture_root, "decay", "ttl", NEWER, "30")
    assert code == 0 and Memory.get(Memory.slug == NEWER).ttl_days == 30
    assert run(capsys, fixture_root, "decay", "pin", NEWER)[0] == 0
    assert Memory.get(Memory.slug == NEWER).ttl_days is None
    assert run(capsys, fixture_root, "decay", "forget", NEWER)[0] == 0
    assert "/forgotten/" in Memory.get(Memory.slug == NEWER).body_path
    assert run(capsys, fixture_root, "decay", "revive", NEWER)[0] == 0
    assert Memory.get(Memory.slug == NEWER).decay_state == "alive"
    before = unchanged(fixture_root)
    code, out, _ = run(capsys, fixture_root, "decay", "sweep", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["dry_run"] and unchanged(fixture_root) == before
    code, out, _ = run(capsys, fixture_root, "decay", "list", "--kind", "dim", "--json")
    assert code == 0 and all(e["state"] == "dim" for e in json.loads(out))
    loads_in_memoryd(fixture_root)


def test_graph_entities_neighbours_conflicts_rename_merge(capsys, fixture_root):
    code, out, _ = run(capsys, fixture_root, "graph", "entities", "--limit", "3", "--json")
    top = json.loads(out)
    assert code == 0 and len(top) == 3 and {"id", "name", "mentions"} <= set(top[0])
    code, out, _ = run(capsys, fixture_root, "graph", "neighbours", "entity:concept:scd2", "--json")
    assert code == 0 and "conflicts_with" in json.loads(out)["relations"]
    code, out, _ = run(capsys, fixture_root, "graph", "conflicts", "--json")
    assert code == 0 and any(c["subject"] == "entity:concept:scd2" for c in json.loads(out))
    code, _, _ = run(capsys, fixture_root, "graph", "rename", "entity:concept:scd2", "Slowly changing dims")
    assert code == 0 and events(fixture_root)[-1]["target_id"] == "entity:concept:scd2"
    merge = ["graph", "merge", "entity:library:next.js", "entity:library:vite", "--json"]
    code, out, _ = run(capsys, fixture_root, *merge)
    assert code == 0 and json.loads(out)["relations_moved"] >= 1


# Every console action that reads or changes data, and the command that does it from a script. Actions that
# only move, show, filter or ask are the console's own.
CLI_FOR = {
    "queue.approve": "promotions approve",
    "secret.redact": "promotions approve",  # --redact
    "secret.sensitive": "promotions approve",  # into a sensitive scope, or --keep-secrets
    "secret.reject": "promotions reject",
    "queue.reject": "promotions reject",
    "queue.defer": "promotions defer",
    "queue.reject_now": "promotions reject",
    "queue.defer_now": "promotions defer",
    "queue.snooze": "promotions snooze",
    "queue.edit": "promotions edit",
    "queue.merge": "promotions merge",
    "queue.mark_all": "promotions approve",  # bulk: --where
    "queue.range": "promotions approve",
    "queue.mark": "promotions approve",
    "queue.sort": "promotions list",
    "queue.filter": "promotions list",
    "queue.open_session": "show",
    "queue.similar": "promotions similar",
    "similar.merge": "promotions merge",
    "queue.clusters": "promotions clusters",
    "queue.cluster_approve": "promotions cluster",  # --reject-rest
    "queue.cluster_merge": "promotions cluster",  # --merge-rest
    "queue.calibrate": "thresholds show",
    "calibrate.approve_down": "thresholds show",  # --try X Y
    "calibrate.approve_up": "thresholds show",
    "calibrate.reject_down": "thresholds show",
    "calibrate.reject_up": "thresholds show",
    "calibrate.suggested": "thresholds show",
    "calibrate.group": "thresholds show",  # --by type|source
    "calibrate.write": "thresholds set",
    "search.focus": "search",
    "search.open": "show",
    "supersedes.confirm": "supersedes confirm",
    "supersedes.reject": "supersedes reject",
    "supersedes.undo": "supersedes undo",
    "supersedes.add": "supersedes add",
    "decay.sweep": "decay sweep",
    "decay.next_list": "decay list",
    "decay.days": "decay list",
    "decay.group": "stats",
    "decay.revive": "decay revive",
    "decay.pin": "decay pin",
    "decay.ttl": "decay ttl",
    "decay.forget": "decay forget",
    "graph.deeper": "graph neighbours",
    "graph.shallower": "graph neighbours",
    "graph.rename": "graph rename",
    "graph.merge": "graph merge",
    "graph.supersede": "graph conflicts",
    "audit.filter": "audit log",
    "audit.verify": "audit verify",
    "audit.bad": "audit verify",
    "audit.checkpoint": "audit checkpoint",
    "scopes.mark": "scope mark",
    "scopes.unmark": "scope unmark",
    "scopes.grant": "grant",
    "scopes.revoke": "revoke",
    "scopes.rekey": "scope rekey",
    "scopes.label": "scopes",
    "scopes.recheck": "check",
    "scopes.seen": "check",
    "app.unlock": "scope unlock-check",
    "app.import": "import",
    "app.refresh": "stats",
    "queue.reveal": "screen",  # the findings and what was decoded: engram screen --json
    "poison.quarantine": "quarantine",
    "poison.release": "release",
    "poison.reveal": "screen",
    "poison.rescreen": "screen",
    "search.history": "history",
    "history.mark": "diff",
    "history.restore": "restore",
    "app.conflicts": "conflicts",
    "conflict.local": "conflicts resolve",  # --keep local
    "conflict.remote": "conflicts resolve",  # --keep remote
    "conflict.merge": "conflicts resolve",  # --merged FILE
    "merge.save": "conflicts resolve",
}
CONSOLE_ONLY = re.compile(
    r"^(app\.(quit|help|palette|lock|pane\..*)|.*\.(up|down|top|bottom|next_page|prev_page|back|left|right|"
    r"page_up|page_down|first|last|open|select|cancel|close)|queue\.(undo|redo|view|save_view)|confirm\..*|edit\.(save|external)|"
    r"grant\.(once|session|task)|help\..*|import\.back|dialog\..*)$"
)


def test_every_console_action_on_data_has_a_cli_command():
    parser, handlers = _parser()
    assert [a.id for a in ALL_ACTIONS if a.id not in CLI_FOR and not CONSOLE_ONLY.match(a.id)] == []
    assert [command for command in CLI_FOR.values() if command not in handlers] == []
    assert isinstance(parser, argparse.ArgumentParser)


def test_the_command_reference_lists_every_command_and_no_other():
    """Each command has a row of docs/cli.md's table that starts with its group and names its verb
    (``engram decay revive\\|pin\\|forget SLUG`` covers three); each row names a command there is."""
    _, handlers = _parser()
    reference = (Path(__file__).parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = [line for line in reference.splitlines() if line.startswith("| `engram")]

    def listed(command: str) -> bool:
        group, *verb = command.split()
        return any(
            re.search(rf"`engram {re.escape(group)}\b", row) and all(re.search(rf"\b{v}\b", row) for v in verb)
            for row in rows
        )

    assert [c for c in handlers if not listed(c)] == []
    groups = {command.split()[0] for command in handlers}
    named = {row.split("`engram ", 1)[1].split()[0].rstrip("`") for row in rows}
    assert {word for word in named if not word.startswith("[")} - groups == set()


def test_at_a_terminal_where_asks_first(capsys, fixture_root, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda _prompt: next(answers))
    before = unchanged(fixture_root)
    code, out, err = run(capsys, fixture_root, "promotions", "defer", "--where", f"scope:{PLAIN}")
    assert code == 1 and "nothing deferred" in out and unchanged(fixture_root) == before
    assert "How to bump Next.js" in err  # the list it asked about
    code, out, _ = run(capsys, fixture_root, "promotions", "defer", "--where", f"scope:{PLAIN}")
    assert code == 0 and out.count("deferred #") == 3


@pytest.mark.usefixtures("reading_root")
def test_a_proposed_link_is_confirmed_or_rejected(capsys, fixture_root):
    proposed = json.loads(run(capsys, fixture_root, "supersedes", "list", "--proposed", "--json")[1])
    assert len(proposed) >= 2
    first, second = proposed[0], proposed[1]
    code, _, _ = run(capsys, fixture_root, "supersedes", "confirm", first["newer"], first["older"])
    row = SupersedesChain.get(newer_memory_id=first["newer"], older_memory_id=first["older"])
    assert code == 0 and row.decided_by == "user"
    code, _, _ = run(capsys, fixture_root, "supersedes", "reject", second["newer"], second["older"], "--reason", "no")
    assert (
        code == 0
        and SupersedesChain.get_or_none(newer_memory_id=second["newer"], older_memory_id=second["older"]) is None
    )
    code, _, err = run(capsys, fixture_root, "supersedes", "reject", first["newer"], first["older"])
    assert code == 1 and err.count("\n") == 1  # only a proposed link can be rejected: a refusal
    loads_in_memoryd(fixture_root)


@pytest.mark.usefixtures("reading_root")
def test_edit_in_the_editor_then_approve(capsys, fixture_root, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("EDITOR", "sed -i 1s/^/EDITED-IN-EDITOR:\\ /")
    code, out, _ = run(capsys, fixture_root, "promotions", "edit", "17", "--approve", "--json")
    made = json.loads(out)
    assert code == 0 and made["body"].startswith("EDITED-IN-EDITOR: ")
    assert "EDITED-IN-EDITOR: " in (fixture_root / Memory.get(Memory.slug == made["slug"]).body_path).read_text()
    assert list((tmp_path / "state").rglob("promotion-*")) == []  # the temp file is gone
