"""engram's persistent search index: it answers body queries at once after a sync, never holds a sensitive
scope's text (not even in SQLite's free pages after the scope is marked), follows changes made by engram and by
another process, is checked by ``engram check`` and built again by ``repair`` and ``rebuild-index``, and gives the
same answers as the in-memory index it replaces."""

from __future__ import annotations

import mmap
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from helpers import fulltext_matching, mapped_kb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memoryd_emulation import memoryd_saves

from engram.store import frontmatter, promotions
from engram.store.drift.check import check
from engram.store.drift.rebuild import rebuild_index
from engram.store.drift.repair import repair
from engram.store.errors import StoreError
from engram.store.models import Memory
from engram.store.queue import pending_ids
from engram.store.search import arrays, generation
from engram.store.search import fulltext as fulltext_module
from engram.store.search.fulltext import FullText, cache_path, rows_dir, segments_dir, sync, verify
from engram.store.search.index import SearchIndex
from engram.store.sensitive.convert import mark_sensitive
from engram.store.service import Store

SENSITIVE = ("35998c22af79", "91c2073b561e")
PLAIN = "710d5aaf7a15"


def cache_bytes(store: Store) -> bytes:
    """Everything engram keeps of the index on disk: the database, its WAL and any journal, its segments and the
    search's kept rows."""
    path = cache_path(store)
    files = [*path.parent.glob(path.name + "*"), *segments_dir(path).glob("*"), *rows_dir(path).glob("*")]
    return b"".join(p.read_bytes() for p in files)


def body_pieces(store: Store, scope: str, unique: bool = False) -> list[bytes]:
    """Up to three 24-character stretches of each body in ``scope``, lowercased as the index keeps them; with
    ``unique``, only stretches no memory of another scope has in its body or head."""
    others = b""
    if unique:
        others = b"\n".join(
            f"{m.title} {store.read_bytes(m.body_path).decode()}".lower().encode()
            for m in Memory.select().where(Memory.scope_hash != scope, ~Memory.body_path.endswith(".md.enc"))
        )
    pieces = []
    for m in Memory.select().where(Memory.scope_hash == scope):
        lines = [line.lower() for line in store.read_doc(m.body_path).body.splitlines() if len(line) >= 24]
        pieces += [line[:24].encode() for line in lines[:3]]
    return [p for p in pieces if p not in others]


def searched(store: Store, text: str) -> set[str]:
    index = SearchIndex.load(store, FullText.open(store))
    return {hit.slug for hit in index.search(text, limit=10_000).hits}


def test_bodies_are_searchable_at_load_without_reading_a_file(store, monkeypatch):
    sync(store)
    monkeypatch.setattr(Store, "read_bytes", lambda *a: pytest.fail("a file was read at load"))
    index = SearchIndex.load(store, FullText.open(store))
    found = index.search("'config/ssr_cache.yaml")
    assert found.total > 0 and not any(hit.encrypted for hit in found.hits)
    assert index.search("tag:frontend").total > 0


def test_a_second_sync_reads_nothing_and_a_touched_file_is_not_parsed_again(store):
    first = sync(store)
    assert first.read > 100 and not first.unreadable
    assert not sync(store).changed
    path = store.layout.root / Memory.get(Memory.scope_hash == PLAIN).body_path
    path.touch()
    again = sync(store)
    assert (again.read, again.touched) == (0, 1)


def test_no_text_of_a_sensitive_scope_is_ever_in_the_index(store):
    """Unlocked or not, a sensitive scope's bodies stay out of the file; the plain ones are in it (the control)."""
    sync(store)
    on_disk = cache_bytes(store)
    for scope in SENSITIVE:
        pieces = body_pieces(store, scope, unique=True)
        assert len(pieces) > 10 and not [p for p in pieces if p in on_disk]
    assert all(p in on_disk for p in body_pieces(store, PLAIN))
    with sqlite3.connect(cache_path(store)) as con:
        scopes = {scope for (scope,) in con.execute("SELECT DISTINCT scope FROM docs")}
    assert scopes and not scopes & set(SENSITIVE)


def test_no_connection_engram_reads_text_through_spills_a_sort_to_a_temporary_file(store):
    """SQLite writes a sort too large for its page cache, a temporary table or a statement journal to files in
    /var/tmp unless told otherwise: the read of every memory newest first put a million titles, triggers and slugs
    there, those of sensitive scopes too. Every connection that reads such text keeps them in memory (2)."""
    from engram.store.search.index import _listing

    fulltext = FullText.open(store)
    assert fulltext is not None
    connections = [store.index.db.connection(), fulltext.con, arrays.MemoryTrigrams({1: "a body"}).con]
    with _listing(store, fulltext) as cursor:
        assert cursor.fetchone() is not None  # the control: it reads the memories
        connections.append(cursor.connection)
        assert [con.execute("PRAGMA temp_store").fetchone()[0] for con in connections] == [2] * 4


