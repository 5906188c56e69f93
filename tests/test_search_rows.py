"""The search's rows in flat arrays: a column of strings gathered, joined and kept as bytes gives back exactly the
strings it was made of (any Unicode, empty strings included), and the rows read back from their bytes are the
rows kept."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from engram.store.search import arrays
from engram.store.search import rows as rows_module
from engram.store.search.arrays import Heads, SplicedWords, Words, bits, indexes, scan
from engram.store.search.rows import FIELDS, Builder, Rows, Strings, padded

texts = st.lists(st.text(max_size=12), max_size=30)


@given(texts, st.data(), st.integers(1, 4))
def test_strings_take_the_rows_asked_for(values, data, at_a_time):
    """In any order, a few rows at a time or all at once (a million heads are gathered TAKEN at a time)."""
    column = Strings.of(values)
    assert [column[n] for n in range(len(column))] == values
    picked = data.draw(st.lists(st.integers(0, len(values) - 1))) if values else []
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(rows_module, "TAKEN", at_a_time)
        taken = column.take(np.asarray(picked, dtype=np.int64))
    assert [taken[n] for n in range(len(taken))] == [values[n] for n in picked]


@given(texts, st.data(), st.text(st.characters(blacklist_characters="\0"), min_size=1, max_size=3))
def test_strings_picked_and_searched_one_by_one(values, data, needle):
    column = Strings.of([v + "\0" for v in values])
    picked = data.draw(st.lists(st.integers(0, len(values) - 1))) if values else []
    assert column.pick(picked) == [values[n] + "\0" for n in picked]
    assert column.find(needle, picked) == [n for n in picked if needle in values[n]]


@given(st.sets(st.integers(0, 4_000)), st.integers(0, 5_000))
def test_a_bitsets_first_rows_are_its_lowest_set_bits(rows, limit):
    """Only the leading bytes that hold ``limit`` set bits are unpacked: the answer is still the lowest ones."""
    assert indexes(bits(rows, 4_001), limit).tolist() == sorted(rows)[:limit]


@given(st.lists(texts, max_size=4))
def test_strings_joined_are_one_column(parts):
    column = Strings.joined([Strings.of(part) for part in parts])
    assert [column[n] for n in range(len(column))] == [value for part in parts for value in part]


row = st.tuples(
    st.text(min_size=1, max_size=10),
    st.text(max_size=10),
    st.tuples(*(st.sampled_from(["a", "B", "b", "c"]) for _ in FIELDS)),
    st.booleans(),
    st.integers(-1, 50),
)


@given(st.lists(st.lists(row, max_size=8), max_size=4), st.data())
def test_rows_built_in_chunks_kept_and_read_back_are_the_rows(chunks, data):
    builder = Builder()
    for chunk in chunks:
        if chunk:
            slugs, titles, fields, encrypted, doc = zip(*chunk, strict=True)
            heads = [padded(f"{t} {s}".lower()) + "\0" for s, t in zip(slugs, titles, strict=True)]
            created = [f"2026-11-{n:02d}" for n in range(len(chunk))]
            builder.add(slugs, titles, tuple(zip(*fields, strict=True)), created, encrypted, heads, doc)
    built = builder.rows()
    flat = [r for chunk in chunks for r in chunk]
    assert [(built[n].slug, built[n].title, built[n].encrypted) for n in range(len(built))] == [
        (s, t, e) for s, t, _, e, _ in flat
    ]
    assert [
        tuple(getattr(built[n], f) for f in ("type", "scope_hash", "decay_state", "source")) for n in range(len(built))
    ] == [f for _, _, f, _, _ in flat]
    back = Rows.from_blobs(built.blobs())
    assert [back[n] for n in range(len(back))] == [built[n] for n in range(len(built))]
    assert back.doc.tolist() == [d for *_, d in flat]
    picked = np.asarray(sorted(data.draw(st.sets(st.integers(0, max(len(flat) - 1, 0))))) if flat else [], np.int64)
    taken = built.take(picked)
    assert [taken[n] for n in range(len(taken))] == [built[n] for n in picked.tolist()]
    assert built.hits(picked.tolist()) == [built[n] for n in picked.tolist()]


@given(
    st.lists(st.tuples(st.text(min_size=1, max_size=10), st.text(max_size=10), st.booleans()), max_size=30),
    st.data(),
    st.text(st.characters(blacklist_characters="\0"), min_size=1, max_size=3),
)
def test_rows_spliced_with_their_kept_part_answer_as_the_rows_do(flat, data, needle):
    """The console reads the rows of plain scopes from their kept files (``inside``) and holds the others: every
    question asked of the rows, by the whole's row numbers, gets the answer the rows in memory give."""
    builder = Builder()
    if flat:
        slugs, titles, inside = zip(*flat, strict=True)
        heads = [padded(f"{t} {s}".lower()) + "\0" for s, t in zip(slugs, titles, strict=True)]
        fields = tuple(zip(*(("fact", "s", "fresh", "agent") for _ in flat), strict=True))
        created = [f"2026-11-{n:02d}" for n in range(len(flat))]
        builder.add(slugs, titles, fields, created, [False] * len(flat), heads, list(range(len(flat))))
    whole = builder.rows()
    mask = np.asarray([i for *_, i in flat], dtype=bool)
    spliced = whole.spliced(Rows.from_blobs(whole.take(np.flatnonzero(mask)).blobs()), mask)
    everything = list(range(len(whole)))
    asked = data.draw(st.lists(st.sampled_from(everything))) if flat else []
    assert spliced.hits(asked) == whole.hits(asked) and [spliced[n] for n in everything] == whole.hits(everything)
    assert sorted(spliced.heads.find(needle, asked)) == sorted(n for n in asked if needle in whole.head(n))
    picked = np.asarray(sorted(set(asked)), dtype=np.int64)
    taken = spliced.take(picked)
    assert [taken[n] for n in range(len(taken))] == whole.hits(picked.tolist())
    assert spliced.by_slug == whole.by_slug
    if (~mask).any():  # the rows held, taken all: not copied again
        assert spliced.heads.take(np.flatnonzero(~mask)) is spliced.heads.parts[1]
    words = scan(spliced.heads)
    assert isinstance(words, SplicedWords) and sorted(set(words.rows(needle).tolist())) == sorted(
        set(Words(whole.heads).rows(needle).tolist())
    )


