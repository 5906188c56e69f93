"""What ``--json`` prints: the standard encoder's indented text, written by orjson where it can."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from engram.tui.cli.common import as_json

SCALARS = st.none() | st.booleans() | st.integers() | st.text()
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def _values(scalars: st.SearchStrategy) -> st.SearchStrategy:
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )


@given(_values(SCALARS))
def test_the_text_is_the_standard_encoders_character_for_character(data):
    """Integers of any size, every string (lone surrogates too), nesting, empty lists and objects."""
    assert as_json(data) == json.dumps(data, ensure_ascii=False, indent=2)


@given(_values(SCALARS | FLOATS))
def test_a_float_reads_back_as_the_same_number(data):
    assert json.loads(as_json(data)) == json.loads(json.dumps(data, ensure_ascii=False, indent=2))


def test_tuples_and_keys_that_are_not_strings_are_written_as_json_writes_them():
    data = {"triggers": ("a", "b"), 7: [1, (2, 3)]}
    assert as_json(data) == json.dumps(data, ensure_ascii=False, indent=2)


def test_a_lone_surrogate_and_a_huge_integer_are_written_as_json_writes_them():
    data = {"title": "broken \udcff name", "count": 2**70}
    assert as_json(data) == json.dumps(data, ensure_ascii=False, indent=2)
