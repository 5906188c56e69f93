"""The audit log for reading by a person: any line by number at once, filters, and events per day.

Opening a million-line log must not mean parsing it. The file is memory-mapped and numpy finds every newline,
16 MB at a time; a line is parsed only when it is shown. Filters and the
per-day counts do read every line and are meant for a worker (``progress`` reports lines done).
"""

from __future__ import annotations

import json
import mmap
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from engram.store.audit.chain import open_log
from engram.store.audit.verify import EventFilter
from engram.store.errors import BadInput

_DAY = re.compile(rb'"ts": ?"(\d{4}-\d{2}-\d{2})')


@dataclass(frozen=True)
class AuditFilter(EventFilter):
    """What the audit pane's filter line can say: ``type:`` ``scope:`` ``target:`` ``actor:`` ``since:``
    ``until:`` (values are exact, dates ISO-8601), and free words that must appear in the line."""

    actor: str | None = None
    until: datetime | None = None
    words: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.scope or self.since or self.event_type or self.target or self.actor or self.until or self.words
        )

    def matches_line(self, raw: bytes, obj: dict[str, Any]) -> bool:
        if self.actor and obj.get("actor") != self.actor:
            return False
        if self.until and _day(obj) > self.until.date().isoformat():
            return False
        if any(w.encode("utf-8") not in raw.lower() for w in self.words):
            return False
        return self.matches(obj)


def parse_filter(text: str) -> AuditFilter:
    """``type:promotion_approved scope:5727cb99a38b since:2026-11-01 kafka`` -> an :class:`AuditFilter`."""
    values: dict[str, Any] = {}
    words: list[str] = []
    names = {
        "type": "event_type",
        "scope": "scope",
        "target": "target",
        "actor": "actor",
        "since": "since",
        "until": "until",
    }
    for token in text.split():
        name, colon, value = token.partition(":")
        if not colon or name not in names:
            words.append(token.lower())
            continue
        if not value:
            raise BadInput(f"{name}: needs a value")
        if name in ("since", "until"):
            try:
                values[names[name]] = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise BadInput(f"{name}:{value} is not an ISO-8601 date or time") from None
        else:
            values[names[name]] = value
    return AuditFilter(**values, words=tuple(words))


class AuditLog:
    """Line starts of the log, found once; lines are numbered from 1 as ``engram audit verify`` numbers them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._map: mmap.mmap | bytes = b""
        self.starts = np.zeros(1, dtype=np.int64)  # start of line n at starts[n - 1]; the end at starts[n]
        try:
            with open_log(path) as fh:  # the map holds a descriptor of its own: none is left to the collector
                size = os.fstat(fh.fileno()).st_size
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        except FileNotFoundError:
            return
        if mapped is not None:
            self._map = mapped
            ends = _newlines(mapped) + 1
            if not len(ends) or ends[-1] != size:  # a torn last line still shows
                ends = np.append(ends, size)
            self.starts = np.concatenate(([0], ends)).astype(np.int64)

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()

    def __len__(self) -> int:
        return len(self.starts) - 1

    def raw(self, n: int) -> bytes:
        return bytes(self._map[self.starts[n - 1] : self.starts[n]])

    def event(self, n: int) -> dict[str, Any]:
        """Line ``n`` parsed, with ``line`` (and ``seq`` where the line has none) filled in; an unparsable line
        comes back as its text."""
        raw = self.raw(n)
        try:
            obj = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            obj = None
        if not isinstance(obj, dict):
            return {"seq": n, "line": n, "event_type": "(unparsable line)", "text": raw.decode("utf-8", "replace")}
        return {"seq": n, **obj, "line": n}

    def every_line(self) -> np.ndarray:
        """The numbers of every line, 1 to the last."""
        return np.arange(1, len(self) + 1, dtype=np.int64)

    def matching(self, where: AuditFilter, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Line numbers that pass ``where``, in order (every line when it is empty: nothing is parsed)."""
        total = len(self)
        if where.empty:
            return np.arange(1, total + 1, dtype=np.int64)
        found = []
        for n in range(1, total + 1):
            raw = self.raw(n)
            try:
                obj = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError):
                obj = None
            if isinstance(obj, dict) and where.matches_line(raw, obj):
                found.append(n)
            if progress is not None and n % 20_000 == 0:
                progress(n, total)
        return np.asarray(found, dtype=np.int64)

    def per_day(self) -> dict[str, int]:
        """Events per day (UTC date of ``ts``), oldest first: one regular-expression pass over the bytes."""
        counts = Counter(m.group(1).decode("ascii") for m in _DAY.finditer(self._map))
        return dict(sorted(counts.items()))


CHUNK = 1 << 24  # 16 MB: the comparison's scratch array stays in cache (ten times faster than one pass)


def _newlines(data: mmap.mmap) -> np.ndarray:
    """Offsets of every newline in ``data``."""
    found = [
        np.flatnonzero(np.frombuffer(data, dtype=np.uint8, count=min(CHUNK, len(data) - start), offset=start) == 10)
        + start
        for start in range(0, len(data), CHUNK)
    ]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _day(obj: dict[str, Any]) -> str:
    return str(obj.get("ts", ""))[:10]