@given(
    st.lists(st.text(max_size=10), min_size=1, max_size=20),
    st.text(st.characters(blacklist_characters="\0"), min_size=1, max_size=4),
)
def test_the_scan_of_heads_finds_what_a_substring_test_finds(heads, needle):
    padded_heads = [padded(h) for h in heads]
    found = set(Words(Strings.of([h + "\0" for h in padded_heads])).rows(needle).tolist())
    assert found == {n for n, h in enumerate(padded_heads) if needle in h}


@given(
    st.lists(st.text(max_size=10), min_size=1, max_size=20),
    st.text(st.characters(blacklist_characters="\0"), min_size=1, max_size=4),
    st.booleans(),
)
@example(heads=[""], needle="\ud800", many=True)  # a lone surrogate (a paste) made the segments raise
def test_heads_in_memory_are_segmented_only_past_the_threshold_and_answer_alike(heads, needle, many):
    """Heads held in memory (sensitive scopes) get segments from SEGMENTED_FROM bytes on (four bytes per byte of
    heads); below it they are scanned. Either way a needle finds the heads holding it."""
    padded_heads = [padded(h) for h in heads]
    column = Strings.of([h + "\0" for h in padded_heads])
    in_memory = Heads(column)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(arrays, "SEGMENTED_FROM", len(column.data) if many else len(column.data) + 1)
        in_memory.prepare()
    assert (in_memory._segments is not None) is many
    assert set(in_memory.rows(needle).tolist()) == {n for n, h in enumerate(padded_heads) if needle in h}


def test_heads_asked_again_for_the_same_needle_answer_without_a_second_search(monkeypatch):
    """A body term asks the heads of sensitive scopes for it, and its ranking asks again: the last answer is kept
    (read-only), another needle is searched, and a console idle drops what is kept."""
    heads = ["kafka lag", "config drift", "kafka consumer", "ledger"]
    in_memory = Heads(Strings.of([padded(h) + "\0" for h in heads]))
    searched = []
    real = Words.rows
    monkeypatch.setattr(Words, "rows", lambda self, needle: searched.append(needle) or real(self, needle))
    first = in_memory.rows("kafka")
    assert sorted(first.tolist()) == [0, 2] and in_memory.rows("kafka") is first and searched == ["kafka"]
    assert not first.flags.writeable
    assert in_memory.rows("con").tolist() == [1, 2] and searched == ["kafka", "con"]
    in_memory.forget()
    assert sorted(in_memory.rows("con").tolist()) == [1, 2] and searched == ["kafka", "con", "con"]
