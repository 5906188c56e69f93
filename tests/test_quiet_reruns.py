"""Commands that only look write nothing, a rerun with nothing to do records nothing, and what `scopes` promises
about plaintext is what `check` and `repair` act on."""

from __future__ import annotations

import json

from helpers import events

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.models import Memory
from engram.store.scopes import scopes
from engram.store.sensitive.crypto import KeyRing
from engram.store.sensitive.rekey import rekey_passphrase
from engram.store.service import Store
from engram.tui.cli import main

OLD, NEW = "engram-fixture-passphrase-2026", "a-new-passphrase-for-both"
FINANCE = "35998c22af79"


def test_a_rerun_of_a_finished_rekey_changes_and_records_nothing(fixture_root):
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store:
        assert rekey_passphrase(store, NEW).done == 38
    lines = len(events(fixture_root))
    files = {p: p.read_bytes() for p in fixture_root.rglob("*.md.enc")}
    with Store.open(fixture_root, keys=KeyRing(passphrase=OLD)) as store:
        again = rekey_passphrase(store, NEW)
    assert again.already and again.done == 0
    assert len(events(fixture_root)) == lines
    assert {p: p.read_bytes() for p in fixture_root.rglob("*.md.enc")} == files


def test_check_without_an_index_reports_it_and_creates_nothing(fixture_root, capsys):
    (fixture_root / "index.db").unlink()
    before = sorted(p.name for p in fixture_root.iterdir())
    assert main(["check", "--root", str(fixture_root)]) == 1
    assert "index.db: missing" in capsys.readouterr().out
    assert sorted(p.name for p in fixture_root.iterdir()) == before
    assert main(["check", "--root", str(fixture_root), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["drift"] is True


def plaintext_finding(store: Store) -> int:
    info = next(s for s in scopes(store, discover_in=[]) if s.scope_hash == FINANCE)
    return info.plaintext_files


def test_scopes_counts_the_plaintext_files_check_finds_and_repair_encrypts(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        row = Memory.get((Memory.scope_hash == FINANCE) & Memory.body_path.endswith(".md.enc"))
        plain = store.read_bytes(row.body_path)
        Memory.update(body_path=row.body_path.removesuffix(".enc")).where(Memory.slug == row.slug).execute()
        assert plaintext_finding(store) == 0  # a row saying ".md" is no plaintext file: nothing to promise
        Memory.update(body_path=row.body_path).where(Memory.slug == row.slug).execute()
        (fixture_root / row.body_path).with_name("stray-note.md").write_bytes(
            plain.replace(row.slug.encode(), b"stray-note")
        )
        assert plaintext_finding(store) == 1
        assert len(check(store).of("plaintext_in_sensitive_scope")) == 1
        repair(store)
        assert plaintext_finding(store) == 0 and not check(store).of("plaintext_in_sensitive_scope")