def test_marking_a_scope_sensitive_wipes_its_text_from_the_index_file(store):
    sync(store)
    pieces = body_pieces(store, PLAIN, unique=True)
    assert len(pieces) > 10 and all(p in cache_bytes(store) for p in pieces)
    mark_sensitive(store, PLAIN)
    assert not cache_path(store).exists()  # zeroed and unlinked as the scope's own plaintext files are
    sync(store)
    assert not [p for p in pieces if p in cache_bytes(store)]
    other = body_pieces(store, "5727cb99a38b", unique=True)[0].decode()
    assert searched(store, f"'{other}")  # the other plain scope's bodies are searchable again


def test_a_scope_another_process_marks_sensitive_is_found_by_check_and_wiped(store):
    sync(store)
    pieces = body_pieces(store, PLAIN, unique=True)
    with sqlite3.connect(store.layout.index_path) as con:  # memoryd's mark: the registration comes first
        con.execute("INSERT INTO sensitive_scopes VALUES (?, '/tmp/project', '2026-11-24T00:00:00Z')", (PLAIN,))
    report = check(store)
    assert [f.kind for f in report.findings if f.kind.startswith("search_")] == ["search_index_sensitive"]
    index = SearchIndex.load(store, FullText.open(store))  # meanwhile, its bodies are never answered from it
    hits = index.search("'config/", limit=1000).hits
    assert hits and all("config/" in index.rows.head(index.rows.by_slug[h.slug]) for h in hits if h.scope_hash == PLAIN)
    assert sync(store).discarded
    assert not [p for p in pieces if p in cache_bytes(store)]
    assert not [f for f in check(store).findings if f.kind.startswith("search_")]


def test_follows_what_engram_and_another_process_change(store):
    sync(store)
    pid = next(p for p in pending_ids(store) if promotions.target_scopes(store, [p]) == {PLAIN})
    slug = promotions.approve(store, pid, promotions.Edits(body="the zebrafish-quokka runbook")).slug
    assert sync(store, only={slug}).read == 1
    assert searched(store, "zebrafish-quokka") == {slug}

    memory = Memory.get(Memory.scope_hash == PLAIN, Memory.slug != slug)
    doc = store.read_doc(memory.body_path)
    doc.body = "capybara-ledger notes"
    memoryd_saves(store.layout.root, doc)  # another process rewrites a file the index holds
    sync(store)
    assert searched(store, "capybara-ledger") == {memory.slug}

    (store.layout.root / memory.body_path).unlink()
    with sqlite3.connect(store.layout.index_path) as con:
        con.execute("DELETE FROM memories WHERE slug = ?", (memory.slug,))
    assert sync(store).removed == 1
    assert not searched(store, "capybara-ledger")


def test_an_index_behind_its_files_still_answers_and_is_no_drift(store):
    sync(store)
    memory = Memory.get(Memory.scope_hash == PLAIN)
    doc = store.read_doc(memory.body_path)
    doc.body = "platypus-sextant"
    memoryd_saves(store.layout.root, doc)
    assert not searched(store, "platypus-sextant")  # the old text answers until the next sync
    report = check(store)
    assert report.search is not None and report.search.stale == 1
    assert not [f for f in report.findings if f.kind.startswith("search_")]


