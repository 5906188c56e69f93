"""``engram search`` asks one query of the persistent index: it answers exactly as the console's whole index does,
reads only the rows its terms can match, and syncs the index only when a memory's text can have changed, which
memoryd's recalls and decay sweeps never do and its saves, updates and rebuilds always do."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Collection
from datetime import UTC, datetime

import pytest
from memoryd_emulation import memoryd_forgets, memoryd_rebuild_index, memoryd_saves, memoryd_sweeps

from engram.store.frontmatter import parse
from engram.store.memories import edit_memory
from engram.store.models import Memory
from engram.store.search import lookup as lookup_module
from engram.store.search.fulltext import FullText, deferred, sync
from engram.store.search.index import SearchIndex, SearchResult
from engram.store.search.lookup import Lookup, moved, stamp
from engram.store.search.rows import Builder
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store

QUERIES = [
    "webhook",
    "幂等",
    '"webhook secret"',
    "stripe | webhook",
    "webhook -stripe",
    "type:playbook webhook",
    "^runbook",
    "secret$",
    "pr",
    "tag:payments | refund",
    "!webhook",
    "state:alive",
    "",
    "zzzz-nothing-has-this",
]


def listed(result: SearchResult) -> tuple[list[str], int, list[float | None]]:
    return [hit.slug for hit in result.hits], result.total, result.scores


def test_a_query_is_answered_as_the_consoles_whole_index_answers_it(store):
    sync(store)
    whole = SearchIndex.load(store, FullText.open(store))
    whole.enrich(store)
    with Lookup(store) as lookup:
        answers = {query: lookup.search(query, 50) for query in QUERIES}
    for query, answer in answers.items():
        assert listed(answer) == listed(whole.search(query, 50)), query
    assert all(answers[q].total > 0 for q in QUERIES[:-1]) and answers[QUERIES[-1]].total == 0


def test_a_narrow_query_reads_only_the_rows_it_can_match(store, monkeypatch):
    built: list[int] = []
    add = Builder.add
    monkeypatch.setattr(Builder, "add", lambda self, slugs, *rest: (built.append(len(slugs)), add(self, slugs, *rest)))
    every = Memory.select().count()
    loose = Memory.select().where(Memory.body_path.endswith(".md.enc")).count()  # never in the persistent index
    with Lookup(store) as lookup:
        lookup.refresh()
        found = lookup.search("webhook secret", 20)
        narrow = sum(built)
        built.clear()
        lookup.search("!webhook", 20)  # a negation narrows nothing: every row
    assert 0 < found.total < every - loose
    assert narrow == found.total + loose
    assert sum(built) == every


def test_a_locked_scopes_memories_are_read_only_where_their_heads_can_match(fixture_root, monkeypatch):
    """Without the passphrase an encrypted memory is searched by its head alone: one whose head holds no term of
    some AND-group of text terms could not be a hit, and its row is not read. The answers stay the whole index's."""
    built: list[int] = []
    add = Builder.add
    monkeypatch.setattr(Builder, "add", lambda self, slugs, *rest: (built.append(len(slugs)), add(self, slugs, *rest)))
    with Store.open(fixture_root, keys=KeyRing(), actor="engram-test") as store:
        sync(store)
        whole = SearchIndex.load(store, FullText.open(store))
        whole.enrich(store)
        locked = Memory.get(Memory.slug == "2026-05-31-QuickBooks_is_pinned_to_7_16-1780209309")
        queries = [*QUERIES, "quickbooks", "^quickbooks pinned", "quickbooks -pinned", "quickbooks | zzzz"]
        with Lookup(store) as lookup:
            lookup.refresh()
            for query in queries:
                built.clear()
                answer = lookup.search(query, 50)
                assert listed(answer) == listed(whole.search(query, 50)), query
                if query in ("webhook secret", "quickbooks", "^quickbooks pinned"):
                    assert sum(built) == answer.total, query  # every row read is a hit
            assert locked.slug in {hit.slug for hit in lookup.search("quickbooks", 20).hits}
            built.clear()
            lookup.search("!quickbooks", 20)  # a negation narrows nothing: every row
        assert sum(built) == Memory.select().count()


def test_nothing_moved_no_sync_and_memoryds_recalls_and_sweeps_move_nothing(store):
    with Lookup(store) as lookup:
        assert lookup.refresh()  # the first look builds the index
        assert not lookup.refresh()
        slugs = [m.slug for m in Memory.select().limit(5)]
        con = sqlite3.connect(store.layout.root / "index.db")
        con.executemany(
            "UPDATE memories SET recall_count = recall_count + 1, last_recalled_at = ? WHERE slug = ?",
            [(datetime.now(UTC).isoformat(), slug) for slug in slugs],
        )
        con.commit()
        con.close()
        memoryd_sweeps(store.layout.root, slugs, "dim")
        assert not lookup.refresh()
        assert lookup.refresh(rescan=True)


