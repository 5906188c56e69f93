"""Parsing and encoding for the audit verify, exactly as the standard ``json`` module does them.

A first verify parses every line of the log and encodes each one again (memoryd's link to the next line, and
engram's ``this_hash``), and the standard module's pure decode and its encoder's per-call set-up are most of
that work. orjson does the same in compiled code, but it is not the same function everywhere: it turns an
integer beyond 64 bits into a float, refuses ``NaN``, ``1e400``, a lone surrogate escape and anything not UTF-8,
and writes some floats differently. memoryd's rule is defined by the standard module, so orjson is used only
where its answer is provably the same:

- :func:`loads` falls back to ``json.loads`` whenever orjson refuses a line or its object holds a float (a
  huge integer would show up as one), so every object either module returns is ``json.loads``'s;
- :func:`canonical` and :func:`memoryd` use orjson only for an object :func:`loads` took from orjson (no
  float, every integer within 64 bits, every string valid UTF-8), where sorted keys and raw UTF-8 give the
  standard encoder's bytes.

A property test holds all three to the standard module on arbitrary input.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_MEMORYD = json.JSONEncoder(sort_keys=True, ensure_ascii=False)  # memoryd's json.dumps(..., sort_keys=True, ...)
_SPACED = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2
_INDENT = re.compile(rb"\n *")
_CONTAINERS = (dict, list)


class Parsed(dict[str, Any]):
    """A JSON object orjson parsed and :func:`loads` accepted: it may be encoded with orjson."""

    __slots__ = ()


class Flat(Parsed):
    """A :class:`Parsed` object none of whose values is an object or a list (memoryd's and engram's events)."""

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
    if type(obj) is not dict:
        return json.loads(raw) if _has_float(obj) else obj
    kinds = set(map(type, obj.values()))
    if float in kinds:
        return json.loads(raw)
    if dict in kinds or list in kinds:
        return json.loads(raw) if _has_float(obj) else Parsed(obj)
    return Flat(obj)


def canonical(obj: dict[str, Any], without: str) -> bytes:
    """``obj`` minus the key ``without``, encoded with sorted keys, compact separators and raw UTF-8."""
    body = dict(obj)
    body.pop(without, None)
    if isinstance(obj, Parsed):
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return _CANONICAL.encode(body).encode("utf-8", "surrogatepass")  # no writer makes one: it then matches nothing


def memoryd(obj: dict[str, Any], without: str) -> bytes:
    """``obj`` minus the key ``without`` as memoryd's ``json.dumps(..., sort_keys=True, ensure_ascii=False)``
    writes it (``", "`` and ``": "`` between items and keys), in UTF-8.

    orjson's indented form already has ``": "`` after each key, and every newline in it is one it put there (a
    newline inside a string is written ``\\n``): taking out each newline with the indent after it, and writing
    ``", "`` for the comma before one, gives the standard encoder's bytes."""
    body = dict(obj)
    body.pop(without, None)
    if not isinstance(obj, Parsed):
        return _MEMORYD.encode(body).encode("utf-8")
    out = orjson.dumps(body, option=_SPACED)
    if type(obj) is Flat and len(out) > 2:  # b"{\n  " ... b"\n}", one level of indent
        return b"{" + out[4:-2].replace(b",\n  ", b", ") + b"}"
    return _INDENT.sub(b"", out.replace(b",\n", b", \n"))


def _has_float(value: Any) -> bool:
    items = value.values() if type(value) is dict else value if type(value) is list else (value,)
    for item in items:
        kind = type(item)
        if kind is float or (kind in _CONTAINERS and _has_float(item)):
            return True
    return False
