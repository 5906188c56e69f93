"""The plain YAML that ``yaml.safe_dump`` writes for a frontmatter, read and written line by line.

Loading YAML was most of the time of reading a memory file, even with libyaml's parser: PyYAML builds every
node in Python. Every frontmatter memoryd or engram writes has one
shape: top-level ``key: scalar`` lines, block lists of scalars (``- item`` under their key) and one level of
nested ``key: scalar`` mappings (``dura_score``), with scalars plain or quoted on one line, or ``[]`` and ``{}``.
:func:`load` reads that shape with a few string operations per line and declines, returning None, on anything
else: folded or multi-line scalars, escapes, other flow collections, anchors, tags, comments, tabs and the
characters YAML treats as line breaks. Plain scalars are typed by PyYAML's own resolver, so ``yes``, ``1_000``
or ``2026-01-01`` are never taken for strings. A declined header goes to the full parser;
``tests/test_plain_yaml.py`` holds the two to the same result on generated headers.

:func:`dump` is the other way: the bytes ``yaml.safe_dump`` writes for a mapping of that shape, or None where
its emitter would fold, double-quote or otherwise think harder (PyYAML's representer cost a third of the time of
writing a memory).
"""

from __future__ import annotations

import re
from typing import Any

import yaml.resolver

_DECLINE = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
"""Anything but LF and YAML's printable characters less its other line breaks (NEL, LS, PS) and the BOM."""
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?\Z")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]*(?:[eE][-+][0-9]+)?\Z")
_PLAIN_START = frozenset("-?:,[]{}#&*!|>'\"%@` ")
_EMPTY: dict[str, type[list[Any]] | type[dict[str, Any]]] = {"[]": list, "{}": dict}
_RESOLVER = yaml.resolver.Resolver()
_STR, _INT_TAG, _FLOAT_TAG, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "null"))


class _Declined(Exception):
    """The header is not in the plain shape: the full parser reads it."""


def load(header: str) -> dict[str, Any] | None:
    """What PyYAML's safe loader makes of ``header`` (the text between the fences, ending in a newline), or
    None when it is not in the plain shape this reads."""
    if not header.endswith("\n") or _DECLINE.search(header):
        return None
    try:
        return _mapping(header[:-1].split("\n"))
    except _Declined:
        return None


def _mapping(lines: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i, n = 0, len(lines)
    while i < n:
        key, rest = _entry(lines[i], 0)
        i += 1
        if rest is not None:
            out[key] = _scalar(rest)
        elif i < n and lines[i].startswith("- "):
            items = []
            while i < n and lines[i].startswith("- "):
                items.append(_scalar(lines[i][2:]))
                i += 1
            out[key] = items
        elif i < n and lines[i].startswith("  "):
            nested = {}
            while i < n and lines[i].startswith("  "):
                name, value = _entry(lines[i], 2)
                if value is None:
                    raise _Declined
                nested[name] = _scalar(value)
                i += 1
            out[key] = nested
        else:
            out[key] = None
    return out


def _entry(line: str, indent: int) -> tuple[str, str | None]:
    """A ``key: value`` (or ``key:``) line at ``indent``: the key, which must resolve to a string, and the
    value's text."""
    found = _KEY.match(line, indent)
    if found is None or _tag(found[1]) != _STR:
        raise _Declined
    return found[1], found[2]


def _scalar(text: str) -> Any:
    """One scalar on one line: single-quoted, double-quoted without escapes, or plain; or an empty flow
    collection, as the dumper writes an empty list or mapping."""
    if not text:
        raise _Declined
    if text in _EMPTY:
        return _EMPTY[text]()
    first = text[0]
    if first == "'":
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != "'" or "'" in inner.replace("''", ""):
            raise _Declined
        return inner.replace("''", "'")
    if first == '"':
        inner = text[1:-1]
        if len(text) < 2 or text[-1] != '"' or '"' in inner or "\\" in inner:
            raise _Declined
        return inner
    if (first in _PLAIN_START and not _signed_number(text)) or text[-1] in " :" or ": " in text or " #" in text:
        raise _Declined
    tag = _tag(text)
    if tag == _STR:
        return text
    if tag == _INT_TAG and _INT.match(text):
        return int(text)
    if tag == _FLOAT_TAG and _FLOAT.match(text):
        return float(text)
    if tag == _NULL:
        return None
    raise _Declined


def _signed_number(text: str) -> bool:
    return text[0] == "-" and len(text) > 1 and text[1] in "0123456789"


_TAGS: dict[str, str] = {}
_RECURRING = 32
"""Texts up to this long are remembered (keys, types, sources, tags, scopes, trigger words: the few that recur);
a title or a time rarely recurs, and remembered, the first thousands of them filled what was kept for the rest
(a demo's build then analysed a trigger word afresh at every memory after its first 2,000)."""
_REMEMBERED = 4096


def _tag(text: str) -> str:
    """The tag PyYAML gives a plain scalar (remembered for the few keys and values that recur)."""
    tag = _TAGS.get(text)
    if tag is None:
        tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))
        if len(text) <= _RECURRING and len(_TAGS) < _REMEMBERED:
            _TAGS[text] = tag
    return tag


