"""Memory files: parse and write memoryd's YAML-frontmatter Markdown exactly as memoryd does.

memoryd writes ``"---\\n" + yaml.safe_dump(fm, sort_keys=False, allow_unicode=True) + "---\\n\\n" + body``
with a fixed key order, omitting None, empty lists, ``decay_state: alive`` and ``recall_count: 0``.
Reproducing that call byte for byte is what lets an unchanged memory re-save to identical bytes, and what
keeps every file engram writes readable by memoryd. Unknown keys (memoryd drops them) are kept, after the
known ones, so a newer memoryd's or a person's additions survive an engram re-save.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engram.store import fences, header, plain_yaml
from engram.store.domain import DecayState, MemoryType, check_slug
from engram.store.errors import BadInput, BadMemoryFile

KEY_ORDER = (
    "title",
    "slug",
    "type",
    "scope_hash",
    "triggers",
    "tags",
    "source",
    "created_at",
    "updated_at",
    "relations",
    "promoted_from",
    "supersedes",
    "ttl_days",
    "decay_state",
    "last_recalled_at",
    "recall_count",
    "dura_score",
    "category",
    "observations",
)
_DATETIME_KEYS = ("created_at", "updated_at", "last_recalled_at")
_FENCE = fences.FENCE
_CDumper = getattr(yaml, "CSafeDumper", None)
_EMITTED_ALIKE = re.compile(r"[\t\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffc]*\Z")
"""Strings libyaml's emitter writes to the very bytes of PyYAML's pure Python one (memoryd's ``yaml.safe_dump``,
whose bytes are the contract). They part on characters outside the Basic Multilingual Plane (emoji: libyaml
escapes them), on C1 controls, NEL and the line and paragraph separators, on the BOM, and on folding strings
that need escapes; ``tests/test_frontmatter.py`` searches for more. Only the emitter differs: both dumpers
share the representer, so numbers, booleans and dates come out alike."""


def format_datetime(value: datetime) -> str:
    """memoryd's text for a datetime: aware values in UTC with ``Z``; naive ones as written (wall clock)."""
    if value.tzinfo is None:
        return value.isoformat()
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def index_datetime(value: datetime | None) -> str | None:
    """memoryd's index column text: ISO-8601 with ``+00:00`` for aware values, bare for naive ones."""
    if value is None:
        return None
    if value.tzinfo is None or value.tzinfo is UTC:
        return value.isoformat()
    return value.astimezone(UTC).isoformat()


class Frontmatter(BaseModel):
    """Every field of memoryd's ``schema.Frontmatter``; unknown keys ride along in ``model_extra``."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    title: str
    slug: str
    type: MemoryType
    scope_hash: str
    triggers: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    source: str
    created_at: datetime
    updated_at: datetime | None = None
    relations: list[str] = Field(default_factory=list)
    promoted_from: str | None = None
    supersedes: list[str] = Field(default_factory=list)
    ttl_days: int | None = None
    decay_state: DecayState = DecayState.ALIVE
    last_recalled_at: datetime | None = None
    recall_count: int = 0
    dura_score: dict[str, float] | None = None
    category: str | None = None
    observations: list[str] = Field(default_factory=list)

    @field_validator("slug")
    @classmethod
    def _slug_is_safe(cls, value: str) -> str:
        return check_slug(value)

    @field_validator("scope_hash")
    @classmethod
    def _scope_is_a_name(cls, value: str) -> str:
        if not value or "/" in value or value in (".", "..") or "\\" in value:
            raise ValueError(f"scope_hash {value!r} is not a directory name")
        return value

    def replace(self, **changes: Any) -> Frontmatter:
        """A validated copy with ``changes`` applied (``model_copy(update=)`` would skip validation). Changes
        that come from the index (another writer's row) may be invalid: that is a :class:`BadInput`."""
        data = {**self.model_dump(), **changes}
        try:
            return Frontmatter.model_validate(data)
        except ValidationError as exc:
            raise BadInput(f"{self.slug}: {field_problem(exc)}") from None

    def to_yaml_dict(self) -> dict[str, Any]:
        """The mapping memoryd would dump: its key order, its omissions, then the unknown keys."""
        out: dict[str, Any] = {}
        for key in KEY_ORDER:
            value = getattr(self, key)
            if value is None or value == []:
                continue
            if key == "decay_state" and value == DecayState.ALIVE:
                continue
            if key == "recall_count" and value == 0:
                continue
            if key in _DATETIME_KEYS:
                value = format_datetime(value)
            elif key in ("type", "decay_state"):
                value = value.value
            out[key] = value
        for key, value in (self.model_extra or {}).items():
            out[key] = value
        return out


class MemoryDoc(BaseModel):
    """One memory file's content: frontmatter plus Markdown body, as memoryd reads it: without the blank
    separator line or any further blank lines before the text (memoryd's ``body.lstrip("\n")``), so the body
    and its fingerprint agree with memoryd's index. ``lead`` keeps those further blank lines, only so that an
    unchanged memory re-saves to the bytes it was read from."""

    frontmatter: Frontmatter
    body: str
    lead: str = ""

    @property
    def fingerprint(self) -> str:
        return body_fingerprint(self.body)


def serialize(doc: MemoryDoc) -> bytes:
    """The exact bytes memoryd writes for ``doc``."""
    dumped = dump_yaml(doc.frontmatter.to_yaml_dict())
    return (_FENCE + dumped + _FENCE + "\n" + doc.lead + doc.body).encode("utf-8")


def dump_yaml(mapping: dict[str, Any]) -> str:
    """``yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)`` to the byte: written line by line for the
    plain shape of nearly every frontmatter (``plain_yaml.dump``), else through libyaml's emitter when every
    string is one it writes alike, else PyYAML's own."""
    plain = plain_yaml.dump(mapping)
    if plain is not None:
        return plain
    if _CDumper is not None and _emitted_alike(mapping):
        return yaml.dump(mapping, Dumper=_CDumper, sort_keys=False, allow_unicode=True)
    return yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True)


def _emitted_alike(value: object) -> bool:
    if isinstance(value, str):
        return _EMITTED_ALIKE.match(value) is not None
    if isinstance(value, dict):
        return all(_simple_key(k) and _emitted_alike(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_emitted_alike(v) for v in value)
    return True


def _simple_key(key: object) -> bool:
    """A key both emitters write as ``key:`` (an empty or long one becomes a ``? key`` in PyYAML's)."""
    return isinstance(key, str) and 0 < len(key) < 64 and _emitted_alike(key)


def parse(data: bytes, path: str) -> MemoryDoc:
    """Parse a memory file's bytes; raise :class:`BadMemoryFile` with the reason a person can fix."""
    loaded, parts = header.read(data, path)
    try:
        fm = Frontmatter.model_validate(loaded)
    except ValidationError as exc:
        raise BadMemoryFile(path, f"bad frontmatter {field_problem(exc)}") from None
    return MemoryDoc(frontmatter=fm, body=parts.body, lead=parts.lead)


def field_problem(exc: ValidationError) -> str:
    """The first invalid field and why, in one line: ``field scope_hash: Value error, ...``."""
    first = exc.errors()[0]
    return f"field {'.'.join(str(p) for p in first['loc']) or 'frontmatter'}: {first['msg']}"


def body_fingerprint(body: str) -> str:
    """memoryd's dedup key of a memory with this body: sha1 of its first 500 characters (a pending promotion's
    too, the memory an approval would write)."""
    return hashlib.sha1(body[:500].encode("utf-8")).hexdigest()
