"""What every importer yields, and the one small interface they share.

An importer only reads its host's files and turns them into items: a :class:`SessionItem` per imported
conversation or batch (it becomes a session memory) and a :class:`PromotionItem` per durable thing it finds (it
becomes a pending promotion a person reviews in the queue). Bad input becomes a :class:`Malformed` item, never
an exception. Writing, deduplication and auditing are :mod:`engram.store.importers.run`'s job, the same for all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from engram.store.domain import MemoryType

UNSCOPED = "_unscoped"  # memoryd's scope dir for memories with no project
GLOBAL = "global"  # memoryd's scope dir for memories meant everywhere


@dataclass(frozen=True)
class Origin:
    """Where an item came from: a file under the imported path, the line in it, and the item's own id."""

    file: str
    line: int | None = None
    key: str | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return where if self.key is None else f"{where} ({self.key})"


@dataclass(frozen=True)
class Options:
    """What a person chose: ``scope`` puts every item in one scope (a hash, ``global`` or a directory);
    ``everything`` also reads what a system keeps out of the way (OpenRelix ``never`` rows, CogniRelay
    archived and fallback capsules); ``redact`` replaces secret-looking strings before anything is written."""

    scope: str | None = None
    everything: bool = False
    redact: bool = False


@dataclass
class SessionItem:
    """An imported conversation or batch: one session memory. ``key`` is its stable id (``<system>:...``)."""

    key: str
    slug: str
    title: str
    body: str
    scope_hash: str
    created_at: datetime
    origin: Origin
    source: str
    tags: list[str] = field(default_factory=list)


@dataclass
class PromotionItem:
    """Something durable found in a session: a pending promotion proposed from the session ``session_key``.

    ``supersedes_keys`` name other items (by key) this one replaces; those already approved as memories become
    the promotion's ``proposed_supersedes``."""

    key: str
    session_key: str
    type: MemoryType
    title: str
    body: str
    scope_hash: str
    origin: Origin
    dura: dict[str, float]
    reasoning: str
    triggers: list[str] = field(default_factory=list)
    supersedes_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Malformed:
    """Input that could not be read as the format says: reported with its place, then skipped."""

    origin: Origin
    reason: str


@dataclass(frozen=True)
class Skipped:
    """Input a system keeps out of the way (OpenRelix ``never`` rows, CogniRelay archives): read only when a
    person asks (:attr:`Options.everything`); counted so the preview says what was left out."""

    origin: Origin
    reason: str


@dataclass(frozen=True)
class SupersedeItem:
    """A replacement the host recorded between two imported sessions (a CogniRelay thread's
    ``superseded_by``): proposed in the supersedes pane for a person to confirm or reject."""

    newer_key: str
    older_key: str
    reason: str
    origin: Origin

    @property
    def key(self) -> str:
        """Recorded once proposed, so a link a person rejected is not proposed again by the next run."""
        return f"{self.newer_key} supersedes {self.older_key}"


Item = SessionItem | PromotionItem | Malformed | Skipped | SupersedeItem


class Importer(Protocol):
    """One host's format. ``read`` walks ``path`` (a file or its state directory) and yields items in an order
    where a session comes before the promotions proposed from it.

    An importer whose host's sessions may already be in the root by another road (memoryd's own Codex mirror)
    also defines ``known_sessions(store) -> {key: slug}``; the preview skips those sessions."""

    name: str

    def read(self, path: Path, options: Options) -> Iterator[Item]: ...


# ------------------------------------------------------------------ helpers the importers share

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug_part(text: str, limit: int = 48) -> str:
    """Text made safe for a memoryd slug (``^[A-Za-z0-9._-]+$``, no ``..``)."""
    return _UNSAFE.sub("-", text).replace("..", ".").strip("-.")[:limit] or "item"


def short_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def parse_time(value: Any) -> datetime | None:
    """An ISO-8601 timestamp (``Z`` or offset; a naive one is taken as UTC), or None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def read_text(path: Path, root: Path) -> str | Malformed:
    """A whole UTF-8 file, or why it cannot be one (unreadable, empty, not UTF-8)."""
    origin = Origin(relative(path, root))
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Malformed(origin, f"cannot be read: {exc.strerror}")
    if not data.strip():
        return Malformed(origin, "empty file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Malformed(origin, f"not UTF-8 (byte {exc.start})")


def read_json(path: Path, root: Path) -> Any | Malformed:
    """A whole JSON file (any JSON value: the callers check its shape), or why it is not one
    (:func:`read_text`'s reasons, or not JSON)."""
    text = read_text(path, root)
    if isinstance(text, Malformed):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return Malformed(Origin(relative(path, root)), f"not JSON: {exc.msg} at line {exc.lineno}")


MAX_LINE = 8 * 1024 * 1024  # a JSONL line longer than this is reported, not parsed


def read_jsonl(path: Path, root: Path) -> Iterator[tuple[int, Any] | Malformed]:
    """Each line of a JSONL file as ``(line number, object)``, or a :class:`Malformed` for a line that is not
    UTF-8, not JSON, or too long. Blank lines are skipped; the file is read a line at a time."""
    name = relative(path, root)
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield Malformed(Origin(name), f"cannot be read: {exc.strerror}")
        return
    with fh:
        n = 0
        while raw := fh.readline(MAX_LINE + 1):
            n += 1
            if len(raw) > MAX_LINE:  # read past the rest of the line without holding it
                size = len(raw)
                while not raw.endswith(b"\n") and (raw := fh.readline(MAX_LINE)):
                    size += len(raw)
                yield Malformed(Origin(name, n), f"line of {size:,} bytes is over the {MAX_LINE:,} limit")
                continue
            if not raw.strip():
                continue
            try:
                yield n, json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                yield Malformed(Origin(name, n), f"not UTF-8 (byte {exc.start})")
            except json.JSONDecodeError as exc:
                yield Malformed(Origin(name, n), f"not JSON: {exc.msg}")


def relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or path.name
    except ValueError:
        return path.name


def text_of(value: Any) -> str:
    """A field that should be text: strings as they are, anything else empty (rows are hand-editable)."""
    return value.strip() if isinstance(value, str) else ""


def mapping(value: Any) -> dict[str, Any]:
    """A field that should be an object: objects as they are, anything else empty."""
    return value if isinstance(value, dict) else {}


def listing(value: Any) -> list[Any]:
    """A field that should be a list: lists as they are, anything else empty."""
    return value if isinstance(value, list) else []


def strings(value: Any) -> list[str]:
    """A field that should be a list of strings, keeping only the strings."""
    return [v.strip() for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 2)
