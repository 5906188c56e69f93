"""The engram command: --root and --json everywhere, exit 0/1/2, one-line errors."""

from __future__ import annotations

import json

import pytest

from engram.tui.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_reports_drift_with_exit_1_and_json(capsys, fixture_root):
    code, out, _ = run(capsys, "check", "--root", str(fixture_root), "--json")
    data = json.loads(out)
    assert code == 1 and data["drift"] and data["counts"]["file_without_row"] == 2


def test_repair_then_check_is_clean(capsys, fixture_root, monkeypatch):
    monkeypatch.setenv("MEMORYD_MASTER_PASSPHRASE", "engram-fixture-passphrase-2026")
    code, out, _ = run(capsys, "repair", "--root", str(fixture_root))
    assert code == 0 and "30 fixed, 0 failed, 0 left" in out  # 29 findings, then the binding of 31 files
    code, out, _ = run(capsys, "check", "--root", str(fixture_root))
    assert code == 0 and out.strip().endswith("no drift")


def test_ls_lists_every_memory_with_type_scope_state(capsys, fixture_root):
    code, out, _ = run(capsys, "ls", "--root", str(fixture_root), "--json")
    items = json.loads(out)
    assert code == 0 and len(items) == 200
    unindexed = [i for i in items if i["state"].startswith("unindexed")]
    assert {i["body_path"] for i in unindexed} == {
        "scopes/710d5aaf7a15/facts/imported-claude-md-testing.md",
        "scopes/710d5aaf7a15/playbooks/imported-claude-md-untitled.md",
    }
    assert sum("encrypted" in i["state"] for i in items) == 38
    assert sum("in forgotten/" in i["state"] for i in items) == 13


def test_rebuild_index_and_stats(capsys, fixture_root):
    code, out, _ = run(capsys, "rebuild-index", "--root", str(fixture_root), "--json")
    assert code == 1 and json.loads(out)["indexed"] == 160  # 162 plain minus 2 slug collisions; encrypted rows kept
    code, out, _ = run(capsys, "stats", "--root", str(fixture_root), "--json")
    stats = json.loads(out)
    assert code == 0 and stats["memories"] == 198 and stats["promotions"]["pending"] == 7


@pytest.mark.parametrize("args", [["check", "--root", "/nonexistent/root"], ["ls", "--root", "/nonexistent"]])
def test_missing_root_is_one_line_exit_2(capsys, args):
    code, out, err = run(capsys, *args)
    assert code == 2 and err.count("\n") == 1 and err.startswith("engram: ")


def test_demo_without_opening(capsys, tmp_path):
    code, _, err = run(capsys, "demo", "--root", str(tmp_path / "demo"), "--memories", "120", "--no-open")
    assert code == 0 and "120 memories" in err and "engram-demo-passphrase" in err
    code, out, _ = run(capsys, "check", "--root", str(tmp_path / "demo"), "--json")
    assert code == 0 and json.loads(out)["counts"] == {"locked_file": json.loads(out)["counts"]["locked_file"]}


def test_import_dry_run_then_import_then_again(capsys, fixture_root, tmp_path):
    import shutil
    from pathlib import Path

    source = tmp_path / "cognirelay"
    shutil.copytree(Path(__file__).parent / "fixtures" / "importers" / "cognirelay", source)
    root = ("--root", str(fixture_root))
    code, out, _ = run(capsys, "import", "cognirelay", str(source), "--dry-run", "--json", *root)
    preview = json.loads(out)
    assert code == 1 and not preview["written"]  # 1: malformed capsules were found (and skipped)
    assert (preview["sessions"], preview["promotions"], len(preview["malformed"])) == (3, 6, 2)
    code, out, _ = run(capsys, "import", "cognirelay", str(source), *root)
    assert code == 1 and out.startswith("cognirelay: imported 3 sessions, 6 pending promotions, 1 proposed")
    code, out, _ = run(capsys, "import", "cognirelay", str(source), "--json", *root)
    assert json.loads(out)["already_imported"] == 10 and json.loads(out)["sessions"] == 0


def test_import_of_an_unknown_path_is_one_line_exit_2(capsys, fixture_root, tmp_path):
    code, _, err = run(capsys, "import", "codex", str(tmp_path / "missing"), "--root", str(fixture_root))
    assert code == 2 and err.count("\n") == 1 and "no such file" in err