def memoryd_updates(store: Store, slug: str, body: str) -> None:
    """memoryd's ``mem_update``: the file rewritten in place with ``updated_at`` bumped, its row upserted."""
    relpath = Memory.get(Memory.slug == slug).body_path
    doc = parse((store.layout.root / relpath).read_bytes(), relpath)
    fm = doc.frontmatter.replace(updated_at=datetime.now(UTC))
    memoryd_saves(store.layout.root, doc.model_copy(update={"frontmatter": fm, "body": body}))


@pytest.mark.parametrize("change", ["update", "save", "rebuild-index"])
def test_memoryds_writes_are_searched_at_once(store, change):
    plain = Memory.get(~Memory.body_path.endswith(".md.enc"))
    with Lookup(store) as lookup:
        lookup.refresh()
        if change == "update":
            memoryd_updates(store, plain.slug, "the quokka migration runbook\n")
        elif change == "save":
            doc = parse((store.layout.root / plain.body_path).read_bytes(), plain.body_path)
            fm = doc.frontmatter.replace(slug="2026-12-07-quokka", title="Quokka notes")
            memoryd_saves(store.layout.root, doc.model_copy(update={"frontmatter": fm, "body": "about the quokka\n"}))
        else:
            memoryd_updates(store, plain.slug, "the quokka migration runbook\n")
            lookup.refresh()
            memoryd_rebuild_index(store.layout.root)
        assert lookup.refresh()
        assert lookup.search("quokka", 5).total == 1


def _docs(lookup: Lookup) -> set[tuple[object, ...]]:
    """Every row of the persistent index, as a search reads it."""
    query = "SELECT slug, scope, path, size, mtime_ns, digest, tags, head, body FROM docs"
    return set(lookup.fulltext.con.execute(query))


def _sql(store: Store, statement: str, *args: object) -> None:
    con = sqlite3.connect(store.layout.root / "index.db")
    with con:
        con.execute(statement, args)
    con.close()


def _replace_by_hand(store: Store, rel: str, text: str) -> None:
    """Another file renamed over the memory's (a sync tool, an editor's save), index.db untouched."""
    path = store.layout.root / rel
    spare = path.with_name(".spare")
    spare.write_bytes(path.read_bytes().replace(b"\n---\n", f"\n---\n{text}\n".encode(), 1))
    os.replace(spare, path)


def _save_new(store: Store, plain: Memory) -> None:
    doc = parse((store.layout.root / plain.body_path).read_bytes(), plain.body_path)
    fm = doc.frontmatter.replace(slug="2026-12-07-quokka", title="Quokka notes")
    memoryd_saves(store.layout.root, doc.model_copy(update={"frontmatter": fm, "body": "about the quokka\n"}))


def _removed(store: Store, plain: Memory) -> None:
    _sql(store, "DELETE FROM triggers WHERE slug = ?", plain.slug)
    _sql(store, "DELETE FROM memories WHERE slug = ?", plain.slug)
    (store.layout.root / plain.body_path).unlink()


CHANGES = {
    "memoryd updates a body": lambda store, plain: memoryd_updates(store, plain.slug, "the quokka runbook\n"),
    "memoryd saves a memory": _save_new,
    "memoryd forgets one": lambda store, plain: memoryd_forgets(store.layout.root, plain.slug),
    "engram edits a body": lambda store, plain: edit_memory(store, plain.slug, body="the quokka runbook\n"),
    "a title changed in index.db alone": lambda store, plain: _sql(
        store, "UPDATE memories SET title = 'Quokka' WHERE slug = ?", plain.slug
    ),
    "a trigger added in index.db alone": lambda store, plain: _sql(
        store, "INSERT INTO triggers (slug, trigger) VALUES (?, 'quokka')", plain.slug
    ),
    "a memory and its file removed": _removed,
    "a file removed by hand": lambda store, plain: (store.layout.root / plain.body_path).unlink(),
    "a file replaced by hand": lambda store, plain: _replace_by_hand(store, plain.body_path, "quokka"),
}


