"""The entity graph on a copy of memoryd's root: entities ranked and found by fuzzy name, neighbourhoods to three
hops without looping, memories that mention an entity, conflicts by GROUP BY, and rename / merge / supersede."""

from __future__ import annotations

import json

import pytest
from helpers import events

from engram.store.errors import BadInput, Conflict
from engram.store.graph import (
    conflicts,
    entities,
    mentioned_in,
    merge_entities,
    neighbourhood,
    rename_entity,
    supersede_relation,
)
from engram.store.models import Entity, Memory, Relation


def test_entities_by_mentions_and_fuzzy_name(store):
    ranked = entities(store)
    assert len(ranked) == 116 and ranked[0].mentions >= ranked[-1].mentions
    assert entities(store, "diego alvares")[0].id == "entity:person:diego_alvarez"
    assert all(e.scope_hash == "710d5aaf7a15" for e in entities(store, scope="710d5aaf7a15"))


def test_neighbourhood_hops_and_mentions(store):
    centre = neighbourhood(store, "entity:project:acme-web", hops=2)
    assert "uses" in centre.by_predicate
    reached = [hop for hops in centre.by_predicate.values() for _, hop in hops]
    assert any(hop.by_predicate for hop in reached)  # a second hop
    ids = []

    def walk(hop):
        for pairs in hop.by_predicate.values():
            for _, child in pairs:
                ids.append(child.node_id)
                if not child.seen_before:
                    walk(child)

    walk(centre)
    assert len([i for i in ids]) < 10_000  # finite: nothing is walked twice
    with pytest.raises(BadInput):
        neighbourhood(store, "entity:project:acme-web", hops=4)
    memories = mentioned_in(store, "entity:library:zod")
    assert memories and all(m.slug for m in memories)


def test_conflicts_are_one_subject_one_predicate_several_objects(store):
    found = conflicts(store)
    for (subject, _predicate), rows in found.items():
        assert len({r.object_id for r in rows}) > 1 and {r.subject_id for r in rows} == {subject}
    some = next(iter(found))
    assert set(conflicts(store, some[0])) >= {some}


def test_rename_merge_and_supersede_are_audited(store, fixture_root):
    rename_entity(store, "entity:tool:pnpm", "pnpm (package manager)")
    entity = Entity.get_by_id("entity:tool:pnpm")
    assert entity.name == "pnpm (package manager)" and "pnpm" in json.loads(entity.aliases)
    before = (
        Relation.select()
        .where((Relation.subject_id == "entity:library:zod") | (Relation.object_id == "entity:library:zod"))
        .count()
    )
    kept_before = (
        Relation.select()
        .where((Relation.subject_id == "entity:tool:pnpm") | (Relation.object_id == "entity:tool:pnpm"))
        .count()
    )
    moved = merge_entities(store, "entity:tool:pnpm", "entity:library:zod")
    assert moved == before and Entity.get_or_none(Entity.id == "entity:library:zod") is None
    assert (
        Relation.select()
        .where((Relation.object_id == "entity:library:zod") | (Relation.subject_id == "entity:library:zod"))
        .count()
        == 0
    )
    after = (
        Relation.select()
        .where((Relation.subject_id == "entity:tool:pnpm") | (Relation.object_id == "entity:tool:pnpm"))
        .count()
    )
    assert kept_before < after <= kept_before + before  # moved over, repeats dropped
    with pytest.raises(Conflict):
        merge_entities(store, "entity:tool:pnpm", "entity:tool:pnpm")
    rel = Relation.select().where(Relation.superseded_at.is_null()).first()
    supersede_relation(store, rel.id)
    assert Relation.get_by_id(rel.id).superseded_at
    with pytest.raises(Conflict):
        supersede_relation(store, rel.id)
    kinds = [e["event_type"] for e in events(fixture_root)]
    assert kinds[-3:] == ["entity_renamed", "entities_merged", "relation_superseded"]


def test_a_memory_in_the_neighbourhood_is_labelled_by_its_title(store):
    centre = neighbourhood(store, "entity:library:zod", hops=1)
    memories = [hop for pairs in centre.by_predicate.values() for _, hop in pairs if hop.node_id.startswith("memory:")]
    assert memories
    for hop in memories:
        slug = hop.node_id.removeprefix("memory:")
        assert hop.label == Memory.get(Memory.slug == slug).title
