"""Decay on a copy of memoryd's root: memoryd's sweep rule planned then applied (one step per run, files already
in forgotten/ left alone), written through to frontmatter; revive, recall, ttl, pin and forget."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from helpers import events

from engram.store.decay import (
    MOVED,
    apply_sweep,
    distribution,
    forget_now,
    listing,
    plan_sweep,
    record_recall,
    revive,
    set_ttl,
    state_of,
)
from engram.store.domain import DecayState
from engram.store.errors import BadInput
from engram.store.models import Memory

LATER = datetime(2027, 6, 1, tzinfo=UTC)


def fm(store, slug):
    return store.read_doc(store.memory(slug).body_path).frontmatter


def test_distribution_counts_moved_files_apart(store):
    counts = distribution(store)
    total = sum(sum(c.values()) for c in counts.values())
    assert total == 198 and sum(c[MOVED] for c in counts.values()) > 0


def test_plan_follows_memoryds_rule_one_step_and_skips_moved_files(store):
    steps = plan_sweep(store, LATER)
    by_slug = {s.slug: s for s in steps}
    for row in Memory.select():
        step = by_slug.get(row.slug)
        if "/forgotten/" in row.body_path:
            assert step is None  # memoryd counted these again every run
        elif row.decay_state == "dim":
            assert step and step.after == "soft-forgotten"
        elif row.decay_state == "soft-forgotten":
            assert step and step.move
        elif row.ttl_days is None:
            assert step is None  # alive without a ttl never dims by age
    assert plan_sweep(store, datetime(2000, 1, 1, tzinfo=UTC)) == []


def test_applying_the_plan_writes_files_index_and_audit(store, fixture_root):
    steps = plan_sweep(store, LATER)
    assert steps
    before = len(events(fixture_root))
    apply_sweep(store, steps)
    for step in steps:
        row = store.memory(step.slug)
        assert state_of(row) == step.after
        assert fm(store, step.slug).decay_state.value == ("soft-forgotten" if step.move else step.after)
        assert ("/forgotten/" in row.body_path) == step.move
    assert len(events(fixture_root)) - before == -(-len(steps) // 50)
    assert not [s for s in plan_sweep(store, LATER) if s.slug in {x.slug for x in steps if x.move}]


def test_revive_recall_ttl_pin_and_forget(store, fixture_root):
    moved = Memory.get(Memory.body_path.contains("/forgotten/") & Memory.body_path.endswith(".md"))
    revive(store, moved.slug)
    row = store.memory(moved.slug)
    assert row.decay_state == "alive" and "/forgotten/" not in row.body_path and row.last_recalled_at
    dim = Memory.get((Memory.decay_state == "dim") & Memory.body_path.endswith(".md"))
    record_recall(store, dim.slug)
    assert store.memory(dim.slug).decay_state == "alive" and fm(store, dim.slug).recall_count >= 1
    set_ttl(store, dim.slug, 7)
    assert store.memory(dim.slug).ttl_days == 7 and fm(store, dim.slug).ttl_days == 7
    set_ttl(store, dim.slug, None)
    assert store.memory(dim.slug).ttl_days is None
    with pytest.raises(BadInput):
        set_ttl(store, dim.slug, 0)
    forget_now(store, dim.slug)
    assert state_of(store.memory(dim.slug)) == MOVED and fm(store, dim.slug).decay_state == DecayState.SOFT_FORGOTTEN
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds[-5:] == ["memory_revived", "memory_recalled", "ttl_set", "memory_pinned", "memory_forgotten"]


def test_lists(store):
    slug = Memory.get(Memory.body_path.endswith(".md") & (Memory.decay_state == "alive")).slug
    record_recall(store, slug)
    set_ttl(store, slug, 3)
    expiring = {e.slug: e for e in listing(store, "expiring", days=7)}  # overdue ones first, then this one
    assert expiring[slug].ttl_days == 3 and expiring[slug].expires
    assert slug not in {e.slug for e in listing(store, "expiring", days=1)}
    assert listing(store, "recalled")[0].slug == slug
    assert {e.state for e in listing(store, "dim")} == {"dim"}
    with pytest.raises(BadInput):
        listing(store, "everything")