@pytest.mark.parametrize("change", CHANGES)
def test_after_a_change_a_partial_sync_leaves_the_index_a_full_one_would(store, monkeypatch, change):
    """A stamp that moved has only the memories :func:`moved` names compared with their files; the rows it leaves
    are the ones comparing every memory's file gives, and the other memories are not looked at."""
    plain = Memory.get(~Memory.body_path.endswith(".md.enc"))
    others = Memory.select().where(~Memory.body_path.endswith(".md.enc")).count()
    compared: list[Collection[str] | None] = []
    real = lookup_module.sync

    def recorded(store: Store, only: Collection[str] | None = None, **kwargs: object) -> object:
        compared.append(only)
        return real(store, only=only, **kwargs)

    monkeypatch.setattr(lookup_module, "sync", recorded)
    with Lookup(store) as lookup:
        lookup.refresh()
        CHANGES[change](store, plain)
        assert lookup.refresh()
        assert compared[-1] is not None and 0 < len(compared[-1]) < others
        partial = _docs(lookup)
        assert lookup.refresh(rescan=True) and compared[-1] is None
        assert _docs(lookup) == partial
        assert not lookup.refresh()


def test_a_memoryd_update_has_that_memory_alone_compared(store):
    """memoryd rewrites the file in place (its folder does not change) and bumps ``updated_at``."""
    plain = Memory.get(~Memory.body_path.endswith(".md.enc"))
    with Lookup(store) as lookup:
        lookup.refresh()
        before = lookup.fulltext.stamp()
        memoryd_updates(store, plain.slug, "the quokka runbook\n")
        assert moved(store, lookup.fulltext, before, stamp(store)) == [plain.slug]
        memoryd_sweeps(store.layout.root, [plain.slug], "dim")  # no text: still the one memory
        assert moved(store, lookup.fulltext, before, stamp(store)) == [plain.slug]
        assert lookup.refresh()
        assert [hit.slug for hit in lookup.search("quokka", 5).hits] == [plain.slug]


def test_a_stamp_that_does_not_say_what_moved_has_every_memory_compared(store):
    """No stamp of this kind kept (an older engram's, or none), another index.db, other sensitive scopes."""
    with Lookup(store) as lookup:
        lookup.refresh()
        now = stamp(store)
        assert moved(store, lookup.fulltext, now, now) == []
        assert moved(store, lookup.fulltext, None, now) is None
        assert moved(store, lookup.fulltext, "3f2a" * 16, now) is None
        for part, value in (("index", 1), ("sensitive", ["0123456789ab"]), ("schema", "0")):
            assert moved(store, lookup.fulltext, json.dumps({**json.loads(now), part: value}), now) is None


def test_a_build_cut_short_is_finished_by_the_next_search_whatever_moved(store):
    """A build that stopped before its end left rows FTS5 does not follow yet (the mark that defers it): the next
    sync compares every memory, which folds them in, even where the stamp kept from before says what moved."""
    with Lookup(store) as lookup:
        lookup.refresh()
        lookup.fulltext.con.execute("INSERT INTO meta (key, value) VALUES ('fts_deferred', '1')")
        assert moved(store, lookup.fulltext, lookup.fulltext.stamp(), stamp(store)) is None
        memoryd_updates(store, Memory.get(~Memory.body_path.endswith(".md.enc")).slug, "the quokka runbook\n")
        assert lookup.refresh()
        assert not deferred(lookup.fulltext.con)


def test_a_file_edited_in_place_by_hand_is_seen_by_a_rescan(store):
    plain = Memory.get(~Memory.body_path.endswith(".md.enc"))
    path = store.layout.root / plain.body_path
    with Lookup(store) as lookup:
        lookup.refresh()
        path.write_bytes(path.read_bytes() + b"\nwombat\n")  # in place: no folder, index.db or audit change
        assert not lookup.refresh()
        assert lookup.search("wombat", 5).total == 0
        assert lookup.refresh(rescan=True)
        assert [hit.slug for hit in lookup.search("wombat", 5).hits] == [plain.slug]


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_a_row_whose_text_is_not_utf8_is_still_searched(store, encrypted):
    """sqlite3 refuses such text; the listing reads it again decoding what it can, so one damaged row (another
    writer's bytes, a bad page) neither stops the search nor hides the other rows. An encrypted file's row is
    one whose head a narrow query tests before reading it: that test cannot be given such text either."""
    kind = Memory.body_path.endswith(".md.enc")
    damaged, other = (m.slug for m in Memory.select().where(kind if encrypted else ~kind).limit(2))
    con = sqlite3.connect(store.layout.root / "index.db")
    with con:
        con.execute("UPDATE memories SET title = CAST(x'71756f6b6b61ff' AS TEXT) WHERE slug = ?", (damaged,))
    con.close()
    with Lookup(store) as lookup:
        found = lookup.search("quokka", 5)
        assert [(hit.slug, hit.title) for hit in found.hits] == [(damaged, "quokka\ufffd")]
        assert other in {hit.slug for hit in lookup.search("!zzzz-nothing-has-this", 10_000).hits}
