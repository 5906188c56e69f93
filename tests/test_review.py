"""Review decisions in the store: approve with edits, dimming what it supersedes, reject with a reason,
defer, merge, and undo of each (a compensating change; the audit log keeps both)."""

from __future__ import annotations

import json

import pytest

from engram.store import promotions
from engram.store.domain import MemoryType
from engram.store.errors import Conflict
from engram.store.memories import edit_memory
from engram.store.models import Memory, Promotion, PromotionNote, SupersedesChain


def pending() -> Promotion:
    return Promotion.select().where(Promotion.status == "pending").order_by(Promotion.id).first()


def events(root):
    return [json.loads(line) for line in (root / "audit" / "audit.jsonl").read_text().splitlines()]


def alive_plain_memory(scope: str | None = None) -> Memory:
    query = Memory.body_path.endswith(".md") & (Memory.decay_state == "alive") & (Memory.type == "decision")
    return Memory.get(query & (Memory.scope_hash == scope) if scope else query)


def test_approve_with_edits_and_supersedes_dims_the_older(store, fixture_root):
    p = pending()
    older = alive_plain_memory()
    Promotion.update(proposed_supersedes=json.dumps([older.slug])).where(Promotion.id == p.id).execute()
    done = promotions.approve(
        store,
        p.id,
        promotions.Edits(title="Better title", type=MemoryType.WARNING, triggers=["x", "y"], body="Edited body\n"),
    )
    doc = store.read_doc(done.relpath)
    assert done.relpath.split("/")[2] == "warnings"
    assert (doc.frontmatter.title, doc.frontmatter.triggers, doc.body) == ("Better title", ["x", "y"], "Edited body\n")
    assert doc.frontmatter.supersedes == [older.slug]
    assert Memory.get(Memory.slug == older.slug).decay_state == "dim"
    assert store.read_doc(older.body_path).frontmatter.decay_state.value == "dim"
    chain = SupersedesChain.get(newer_memory_id=done.slug, older_memory_id=older.slug)
    assert chain.decided_by == "user"
    assert json.loads(events(fixture_root)[-1]["details"])["edited"] == ["title", "type", "triggers", "body"]


def test_undo_approve_puts_everything_back(store, fixture_root):
    p = pending()
    older = alive_plain_memory()
    Promotion.update(proposed_supersedes=json.dumps([older.slug])).where(Promotion.id == p.id).execute()
    older_bytes = (fixture_root / older.body_path).read_bytes()
    done = promotions.approve(store, p.id)
    promotions.undo(store, done)
    assert Promotion.get_by_id(p.id).status == "pending" and Promotion.get_by_id(p.id).decided_at is None
    assert Memory.get_or_none(Memory.slug == done.slug) is None
    assert not (fixture_root / done.relpath).exists()
    assert (fixture_root / older.body_path).read_bytes() == older_bytes
    assert Memory.get(Memory.slug == older.slug).decay_state == "alive"
    assert not SupersedesChain.select().where(SupersedesChain.newer_memory_id == done.slug).exists()
    kinds = [e["event_type"] for e in events(fixture_root)[-2:]]
    assert kinds == ["promotion_approved", "undo_applied"]
    # redo is the same decision again
    again = promotions.approve(store, p.id)
    assert again.slug == done.slug and Promotion.get_by_id(p.id).status == "approved"


def test_undo_refuses_when_the_memory_changed_since(store):
    done = promotions.approve(store, pending().id)
    edit_memory(store, done.slug, body="someone edited this\n")
    with pytest.raises(Conflict, match="changed after"):
        promotions.undo(store, done)
    assert Promotion.get_by_id(done.promotion_id).status == "approved"


def test_reject_with_reason_and_undo(store):
    p = pending()
    done = promotions.reject(store, p.id, "duplicate")
    assert PromotionNote.get_by_id(p.id).reject_reason == "duplicate"
    promotions.undo(store, done)
    assert Promotion.get_by_id(p.id).status == "pending"
    assert PromotionNote.get_by_id(p.id).reject_reason is None
    with pytest.raises(Conflict):
        promotions.undo(store, done)


def test_defer_keeps_it_pending_for_memoryd(store):
    p = pending()
    done = promotions.defer(store, p.id, "ask Priya")
    assert Promotion.get_by_id(p.id).status == "pending"
    note = PromotionNote.get_by_id(p.id)
    assert note.deferred_at and note.defer_reason == "ask Priya"
    promotions.undo(store, done)
    assert PromotionNote.get_by_id(p.id).deferred_at is None


def test_merge_appends_and_undo_restores(store, fixture_root):
    p = pending()
    target = alive_plain_memory(p.scope_hash)
    before = (fixture_root / target.body_path).read_bytes()
    done = promotions.merge(store, p.id, target.slug)
    doc = store.read_doc(target.body_path)
    assert p.proposed_body.strip() in doc.body and f"merged from promotion #{p.id}" in doc.body
    assert Promotion.get_by_id(p.id).status == "merged"
    assert PromotionNote.get_by_id(p.id).merged_into == target.slug
    promotions.undo(store, done)
    assert (fixture_root / target.body_path).read_bytes() == before
    assert Promotion.get_by_id(p.id).status == "pending"


def test_decided_promotions_are_refused(store):
    p = pending()
    promotions.reject(store, p.id)
    for action in (
        lambda: promotions.approve(store, p.id),
        lambda: promotions.defer(store, p.id),
        lambda: promotions.merge(store, p.id, alive_plain_memory(p.scope_hash).slug),
    ):
        with pytest.raises(Conflict, match="already rejected"):
            action()


def test_merge_stays_within_its_scope(store):
    p = pending()
    other = Memory.get((Memory.scope_hash != p.scope_hash) & Memory.body_path.endswith(".md"))
    with pytest.raises(Conflict, match="stays within its scope"):
        promotions.merge(store, p.id, other.slug)


def test_merging_a_body_the_memory_already_holds_adds_nothing_but_its_triggers(store, fixture_root):
    """A cluster's near-duplicates are often the same text: merged twice, the memory said it twice."""
    p = pending()
    target = alive_plain_memory(p.scope_hash)
    holding = store.read_doc(target.body_path)
    edit_memory(store, target.slug, body=holding.body.rstrip("\n") + "\n\n" + p.proposed_body.strip() + "\n")
    Promotion.update(proposed_triggers='["merge-only-trigger"]').where(Promotion.id == p.id).execute()
    promotions.merge(store, p.id, target.slug)
    doc = store.read_doc(target.body_path)
    assert doc.body.count(p.proposed_body.strip()) == 1 and "merged from promotion" not in doc.body
    assert "merge-only-trigger" in doc.frontmatter.triggers
    assert Promotion.get_by_id(p.id).status == "merged"
