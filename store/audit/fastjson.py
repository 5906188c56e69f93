"""Parsing and canonical encoding for the audit verify, exactly as the standard ``json`` module does them.

A first verify parses every line of the log and encodes most of them again (engram's ``this_hash``), and the
standard module's pure decode is most of that work. orjson does the same in compiled code, but it is not the
same function everywhere: it turns an integer beyond 64 bits into a float, refuses ``NaN``, ``1e400``, a lone
surrogate escape and anything not UTF-8, and writes some floats differently. memoryd's rule is defined by the
standard module, so orjson is used only where its answer is provably the same:

- :func:`loads` falls back to ``json.loads`` whenever orjson refuses a line or its object holds a float (a
  huge integer would show up as one), so every object either module returns is ``json.loads``'s;
- :func:`canonical` uses orjson only for an object :func:`loads` took from orjson (no float, every integer
  within 64 bits, every string valid UTF-8), where sorted keys, compact separators and raw UTF-8 give the
  standard encoder's bytes.

A property test holds both to the standard module on arbitrary input.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Parsed(dict[str, Any]):
    """A JSON object orjson parsed and :func:`loads` accepted: :func:`canonical` may encode it with orjson."""

    __slots__ = ()


def canonical_json(obj: Any) -> str:
    """The standard encoder's compact form with sorted keys and raw UTF-8: what engram's lines are hashed over."""
    return _CANONICAL.encode(obj)


def loads(raw: bytes) -> Any:
    """``json.loads(raw)``, faster; raises what it raises (``json.JSONDecodeError``, ``UnicodeDecodeError``)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)
    if _has_float(obj):
        return json.loads(raw)
    return Parsed(obj) if type(obj) is dict else obj


def canonical(obj: dict[str, Any], without: str) -> str:
    """``obj`` minus the key ``without``, encoded with sorted keys, compact separators and raw UTF-8."""
    body = {k: v for k, v in obj.items() if k != without}
    if type(obj) is Parsed:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    return canonical_json(body)


def _has_float(value: Any) -> bool:
    items = value.values() if type(value) is dict else value if type(value) is list else (value,)
    for item in items:
        kind = type(item)
        if kind is float or ((kind is dict or kind is list) and _has_float(item)):
            return True
    return False
