"""The search syntax shared by the queue filter and the search pane, modelled on fzf's.

``a b`` both; ``a | b`` either; ``'exact`` substring, ``"two words"`` a phrase; ``^prefix``; ``suffix$``;
``^whole$``; ``!term`` or ``-term`` not;
field filters ``type:`` ``scope:`` ``tag:`` ``state:`` ``source:`` (value prefix, case-insensitive, ``!`` works
too); in the review queue also ``dura:>0.7`` ``dura:<=0.5`` (the DURA average) and ``age:>7`` (days since it was
proposed; ``7d`` too), ``secret:yes`` (secret-looking text), ``screen:quarantine`` (the poisoning screen's lane,
or a category: ``screen:exfiltration``) and ``dup:known`` (repeats a memory;
``dup:cluster``, ``dup:yes``); ``\\ `` is a literal space. A plain term matches as a case-insensitive
substring; ranking (rapidfuzz) is the searcher's business, not the parser's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FIELDS = ("type", "scope", "tag", "state", "source")
NUMERIC = ("dura", "age")  # compared, not matched: the queue's fields (parse(..., numeric=True))
# matched as FIELDS are, known to the queue only: the kinds of secret-looking text held (``secret:``), and whether
# it is a near-duplicate (``dup:cluster`` of another pending one, ``dup:known`` of a memory, ``dup:yes`` either)
QUEUE_ONLY = ("secret", "dup", "screen")
_COMPARE = re.compile(r"^(<=|>=|<|>|=)?(\d+(?:\.\d+)?)d?$")
_OPS = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__, "=": float.__eq__}


class QuerySyntaxError(ValueError):
    """A query that cannot mean anything (e.g. an unknown field, a lone ``|``)."""


@dataclass(frozen=True)
class Term:
    text: str  # lowercased
    kind: str = "substring"  # substring | exact | prefix | suffix | equal; for a NUMERIC field: < <= > >= =
    negate: bool = False
    field: str | None = None  # one of FIELDS, or None for the text of the memory


@dataclass(frozen=True)
class Query:
    groups: tuple[tuple[Term, ...], ...] = ()  # AND of OR-groups

    @property
    def empty(self) -> bool:
        return not self.groups

    def positive_text(self) -> list[str]:
        """Plain text the results must contain (for prefilters and highlighting)."""
        return [t.text for g in self.groups for t in g if not t.negate and t.field is None]


_FIELD_RE = re.compile(r"^([!-]?)([a-z]+):(.*)$")


def parse(text: str, numeric: bool = False) -> Query:
    """Parse a query; raises :class:`QuerySyntaxError` with what is wrong. ``numeric``: the NUMERIC fields are
    known (the review queue has them; memories do not)."""
    groups: list[tuple[Term, ...]] = []
    current: list[Term] = []
    pending_or = False
    for token in _tokens(text):
        if token == "|":
            if not current:
                raise QuerySyntaxError("'|' needs a term on both sides")
            pending_or = True
            continue
        term = _term(token, numeric)
        if pending_or:
            current.append(term)
            pending_or = False
        else:
            if current:
                groups.append(tuple(current))
            current = [term]
    if pending_or:
        raise QuerySyntaxError("'|' needs a term on both sides")
    if current:
        groups.append(tuple(current))
    return Query(tuple(groups))


def _tokens(text: str) -> list[str]:
    """Words split at whitespace; ``\\`` escapes the next character; ``"two words"`` is one token, the exact
    phrase (as ``'two\\ words`` would be), with ``!`` or ``-`` before it to exclude it."""
    out: list[str] = []
    buf: list[str] = []
    escaped = quoted = False
    for ch in text:
        if escaped:
            buf.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"' and (quoted or not buf or "".join(buf) in ("!", "-")):
            if not quoted:
                buf.append("'")  # the phrase is an exact term
            quoted = not quoted
        elif ch.isspace() and not quoted:
            if buf:
                out.append("".join(buf))
                buf = []
        else:
            buf.append(ch)
    if escaped:
        buf.append("\\")
    if buf:
        out.append("".join(buf))
    return out


def _term(token: str, numeric: bool) -> Term:
    field_match = _FIELD_RE.match(token)
    if numeric and field_match and field_match.group(2) in NUMERIC:
        negate, name, value = field_match.groups()
        compared = _COMPARE.match(value.strip())
        if compared is None:
            raise QuerySyntaxError(f"{name}: takes a number with < <= > >= or = before it (e.g. {name}:>0.7)")
        return Term(compared.group(2), compared.group(1) or "=", bool(negate), name)
    if field_match and (field_match.group(2) in FIELDS or (numeric and field_match.group(2) in QUEUE_ONLY)):
        negate, name, value = field_match.groups()
        if not value:
            raise QuerySyntaxError(f"{name}: needs a value")
        return Term(value.lower(), "prefix", bool(negate), name)
    if field_match and not token.startswith(("'", "^")):
        known = ", ".join(f"{f}:" for f in FIELDS + (NUMERIC + QUEUE_ONLY if numeric else ()))
        raise QuerySyntaxError(f"unknown field {field_match.group(2)}: (fields are {known})")
    negate = token.startswith("!") or (token.startswith("-") and len(token) > 1)
    if negate:
        token = token[1:]
    kind = "substring"
    if token.startswith("'"):
        kind, token = "exact", token[1:]
    else:
        prefix, suffix = token.startswith("^"), token.endswith("$") and len(token) > 1
        token = token[1:] if prefix else token
        token = token[:-1] if suffix else token
        kind = "equal" if prefix and suffix else "prefix" if prefix else "suffix" if suffix else "substring"
    if not token:
        raise QuerySyntaxError("an empty term")
    return Term(token.lower(), kind, negate)


def matches(query: Query, haystack: str, fields: Mapping[str, Sequence[str]]) -> bool:
    """Does a record match? ``haystack`` is its lowercased searchable text; ``fields`` its lowercased field
    values (``tag`` may have several). Prefix and suffix terms on text apply at word boundaries (any word of it,
    or several words when the term has an escaped space)."""
    for group in query.groups:
        if not any(_one(term, haystack, fields) for term in group):
            return False
    return True


def _one(term: Term, haystack: str, fields: Mapping[str, Sequence[str]]) -> bool:
    if term.field in NUMERIC:
        hit = any(_OPS[term.kind](float(v), float(term.text)) for v in fields.get(term.field, ()))
        return hit != term.negate
    if term.field is not None:
        values = fields.get(term.field, ())
        hit = any(v.startswith(term.text) for v in values)
        return hit != term.negate
    if term.kind in ("prefix", "suffix", "equal"):  # at word boundaries: " pre", "fix ", " word " in " a b c "
        needle = " ".join(term.text.split())
        needle = {"prefix": f" {needle}", "suffix": f"{needle} "}.get(term.kind, f" {needle} ")
        hit = needle in " " + " ".join(haystack.split()) + " "
    else:
        hit = term.text in haystack
    return hit != term.negate