_WIDTH = 80  # PyYAML's best_width: a longer line of a plain or quoted scalar is folded at a space
_PLAIN_TEXT = re.compile("[\x21-\x7e\xa1-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff ]+")
"""Printable characters YAML writes as they are, and the plain space (no tab, no break, no NBSP or BOM)."""


def dump(mapping: dict[str, Any]) -> str | None:
    """What ``yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)`` writes, for a mapping in the plain
    shape :func:`load` reads, written in the few string operations per line that shape needs (PyYAML's
    representer walks every node in Python: most of the time of writing a memory). None for anything else: a
    string that would be folded, double-quoted, or written as a block; empty collections; null; deeper nesting.
    ``tests/test_plain_yaml.py`` holds the two to the same bytes on generated mappings."""
    if not mapping:
        return None
    lines: list[str] = []
    try:
        for key, value in mapping.items():
            _put(lines, key, value)
    except _Declined:
        return None
    return "".join(lines)


def _put(lines: list[str], key: object, value: object) -> None:
    name = _key(key)
    if isinstance(value, list) and value:
        lines.append(f"{name}:\n")
        lines.extend(f"- {_value(item, 2)}\n" for item in value)
    elif isinstance(value, dict) and value:
        lines.append(f"{name}:\n")
        lines.extend(f"  {_key(k)}: {_value(v, len(str(k)) + 4)}\n" for k, v in value.items())
    else:
        lines.append(f"{name}: {_value(value, len(name) + 2)}\n")


def _key(key: object) -> str:
    if not isinstance(key, str) or not 0 < len(key) < 64 or _plain(key, 0) != key:
        raise _Declined
    return key


def _value(value: object, column: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _plain(value, column)
    raise _Declined


def _float(value: float) -> str:
    """PyYAML's ``represent_float``."""
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


def _plain(text: str, column: int) -> str:
    """``text`` as the emitter writes it from ``column``: plain where YAML allows it and reads it back as this
    string, else single-quoted; declined where the emitter would fold it, double-quote it or keep its edge
    spaces."""
    written = _WRITTEN.get(text)
    if written is None:
        written = _written(text)
        if len(text) <= _RECURRING and len(_WRITTEN) < _REMEMBERED:
            _WRITTEN[text] = written
    if not written or column + len(written) > _WIDTH:
        raise _Declined
    return written


_WRITTEN: dict[str, str] = {}
"""What :func:`_written` made of the keys and values that recur (a frontmatter's keys, types, sources, tags,
scopes): most of a header's strings, each of which took a pattern match, an analysis and a tag lookup."""


def _written(text: str) -> str:
    """``text`` plain or single-quoted on one line, or ``""`` where the emitter would write it otherwise."""
    if not text or not _PLAIN_TEXT.fullmatch(text) or text[0] == " " or text[-1] == " ":
        return ""
    return text if _block_plain(text) and _tag(text) == _STR else "'" + text.replace("'", "''") + "'"


def _block_plain(text: str) -> bool:
    """PyYAML's ``analyze_scalar`` on a one-line text without edge spaces: no indicator where YAML would take it
    for syntax (``#`` or ``&`` first, ``- `` or ``: `` anywhere, `` #``, a final ``:``, a document marker)."""
    first = text[0]
    if text.startswith(("---", "...")) or first in "#,[]{}&*!|>'\"%@`":
        return False
    if first in "?:-" and (len(text) == 1 or text[1] == " "):
        return False
    return text.find(": ", 1) < 0 and not (len(text) > 1 and text[-1] == ":") and " #" not in text
