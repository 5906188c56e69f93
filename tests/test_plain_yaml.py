"""The line-by-line reader of plain frontmatter gives what PyYAML gives, or declines."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from helpers import yaml_text
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.store import plain_yaml
from engram.store.drift.scan import FileEntry, walk

_C_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def typed(value: Any) -> Any:
    """``value`` with every scalar's type spelled out: ``1 == 1.0 == True`` must not pass for equal."""
    if isinstance(value, dict):
        return {typed(k): typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def full(header: str) -> Any:
    """What both of PyYAML's safe loaders make of ``header`` (memoryd's is the pure Python one), or the error."""
    try:
        c_loaded = yaml.load(header, Loader=_C_LOADER)
    except yaml.YAMLError:
        c_loaded = "error"
    try:
        py_loaded = yaml.safe_load(header)
    except yaml.YAMLError:
        py_loaded = "error"
    assert typed(c_loaded) == typed(py_loaded)
    return c_loaded


def agrees(header: str) -> bool:
    """The plain reader declined, or read what PyYAML reads; True when it did read."""
    fast = plain_yaml.load(header)
    if fast is None:
        return False
    assert typed(fast) == typed(full(header)), header
    return True


_text = yaml_text(" :-#'\"[]{},&*!|>%@`?~=<\\\n\t\x85\u2028\ufeff\xa0中🚀0123456789.eE+_", max_size=40)
_words = st.sampled_from(
    [
        "yes",
        "No",
        "on",
        "OFF",
        "null",
        "~",
        "true",
        "010",
        "0x1f",
        "1_000",
        "1:30",
        "0.5",
        "-2",
        "+3",
        "1e5",
        "1.0e+05",
        ".inf",
        ".nan",
        "2026-01-01",
        "2026-01-01T00:00:00Z",
        "=",
        "<<",
        "-",
        "- a",
        "a: b",
        "a #b",
        "'q'",
        '"q"',
        "''",
        "'it''s'",
        "abc",
        "",
        " ",
        "x:",
    ]  # fmt: skip
)
_scalars = _text | _words | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
_keys = _text | _words | st.sampled_from(["title", "slug", "dura_score", "D", "x-extra", "_k"])
_mappings = st.dictionaries(
    _keys,
    _scalars | st.lists(_scalars, max_size=4) | st.dictionaries(_keys, _scalars, max_size=4),
    max_size=8,
)


@settings(max_examples=600, deadline=None)
@given(_mappings, st.integers(20, 120))
def test_what_a_dumper_writes_reads_as_pyyaml_reads_it(mapping, width):
    """Headers as ``yaml.safe_dump`` writes them (memoryd's call, and other widths, which fold differently)."""
    agrees(yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True, width=width))
    agrees(yaml.safe_dump(mapping, sort_keys=False, allow_unicode=False))


_plain_words = st.text(st.sampled_from(list("abcXYZ019 .:-_#'\"中é")), min_size=1, max_size=12)
_any_text = _plain_words | st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
_frontmatters = st.fixed_dictionaries(
    {
        "title": _any_text,
        "slug": _plain_words,
        "type": st.sampled_from(["fact", "decision", "session"]),
        "triggers": st.lists(_any_text | _words, max_size=4),
        "source": _any_text,
        "created_at": st.datetimes().map(lambda d: d.isoformat() + "Z"),
        "ttl_days": st.integers(-(10**12), 10**12),
        "dura_score": st.dictionaries(st.sampled_from("DURA"), st.floats(allow_nan=False), max_size=4),
    },
    optional={"recall_count": st.integers(0, 99), "category": _any_text | _words, "x_extra": _scalars},
)


@settings(max_examples=1500, deadline=None)
@given(_frontmatters)
def test_frontmatters_as_memoryd_dumps_them_read_as_pyyaml_reads_them(mapping):
    agrees(yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True))


_fragments = st.sampled_from(
    [
        "title",
        "slug",
        "D",
        "- ",
        "  ",
        "    ",
        ": ",
        ":",
        "'",
        "''",
        '"',
        "\\",
        "#",
        " #",
        "&a ",
        "*a",
        "!!str ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "yes",
        "null",
        "~",
        "010",
        "1.5",
        "-1",
        "2026-01-01",
        "a b",
        "中",
        "\t",
        "|",
        ">",
        "---",
        "...",
        "%YAML 1.1",
        "? ",
        "-",
        "\xa0",
        "\x85",
        "\u2028",
    ]  # fmt: skip
)
_key_text = _plain_words | _words | st.sampled_from(["title", "D", "x-extra", "_k", "y", "Null"])
_value_text = st.one_of(
    _plain_words,
    _words,
    _text,
    _plain_words.map(lambda t: "'" + t.replace("'", "''") + "'"),
    _text.map(lambda t: "'" + t + "'"),
    _plain_words.map(lambda t: '"' + t + '"'),
)
_lines = st.one_of(
    _key_text.map(lambda k: k + ":"),
    st.tuples(_key_text, _value_text).map(": ".join),
    _value_text.map(lambda v: "- " + v),
    st.tuples(_key_text, _value_text).map(lambda kv: "  " + ": ".join(kv)),
    st.lists(_fragments, min_size=1, max_size=4).map("".join),
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_lines, min_size=1, max_size=4))
def test_hand_written_headers_read_as_pyyaml_reads_them_or_are_declined(lines):
    """Headers a person or another tool may write: whatever the plain reader accepts, PyYAML reads alike."""
    agrees("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ("on: x\n", "a key YAML reads as a boolean"),
        ("title: yes\n", "a boolean"),
        ("ttl_days: 010\n", "an octal integer"),
        ("ttl_days: 1_000\n", "an integer with an underscore"),
        ("created_at: 2026-01-01\n", "a date"),
        ("title: 'a' # note\n", "a comment"),
        ("title: long\n  folded on\n", "a folded plain scalar"),
        ('title: "tab\\t"\n', "an escape"),
        ("tags: [a, b]\n", "a flow list"),
        ("tags: &t\n- a\nx: *t\n", "an anchor and alias"),
        ("title: a\u2028b\n", "a line separator"),
        ("title: !!str 1\n", "a tag"),
    ],
)
def test_what_it_cannot_read_exactly_it_declines(header, why):
    assert plain_yaml.load(header) is None, why
    full(header)  # and PyYAML reads it (or refuses it) as before


