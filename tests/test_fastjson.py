"""The audit verify's fast JSON is the standard module's JSON: same objects, same errors, same encoded bytes.

memoryd's chain rule and engram's ``this_hash`` are defined by ``json``; a line orjson would read or write
differently (a 65-bit integer, ``NaN``, a lone surrogate, a float) must still get ``json``'s answer.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engram.store.audit import fastjson

# every code point, lone surrogates included (json.loads makes them from \ud800 escapes)
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits orjson would read a float
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3))
_OBJECTS = st.dictionaries(_TEXT, _VALUES, max_size=6)


def _shape(value: Any) -> Any:
    """A comparable picture of a parsed value: types kept (1 is not 1.0 is not True), NaN equal to itself."""
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    if isinstance(value, dict):
        return ("dict", [(k, _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(v) for v in value])
    return (type(value).__name__, value)


def _outcome(parse: Any, raw: bytes) -> Any:
    try:
        return _shape(parse(raw))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return ("error", type(exc).__name__)


def _encodings(obj: dict[str, Any]) -> list[bytes]:
    """The ways a writer may have put ``obj`` on a line."""
    out = []
    for ascii_only in (True, False):
        for separators in ((",", ":"), (", ", ": ")):
            text = json.dumps(obj, ensure_ascii=ascii_only, separators=separators)
            try:
                out.append(text.encode("utf-8"))
            except UnicodeEncodeError:
                out.append(text.encode("utf-8", "surrogatepass"))  # not UTF-8: both must refuse it
    return out


@settings(max_examples=400)
@given(_OBJECTS)
@example({"big": 2**64, "neg": -(2**63) - 1, "n": 2**70})
@example({"x": float("nan"), "y": float("inf"), "z": 1e400})
@example({"s": "\ud800", "t": 'a"b\\c\x00\x1f\u2028'})
def test_loads_and_encodings_are_the_standard_modules(obj: dict[str, Any]) -> None:
    for raw in _encodings(obj):
        assert _outcome(fastjson.loads, raw) == _outcome(json.loads, raw)
        try:
            parsed = fastjson.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        for key in [*parsed.keys(), "absent"]:
            body = {k: v for k, v in json.loads(raw).items() if k != key}
            compact = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            spaced = json.dumps(body, sort_keys=True, ensure_ascii=False)  # memoryd's _hash_for_chain
            assert fastjson.canonical(parsed, key) == compact.encode("utf-8", "surrogatepass")
            assert _memoryd(parsed, key) == _utf8(spaced)


def _memoryd(obj: dict[str, Any], key: str) -> bytes | str:
    try:
        return fastjson.memoryd(obj, key)
    except UnicodeEncodeError:
        return "not UTF-8"


def _utf8(text: str) -> bytes | str:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return "not UTF-8"


@given(_OBJECTS)
@example({"a": {"b": [1, {"c": "x\n,\n  y"}], "d": []}, "e": {}})
def test_nested_objects_are_written_as_memoryd_writes_them(obj: dict[str, Any]) -> None:
    """Nested objects and lists take the indented form's other path; a newline in a string is not structure."""
    parsed = fastjson.loads(json.dumps({"wrap": obj, "x": [obj]}).encode())
    expected = json.dumps({"x": [obj]}, sort_keys=True, ensure_ascii=False)
    assert _memoryd(parsed, "wrap") == _utf8(expected)


@settings(max_examples=400)
@given(
    st.binary(max_size=40)
    | st.builds(lambda a, b: a + b, st.sampled_from([b"{", b"[", b'{"a":', b"\xef\xbb\xbf"]), st.binary(max_size=20))
)
@example(b'{"a":1e400}')
@example(b'{"a":NaN}')
@example(b'{"a":123456789012345678901234567890}')
@example(b"\xef\xbb\xbf{}")
@example(b'{"a":"\x01"}')
@example(b'{\x00"\x00a\x00"\x00:\x001\x00}\x00')
def test_loads_answers_arbitrary_bytes_as_json_does(raw: bytes) -> None:
    assert _outcome(fastjson.loads, raw) == _outcome(json.loads, raw)


def test_a_huge_integer_is_not_read_as_a_float() -> None:
    """orjson alone reads this as 1.2345678901234568e+29, and a line's hash would then not match."""
    parsed = fastjson.loads(b'{"n":123456789012345678901234567890}')
    assert parsed == {"n": 123456789012345678901234567890}
    assert fastjson.canonical(parsed, "x") == b'{"n":123456789012345678901234567890}'
