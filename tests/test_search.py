"""Search over the fixture: fields, text, bodies after enrichment, sensitive bodies only when unlocked,
and narrowing while typing gives the same answers as a fresh search."""

from __future__ import annotations

from store.crypto import KeyRing
from store.search import SearchIndex
from store.service import Store


def test_titles_triggers_and_fields(store):
    index = SearchIndex.load(store)
    assert index.search("").total == 198
    result = index.search("quickbooks type:fact")
    assert result.total and all(h.type == "fact" and "quickbooks" in h.title.lower() for h in result.hits)
    assert index.search("state:soft").total == 23
    assert index.search("!type:session type:s").total == 0
    assert index.search("colour:red").error


def test_bodies_and_tags_after_enrichment_without_the_key(fixture_root):
    with Store.open(fixture_root, keys=KeyRing()) as store:
        index = SearchIndex.load(store)
        assert index.search("'config/ssr_cache.yaml").total == 0  # a body phrase: not searchable yet
        index.enrich(store)
        plain = index.search("'config/ssr_cache.yaml")
        assert plain.total > 0 and not any(h.encrypted for h in plain.hits)
        assert index.search("tag:frontend").total > 0
        locked = [h for h in index.search("'增值税").hits if h.encrypted]
        assert all("增值税" in h.title for h in locked)  # locked bodies are not searched; titles are in index.db


def test_unlocked_sensitive_bodies_are_searchable_in_memory(store):
    index = SearchIndex.load(store)
    index.enrich(store)
    hits = index.search("'增值税 scope:35998c22af79").hits
    assert hits and all(h.encrypted for h in hits)


def test_narrowing_while_typing_matches_a_fresh_search(store):
    typing = SearchIndex.load(store)
    typing.enrich(store)
    fresh = SearchIndex.load(store)
    fresh.enrich(store)
    query = ""
    for ch in "kafka lag":
        query += ch
        got = typing.search(query)
        fresh._cache.clear()
        want = fresh.search(query)
        assert [h.slug for h in got.hits] == [h.slug for h in want.hits], query
