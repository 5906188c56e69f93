"""check reports exactly the fixture's quirks; repair fixes them without loss; drift of each kind is found."""

from __future__ import annotations

import json
import sqlite3

import pytest

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.models import Memory, Promotion
from engram.store.service import Store

FIXTURE_QUIRKS = {"file_without_row": 2, "approved_without_memory": 1, "decay_index_only": 26}


def test_fixture_check_reports_exactly_its_quirks(store):
    report = check(store)
    assert report.files == 200 and report.rows == 198
    assert report.counts() == FIXTURE_QUIRKS
    collisions = {f.path: f.detail for f in report.of("file_without_row")}
    assert "scopes/710d5aaf7a15/facts/imported-claude-md-testing.md" in collisions
    assert all("is taken by" in d for d in collisions.values())
    assert report.of("approved_without_memory")[0].data["promotion_id"] == 24


def test_memoryds_index_only_decay_is_counted_not_drift_and_repair_keeps_it_through_a_rebuild(
    fixture_root, unlocked_keys, capsys
):
    """memoryd's sweep decays index rows only: that is its normal work, so ``check`` counts it and passes."""
    from memoryd_emulation import memoryd_rebuild_index, memoryd_sweeps

    from engram.tui.cli import main

    with Store.open(fixture_root, keys=unlocked_keys) as store:
        repair(store)
        plain = [m.slug for m in Memory.select().where(Memory.body_path.endswith(".md"), Memory.decay_state == "alive")]
    memoryd_sweeps(fixture_root, plain[:3], "dim")
    memoryd_sweeps(fixture_root, plain[3:5], "soft-forgotten")
    assert main(["check", "--root", str(fixture_root), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["drift"] is False and found["counts"]["decay_index_only"] == 5
    assert found["findings"]["decay_index_only"]["drift"] is False
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        assert check(store).counts() == {"decay_index_only": 5}
        assert len(repair(store).fixed) == 5
    memoryd_rebuild_index(fixture_root)  # from the files only: the states written through survive it
    con = sqlite3.connect(fixture_root / "index.db")
    states = dict(con.execute("SELECT slug, decay_state FROM memories WHERE slug IN (?, ?, ?, ?, ?)", plain[:5]))
    assert states == {**dict.fromkeys(plain[:3], "dim"), **dict.fromkeys(plain[3:5], "soft-forgotten")}


def test_an_index_behind_its_files_decay_is_a_stale_row_and_repair_takes_the_files_state(store, fixture_root):
    repair(store)
    row = Memory.get(Memory.body_path.endswith(".md"), Memory.decay_state != "alive")
    con = sqlite3.connect(fixture_root / "index.db")
    con.execute("UPDATE memories SET decay_state = 'alive' WHERE slug = ?", (row.slug,))
    con.commit()
    report = check(store)
    assert report.drift and [f.detail for f in report.of("stale_row")] == ["differs in decay_state"]
    repair(store)
    assert Memory.get(Memory.slug == row.slug).decay_state == row.decay_state


@pytest.mark.parametrize("when", ["before the walk", "between the walk and the read"])
def test_a_file_memoryds_sweep_moves_during_a_check_is_no_finding(store, fixture_root, monkeypatch, when):
    """A check of a large root takes a while: memoryd's sweep may move a memory to ``forgotten/`` meanwhile.
    That is neither a crash (the file is gone when read) nor a missing file or a file without a row."""
    from memoryd_emulation import memoryd_forgets

    from engram.store.drift import check as checking

    repair(store)
    slug = Memory.get(Memory.body_path.endswith(".md"), ~Memory.body_path.contains("/forgotten/")).slug
    step = "walk" if when == "before the walk" else "examined"  # a plain file: examined apart
    real = getattr(checking, step)

    def moved_first(*args):
        memoryd_forgets(fixture_root, slug)
        return real(*args)

    monkeypatch.setattr(checking, step, moved_first)
    report = check(store)
    assert not report.drift, report.counts()
    assert Memory.get(Memory.slug == slug).body_path.split("/")[2] == "forgotten"


def test_without_the_key_encrypted_files_are_reported_locked(fixture_root):
    with Store.open(fixture_root) as store:
        report = check(store)
    counts = report.counts()
    assert counts["locked_file"] == 38
    assert counts["decay_index_only"] == 19  # the 7 encrypted ones cannot be read
    assert not report.of("enc_without_row")


def test_repair_fixes_the_fixture_without_loss(store, fixture_root):
    promotions_before = Promotion.select().count()
    result = repair(store)
    assert not result.failed
    assert result.remaining.counts() == {}
    assert Memory.select().count() == 201  # 198 + two re-slugged imports + promotion #24's memory
    assert Promotion.select().count() == promotions_before
    moved = Memory.get(Memory.slug == "imported-claude-md-testing-710d5aaf7a15")
    assert moved.body_path == "scopes/710d5aaf7a15/facts/imported-claude-md-testing-710d5aaf7a15.md"
    assert not (fixture_root / "scopes/710d5aaf7a15/facts/imported-claude-md-testing.md").exists()
    approved = Memory.get(Memory.slug == "promoted-24-2026-09-09-f022e5ab-d7f0-43a5-b40a-b8401c18cca5")
    assert approved.type == "decision"  # memoryd's default for the unknown proposed type 'insight'
    for row in Memory.select().where(Memory.decay_state != "alive"):
        assert store.read_doc(row.body_path).frontmatter.decay_state.value == row.decay_state
    # running it again finds nothing left to do
    assert repair(store).fixed == []


def test_row_without_file_and_stale_row_are_found_and_fixed(store, fixture_root):
    plain = list(Memory.select().where(Memory.body_path.endswith(".md")).limit(2))
    (fixture_root / plain[0].body_path).unlink()
    path = fixture_root / plain[1].body_path
    path.write_bytes(path.read_bytes().replace(b"---\n\n", b"---\n\nedited by hand\n", 1))
    report = check(store)
    kinds = report.counts()
    assert kinds.get("row_without_file") == 1 and kinds.get("stale_row") == 1
    repair(store)
    assert (
        Memory.get_or_none(Memory.slug == plain[0].slug) is None
        or Promotion.select().where(Promotion.source_session_slug == plain[0].slug).exists()
    )
    assert Memory.get(Memory.slug == plain[1].slug).fingerprint == store.read_doc(plain[1].body_path).fingerprint


def test_bad_files_are_reported_never_fatal(store, fixture_root):
    bad = fixture_root / "scopes/710d5aaf7a15/facts/broken.md"
    bad.write_bytes(b"---\ntitle: [oops\n---\n\nbody")
    (fixture_root / "scopes/710d5aaf7a15/facts/latin1.md").write_bytes(b"---\ntitle: caf\xe9\n---\n")
    report = check(store)
    reasons = {f.path.rsplit("/", 1)[1]: f.detail for f in report.of("bad_file")}
    assert "broken YAML" in reasons["broken.md"] and "invalid UTF-8" in reasons["latin1.md"]
    result = repair(store)
    assert bad.exists()  # never deleted: a person decides
    assert len(result.remaining.of("bad_file")) == 2


def test_body_path_escaping_the_root_is_refused(store, fixture_root):
    outside = fixture_root.parent / "secret.md"
    outside.write_text("---\n")
    con = sqlite3.connect(fixture_root / "index.db")
    slug = con.execute(
        "SELECT slug FROM memories WHERE body_path LIKE '%.md' AND slug NOT IN "
        "(SELECT source_session_slug FROM promotions) LIMIT 1"
    ).fetchone()[0]
    con.execute("UPDATE memories SET body_path='../secret.md' WHERE slug=?", (slug,))
    con.commit()
    report = check(store)
    assert [f.data["slug"] for f in report.of("unsafe_body_path")] == [slug]
    repair(store)
    assert Memory.get_or_none(Memory.slug == slug) is None
    assert outside.read_text() == "---\n"


def test_temp_files_left_by_a_crash_are_removed(store, fixture_root):
    temp = fixture_root / "scopes/710d5aaf7a15/facts/.x.md.engram-tmp-abc"
    temp.write_bytes(b"partial")
    assert check(store).counts().get("temp_file") == 1
    repair(store)
    assert not temp.exists()


def test_slug_changed_by_hand_rekeys_the_row(store, fixture_root):
    rel = "scopes/710d5aaf7a15/facts/2026-08-20-Vite_is_pinned_to_7_14-1787206498.md"
    path = fixture_root / rel
    path.write_text(
        path.read_text().replace("slug: 2026-08-20-Vite_is_pinned_to_7_14-1787206498", "slug: hand-renamed-slug")
    )
    assert [f.path for f in check(store).of("stale_row")] == [rel]
    result = repair(store)
    assert not result.failed
    assert Memory.get(Memory.slug == "hand-renamed-slug").body_path == rel
    assert Memory.get_or_none(Memory.slug == "2026-08-20-Vite_is_pinned_to_7_14-1787206498") is None


def test_wrong_passphrase_is_one_finding_per_scope_not_damage(fixture_root):
    from engram.store.sensitive.crypto import KeyRing

    with Store.open(fixture_root, keys=KeyRing(passphrase="not-it")) as store:
        report = check(store)
    assert not report.of("undecryptable_file")
    assert sorted(f.data["scope_hash"] for f in report.of("wrong_key")) == ["35998c22af79", "91c2073b561e"]


def test_one_damaged_file_in_an_open_scope_is_reported_as_such(store, fixture_root):
    victim = next(fixture_root.glob("scopes/35998c22af79/facts/*.md.enc"))
    victim.write_bytes(victim.read_bytes()[:-8] + b"AAAAAAA=")
    report = check(store)
    assert [f.path for f in report.of("undecryptable_file")] == [str(victim.relative_to(fixture_root))]
    assert not report.of("wrong_key")
