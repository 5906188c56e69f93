"""A memory file's frontmatter read as YAML, before any field is validated.

Validating the fields takes pydantic (:mod:`engram.store.frontmatter`), whose models take longer to import than
a search of a few thousand memories takes to answer. What a file's text and YAML are (UTF-8, LF line ends, the
fences, a mapping of bounded size) is settled here without it, for the readers that need no more: the search
index reads a file's tags and body, and nothing it does depends on the other fields.
"""

from __future__ import annotations

from typing import Any

import yaml

from engram.store import fences, plain_yaml
from engram.store.errors import BadMemoryFile

MAX_NODES = 100_000  # values in a frontmatter once YAML aliases are expanded; memoryd's have a few dozen
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML has it: same documents, several times faster."""


def read(data: bytes, path: str) -> tuple[dict[str, Any], fences.Parts]:
    """A memory file's frontmatter as a mapping, and the file's parts; raise :class:`BadMemoryFile` with the
    reason a person can fix."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadMemoryFile(path, f"invalid UTF-8 at byte {exc.start}") from None
    if "\r" in text:
        raise BadMemoryFile(path, "CRLF or CR line endings (memoryd writes LF only)")
    parts = fences.split(text)
    if isinstance(parts, str):
        raise BadMemoryFile(path, parts)
    loaded = plain_yaml.load(parts.header)
    if loaded is None:  # not the plain shape every writer's dumper gives it: the full parser reads it
        loaded = _load_yaml(parts.header, path)
    return loaded, parts


def _load_yaml(header: str, path: str) -> dict[str, Any]:
    try:
        loaded = yaml.load(header, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise BadMemoryFile(path, f"broken YAML frontmatter{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(loaded, dict):
        raise BadMemoryFile(path, "frontmatter is not a YAML mapping")
    if _expanded_size(loaded, {}) > MAX_NODES:
        raise BadMemoryFile(
            path,
            f"frontmatter expands to more than {MAX_NODES:,} values (YAML aliases nested "
            "into a bomb?): refused before anything reads it",
        )
    return loaded


def _expanded_size(value: object, seen: dict[int, int]) -> int:
    """How many values ``value`` holds with every alias expanded, as validating or dumping it would walk them;
    counted once per shared object (``seen``), so a billion-laughs document is measured, not expanded."""
    if not isinstance(value, (dict, list)):
        return 1
    known = seen.get(id(value))
    if known is not None:
        return known
    seen[id(value)] = MAX_NODES + 1  # a structure that contains itself never ends: over the limit
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
    size = 1
    for item in items:
        size += _expanded_size(item, seen)
        if size > MAX_NODES:
            break
    seen[id(value)] = size
    return size