def test_every_fixture_header_is_read_without_pyyaml(store):
    """memoryd's own files, as its dumper wrote them, all take the fast way (the reason it exists)."""
    entries = [e for e in walk(store.layout) if isinstance(e, FileEntry)]
    assert entries
    for entry in entries:
        text = store.read_bytes(entry.relpath).decode()
        header = text[4 : text.index("\n---\n", 3) + 1]
        assert agrees(header), entry.relpath


def dumps_alike(mapping: dict[str, Any]) -> bool:
    """The plain writer declined, or wrote the bytes PyYAML writes; True when it wrote."""
    fast = plain_yaml.dump(mapping)
    if fast is None:
        return False
    assert fast == yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True), mapping
    return True


@settings(max_examples=1500, deadline=None)
@given(_mappings)
def test_what_the_plain_writer_writes_is_what_pyyaml_writes(mapping):
    dumps_alike(mapping)


@settings(max_examples=1500, deadline=None)
@given(_frontmatters)
def test_frontmatters_are_written_as_pyyaml_writes_them(mapping):
    dumps_alike(mapping)


_near_plain = st.text(st.sampled_from(list("abcXYZ019 .:-_#'\",[]{}?!&*|>%@`中é：🚀")), min_size=1, max_size=90)
_plain_values = _near_plain | _words | st.integers() | st.floats() | st.booleans()
_plain_mappings = st.dictionaries(
    st.sampled_from(["title", "slug", "triggers", "dura_score", "D", "x-extra", "_k", "yes", "1", "a b"]),
    _plain_values
    | st.lists(_plain_values, max_size=4)
    | st.dictionaries(_words | _near_plain, _plain_values, max_size=4),
    max_size=8,
)


@settings(max_examples=3000, deadline=None)
@given(_plain_mappings)
def test_mappings_near_the_plain_shape_are_written_as_pyyaml_writes_them(mapping):
    """Syntax characters in every place, words YAML types, lengths about the fold width: most are written."""
    dumps_alike(mapping)


def test_every_fixture_header_is_written_without_pyyaml(store):
    """memoryd's own frontmatters, read and written again, take the fast way (the reason it exists) and give
    the bytes memoryd wrote."""
    entries = [e for e in walk(store.layout) if isinstance(e, FileEntry) and not e.relpath.endswith(".enc")]
    written = 0
    for entry in entries:
        text = store.read_bytes(entry.relpath).decode()
        header = text[4 : text.index("\n---\n", 3) + 1]
        written += dumps_alike(yaml.safe_load(header))
        assert plain_yaml.dump(yaml.safe_load(header)) in (None, header)
    assert written >= 0.9 * len(entries) > 0


@settings(max_examples=3000, deadline=None)
@given(_plain_values, st.sampled_from(["k", "title", "a_much_longer_key_of_thirty_chars"]))
def test_one_scalar_near_the_plain_shape_is_written_as_pyyaml_writes_it(value, key):
    dumps_alike({key: value})
    dumps_alike({key: [value]})
    dumps_alike({key: {"D": value}})


def test_a_text_written_before_is_still_folded_where_its_column_makes_it_too_long():
    """What a text is written as is kept for the next time it recurs (a scope, a tag, a key); whether it fits
    depends on where it starts, so a text that fitted under a short key is declined under a long one."""
    text = "x" * 70
    assert plain_yaml.dump({"k": text}) == f"k: {text}\n"
    assert plain_yaml.dump({"a_much_longer_key_of_thirty_chars": text}) is None
    dumps_alike({"a_much_longer_key_of_thirty_chars": text})
    assert plain_yaml.dump({"k": [text]}) == f"k:\n- {text}\n"


def test_texts_that_rarely_recur_leave_room_for_those_that_do(monkeypatch):
    """Titles and times are rarely written twice: thousands of them written first still leave the short texts that
    recur (keys, tags, trigger words) remembered, each analysed once."""
    monkeypatch.setattr(plain_yaml, "_WRITTEN", {})
    monkeypatch.setattr(plain_yaml, "_TAGS", {})
    for n in range(plain_yaml._REMEMBERED + 10):
        assert plain_yaml.dump({"title": f"A title long enough never to be written again, number {n}"}) is not None
    assert plain_yaml.dump({"triggers": ["idempotency-late"]}) == "triggers:\n- idempotency-late\n"
    assert "idempotency-late" in plain_yaml._WRITTEN and "triggers" in plain_yaml._WRITTEN
    assert not any(len(text) > plain_yaml._RECURRING for text in plain_yaml._WRITTEN)
