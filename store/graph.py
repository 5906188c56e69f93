"""The entity graph memoryd builds from memories: entities, their relations, conflicts, and the few edits a
person makes (rename, merge aliases, mark a relation superseded).

Everything reads the index with grouped queries: conflicts (one subject, one predicate, several objects) are a
GROUP BY over active relations, not memoryd's self-join, so the 56k relations of a 20k-memory root stay quick.
Neighbourhoods are walked breadth-first with a visited set, to at most three hops.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from peewee import fn

from engram.store.errors import BadInput, Conflict, NotFound
from engram.store.models import Entity, Memory, Relation, tuples
from engram.store.service import Store
from engram.store.write.change import Change

MAX_HOPS = 3
PER_PREDICATE = 50  # relations listed per predicate and node; the rest are counted (a popular tool has thousands)


@dataclass(frozen=True)
class EntityRow:
    id: str
    name: str
    type: str
    mentions: int
    last_seen: str
    scope_hash: str | None
    aliases: tuple[str, ...]


@dataclass(frozen=True)
class Rel:
    """One relation, as the console shows it (the index row stays in the store)."""

    id: int
    subject_id: str
    predicate: str
    object_id: str
    confidence: float | None


@dataclass
class Hop:
    """An entity (or memory) reached from the centre, with the relations that reach further."""

    node_id: str
    label: str
    by_predicate: dict[str, list[tuple[Rel, Hop]]] = field(default_factory=dict)
    more: dict[str, int] = field(default_factory=dict)  # per predicate, relations beyond PER_PREDICATE
    seen_before: bool = False


def entities(store: Store, text: str = "", scope: str | None = None, limit: int = 500) -> list[EntityRow]:
    """Entities by mention count, or best fuzzy match of ``text`` against names and aliases first."""
    query = Entity.select()
    if scope:
        query = query.where(Entity.scope_hash == scope)
    rows = [
        EntityRow(e.id, e.name, e.type, e.mention_count or 0, e.last_seen_at, e.scope_hash, tuple(_aliases(e)))
        for e in query
    ]
    if not text.strip():
        return sorted(rows, key=lambda r: (-r.mentions, r.name))[:limit]
    names = [" ".join((r.name, *r.aliases)) for r in rows]
    from rapidfuzz import fuzz, process  # loaded by the first fuzzy look-up, not with every command

    ranked = process.extract(text, names, scorer=fuzz.WRatio, limit=None, score_cutoff=60)
    wanted = _squash(text)
    # the name containing what was typed (spaces, - and _ ignored) first: "acme web" is acme-web, not "me"
    ranked.sort(key=lambda hit: (wanted not in _squash(hit[0]), -hit[1], -rows[hit[2]].mentions))
    return [rows[i] for _, _, i in ranked[:limit]]


def neighbourhood(store: Store, entity_id: str, hops: int = 1) -> Hop:
    """What ``entity_id`` relates to, by predicate, ``hops`` deep (1-3); active relations only."""
    if not 1 <= hops <= MAX_HOPS:
        raise BadInput(f"hops go from 1 to {MAX_HOPS}")
    labels = dict(tuples(Entity.select(Entity.id, Entity.name)))
    centre = Hop(entity_id, labels.get(entity_id, entity_id))
    seen = {entity_id}
    frontier = [centre]
    for _ in range(hops):
        ids = [h.node_id for h in frontier]
        nxt: list[Hop] = []
        active = Relation.superseded_at.is_null()
        rows = tuples(
            Relation.select(
                Relation.id, Relation.subject_id, Relation.predicate, Relation.object_id, Relation.confidence
            ).where(active & (Relation.subject_id.in_(ids) | Relation.object_id.in_(ids)))
        )
        by_node = {h.node_id: h for h in frontier}
        for row in rows:  # tuples: a popular entity has tens of thousands of mentions
            rel = Rel(*row)
            for here, there in ((rel.subject_id, rel.object_id), (rel.object_id, rel.subject_id)):
                if here not in by_node:
                    continue
                predicate = rel.predicate if here == rel.subject_id else f"{rel.predicate} (from)"
                listed = by_node[here].by_predicate.setdefault(predicate, [])
                if len(listed) >= PER_PREDICATE:
                    by_node[here].more[predicate] = by_node[here].more.get(predicate, 0) + 1
                    continue
                hop = Hop(there, labels.get(there, there.removeprefix("memory:")), seen_before=there in seen)
                listed.append((rel, hop))
                if not hop.seen_before:
                    seen.add(there)
                    nxt.append(hop)
        frontier = nxt
    _title_memories(centre)
    return centre


def _title_memories(centre: Hop) -> None:
    """Label each memory reached by its title, not its slug (``2026-03-26-demo-000015`` says nothing to a
    person); a memory no row has keeps its slug."""
    memories: list[Hop] = []
    stack = [centre]
    while stack:
        children = [child for pairs in stack.pop().by_predicate.values() for _, child in pairs]
        memories += [child for child in children if child.node_id.startswith("memory:")]
        stack += [child for child in children if not child.seen_before]
    slugs = sorted({hop.label for hop in memories})  # a memory's label is its slug until here
    titles: dict[str, str] = {}
    for at in range(0, len(slugs), 500):
        part = slugs[at : at + 500]
        titles.update(tuples(Memory.select(Memory.slug, Memory.title).where(Memory.slug.in_(part))))
    for hop in memories:
        hop.label = titles.get(hop.label) or hop.label


def mentioned_in(store: Store, entity_id: str) -> list[Memory]:
    """Memories that mention the entity (memoryd's ``memory:<slug> mentions <entity>`` relations)."""
    slugs = {
        subject.removeprefix("memory:")
        for (subject,) in tuples(
            Relation.select(Relation.subject_id).where(
                (Relation.object_id == entity_id) & (Relation.subject_kind == "memory")
            )
        )
    }
    return list(Memory.select().where(Memory.slug.in_(slugs)).order_by(Memory.created_at.desc()))


def conflicts(store: Store, entity_id: str | None = None) -> dict[tuple[str, str], list[Rel]]:
    """Active relations where one subject has one predicate towards several objects (e.g. prefers A and B),
    optionally only those touching ``entity_id``: a GROUP BY, then the few groups it names."""
    active = (Relation.superseded_at.is_null()) & (Relation.subject_kind == "entity")
    groups = tuples(
        Relation.select(Relation.subject_id, Relation.predicate)
        .where(active)
        .group_by(Relation.subject_id, Relation.predicate)
        .having(fn.COUNT(Relation.object_id.distinct()) > 1)
    )
    found: dict[tuple[str, str], list[Rel]] = defaultdict(list)
    for subject, predicate in groups:
        rows = [
            Rel(*r)
            for r in tuples(
                Relation.select(
                    Relation.id, Relation.subject_id, Relation.predicate, Relation.object_id, Relation.confidence
                ).where(active & (Relation.subject_id == subject) & (Relation.predicate == predicate))
            )
        ]
        if entity_id is None or any(entity_id in (r.subject_id, r.object_id) for r in rows):
            found[(subject, predicate)] = rows
    return dict(found)


def rename_entity(store: Store, entity_id: str, name: str) -> None:
    """A better name; the old one stays as an alias, so memoryd's next mention of it still finds the entity."""
    entity = _entity(entity_id)
    name = " ".join(name.split())
    if not name or name == entity.name:
        raise BadInput("a new, non-empty name")
    aliases = sorted({*_aliases(entity), entity.name} - {name})

    def update() -> None:
        Entity.update(name=name, aliases=json.dumps(aliases, ensure_ascii=False)).where(
            Entity.id == entity_id
        ).execute()

    store.apply(
        Change(
            "entity_renamed",
            entity_id,
            entity.scope_hash,
            {"old_name": entity.name, "new_name": name},
            index_update=update,
        )
    )


def merge_entities(store: Store, keep: str, other: str) -> int:
    """``other`` is an alias of ``keep``: its relations move over (one that would repeat a relation of ``keep``
    is dropped instead), its names become aliases, mentions add up, and it is removed. Returns how many
    relations ``other`` had."""
    if keep == other:
        raise Conflict("an entity cannot be merged into itself")
    kept, gone = _entity(keep), _entity(other)
    moved = Relation.select().where((Relation.subject_id == other) | (Relation.object_id == other)).count()
    aliases = sorted({*_aliases(kept), *_aliases(gone), gone.name} - {kept.name})

    def update() -> None:
        for rel in Relation.select().where((Relation.subject_id == other) | (Relation.object_id == other)):
            subject = keep if rel.subject_id == other else rel.subject_id
            obj = keep if rel.object_id == other else rel.object_id
            if subject == obj or _exists(subject, rel.predicate, obj, rel.source_memory_id):
                Relation.delete().where(Relation.id == rel.id).execute()  # it said what keep's relation says
            else:
                Relation.update(subject_id=subject, object_id=obj).where(Relation.id == rel.id).execute()
        Entity.update(
            aliases=json.dumps(aliases, ensure_ascii=False),
            mention_count=(kept.mention_count or 0) + (gone.mention_count or 0),
            first_seen_at=min(kept.first_seen_at, gone.first_seen_at),
            last_seen_at=max(kept.last_seen_at, gone.last_seen_at),
        ).where(Entity.id == keep).execute()
        Entity.delete().where(Entity.id == other).execute()

    store.apply(
        Change("entities_merged", keep, kept.scope_hash, {"merged": other, "relations": moved}, index_update=update)
    )
    return moved


def supersede_relation(store: Store, relation_id: int) -> None:
    """The relation no longer holds (``superseded_at`` now); it stays in the index as history."""
    rel = Relation.get_or_none(Relation.id == relation_id)
    if rel is None:
        raise NotFound(f"no relation {relation_id}")
    if rel.superseded_at:
        raise Conflict(f"relation {relation_id} was superseded at {rel.superseded_at}")
    store.apply(
        Change(
            "relation_superseded",
            str(relation_id),
            rel.scope_hash,
            {"subject": rel.subject_id, "predicate": rel.predicate, "object": rel.object_id},
            index_update=lambda: (
                Relation.update(superseded_at=store.now().isoformat()).where(Relation.id == relation_id).execute()
            ),
        )
    )


def _exists(subject: str, predicate: str, obj: str, source: str | None) -> bool:
    """A relation with this key is already there (SQLite's UNIQUE treats NULL sources as all different)."""
    if source is None:
        return False
    return (
        Relation.select()
        .where(
            (Relation.subject_id == subject)
            & (Relation.predicate == predicate)
            & (Relation.object_id == obj)
            & (Relation.source_memory_id == source)
        )
        .exists()
    )


def _squash(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch not in " -_")


def _entity(entity_id: str) -> Entity:
    entity = Entity.get_or_none(Entity.id == entity_id)
    if entity is None:
        raise NotFound(f"no entity {entity_id!r}")
    return entity


def _aliases(entity: Entity) -> list[str]:
    try:
        value = json.loads(entity.aliases or "[]")
    except json.JSONDecodeError:
        return []
    return [str(a) for a in value] if isinstance(value, list) else []
