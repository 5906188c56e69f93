"""Every decision engram made that memoryd's rebuild-index erases is named by ``check`` until ``repair`` puts it
back: approved, rejected, merged and deferred promotions, in plain and in sensitive scopes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from memoryd_emulation import memoryd_proposes, memoryd_rebuild_index

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.models import Memory, Promotion
from engram.store.promotions import approve, defer, merge, reject
from engram.store.sensitive.convert import mark_sensitive
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.tui.cli import main

SENSITIVE = "35998c22af79"


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, _ = capsys.readouterr()
    return code, out


def memoryd_rows(root: Path) -> dict[int, tuple[str, str | None]]:
    """The promotions table as memoryd reads it: its own columns, on its own connection."""
    con = sqlite3.connect(root / "index.db")
    try:
        return {r[0]: (r[1], r[2]) for r in con.execute("SELECT id, status, decided_at FROM promotions")}
    finally:
        con.close()


def decide_a_day(root: Path, keys: KeyRing) -> dict[int, tuple[str, str | None]]:
    """engram's decisions of every kind, in plain and sensitive scopes; returns id -> (status, decided_at)."""
    hidden = [memoryd_proposes(root, scope=SENSITIVE, title=f"Vault secret rotation {n}") for n in range(2)]
    with Store.open(root, keys=keys, actor="engram-test") as store:
        approve(store, 16)
        reject(store, 17, "not true any more")
        defer(store, 18, "ask the team")
        into = Memory.get(Memory.scope_hash == "798e262b88f2", Memory.body_path.endswith(".md")).slug
        merge(store, 36, into)
        approve(store, hidden[0])
        reject(store, hidden[1], "an old key")
        ids = [16, 17, 18, 36, *hidden]
        return {p.id: (p.status, p.decided_at) for p in Promotion.select().where(Promotion.id.in_(ids))}


def test_check_names_every_decision_the_rebuild_erased_and_repair_puts_each_back(fixture_root, unlocked_keys, capsys):
    decided = decide_a_day(fixture_root, unlocked_keys)
    memoryd_rebuild_index(fixture_root)

    code, out = run(capsys, "check", "--root", str(fixture_root))
    assert code == 1
    assert "#16 (Keep PRs under 264 lines): approved by engram at" in out
    assert "#17 (How to bump Next.js): rejected by engram at" in out
    assert "#18 (Storybook 版本锁定在 8.12): deferred by engram at" in out and ": ask the team" in out
    assert "#36 (重放死信队列事件的步骤): merged by engram at" in out
    sealed = [pid for pid in decided if pid > 37]
    for pid in sealed:  # a sensitive scope's: named by id and decision, its title stays sealed
        assert f"#{pid} (sealed: scope {SENSITIVE} is sensitive; unlock it to put it back)" in out
    assert "Vault secret rotation" not in out

    code, out = run(capsys, "check", "--json", "--root", str(fixture_root))
    items = json.loads(out)["findings"]["promotion_lost"]["items"]
    named = {item["promotion_id"]: item for item in items}
    assert set(decided) <= set(named) and len(items) == json.loads(out)["counts"]["promotion_lost"] > 5

    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        report = check(store)
        mine = {f.data["promotion_id"]: f.detail for f in report.of("promotion_lost") if f.data["promotion_id"] > 37}
        assert "approved by engram" in mine[sealed[0]] and "rejected by engram" in mine[sealed[1]]
        result = repair(store)
        assert not result.failed and not result.remaining.drift, result.remaining.counts()
    rows = memoryd_rows(fixture_root)
    for pid, (status, decided_at) in decided.items():
        assert rows[pid] == (status, decided_at), pid  # the same id, status and decided_at
    code, out = run(capsys, "check", "--root", str(fixture_root))
    assert "promotion_lost" not in out and "decision_lost" not in out


def test_a_sensitive_decision_made_while_locked_is_named_from_the_audit_log(fixture_root, unlocked_keys, capsys):
    """No key at hand: nothing is sealed, and engram keeps no plaintext of it; the decision is still named."""
    pid = memoryd_proposes(fixture_root, scope=SENSITIVE, title="Rotate the vault token")
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as store:
        reject(store, pid, "stale")
    memoryd_rebuild_index(fixture_root)
    code, out = run(capsys, "check", "--root", str(fixture_root))
    assert code == 1 and f"#{pid}: rejected by engram at" in out and "index.db no longer holds it" in out
    assert "Rotate the vault token" not in out
    code, out = run(capsys, "check", "--json", "--root", str(fixture_root))
    [item] = json.loads(out)["findings"]["decision_lost"]["items"]
    assert item["promotion_id"] == pid and item["engram"] == "rejected"


def test_a_long_list_says_how_to_see_every_one(fixture_root, unlocked_keys, capsys):
    memoryd_rebuild_index(fixture_root)
    code, out = run(capsys, "check", "--root", str(fixture_root))
    assert "more: `engram check --all` lists every one" in out  # the encrypted files: more than five
    code, every = run(capsys, "check", "--all", "--root", str(fixture_root))
    assert "more: `engram check --all`" not in every and len(every.splitlines()) > len(out.splitlines())


def test_memoryd_keeps_reading_and_deciding_the_restored_table(fixture_root, unlocked_keys):
    decide_a_day(fixture_root, unlocked_keys)
    memoryd_rebuild_index(fixture_root)
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        repair(store)
    con = sqlite3.connect(fixture_root / "index.db")
    pending = [r[0] for r in con.execute("SELECT id FROM promotions WHERE status = 'pending' ORDER BY id")]
    con.execute("UPDATE promotions SET status = 'approved' WHERE id = ?", (pending[0],))  # memoryd's approve
    con.commit()
    con.close()
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        assert Promotion.get_by_id(pending[0]).status == "approved"
        assert not check(store).of("promotion_lost")


def test_a_decision_made_before_its_scope_was_marked_sensitive_survives_the_rebuild(
    fixture_root, unlocked_keys, capsys
):
    """Marking a scope sensitive drops engram's plain copy of its promotions: the decided ones are sealed under
    the scope's key in the same step, so memoryd's rebuild-index does not erase them for good."""
    plain = "5727cb99a38b"
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        pid = Promotion.get(Promotion.scope_hash == plain, Promotion.status == "pending").id
        reject(store, pid, "not true any more")
        mark_sensitive(store, plain)
        decided = Promotion.get_by_id(pid)
        was = (decided.status, decided.decided_at)
    memoryd_rebuild_index(fixture_root)
    code, out = run(capsys, "check", "--root", str(fixture_root))
    assert code == 1 and f"#{pid} (sealed: scope {plain} is sensitive; unlock it to put it back)" in out
    assert "decision_lost" not in out
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as store:
        result = repair(store)
        assert not result.failed and not result.remaining.drift, result.remaining.counts()
    assert memoryd_rows(fixture_root)[pid] == was
