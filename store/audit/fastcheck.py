"""Checking a run of lines at once: the common case of a first verify, every line valid, in calls to C code.

:meth:`~engram.store.audit.rules.Chain.check` holds one line to its rule, and a first verify of a long log
spends most of its time in the interpreter between the calls that do the work (parse, encode, hash). Here
those calls are mapped over a whole run of lines, and the rule's answers compared as whole lists. The run is
accepted only where the rule, line by line, would find nothing and leave the chain in the state
:class:`Advance` gives; anything else (a line orjson cannot parse, a float or a nested value, a blank line, a
problem of any kind, a repair's set-aside event) makes :func:`passes` return None, and the caller checks the
run line by line, so every problem is still found and worded by the one rule.

What makes the answers the rule's own, as :mod:`engram.store.audit.fastjson` sets out: an object orjson parsed
whose values are all strings, integers, booleans and nulls is the one ``json.loads`` returns, and orjson's
encodings of it with sorted keys give the standard encoder's bytes. In orjson's indented encoding of a list of
such objects, every newline is one it put there (a newline inside a string is written ``\\n``), so memoryd's
``", "``-separated form of each object can be cut out of one encoding of the whole run.
"""

from __future__ import annotations

import hashlib
import itertools
from itertools import compress, repeat
from typing import Any, NamedTuple

import orjson

from engram.store.audit.chain import SET_ASIDE

_SCALARS = frozenset((str, int, bool, type(None)))
_SORTED = orjson.OPT_SORT_KEYS
_SPACED = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2
_HASH = type(hashlib.sha256())
_flat = itertools.chain.from_iterable
# orjson's indented list of flat objects: its opening and closing, between two items, between two objects
_OPEN, _CLOSE, _ITEM, _NEXT = b"[\n  {\n    ", b"\n  }\n]", b",\n    ", b"\n  },\n  {\n    "


class Advance(NamedTuple):
    """What a run the rule finds nothing in leaves behind (the rest of the chain's state is plain: the last
    line was read, parsed, and had no problem)."""

    link: str  # memoryd's prev_hash for the line after the run
    engram_lines: int
    last_engram: int | None  # the last engram line (its seq is its number)
    last_seq: tuple[int, int] | None  # (seq, line) of the last line of any author carrying an integer seq


def passes(first: int, lines: list[bytes], link: str) -> Advance | None:
    """Lines ``first``, ``first + 1``, ... (``lines``, newlines or not) after a line whose memoryd link is
    ``link``: what they leave behind when the rule finds nothing in any of them; None when it may find
    something, or the run is not the plain case."""
    if not lines or first < 2:  # line 1 names the log (see Chain.check)
        return None
    try:
        objs: list[dict[str, Any]] = list(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        return None
    if set(map(type, objs)) != {dict} or not set(map(type, _flat(map(dict.values, objs)))) <= _SCALARS:
        return None
    prevs = list(map(dict.get, objs, repeat("prev_hash")))
    if prevs[0] != link:
        return None
    numbers = range(first, first + len(lines))
    engram = list(map(dict.__contains__, objs, repeat("this_hash")))
    if any(engram) and not _engram_hashes_hold(
        list(compress(objs, engram)), list(compress(numbers, engram)), list(compress(prevs, engram))
    ):
        return None
    links = _memoryd_links(objs)
    if links is None or prevs[1:] != links[:-1]:  # a prev_hash that is not a string is equal to none
        return None
    seqs = list(map(type, map(dict.get, objs, repeat("seq"))))
    last_seq = None
    if int in seqs:
        at = len(seqs) - 1 - seqs[::-1].index(int)
        last_seq = (objs[at]["seq"], first + at)
    last_engram = first + len(engram) - 1 - engram[::-1].index(True) if any(engram) else None
    return Advance(links[-1], sum(engram), last_engram, last_seq)


def _engram_hashes_hold(objs: list[dict[str, Any]], numbers: list[int], prevs: list[Any]) -> bool:
    """Each engram line's seq is its number, its prev_hash a string, and its this_hash its own; none is a
    repair's event (whose naming of lines the caller must read). ``this_hash`` stays on each object."""
    if list(map(dict.get, objs, repeat("seq"))) != numbers:  # a float is not here, True is no line's number
        return False
    if set(map(type, prevs)) != {str} or SET_ASIDE in map(dict.get, objs, repeat("event_type")):
        return False
    claimed = list(map(dict.pop, objs, repeat("this_hash")))
    bodies = map(orjson.dumps, objs, repeat(None), repeat(_SORTED))
    digests = list(map(hashlib.sha256, map(bytes.__add__, map(str.encode, prevs), bodies)))
    list(map(dict.__setitem__, objs, repeat("this_hash"), claimed))
    return list(map("sha256:".__add__, map(_HASH.hexdigest, digests))) == claimed


def _memoryd_links(objs: list[dict[str, Any]]) -> list[str] | None:
    """memoryd's link to the next line (a sha256's hex form) for each object (``prev_hash`` is taken off each);
    None when the objects' encoding is not the plain one (an object with nothing but its prev_hash)."""
    list(map(dict.pop, objs, repeat("prev_hash"), repeat(None)))
    out = orjson.dumps(objs, None, _SPACED)
    if not (out.startswith(_OPEN) and out.endswith(_CLOSE)):
        return None
    forms = (b"{" + out[len(_OPEN) : -len(_CLOSE)].replace(_ITEM, b", ").replace(_NEXT, b"}\n{") + b"}").split(b"\n")
    if len(forms) != len(objs):
        return None
    return list(map(_HASH.hexdigest, map(hashlib.sha256, forms)))
