"""The persistent index's segments of sorted offsets: a term is found exactly where it occurs (any Unicode,
typed a key at a time or at once), a memory whose file changed is answered by its new text and never by the copy
a segment kept, new memories are folded in and dead ones built out, and a damaged or orphaned segment file is
found by ``check``, never answers, and is built again or scrubbed."""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from helpers import fulltext_matching, mapped_kb, open_after_letting_go
from hypothesis import given
from hypothesis import strategies as st
from memoryd_emulation import memoryd_saves

from engram.store.drift.check import check
from engram.store.drift.repair import repair
from engram.store.models import Memory
from engram.store.search import generation, ordering
from engram.store.search import segments as segments_module
from engram.store.search.fulltext import FullText, cache_path, segments_dir, sync, verify
from engram.store.search.index import SearchIndex
from engram.store.search.ordering import STRIDE
from engram.store.search.segments import FORMAT, MARK_EVERY, Gathered, Gathering, Segment, Segments, text_of

PLAIN = "710d5aaf7a15"

alphabet = st.sampled_from("abcab 灰度é\u00e9/")
bodies = st.lists(st.text(alphabet, max_size=40), min_size=1, max_size=12)


def reference(texts: list[str], term: str) -> list[int]:
    return [n for n, text in enumerate(texts) if term in text]


