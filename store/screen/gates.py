"""Each rule's branches run only on texts holding one of the literal words the branch must begin with.

Python's ``re`` tries a pattern that opens with ``\\b`` and an alternation at every offset of the text; with a
hundred branches over four views of a memory that is most of the screen's time, though almost every memory holds
none of the words a branch opens with. The words are read from the branch's own parse tree, so a gate can never
disagree with its pattern: a branch whose opening is not literal (a character class, an optional part) has no
gate and always runs.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

# ``re``'s own parser and opcodes: private modules, but the parse tree of a pattern is only to be had from them
parser: Any = importlib.import_module("re._parser")
c: Any = importlib.import_module("re._constants")

LIMIT = 400  # prefixes kept per branch before the gate gives up (a branch that open-ended always runs)
SHORTEST = 2  # a one-character gate would pass nearly every text
LONG = 6  # a gate word this long or longer is indexed by this many of its first characters


def gate(pattern: str) -> tuple[str, ...] | None:
    """Literal strings one of which every match of ``pattern`` starts with (after zero-width assertions), or
    None when there is no such useful set."""
    found, _ = _sequence(list(parser.parse(pattern)))
    if not found or any(len(p) < SHORTEST for p in found):
        return None
    return tuple(sorted(found))


def _sequence(items: list[tuple[Any, Any]]) -> tuple[set[str], bool]:
    """Prefixes of a sequence, and whether the whole of it was literal (so what follows extends them)."""
    current = {""}
    for at, (op, av) in enumerate(items):
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue
        if op is c.LITERAL:
            current = {p + chr(av) for p in current}
            continue
        if op is c.IN:
            chars = [chr(a) for o, a in av if o is c.LITERAL]
            if len(chars) != len(av) or len(chars) > 4:
                return current, False
            current = {p + ch for p in current for ch in chars}
            continue
        if op is c.SUBPATTERN:
            inner, whole = _sequence(list(av[-1]))
        elif op is c.BRANCH:
            inner, whole = set(), True
            for alternative in av[1]:
                found, done = _sequence(list(alternative))
                inner |= found
                whole = whole and done
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] == 0 and av[1] == 1:
            # optional: the prefixes of what follows, with it and without it
            rest = items[at + 1 :]
            with_it, _ = _sequence(list(av[2]) + rest)
            without, _ = _sequence(rest)
            combined = {p + s for p in current for s in with_it | without}
            return (combined, False) if len(combined) <= LIMIT else (current, False)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
            inner, _ = _sequence(list(av[2]))
            whole = False
        else:
            return current, False
        combined = {p + s for p in current for s in inner}
        if len(combined) > LIMIT:
            return current, False
        current = combined
        if not whole:
            return current, False
    return current, True


def branches(pattern: re.Pattern[str]) -> list[str]:
    """The top-level alternatives of ``pattern`` (split where ``|`` is not inside a group or a class)."""
    text, depth, start, out, escaped, in_class = pattern.pattern, 0, 0, [], False, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


class Branches:
    """Patterns split into numbered branches, each with its gate words indexed by a key a view's pieces can meet in
    one set operation: a word of two or three characters by itself, a longer one by its first three characters, and
    one of :data:`LONG` or more by its first :data:`LONG` (a few three-character openings, ``the``, ``use``, begin
    hundreds of words; six characters tell them apart). ``active(view)`` is the set of branches worth running on a
    view: only the words whose key is met are looked for, and a word that is its own key is met already."""

    def __init__(self) -> None:
        self.index: dict[str, list[tuple[str, int]]] = {}
        self.sizes: set[int] = set()
        self.always: set[int] = set()
        self.count = 0

    def add(self, pattern: re.Pattern[str]) -> list[tuple[int, re.Pattern[str]]]:
        """``pattern``'s branches, compiled and numbered."""
        compiled = []
        for branch in branches(pattern):
            words = gate(branch)
            if words is None:
                self.always.add(self.count)
            for word in words or ():
                key = word[:LONG] if len(word) >= LONG else word[:3]
                self.index.setdefault(key, []).append((word, self.count))
                self.sizes.add(len(key))
            compiled.append((self.count, re.compile(branch, pattern.flags)))
            self.count += 1
        return compiled

    def active(self, view: str) -> set[int]:
        pieces = {view[i : i + size] for size in self.sizes for i in range(len(view) - size + 1)}
        active = set(self.always)
        for key in pieces & self.index.keys():
            active.update(
                number
                for word, number in self.index[key]
                if number not in active and (len(word) == len(key) or word in view)
            )
        return active


def first(compiled: list[tuple[int, re.Pattern[str]]], active: set[int], text: str) -> re.Match[str] | None:
    """The first match in ``text`` of the active branches of one pattern."""
    for number, pattern in compiled:
        if number in active:
            match = pattern.search(text)
            if match:
                return match
    return None
