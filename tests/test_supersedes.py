"""Supersedes chains on a copy of memoryd's root: the forest (cycles shown once), and confirming, rejecting and
undoing links with the frontmatter kept in step with the index, each audited."""

from __future__ import annotations

import pytest
from helpers import events

from engram.store.errors import Conflict, NotFound
from engram.store.memories import add_supersede
from engram.store.models import Memory, SupersedesChain
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store
from engram.store.supersedes import (
    FILE_ONLY,
    confirm_supersede,
    forest,
    links,
    listed_links,
    reject_supersede,
    undo_supersede,
)


def frontmatter_supersedes(store, slug: str) -> list[str]:
    return list(store.read_doc(store.memory(slug).body_path).frontmatter.supersedes)


def proposed(store):
    return next(
        link
        for link in links(store)
        if link.decided_by == "digest" and not store.memory(link.newer).body_path.endswith(".enc")
    )


def test_the_forest_holds_every_link_once(store):
    roots = forest(store)

    def walk(node):
        for link, child in node.links:
            yield link
            yield from walk(child)

    seen = [(link.newer, link.older) for root in roots for link in walk(root)]
    assert sorted(seen) == sorted((x.newer, x.older) for x in links(store)) and len(links(store)) == 9


def walk_links(roots):
    def walk(node):
        for link, child in node.links:
            yield link
            yield from walk(child)

    return [link for root in roots for link in walk(root)]


def test_the_files_add_links_only_they_list_and_flag_index_links_they_do_not(store):
    """memoryd's fixture: 3 files (one encrypted) list a link the index lacks."""
    listed = listed_links(store)
    assert listed.unread == 0  # the test store is unlocked
    shown = walk_links(forest(store, listed))
    file_only = [link for link in shown if link.decided_by == FILE_ONLY]
    assert len(file_only) == 3 and all(link.listed and link.confidence is None for link in file_only)
    for link in file_only:
        assert link.older in frontmatter_supersedes(store, link.newer)
    for link in shown:
        assert link.listed == (link.older in frontmatter_supersedes(store, link.newer))
    assert len(shown) == len(links(store)) + 3


def test_a_locked_scope_is_counted_as_unread(fixture_root):
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as locked:
        listed = listed_links(locked)
        assert listed.unread == Memory.select().where(Memory.body_path.endswith(".md.enc")).count() > 0


def test_confirming_a_file_only_link_records_it_in_the_index(store, fixture_root):
    link = next(x for x in walk_links(forest(store, listed_links(store))) if x.decided_by == FILE_ONLY)
    confirm_supersede(store, link.newer, link.older)
    row = SupersedesChain.get(
        (SupersedesChain.newer_memory_id == link.newer) & (SupersedesChain.older_memory_id == link.older)
    )
    assert row.decided_by == "user" and row.confidence == 1.0
    assert link.older in frontmatter_supersedes(store, link.newer)
    assert events(fixture_root)[-1]["event_type"] == "supersede_confirmed"


def test_a_cycle_is_shown_not_followed(store):
    a, b = [m.slug for m in Memory.select().where(Memory.body_path.endswith(".md")).limit(2)]
    add_supersede(store, a, b)
    add_supersede(store, b, a)
    cyclic = [root for root in forest(store) if root.slug in (a, b)]
    assert len(cyclic) == 1
    child = cyclic[0].links[0][1]
    assert child.links[0][1].cycle and child.links[0][1].slug == cyclic[0].slug


def test_confirm_makes_it_a_persons_decision_and_lists_it(store, fixture_root):
    link = proposed(store)
    confirm_supersede(store, link.newer, link.older)
    row = SupersedesChain.get(
        (SupersedesChain.newer_memory_id == link.newer) & (SupersedesChain.older_memory_id == link.older)
    )
    assert row.decided_by == "user" and link.older in frontmatter_supersedes(store, link.newer)
    assert events(fixture_root)[-1]["event_type"] == "supersede_confirmed"
    with pytest.raises(Conflict):
        confirm_supersede(store, link.newer, link.older)


def test_reject_only_proposals_and_undo_any(store, fixture_root):
    link = proposed(store)
    add_supersede(store, link.newer, link.older)  # the frontmatter lists it too, as a confirmed one would
    SupersedesChain.update(decided_by="digest").where(
        (SupersedesChain.newer_memory_id == link.newer) & (SupersedesChain.older_memory_id == link.older)
    ).execute()
    reject_supersede(store, link.newer, link.older, "not the same tool")
    assert link.older not in frontmatter_supersedes(store, link.newer)
    assert not SupersedesChain.get_or_none(
        (SupersedesChain.newer_memory_id == link.newer) & (SupersedesChain.older_memory_id == link.older)
    )
    assert events(fixture_root)[-1]["event_type"] == "supersede_rejected"
    auto = next(
        x for x in links(store) if x.decided_by == "auto" and not store.memory(x.newer).body_path.endswith(".enc")
    )
    with pytest.raises(Conflict, match="undo it instead"):
        reject_supersede(store, auto.newer, auto.older)
    undo_supersede(store, auto.newer, auto.older)
    assert events(fixture_root)[-1]["event_type"] == "supersede_undone"
    with pytest.raises(NotFound):
        undo_supersede(store, auto.newer, auto.older)