@given(st.lists(bodies, min_size=1, max_size=3), st.text(alphabet, min_size=1, max_size=20), st.text(alphabet))
def test_a_term_is_found_where_it_occurs_typed_at_once_or_a_key_at_a_time(chunks, word, other):
    """Several segments, each memory's head and body; the ids found (any length: up to sixteen bytes one range of
    the sorted offsets, longer ones checked past it), fresh or narrowed from the term before, are exactly the
    memories holding the term in one or the other (never across them): typed a key at a time, then taken back a
    key at a time and typed on with other keys, as a person corrects a word."""
    texts, parts, next_id = [], [], 1
    for chunk in chunks:
        heads = [body[: len(body) // 2] for body in chunk]
        parts.append(Segment.build(range(next_id, next_id + len(chunk)), map(text_of, heads, chunk)))
        texts += [f"{h}\0{b}" for h, b in zip(heads, chunk, strict=True)]
        next_id += len(chunk)
    with tempfile.TemporaryDirectory() as tmp:  # and as the console reads them: from their files, with pread
        for n, part in enumerate(parts):
            part.save(Path(tmp) / f"s{n}")
        read = [Segment.open(Path(tmp) / f"s{n}") for n in range(len(parts))]
        typing, typing_read = Segments(parts), Segments(read)
        typed = [word[:n] for n in range(1, len(word) + 1)] + [word[:n] for n in range(len(word) - 1, 0, -1)]
        typed += [word[:1] + other[:n] for n in range(1, len(other) + 1)]
        for term in typed:
            want = [i + 1 for i in reference([t.replace("\0", "\n") for t in texts], term)]
            assert typing.matching(term).tolist() == want, term
            assert typing_read.matching(term).tolist() == want, term
            fresh = [Segment.open(Path(tmp) / f"s{n}") for n in range(len(parts))]
            assert Segments(fresh).matching(term).tolist() == want, term


@given(
    st.text("abc", min_size=8, max_size=8),
    st.lists(st.integers(0, 3), min_size=27, max_size=27),
    st.lists(st.text("abc ", min_size=1, max_size=4), min_size=1, max_size=6),
)
def test_words_typed_taken_back_and_typed_on_are_found_as_if_each_were_typed_at_once(stem, counts, typed):
    """A key past the first eight bytes is found inward from the range of the key before when it extends that one:
    in text of words alike in eight bytes, each ending in three letters of its own as often as ``counts`` says
    (so that the range of a key a letter longer starts and ends at every distance from the one before), words
    typed on from those eight bytes a key at a time, then taken back a key at a time, find exactly what each
    finds in a segment that never looked up anything."""
    words = [
        stem + "".join(end)
        for end, count in zip(itertools.product("abc", repeat=3), counts, strict=True)
        for _ in range(count)
    ]
    texts = [" ".join(words[n::20]) for n in range(20)]
    part = Segment.build(range(1, 21), map(text_of, [""] * 20, texts))
    segments = Segments([part])
    for word in typed:
        for n in [*range(len(word) + 1), *range(len(word) - 1, -1, -1)]:
            term = stem + word[:n]
            want = [i + 1 for i in reference(texts, term)]
            assert segments.matching(term).tolist() == want, term
            fresh = Segment.build(range(1, 21), map(text_of, [""] * 20, texts))
            assert Segments([fresh]).matching(term).tolist() == want, term


@given(st.lists(bodies, min_size=1, max_size=3), st.text(alphabet, min_size=1, max_size=20), st.randoms())
def test_occurrences_flag_the_rows_of_the_memories_that_hold_the_term(chunks, word, random):
    """What the search asks of segments: each memory holding the term flags its row, through a table per segment
    from memory to row (a memory of no row flags the extra byte past the rows): exactly the memories whose ids
    the segments name, typed a key at a time or at once."""
    parts, next_id = [], 1
    for chunk in chunks:
        heads = [body[: len(body) // 2] for body in chunk]
        parts.append(Segment.build(range(next_id, next_id + len(chunk)), map(text_of, heads, chunk)))
        next_id += len(chunk)
    rows = list(range(next_id))
    random.shuffle(rows)  # id -> row: the search lists memories newest first, not by id
    none = next_id
    tables = [np.array([rows[i] if i % 3 else none for i in part.ids.tolist()], dtype=np.int32) for part in parts]
    typing = Segments(parts)
    for n in range(1, len(word) + 1):
        flags = np.zeros(none + 1, dtype=np.uint8)
        typing.flag(word[:n], tables, flags)
        want = {rows[i] for i in Segments(parts).matching(word[:n]).tolist() if i % 3}
        assert set(np.flatnonzero(flags[:-1]).tolist()) == want, word[:n]


def test_an_empty_segment_answers_nothing():
    segment = Segment.build([], [])
    assert Segments([segment]).matching("abc").tolist() == []


def test_offsets_are_ordered_by_the_sixteen_bytes_after_them_ties_by_offset():
    """What every lookup relies on, with repeats longer than the order and memories ending in the middle."""
    segment = Segment.build([1, 2, 3], [b"ab" * 12 + b"\0", b"ab\0", b"zzzzzzzzzz\0abababababx\0"])
    text = bytes(segment.text)
    after = [(text[int(at) : int(at) + 16].ljust(16, b"\0"), int(at)) for at in segment.positions]
    assert after == sorted(after) and sorted(segment.positions.tolist()) == list(range(len(text)))
    ends = segment.ends.tolist()
    assert segment.docs.tolist() == [sum(end <= int(at) for end in ends) for at in segment.positions]
    assert Segments([segment]).matching("ababababa").tolist() == [1, 3]
    assert Segments([segment]).matching("abababababx").tolist() == [3]
    assert Segments([segment]).matching("abababababababababa").tolist() == [1]
    assert Segments([segment]).matching("ab").tolist() == [1, 2, 3]


@given(st.one_of(st.binary(max_size=3000), st.lists(st.sampled_from(b"ab\0\xff"), max_size=3000).map(bytes)))
def test_offsets_ordered_a_group_at_a_time_are_in_the_order_of_one_sort_of_them_all(raw):
    """A segment's offsets are sorted a group of leading byte pairs at a time (the memory of a sort of every offset
    at once was twice as much): the order, and the marks of every MARK_EVERY-th, are those of one sort of every
    offset by the sixteen bytes from it, ties by offset, across as many groups as the text makes."""
    segment = Segment.build([1], [raw])
    after = raw + bytes(15)
    want = sorted(range(len(raw)), key=lambda at: (after[at : at + 16], at))
    assert segment.positions.tolist() == want
    assert segment.marks.tolist() == [int.from_bytes(after[at : at + 8], "big") for at in want[::MARK_EVERY]]


@given(
    st.lists(st.binary(min_size=1, max_size=300), max_size=20).map(
        lambda raw: [b.replace(b"\0", b"") + b"\0" for b in raw]
    ),
    st.integers(1, 400),
    st.integers(1, 300),
)
def test_offsets_dealt_to_groups_and_ordered_into_a_file_are_those_of_one_sort_with_their_memories(
    texts, group_size, chunk
):
    """The ordering deals offsets to groups of leading byte pairs a chunk at a time and orders each group in its
    out: for any group size (down to one run of a pair each, and runs past the size) and chunk, what lands in the
    file and in memory alike is every offset in the order of one sort, each with its memory, and the marks."""
    gathered = Gathering()
    for text in texts:
        gathered.add(text)
    after, ends = gathered.done()
    count = len(after) - 15
    raw = after.tobytes()
    want = sorted(range(count), key=lambda at: (raw[at : at + 16], at))
    memory = [sum(end <= at for end in ends.tolist()) for at in want]
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(ordering, "CHUNK", chunk)
        with ordering.NpyFile(Path(tmp) / "p.npy", np.uint32, count) as positions:
            with ordering.NpyFile(Path(tmp) / "d.npy", np.uint16, count) as docs:
                marks = ordering.order(after, count, positions, (docs, ordering.DocOf(ends, count)), group_size)
        held, told = ordering.Held(count, np.uint32), []
        ordering.order(after, count, held, None, group_size, told.append)
        assert np.load(Path(tmp) / "p.npy").tolist() == held.array.tolist() == want
        assert told == sorted(set(told)) and told[-1:] == ([count] if count else [])
        assert np.load(Path(tmp) / "d.npy").tolist() == memory
    assert marks.tolist() == [int.from_bytes(raw[at : at + 8], "big") for at in want[::MARK_EVERY]]


def test_a_segment_written_as_it_is_ordered_is_the_segment_built_in_memory_and_saved(tmp_path):
    """``Segment.write`` (the index's builds) and ``build`` then ``save`` give the same files byte for byte and
    the same digests, and the written one answers as the built one does."""
    words = [f"word{n:05d} token{n % 97:02d} shared-path/ledger.yaml\n" for n in range(6_000)]
    texts = [text_of(f"t{n}", "".join(words[n * 20 : n * 20 + 20])) for n in range(300)]
    built = Segment.build(range(1, 301), texts)
    assert Segment.write(tmp_path / "w", range(1, 301), Gathered.of(texts)) == built.save(tmp_path / "b")
    for name in segments_module.ARRAYS:
        assert (tmp_path / f"w.{name}.npy").read_bytes() == (tmp_path / f"b.{name}.npy").read_bytes(), name
    written = Segments([Segment.open(tmp_path / "w")])
    for needle in ("token42", "word01234", "ledger.yaml\nword", "t29"):
        assert written.matching(needle).tolist() == Segments([built]).matching(needle).tolist() != []


def test_a_build_from_nothing_tells_its_progress_through_the_segments_too(store, monkeypatch):
    """The files are read, then the segments are put in order (on md20k, for twice as long): the bar stopped at
    the files' count and sat full meanwhile. After the files' last report, the segments' go up a group at a time
    to every memory folded."""
    monkeypatch.setattr(ordering, "GROUP_SIZE", 2_000)
    told: list[tuple[int, int]] = []
    sync(store, progress=lambda done, total: told.append((done, total)))
    with sqlite3.connect(cache_path(store)) as con:
        (folded,) = con.execute("SELECT count(*) FROM docs").fetchone()
    memories = store.index.db.execute_sql("SELECT count(*) FROM memories").fetchone()[0]
    files = told.index((memories, memories))
    ordering_told = told[files + 1 :]
    assert len(ordering_told) > 2 and {total for _, total in ordering_told} == {folded}
    assert [done for done, _ in ordering_told] == sorted(done for done, _ in ordering_told)
    assert ordering_told[-1] == (folded, folded)


def test_a_segment_written_holds_one_groups_work_not_every_offset(tmp_path):
    """Building a segment held its offsets, the memory of each and the sort's keys whole: eleven bytes and more
    per byte of text (a build from nothing of md20k peaked near three hundred MB). Written as it is ordered, what
    it allocates beside the text it was given is a group's work, the marks, and a table of three sixteenths of a
    byte per byte."""
    rng = np.random.default_rng(7)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz  ", dtype=np.uint8)
    body = letters[rng.integers(0, len(letters), 6_000_000)].tobytes()
    texts = [text_of(f"memory {n}", body[n * 3_000 : n * 3_000 + 3_000]) for n in range(2_000)]
    gathered = Gathered.of(texts)
    del texts, body
    tracemalloc.start()
    try:
        Segment.write(tmp_path / "s", range(2_000), gathered)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the offsets and their memories alone, held whole, are six bytes per byte of text
    assert peak < 2 * len(gathered.text), f"{peak / len(gathered.text):.2f} bytes per byte of text"


@given(st.lists(st.binary(max_size=40), max_size=60), st.sampled_from([0, STRIDE]))
def test_a_segment_held_in_memory_works_out_each_offsets_memory_as_the_kept_numbers_say(raw, shortest):
    """A segment built without ``docs`` (sensitive heads, never saved) gives every range of offsets the memories
    the kept 16-bit numbers give: with memories shorter than the stride (several ends in one) and without."""
    texts = [b.replace(b"\0", b"").ljust(shortest - 1, b"x") + b"\0" for b in raw]
    kept = Segment.build(range(len(texts)), texts)
    worked_out = Segment.of(kept.ids, kept.text, kept.ends, docs=False)
    assert worked_out.docs is None
    for first in range(0, len(kept.positions), 7):
        last = min(first + 13, len(kept.positions))
        assert worked_out.read.array("docs", first, last).tolist() == kept.docs[first:last].tolist()
    assert worked_out.read.array("docs", 0, len(kept.positions)).tolist() == kept.docs.tolist()


def searched(store, text: str) -> set[str]:
    index = SearchIndex.load(store, FullText.open(store))
    return {hit.slug for hit in index.search(text, limit=10_000).hits}


def manifest(store) -> generation.Manifest:
    with sqlite3.connect(cache_path(store)) as con:
        known = generation.manifest(con)
    assert known is not None
    return known


def test_a_rewritten_memory_is_found_by_its_new_text_and_never_by_the_copy_a_segment_kept(store):
    sync(store)
    covered = manifest(store).covered
    memory = Memory.get(Memory.scope_hash == PLAIN)
    doc = store.read_doc(memory.body_path)
    line = next(line for line in doc.body.lower().splitlines() if len(line) >= 24)
    piece = "'" + line[:24].replace(" ", "\\ ")  # one exact term
    assert searched(store, piece) == {memory.slug}  # its old text, in a segment
    doc.body = "okapi-theodolite handbook"
    memoryd_saves(store.layout.root, doc)  # another process rewrites it
    sync(store)
    assert manifest(store).covered == covered  # one change: not folded in, FTS5 answers for it
    assert not searched(store, piece)  # the segment still holds the old text: it is dead
    fulltext = FullText.open(store)
    assert not fulltext_matching(fulltext, line[:24]).tolist()  # dead to any reader, a kept snapshot's too
    assert searched(store, "okapi-theodolite") == {memory.slug}


def test_segments_of_an_older_layout_never_answer_nor_alarm_and_are_built_again(store):
    """An index written in an older layout (offsets ordered by fewer bytes): its segments are not read (FTS5
    answers, the same), ``check`` finds nothing wrong, and the next sync builds them in today's layout."""
    sync(store)
    want = searched(store, "'config/ssr_cache.yaml")
    old = manifest(store)
    with sqlite3.connect(cache_path(store)) as con:
        (value,) = con.execute("SELECT value FROM meta WHERE key = 'segments'").fetchone()
        con.execute("UPDATE meta SET value = ? WHERE key = 'segments'", (value.replace(f'"format": {FORMAT}, ', ""),))
    assert manifest(store).format == 1
    fulltext = FullText.open(store)
    assert fulltext.warm(np.full(1, -1, dtype=np.int32), 0) is None  # no segments opened
    assert searched(store, "'config/ssr_cache.yaml") == want
    assert verify(store).damaged is None and not check(store).of("search_index_damaged")
    sync(store)
    new = manifest(store)
    assert new.format == FORMAT and not new.files.keys() & old.files.keys()
    assert {p.name.split(".")[0] for p in segments_dir(cache_path(store)).iterdir()} == set(new.files)
    assert searched(store, "'config/ssr_cache.yaml") == want


def append(store, slug: str, line: str) -> None:
    """Another process adds a line to a memory (its file may move to another type directory)."""
    doc = store.read_doc(Memory.get(Memory.slug == slug).body_path)
    doc.body += f"\n{line}"
    memoryd_saves(store.layout.root, doc)


def test_new_memories_are_folded_in_and_many_dead_ones_built_out(store, monkeypatch):
    sync(store)
    first = manifest(store)
    assert first.covered > 100 and len(first.parts) == len(first.heads) == 1
    memories = list(Memory.select().where(Memory.scope_hash == PLAIN).limit(30))
    for n, memory in enumerate(memories):
        append(store, memory.slug, f"kiwi-sextant-{n}")
    monkeypatch.setattr(generation, "FOLD_FROM", 10)
    monkeypatch.setattr(generation, "DEAD_SHARE", 1)  # dead ones are too many only when more than all
    sync(store)
    folded = manifest(store)
    assert folded.covered > first.covered and len(folded.parts) == len(folded.heads) == 2
    assert first.files.items() <= folded.files.items()
    assert searched(store, "kiwi-sextant-") == {m.slug for m in memories}
    monkeypatch.setattr(generation, "DEAD_SHARE", 1_000)  # now one in a thousand is too many
    for n, memory in enumerate(memories):
        append(store, memory.slug, f"emu-{n}")
    sync(store)
    rebuilt = manifest(store)
    assert len(rebuilt.parts) == 1 and not rebuilt.parts.keys() & folded.parts.keys()
    on_disk = sorted(p.name.split(".")[0] for p in segments_dir(cache_path(store)).iterdir())
    assert len(rebuilt.heads) == 1 and on_disk == sorted([*rebuilt.files] * 6)  # six arrays each, nothing older
    with sqlite3.connect(cache_path(store)) as con:
        assert con.execute("SELECT count(*) FROM dead WHERE id <= ?", (rebuilt.covered,)).fetchone()[0] == 0
    assert searched(store, "kiwi-sextant-") == {m.slug for m in memories}
    assert searched(store, "'emu-1") >= {memories[1].slug}


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_segment_is_found_by_check_never_answers_and_is_built_again_by_repair(store, damage):
    sync(store)
    want = searched(store, "'config/ssr_cache.yaml")
    assert want
    name = next(iter(manifest(store).parts))
    path = segments_dir(cache_path(store)) / f"{name}.text.npy"
    data = bytearray(path.read_bytes())
    if damage == "truncate":
        del data[len(data) // 2 :]
    else:
        data[-200:] = b"z" * 200
    path.write_bytes(bytes(data))
    assert verify(store).damaged
    assert check(store).of("search_index_damaged")
    if damage == "truncate":  # it cannot be opened: FTS5 answers alone, and exactly
        assert searched(store, "'config/ssr_cache.yaml") == want
    assert any("search index built again" in m for m in repair(store).fixed)
    assert verify(store).damaged is None and name not in manifest(store).parts
    assert searched(store, "'config/ssr_cache.yaml") >= want  # (repair may take in a memory the drift left out)


@pytest.mark.parametrize("array", ["positions", "ends", "ids", "docs", "marks"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_segment_changed_in_place_never_fails_a_search_and_repair_brings_its_answers_back(store, array, value):
    """Values pointing outside the arrays (a file changed in place, same shape): every query still gets an
    answer, ``check`` finds the change by its digest, and ``repair`` builds the segments again."""
    sync(store)
    queries = ("'config/ssr_cache.yaml", "co", "^how", "ssr_cache")
    want = {q: searched(store, q) for q in queries}
    for path in segments_dir(cache_path(store)).glob(f"*.{array}.npy"):
        values = np.load(path, mmap_mode="r+")
        values[len(values) // 2 :] = np.iinfo(values.dtype).max if value else 0
        values.flush()
    for q in queries:
        searched(store, q)  # answers, whatever it finds
    assert verify(store).damaged and check(store).of("search_index_damaged")
    repair(store)
    assert {q: searched(store, q) >= want[q] for q in queries} == dict.fromkeys(queries, True)


def test_files_no_manifest_names_are_scrubbed(store):
    sync(store)
    directory = segments_dir(cache_path(store))
    orphan = directory / "0123456789abcdef.text.npy"  # what a crash before the manifest's commit leaves
    np.save(orphan, np.frombuffer(b"left by a crash", dtype=np.uint8))
    with sqlite3.connect(cache_path(store)) as con:
        con.execute("DELETE FROM meta WHERE key = 'segments'")
    sync(store)
    assert not orphan.exists()
    assert manifest(store).parts
    assert all(p.stat().st_mode & 0o077 == 0 for p in directory.iterdir())  # the owner's only, as the index is


def test_release_lets_go_of_the_pages_a_search_mapped_in_and_answers_stay(store):
    sync(store)
    fulltext = FullText.open(store)
    index = SearchIndex.load(store, fulltext)
    want = {hit.slug for hit in index.search("'config/ssr_cache.yaml", limit=1000).hits}
    index.search("con", limit=10)
    directory = segments_dir(cache_path(store))
    assert mapped_kb(directory) > 0
    index.release()
    assert mapped_kb(directory) == 0
    index._cache.clear()
    assert {hit.slug for hit in index.search("'config/ssr_cache.yaml", limit=1000).hits} == want


def test_a_prepared_search_has_the_tables_its_first_body_and_head_terms_flag_through(store, monkeypatch):
    """The rows of each segment's memories are tabled once the index answers, in the worker that prepares it: the
    first key of a body term and of a head term (10-12 ms each at a million memories) find them made."""
    sync(store)
    index = SearchIndex.load(store, FullText.open(store))
    index.prepare()
    made = []
    real = generation.Reader._rows

    def tabling(self, segments, position, none):
        kept = self._tables.get(id(segments))
        made.append(kept is None or kept[0] is not segments or kept[1] is not position)
        return real(self, segments, position, none)

    monkeypatch.setattr(generation.Reader, "_rows", tabling)
    assert index.search("config", limit=10).hits and index.search("^how", limit=10).hits
    assert len(made) >= 2 and not any(made)  # bodies and heads both flagged, through tables made before


@pytest.fixture
def read(monkeypatch) -> list[int]:
    """The bytes each segment's read-ahead read, from now on."""
    done: list[int] = []
    real = segments_module.Probes.read_ahead

    def recorded(self, buffer: bytearray) -> int:
        done.append(real(self, buffer))
        return done[-1]

    monkeypatch.setattr(segments_module.Probes, "read_ahead", recorded)
    return done


def test_a_prepared_search_has_read_every_segments_text_and_marks_through(store, read):
    """A lookup reads a few bytes of text and marks at a time, at places no one can tell ahead: with their pages
    on the disk (after a boot), a key waited on hundreds of reads, one after another. Preparing the index reads
    them through once, in order, and only them (the offsets and memory numbers stay on the disk)."""
    sync(store)
    SearchIndex.load(store, FullText.open(store)).prepare()
    directory = segments_dir(cache_path(store))
    files = [p for p in directory.iterdir() if p.name.endswith((".text.npy", ".marks.npy"))]
    assert len(read) == len(files) // 2 >= 2  # segments of bodies and of heads
    assert sum(read) == sum(p.stat().st_size for p in files)


def test_the_segments_are_read_ahead_once_for_the_indexes_an_open_prepares(store, read):
    """An open prepares the index from the kept rows, then the one from index.db, over the same segments."""
    sync(store)
    fulltext = FullText.open(store)
    SearchIndex.load(store, fulltext).prepare()
    once = len(read)
    SearchIndex.load(store, fulltext).prepare()
    assert once >= 2 and len(read) == once


def test_a_key_typed_while_the_segments_are_read_ahead_is_answered(store, monkeypatch):
    """Reading the segments through takes a while at a million memories (0.4 s from a fast disk): it is done
    without the lock a key's lookup takes."""
    sync(store)
    index = SearchIndex.load(store, FullText.open(store))
    answered: list[int] = []
    while_reading: list[bool] = []
    real = segments_module.Segments.read_ahead

    def typed_meanwhile(self: segments_module.Segments) -> int:
        typing = threading.Thread(target=lambda: answered.append(index.search("config", limit=10).total))
        typing.start()
        typing.join(timeout=5)
        while_reading.append(not typing.is_alive())
        return real(self)

    monkeypatch.setattr(segments_module.Segments, "read_ahead", typed_meanwhile)
    index.prepare()
    assert while_reading == [True, True] and answered[0] > 0  # the bodies' segments, then the heads'


def test_a_fold_that_read_a_scope_marked_sensitive_meanwhile_keeps_nothing(store):
    """The scopes are asked again before the manifest commits: segments holding one marked meanwhile are
    scrubbed, and nothing names them."""
    sync(store)
    directory = segments_dir(cache_path(store))
    with sqlite3.connect(cache_path(store), isolation_level=None) as con:
        con.execute("DELETE FROM meta WHERE key = 'segments'")  # the next fold builds every segment
        moved = []
        assert not generation.fold(con, directory, lambda: {PLAIN}, lambda con, covered: moved.append(covered))
        assert not moved  # FTS5 left as it was
        assert generation.manifest(con) is None
    assert not list(directory.iterdir())


def test_a_query_past_the_budget_of_mapped_pages_lets_go_of_them_and_answers_alike(store, monkeypatch):
    """Typing maps pages of every segment in; past MAPPED_MOST a query lets go of them (here at once)."""
    sync(store)
    index = SearchIndex.load(store, FullText.open(store))
    want = {hit.slug for hit in index.search("'config/ssr_cache.yaml", limit=1000).hits}
    monkeypatch.setattr(generation, "MAPPED_MOST", 0)
    index._cache.clear()
    assert {hit.slug for hit in index.search("'config/ssr_cache.yaml", limit=1000).hits} == want
    assert want and mapped_kb(segments_dir(cache_path(store))) == 0


def test_a_lookup_maps_no_page_of_the_text_offsets_or_memories_it_reads(tmp_path):
    """A page fault in a mapped file maps a whole large folio: a lookup's probes, read from the mapped files, made
    most of a million memories' segments this process's memory while typing. They are read with pread."""
    words = [f"word{n:05d} token{n % 97:02d} shared-path/ledger.yaml\n" for n in range(60_000)]
    segment = Segment.build(
        range(1, 1001), [text_of(f"t{n}", "".join(words[n * 60 : n * 60 + 60])) for n in range(1000)]
    )
    segment.save(tmp_path / "s")
    opened = Segments([Segment.open(tmp_path / "s")])
    for needle in ("token42", "word01234", "shared-path/ledger.yaml", "ledger"):
        assert len(opened.matching(needle)) == len(Segments([segment]).matching(needle)) > 0
    for name in ("text", "positions", "docs", "marks"):
        assert mapped_kb(tmp_path / f"s.{name}.npy") == 0, name


def test_a_segment_let_go_of_closes_its_files_without_a_warning(tmp_path):
    """The descriptors a segment's lookups read through are closed when the segment is dropped (a generation
    replaced), quietly: open file objects left to the collector each raised a ResourceWarning."""
    Segment.build(range(1, 3), [text_of("a", "alpha"), text_of("b", "beta")]).save(tmp_path / "s")

    def used() -> Segment:
        segment = Segment.open(tmp_path / "s")
        assert len(Segments([segment]).matching("alpha")) == 1
        return segment

    assert open_after_letting_go(used, str(tmp_path)) == (set(), [])
