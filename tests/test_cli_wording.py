"""What the command line says reads as a sentence: a file is called a file, a promotion is named once, counts
agree with their nouns, and one edit to the audit log reads as one edit."""

from __future__ import annotations

from engram.tui.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_file_given_as_the_root_is_called_a_file(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    code, _, err = run(capsys, "ls", "--root", str(notes))
    assert code == 2 and f"{notes} is a file, not a data root" in err


def test_a_missing_promotion_is_named_once(fixture_root, capsys):
    code, out, err = run(capsys, "promotions", "approve", "99999", "--root", str(fixture_root))
    assert (out + err).strip() == "engram: no promotion #99999"


def test_one_edited_audit_line_reads_as_one_edit_with_its_consequence(fixture_root, capsys):
    assert run(capsys, "audit", "verify", "--root", str(fixture_root))[0] == 0  # checkpointed
    log = fixture_root / "audit" / "audit.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace("access_granted", "access_GRANTED", 1)
    log.write_text("".join(lines))
    code, out, _ = run(capsys, "audit", "verify", "--root", str(fixture_root))
    assert code == 1 and "(and 1 more problem)" in out
    assert "checkpoint mismatch" in out and "follows from the problem at line 6, not a second change" in out


def test_an_unknown_option_is_refused_by_its_command(fixture_root, capsys):
    """The command's own usage, not the top one's: that lists only the commands of the module loaded."""
    for command, unknown in (("ls", "--type fact"), ("audit verify", "--fast")):
        try:
            main([*command.split(), *unknown.split(), "--root", str(fixture_root)])
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError("an unknown option ran")
        err = capsys.readouterr().err
        assert f"usage: engram {command} [-h]" in err and "{open,demo" not in err
        assert err.rstrip().endswith(f"engram {command}: error: unrecognized arguments: {unknown}")


def test_a_limit_is_a_whole_number_of_one_or_more(fixture_root, capsys):
    """``--limit 0`` listed one hit, and ``--limit -1`` every entity but the last."""
    for words, said in (
        (["search", "kafka", "--limit", "0"], "argument --limit: 0: give 1 or more"),
        (["graph", "entities", "--limit", "-1"], "argument --limit: -1: give 1 or more"),
        (["promotions", "similar", "1", "--limit", "x"], "argument --limit: 'x' is not a whole number"),
    ):
        try:
            main([*words, "--root", str(fixture_root)])
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(f"{words} ran")
        assert capsys.readouterr().err.rstrip().endswith(said)
    assert run(capsys, "search", "webhook", "--limit", "1", "--json", "--root", str(fixture_root))[0] == 0
