"""Decisions against a concurrent writer: memoryd decides promotions without looking at their status, so engram
checks inside its write transaction, changes nothing when it lost the race, and ``check`` names a rejection
memoryd overwrote afterwards."""

from __future__ import annotations

import pytest
from memoryd_emulation import memoryd_decides

from engram.store.drift.check import check
from engram.store.errors import Conflict
from engram.store.frontmatter import MemoryDoc, parse, serialize
from engram.store.models import Promotion
from engram.store.promotions import approve, defer, reject, undo
from engram.store.service import Store
from engram.store.supersedes import confirm_supersede, links, undo_supersede


def memory_files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in (root / "scopes").rglob("*") if p.is_file()}


@pytest.mark.parametrize("decide", [approve, reject, defer])
def test_a_promotion_memoryd_decided_meanwhile_is_refused_and_nothing_changes(
    fixture_root, unlocked_keys, monkeypatch, decide
):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        store.index.writable()
        pid = (
            Promotion.select()
            .where(Promotion.status == "pending", Promotion.scope_hash.not_in(list(store.sensitive_scopes())))
            .first()
            .id
        )
        files = memory_files(fixture_root)
        log = (fixture_root / "audit" / "audit.jsonl").read_bytes()
        real_apply = store.apply_many

        def memoryd_first(*args, **kwargs):  # memoryd decides after engram read the row, before it writes
            memoryd_decides(fixture_root, pid, "rejected")
            return real_apply(*args, **kwargs)

        monkeypatch.setattr(store, "apply_many", memoryd_first)
        with pytest.raises(Conflict, match="decided meanwhile"):
            decide(store, pid)
        assert Promotion.get_by_id(pid).status == "rejected"
    assert (fixture_root / "audit" / "audit.jsonl").read_bytes() == log
    assert memory_files(fixture_root) == files


def test_check_names_a_rejection_memoryd_overwrote(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        pid = Promotion.select().where(Promotion.status == "pending").first().id
        reject(store, pid, "not true")
        assert not check(store).of("decision_overwritten")
    memoryd_decides(fixture_root, pid, "approved")
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        found = check(store).of("decision_overwritten")
    assert [f.data["promotion_id"] for f in found] == [pid]


def test_check_names_an_approval_memoryd_overwrote_and_forgets_an_undone_one(fixture_root, unlocked_keys):
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        first, second = [
            p.id
            for p in Promotion.select()
            .where(Promotion.status == "pending", Promotion.scope_hash.not_in(list(store.sensitive_scopes())))
            .limit(2)
        ]
        approve(store, first)
        done = approve(store, second)
        undo(store, done)  # engram took it back: its approval is no longer its word
    memoryd_decides(fixture_root, first, "rejected")
    memoryd_decides(fixture_root, second, "rejected")
    with Store.open(fixture_root, keys=unlocked_keys) as store:
        found = check(store).of("decision_overwritten")
    assert [(f.data["promotion_id"], f.data["engram"], f.data["now"]) for f in found] == [
        (first, "approved", "rejected")
    ]


def test_check_names_a_supersedes_link_another_writer_dropped_from_the_frontmatter(store, fixture_root):
    link = next(
        x for x in links(store) if x.decided_by != "user" and not store.memory(x.newer).body_path.endswith(".enc")
    )
    confirm_supersede(store, link.newer, link.older)
    assert not check(store).of("supersedes_removed")
    path = fixture_root / store.memory(link.newer).body_path
    doc = parse(path.read_bytes(), path.name)  # another writer re-saves it, without the link
    kept = [s for s in doc.frontmatter.supersedes if s != link.older]
    path.write_bytes(serialize(MemoryDoc(frontmatter=doc.frontmatter.replace(supersedes=kept), body=doc.body)))
    found = check(store).of("supersedes_removed")
    assert [(f.data["newer"], f.data["older"]) for f in found] == [(link.newer, link.older)]
    undo_supersede(store, link.newer, link.older)  # the person takes it back: nothing left to say
    assert not check(store).of("supersedes_removed")