DAMAGE = {
    "fts5's blocks": "UPDATE fts_data SET block = zeroblob(length(block)) WHERE id > 10",
    "fts5 moved off the segments": "UPDATE meta SET value = value + 1 WHERE key = 'fts_from';"
    "INSERT INTO fts (fts) VALUES ('rebuild');",  # in step with the rows it follows, but one memory is in neither
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_index_is_found_by_check_and_built_again_by_repair(store, damage):
    sync(store)
    pid = next(p for p in pending_ids(store) if promotions.target_scopes(store, [p]) == {PLAIN})
    slug = promotions.approve(store, pid, promotions.Edits(body="the zebrafish-quokka runbook")).slug
    sync(store, only={slug})  # a memory above the segments: FTS5 indexes it
    with sqlite3.connect(cache_path(store)) as con:
        con.executescript(DAMAGE[damage])
    report = check(store)
    assert report.drift and report.of("search_index_damaged")
    result = repair(store)
    assert any("search index built again" in m for m in result.fixed)
    assert verify(store).damaged is None
    assert searched(store, "'config/ssr_cache.yaml")


def test_a_file_that_is_not_an_index_is_replaced_on_open(store):
    path = cache_path(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a database at all" * 100)
    assert FullText.open(store) is not None
    assert sync(store).read > 100


def test_rebuild_index_builds_the_search_index_again(store):
    sync(store)
    with sqlite3.connect(cache_path(store)) as con:
        con.execute("DELETE FROM docs")
    result = rebuild_index(store)
    assert result.searchable and result.searchable > 100
    assert searched(store, "'config/ssr_cache.yaml")


def test_an_unwritable_cache_falls_back_to_reading_bodies_in_memory(store, monkeypatch, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert FullText.open(store) is None
    index = SearchIndex.load(store, None)
    index.enrich(store)
    assert index.search("'config/ssr_cache.yaml").total > 0


def _bodies_holding(store: Store, word: str) -> set[str]:
    """Slugs of the memories whose body holds ``word``, read from their files (the keys are unlocked)."""
    return {m.slug for m in Memory.select() if word in store.read_doc(m.body_path).body}


def test_a_two_character_cjk_word_is_found_in_bodies_wherever_the_index_keeps_them(store):
    """Two letters inside a body are noise; two CJK characters are a word (截断, 跑步), which a trigram index
    cannot answer: the segments find it, the memories above the segments are looked at, and an unlocked
    sensitive scope's bodies held in memory are too."""
    sync(store)  # a first build: every memory in the segments
    sensitive = {m.slug for m in Memory.select().where(Memory.scope_hash.in_(SENSITIVE))}
    in_segments = _bodies_holding(store, "截断") - sensitive
    assert len(in_segments) > 10 and searched(store, "截断") == in_segments  # in no head

    pid = next(p for p in pending_ids(store) if promotions.target_scopes(store, [p]) == {PLAIN})
    slug = promotions.approve(store, pid, promotions.Edits(body="鲲鹏 rollout, qx noted")).slug
    sync(store, only={slug})
    assert FullText.open(store).segments.covered < Memory.select().count()  # the new one is above them
    assert slug in searched(store, "鲲鹏") and slug not in searched(store, "qx")  # two letters: heads only

    index = SearchIndex.load(store, FullText.open(store))
    index.enrich(store)
    running = _bodies_holding(store, "跑步") & sensitive
    assert running and {h.slug for h in index.search("跑步", limit=10_000).hits} & sensitive == running


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The fixture's index twice: bodies from the persistent index (prepared as the console prepares it), and
    bodies read into memory (searched by scans)."""
    import shutil

    from engram.store.sensitive.crypto import KeyRing

    root = tmp_path_factory.mktemp("fulltext") / "dataroot"
    shutil.copytree(Path(__file__).parent / "fixtures" / "memoryd-small" / "dataroot", root)
    with pytest.MonkeyPatch.context() as env, Store.open(root, keys=KeyRing()) as store:
        env.setenv("XDG_CACHE_HOME", str(root.parent / "cache"))  # module-wide: the per-test environment is not set yet
        env.setattr(arrays, "SEGMENTED_FROM", 0)  # the fixture's few heads get segments, as a large root's do
        sync(store)
        persistent = SearchIndex.load(store, FullText.open(store))
        persistent.enrich(store)
        persistent.prepare()  # as the console's worker does: the other heads searched as segments are
        in_memory = SearchIndex.load(store, None)
        in_memory.enrich(store)
        yield persistent, in_memory


def _words(index: SearchIndex) -> st.SearchStrategy[str]:
    texts = [index.rows.head(n) for n in range(len(index.rows))] + list(index.bodies.values())
    piece = st.builds(
        lambda h, i, n: texts[h][i : i + n].strip() or "x",
        st.integers(0, len(texts) - 1),
        st.integers(0, 200),
        st.integers(1, 12),  # one and two characters: heads only (from the segments of heads), but two CJK ones
    )
    affixes = st.tuples(st.sampled_from(["", "!", "'", "^"]), piece, st.sampled_from(["", "", "$"]))
    term = affixes.map(lambda t: "".join(t).replace(" ", "\\ "))
    return st.lists(st.one_of(term, st.sampled_from(["tag:front", "type:fa", "!scope:5"])), min_size=1, max_size=3)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_persistent_index_answers_as_the_in_memory_one(both, data):
    persistent, in_memory = both
    text = " ".join(data.draw(_words(in_memory)))
    got, want = persistent.search(text, limit=1000), in_memory.search(text, limit=1000)
    assert got.error == want.error
    assert {h.slug for h in got.hits} == {h.slug for h in want.hits}, text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=8))
def test_any_typed_text_gets_an_answer(both, text):
    """Whatever reaches the query box (a lone surrogate from a paste, control characters, quotes) is answered,
    the same by both indexes: text that cannot be in any stored memory matches nothing, never an exception."""
    persistent, in_memory = both
    got, want = persistent.search(text, limit=1000), in_memory.search(text, limit=1000)
    assert (got.error, got.total) == (want.error, want.total), text


@pytest.mark.parametrize("text", ["\ud800", "con\0fig", "'\udcff/cache", "^a\0$"])
def test_text_no_memory_can_hold_matches_nothing(both, text):
    for index in both:
        everything = index.search("", limit=1).total
        assert (index.search(text).total, index.search(f"!{text}").total) == (0, everything), text


QUERIES = ["config", "'config/", "c", "co", "^how", "drift$", "灰", "!type:session", "type:fact", "tag:frontend"]
QUERIES += ["a | z", "!config drift"]


def kept(store: Store) -> SearchIndex:
    """The full index of a synced root, with its rows of plain scopes kept for the next open."""
    sync(store)
    return SearchIndex.load(store, FullText.open(store), keep=True)


def test_the_kept_rows_answer_at_open_as_the_full_read_does_for_plain_scopes(store, monkeypatch):
    full = kept(store)
    execute = type(store.index.db).execute_sql

    def no_memory_rows(db, sql, *args, **kwargs):
        assert "from memories" not in sql.lower(), "index.db's memories were read at open"
        return execute(db, sql, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(Store, "read_bytes", lambda *a: pytest.fail("a file was read at open"))
        patched.setattr(type(store.index.db), "execute_sql", no_memory_rows)
        cached = SearchIndex.cached(store, FullText.open(store))
    assert cached is not None and cached.partial
    every = [full.rows[n] for n in range(len(full.rows))]
    plain = {h.slug for h in every if not h.encrypted and h.scope_hash not in SENSITIVE}
    assert {cached.rows[n].slug for n in range(len(cached.rows))} == plain
    for text in QUERIES:
        want = [h.slug for h in full.search(text, limit=10_000).hits if h.slug in plain]
        got = cached.search(text, limit=10_000)
        assert sorted(h.slug for h in got.hits) == sorted(want) and got.total == len(want), text
    assert cached.search("config").total < full.search("config").total  # the sensitive rows come with the full read


def test_the_kept_rows_hold_nothing_of_a_sensitive_scope(store):
    kept(store)
    on_disk = cache_bytes(store)
    hidden = Memory.select().where(Memory.scope_hash.in_(SENSITIVE))
    assert hidden.count() > 10 and not [m.slug for m in hidden if m.slug.encode() in on_disk]
    shown = Memory.select().where(Memory.scope_hash == PLAIN)
    assert all(m.slug.encode() in on_disk for m in shown)  # the control: the plain rows are there


def test_the_console_reads_the_rows_of_plain_scopes_from_their_kept_files_and_answers_alike(store):
    """With ``keep``, the rows of plain scopes are read where their kept files are mapped (they count as the
    console's memory only while read), the others held in memory: the answers are those of rows held in memory."""
    sync(store)
    held = SearchIndex.load(store, FullText.open(store))
    mapped = SearchIndex.load(store, FullText.open(store), keep=True)
    kept_part, in_memory = mapped.rows.titles.parts
    assert isinstance(kept_part.data, mmap.mmap) and isinstance(in_memory.data, bytes) and mapped.rows.maps
    every = [held.rows[n] for n in range(len(held.rows))]
    assert len(kept_part) == sum(1 for h in every if not h.encrypted and h.scope_hash not in SENSITIVE) < len(every)
    assert [mapped.rows[n] for n in range(len(every))] == every
    for index in (held, mapped):
        index.prepare()
    for text in QUERIES:
        got, want = mapped.search(text, limit=10_000), held.search(text, limit=10_000)
        assert ([h.slug for h in got.hits], got.total) == ([h.slug for h in want.hits], want.total), text
    mapped.release()  # lets go of the pages read: the next query maps them again
    assert mapped.search("config").total == held.search("config").total


def test_an_index_opened_from_the_kept_rows_asks_the_kernel_to_read_them_ahead(store, monkeypatch):
    """Right after a boot the first keys read the kept files a page at a time (350 ms a key at a million
    memories): preparing the index asks for all of them ahead, and for nothing else."""
    asked: list[tuple[int, int]] = []

    class Recording(mmap.mmap):
        def madvise(self, option: int, start: int = 0, length: int = 0) -> None:
            asked.append((id(self), option))
            super().madvise(option, start, length or len(self) - start)

    kept(store)
    fulltext = FullText.open(store)
    real = fulltext_module._mapped

    def recording(path: Path) -> bytes | mmap.mmap:
        found = real(path)
        if not isinstance(found, mmap.mmap):
            return found
        with open(path, "rb") as fh:
            return Recording(fh.fileno(), 0, access=mmap.ACCESS_READ)

    monkeypatch.setattr(fulltext_module, "_mapped", recording)
    index = SearchIndex.cached(store, fulltext)
    assert index is not None and index.rows.maps and not asked
    index.prepare()
    ahead = [(id(m), mmap.MADV_WILLNEED) for m in index.rows.maps]
    assert asked == ahead + [(id(m), mmap.MADV_DONTNEED) for m in index.rows.maps]  # then let go (see below)


def test_a_prepared_index_holds_none_of_the_kept_files_pages(store):
    """Preparing scans every head for each letter where the kept files are mapped (75 MB at a million memories),
    which counted as the console's memory until someone typed and stopped: it lets go of them, and still answers
    from them."""
    index = kept(store)
    want = index.search("con", limit=1000).total
    assert index.rows.maps and mapped_kb(rows_dir(cache_path(store))) > 0
    index.prepare()
    assert mapped_kb(rows_dir(cache_path(store))) == 0
    assert index.search("e", limit=10).hits and index.search("con", limit=1000).total == want


def test_rows_are_kept_once_per_change_and_the_generation_before_stays(store):
    """The same rows are not written again; new ones are, and the files of the generation before them stay (the
    index being replaced may still read them) until the next, which scrubs them."""

    def generations() -> set[str]:
        return {path.name.split(".", 1)[0] for path in rows_dir(cache_path(store)).iterdir()}

    kept(store)
    first = generations()
    SearchIndex.load(store, FullText.open(store), keep=True)
    assert generations() == first and len(first) == 1
    for n in range(2):
        memory = Memory.get(Memory.scope_hash == PLAIN)
        with sqlite3.connect(store.layout.index_path) as con:
            con.execute("UPDATE memories SET title = ? WHERE slug = ?", (f"renamed {n}", memory.slug))
        SearchIndex.load(store, FullText.open(store), keep=True)
    assert len(generations()) == 2 and not generations() & first
    cached = SearchIndex.cached(store, FullText.open(store))
    assert "renamed 1" in {cached.rows[n].title for n in range(len(cached.rows))}


def test_rows_of_a_scope_marked_sensitive_while_they_were_written_are_scrubbed_not_kept(store, monkeypatch):
    kept(store)
    before = sorted(rows_dir(cache_path(store)).iterdir())
    fulltext = FullText.open(store)
    blobs = SearchIndex.load(store, fulltext).rows.take(np.arange(3)).blobs() | {"scopes": f'["{PLAIN}"]'.encode()}
    assert fulltext.keep(blobs, lambda: {PLAIN}) is None
    assert sorted(rows_dir(cache_path(store)).iterdir()) == before  # the new files went; the kept ones stay


def test_kept_rows_of_a_scope_marked_sensitive_since_are_not_used_and_are_wiped(store):
    kept(store)
    with sqlite3.connect(cache_path(store)) as con:  # rows of the scope left only in the kept snapshot
        con.execute("DELETE FROM docs WHERE scope = ?", (PLAIN,))
    with sqlite3.connect(store.layout.index_path) as con:  # memoryd's mark: the registration comes first
        con.execute("INSERT INTO sensitive_scopes VALUES (?, '/tmp/project', '2026-11-24T00:00:00Z')", (PLAIN,))
    assert SearchIndex.cached(store, FullText.open(store)) is None
    assert verify(store).sensitive == 2  # the scope as the snapshot holds it, and as the segments do
    assert sync(store).discarded
    assert not list(rows_dir(cache_path(store)).iterdir())  # the kept rows' files scrubbed with the index
    assert SearchIndex.cached(store, FullText.open(store)) is None


@pytest.mark.parametrize(
    ("name", "data"), [("doc", b"\x01\x02\x03"), ("names", b"{not json"), ("codes.type", b"\xff" * 4096)]
)
def test_damaged_kept_rows_are_not_used(store, name, data):
    kept(store)
    (path,) = rows_dir(cache_path(store)).glob(f"*.{name}")
    path.write_bytes(data)
    assert verify(store).damaged == f"kept search rows: {name} changed since it was written"
    assert SearchIndex.cached(store, FullText.open(store)) is None
    SearchIndex.load(store, FullText.open(store), keep=True)  # the next open keeps them again
    assert SearchIndex.cached(store, FullText.open(store)) is not None


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_kept_rows_file_replaced_by_a_symlink_or_fifo_is_not_read(store, tmp_path, kind):
    """Opened without following links and checked to be a regular file: a FIFO would block the open, a symlink
    could map any file."""
    import os

    kept(store)
    (path,) = rows_dir(cache_path(store)).glob("*.titles.data")
    outside = tmp_path / "elsewhere"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside) if kind == "symlink" else os.mkfifo(path)
    assert verify(store).damaged.startswith("kept search rows:")
    assert SearchIndex.cached(store, FullText.open(store)) is None


def test_a_sync_that_wrote_many_rows_leaves_the_index_merged(store, monkeypatch):
    """Its batches leave a segment each; a phrase query reads every segment, so the sync merges them."""
    import engram.store.search.fulltext as fulltext

    monkeypatch.setattr(fulltext, "BATCH", 10)
    sync(store)  # the segments hold every memory; FTS5 the ones written since
    monkeypatch.setattr(generation, "FOLD_FROM", 1 << 30)  # no fold: FTS5 keeps the rows written below
    monkeypatch.setattr(generation, "DEAD_SHARE", 0)  # ... nor a build of the segments again
    for memory in Memory.select().where(Memory.scope_hash == PLAIN):
        path = store.layout.root / memory.body_path
        path.write_text(path.read_text() + "\nrewritten\n")
    assert sync(store).read > 50
    with sqlite3.connect(cache_path(store)) as con:
        assert con.execute("SELECT count(DISTINCT segid) FROM fts_idx").fetchone()[0] == 1
    path.write_text(path.read_text() + "\nonce more\n")
    assert sync(store).read == 1  # one row of 160 (a delete and an insert): left to FTS5's merging
    with sqlite3.connect(cache_path(store)) as con:
        assert con.execute("SELECT count(DISTINCT segid) FROM fts_idx").fetchone()[0] > 1


def test_a_sync_in_small_slices_keeps_what_a_sync_in_one_does(store, monkeypatch):
    """The full sync compares a slice of slugs at a time: rows at the edges of slices and past the last one are
    compared, removed and written as a sync of everything at once would."""
    import engram.store.search.fulltext as fulltext

    def rows() -> set[tuple[str, str, str]]:
        with sqlite3.connect(cache_path(store)) as con:
            return set(con.execute("SELECT slug, head, body FROM docs"))

    sync(store)
    whole = rows()
    fulltext.discard(store)
    monkeypatch.setattr(fulltext, "SLICE", 7)
    assert sync(store).read == len(whole) and rows() == whole
    slugs = sorted(slug for slug, _, _ in whole)
    dropped = {slugs[0], slugs[6], slugs[7], slugs[-1]}  # first, the edges of the first slice, the last
    with sqlite3.connect(store.layout.index_path) as con:
        con.executemany("DELETE FROM memories WHERE slug = ?", [(slug,) for slug in dropped])
    assert sync(store).removed == len(dropped)
    assert rows() == {row for row in whole if row[0] not in dropped}


def _fts(store: Store) -> sqlite3.Connection:
    return sqlite3.connect(cache_path(store), isolation_level=None)


def _in_step(con: sqlite3.Connection) -> tuple[int, int]:
    """FTS5's own check of every indexed term against the rows it follows, those above the segments (raises if
    they differ); how many rows those are, and how many FTS5 holds."""
    con.execute("INSERT INTO fts (fts, rank) VALUES ('integrity-check', 1)")
    return tuple(con.execute("SELECT (SELECT count(*) FROM tail), (SELECT count(*) FROM fts_docsize)").fetchone())


def test_a_build_indexes_its_rows_in_segments_and_fts5_only_those_written_after(store, monkeypatch):
    """A full sync of an empty index writes its rows with FTS5 not following them (each batch following them
    left FTS5 a segment to merge); the segments then hold every one, and FTS5 none: it follows only the rows
    written after them, which the next fold takes from it."""
    monkeypatch.setattr(fulltext_module, "BATCH", 10)
    batches: list[tuple[bool, int]] = []
    write = fulltext_module._write

    def watched(*args) -> None:
        write(*args)
        with _fts(store) as con:
            (indexed,) = con.execute("SELECT count(*) FROM fts_docsize").fetchone()
            batches.append((fulltext_module.deferred(con), indexed))

    monkeypatch.setattr(fulltext_module, "_write", watched)
    assert sync(store).read > 100
    assert len(batches) > 10 and all(deferred and not indexed for deferred, indexed in batches)
    with _fts(store) as con:
        assert not fulltext_module.deferred(con)
        assert _in_step(con) == (0, 0)
        assert generation.manifest(con).covered == con.execute("SELECT max(id) FROM docs").fetchone()[0]
    piece = next(p for p in body_pieces(store, PLAIN) if p.isascii()).decode()
    assert searched(store, f"'{piece}")  # from the segments

    monkeypatch.setattr(fulltext_module, "_write", write)
    path = store.layout.root / Memory.get(Memory.scope_hash == PLAIN).body_path
    path.write_text(path.read_text() + "\nfollowed once built\n")
    assert sync(store).read == 1  # a sync of a built index: FTS5 follows the row as it changes
    with _fts(store) as con:
        assert _in_step(con) == (1, 1)
        assert con.execute("SELECT count(*) FROM fts WHERE fts MATCH '\"followed once built\"'").fetchone() == (1,)
    assert len(searched(store, "'followed once built")) == 1
    monkeypatch.setattr(generation, "FOLD_FROM", 1)
    monkeypatch.setattr(generation, "FOLD_SHARE", 1 << 30)
    path.write_text(path.read_text() + "and folded\n")
    sync(store)  # folded in: the segments hold it, FTS5 lets go of it
    with _fts(store) as con:
        assert _in_step(con) == (0, 0) and verify(store).damaged is None
    assert len(searched(store, "'followed once built")) == 1


def test_a_build_cut_short_is_no_drift_and_the_next_full_sync_finishes_it(store, monkeypatch):
    monkeypatch.setattr(fulltext_module, "BATCH", 10)
    write, calls = fulltext_module._write, []

    def dying(*args) -> None:
        calls.append(1)
        if len(calls) == 4:
            raise sqlite3.OperationalError("disk I/O error")  # as a crash would: the batches before are committed
        write(*args)

    monkeypatch.setattr(fulltext_module, "_write", dying)
    with pytest.raises(StoreError):
        sync(store)
    monkeypatch.setattr(fulltext_module, "_write", write)
    with _fts(store) as con:
        assert fulltext_module.deferred(con)
        written = [slug for (slug,) in con.execute("SELECT slug FROM docs")]
    assert len(written) == 30
    verdict = verify(store)
    assert verdict.deferred and verdict.damaged is None
    assert not {"search_index_damaged", "search_index_sensitive"} & set(check(store).to_json()["findings"])
    assert sync(store, only=written[:3]).read == 0  # the change feed's sync leaves the fill to a full one
    with sqlite3.connect(store.layout.index_path) as con:  # another process deletes memories the index holds
        con.executemany("DELETE FROM memories WHERE slug = ?", [(slug,) for slug in written[:5]])
    result = sync(store)
    assert result.removed == 5 and result.read > 100
    with _fts(store) as con:
        assert not fulltext_module.deferred(con) and _in_step(con) == (0, 0)
        assert con.execute("SELECT count(*) FROM docs").fetchone() == (result.read + 30 - 5,)
    assert not verify(store).deferred and verify(store).damaged is None
    assert not {slug for (slug,) in _fts(store).execute("SELECT slug FROM docs")} & set(written[:5])


FTS_OVER_EVERY_ROW = """
DROP TABLE fts;
DROP VIEW tail;
DELETE FROM meta WHERE key = 'fts_from';
CREATE VIRTUAL TABLE fts USING fts5(head, body, content='docs', content_rowid='id', tokenize='trigram');
INSERT INTO fts (fts) VALUES ('rebuild');
CREATE TRIGGER docs_added AFTER INSERT ON docs {when} BEGIN
    INSERT INTO fts (rowid, head, body) VALUES (new.id, new.head, new.body);
END;
CREATE TRIGGER docs_removed AFTER DELETE ON docs {when} BEGIN
    INSERT INTO fts (fts, rowid, head, body) VALUES ('delete', old.id, old.head, old.body);
END;
CREATE TRIGGER docs_changed AFTER UPDATE OF head, body ON docs {when} BEGIN
    INSERT INTO fts (fts, rowid, head, body) VALUES ('delete', old.id, old.head, old.body);
    INSERT INTO fts (rowid, head, body) VALUES (new.id, new.head, new.body);
END;
UPDATE meta SET value = '{schema}' WHERE key = 'schema';
"""


def as_schema(store: Store, schema: str) -> None:
    """The index as an older engram left it: FTS5 over every row, following ``docs`` always (schema 4) or except
    while a build defers it (5)."""
    when = "WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'fts_deferred')" if schema == "5" else ""
    with _fts(store) as con:
        for trigger in ("docs_added", "docs_removed", "docs_changed"):
            con.execute(f"DROP TRIGGER {trigger}")
        con.executescript(FTS_OVER_EVERY_ROW.format(when=when, schema=schema))
        assert con.execute("SELECT count(*) FROM fts_docsize").fetchone()[0] > 100


@pytest.mark.parametrize("schema", ["4", "5"])
def test_an_index_of_a_schema_before_is_upgraded_in_place(store, schema):
    sync(store)
    piece = next(p for p in body_pieces(store, PLAIN) if p.isascii()).decode()
    found = searched(store, f"'{piece}")
    as_schema(store, schema)
    inode = cache_path(store).stat().st_ino
    result = sync(store)
    assert not result.discarded and not result.read
    assert cache_path(store).stat().st_ino == inode
    with _fts(store) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (fulltext_module.SCHEMA,)
        triggers = [sql for (sql,) in con.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")]
        assert sum("WHEN NOT EXISTS" in sql and "fts_from" in sql for sql in triggers) == 3
        assert _in_step(con) == (0, 0)  # FTS5 over every row dropped: the segments hold them all
    assert verify(store).damaged is None and searched(store, f"'{piece}") == found


def test_an_index_of_schema_6_takes_the_listing_in_place_and_compares_every_memory_once(store):
    """Schema 6 kept no memory's listing (what index.db said of it): the column is added where the index is,
    nothing rebuilt, and the first sync, under the older engram's stamp, compares every memory and fills it."""
    from engram.store.search.lookup import Lookup

    with Lookup(store) as lookup:
        lookup.refresh()
    with _fts(store) as con:
        con.execute("ALTER TABLE docs DROP COLUMN listing")
        con.execute("UPDATE meta SET value = '6' WHERE key = 'schema'")
        con.execute("UPDATE meta SET value = ? WHERE key = 'root_stamp'", ("3f2a" * 16,))  # a hash, as 6 kept
        rows = con.execute("SELECT count(*) FROM docs").fetchone()[0]
    inode = cache_path(store).stat().st_ino
    with Lookup(store) as lookup:
        assert lookup.refresh()
        assert not lookup.refresh()
    assert cache_path(store).stat().st_ino == inode
    with _fts(store) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (fulltext_module.SCHEMA,)
        assert con.execute("SELECT count(*), count(listing) FROM docs").fetchone() == (rows, rows)
        assert _in_step(con)[0] == _in_step(con)[1]


def test_an_index_another_process_is_writing_is_opened_and_never_discarded(store, monkeypatch):
    """Opening the index only reads it (it waited for the writer's lock before, and a wait past the timeout was
    taken for damage: the index was discarded under the writer); one that must be upgraded first is left as it is
    until the writer is done."""
    monkeypatch.setattr(fulltext_module, "BUSY_TIMEOUT", 0.05)
    sync(store)
    inode = cache_path(store).stat().st_ino
    with _fts(store) as writer:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO meta (key, value) VALUES ('held', 'by a sync')")
        index = FullText.open(store)
        assert index is not None and len(fulltext_matching(index, body_pieces(store, PLAIN)[0].decode())) > 0
        index.close()
        writer.execute("ROLLBACK")
    as_schema(store, "4")
    with _fts(store) as writer:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO meta (key, value) VALUES ('held', 'by a sync')")
        assert FullText.open(store) is None
        with pytest.raises(StoreError, match="cannot be brought up to date now"):
            sync(store)
        writer.execute("ROLLBACK")
    assert cache_path(store).stat().st_ino == inode
    assert not sync(store).discarded


def test_a_fold_that_fails_commits_neither_its_segments_nor_fts5s_move(store, monkeypatch):
    def failing(con, covered) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(fulltext_module, "_follow_segments", failing)
    with pytest.raises(StoreError):
        sync(store)
    with _fts(store) as con:
        assert fulltext_module.deferred(con) and generation.manifest(con) is None
        assert fulltext_module._fts_from(con) == 0
    assert verify(store).damaged is None
    monkeypatch.undo()
    sync(store)
    with _fts(store) as con:
        assert not fulltext_module.deferred(con) and generation.manifest(con) is not None
        assert _in_step(con) == (0, 0)


def test_segments_that_cannot_be_opened_are_answered_for_by_a_scan_until_the_next_sync_builds_them(store):
    """FTS5 holds only the memories above the segments: with a segment's file gone, the rows it covered are
    looked at one by one (never a memory missed), and the next sync builds the segments again."""
    sync(store)
    pieces = [p.decode() for p in body_pieces(store, PLAIN) if p.isascii()][:5]
    want = {piece: searched(store, f"'{piece}") for piece in pieces}
    assert all(want.values())
    victim = next(segments_dir(cache_path(store)).glob("*.text.npy"))
    victim.unlink()
    assert {piece: searched(store, f"'{piece}") for piece in pieces} == want
    sync(store)
    with _fts(store) as con:
        names = generation.manifest(con).parts
    assert victim.name.split(".")[0] not in names and verify(store).damaged is None
    assert {piece: searched(store, f"'{piece}") for piece in pieces} == want


def test_a_query_that_meets_a_fold_asks_again(store, monkeypatch):
    """A fold moves memories from FTS5 to the segments in one transaction: a query that learnt where FTS5 starts
    before it and asked FTS5 after it would miss them (and the search would cache the miss for the term)."""
    sync(store)
    pid = next(p for p in pending_ids(store) if promotions.target_scopes(store, [p]) == {PLAIN})
    slug = promotions.approve(store, pid, promotions.Edits(body="the zebrafish-quokka runbook")).slug
    sync(store, only={slug})
    reader = FullText.open(store)
    assert reader is not None and len(fulltext_matching(reader, "zebrafish")) == 1  # from FTS5
    monkeypatch.setattr(generation, "FOLD_FROM", 1)
    monkeypatch.setattr(generation, "FOLD_SHARE", 1 << 30)
    fts_from, folds = fulltext_module._fts_from, []

    def then_a_fold(con):
        start = fts_from(con)
        if not folds:
            folds.append(sync(store))  # another connection folds the memory in before FTS5 is asked
        return start

    monkeypatch.setattr(fulltext_module, "_fts_from", then_a_fold)
    assert len(fulltext_matching(reader, "zebrafish")) == 1 and folds
    with _fts(store) as con:
        assert _in_step(con) == (0, 0)  # the memory was in the segments by then
    reader.close()


def test_a_build_leaves_no_log_the_size_of_its_transactions_while_a_console_reads(store):
    """SQLite keeps a WAL as long as its longest transaction until the last connection closes; the console holds
    one open all session."""
    reader = FullText.open(store)
    assert reader is not None
    assert sync(store).read > 100
    assert len(fulltext_matching(reader, next(p for p in body_pieces(store, PLAIN) if p.isascii()).decode())) > 0
    log = cache_path(store).with_name(cache_path(store).name + "-wal")
    assert not log.exists() or log.stat().st_size == 0
    reader.close()


def test_a_file_is_searched_by_the_tags_and_body_its_parse_gives(store):
    """The search reads a file's YAML and validates no field: for every file memoryd wrote, what it reads is what
    the full parse (the frontmatter's models) gives."""
    for row in Memory.select().where(Memory.scope_hash == PLAIN):
        data = store.read_bytes(row.body_path)
        doc = frontmatter.parse(data, row.body_path)
        assert fulltext_module.searched_parts(data, row.body_path) == (doc.frontmatter.tags, doc.body)


def _rewritten(store: Store, row: Memory, field: str, lines: list[str], word: str) -> None:
    """The memory's file with its frontmatter's ``field`` given ``lines`` and ``word`` at the end of its body, as
    a hand edit would leave it."""
    path = store.layout.root / row.body_path
    header, body = path.read_text(encoding="utf-8").removeprefix("---\n").split("---\n", 1)
    kept, skipping = [], False
    for line in header.splitlines():
        skipping = line.startswith(f"{field}:") or (skipping and line.startswith("- "))
        if not skipping:
            kept.append(line)
    path.write_text("---\n" + "\n".join([*kept, *lines]) + "\n---\n" + body + f"\n{word}\n", encoding="utf-8")


def test_a_field_memoryd_would_refuse_leaves_the_file_found_by_its_words(store):
    """A date that is not one is ``engram check``'s to report: the memory is still found by what it says. Tags
    that are not strings are not tags: that file is searched by its head alone until it is mended, and the sync
    says why."""
    sync(store)
    dated, tagged = Memory.select().where(Memory.scope_hash == PLAIN).order_by(Memory.slug).limit(2)
    _rewritten(store, dated, "created_at", ["created_at: sometime last spring"], "zebraquartz")
    _rewritten(store, tagged, "tags", ["tags:", "- 1", "- 2"], "yakplinth")
    with pytest.raises(StoreError, match="created_at"):
        frontmatter.parse(store.read_bytes(dated.body_path), dated.body_path)
    result = sync(store)
    assert [line.split(":")[0] for line in result.unreadable] == [tagged.body_path]
    assert "tags: not a list of strings" in result.unreadable[0]
    assert searched(store, "zebraquartz") == {dated.slug} and searched(store, "yakplinth") == set()
