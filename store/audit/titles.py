"""Titles for audit lines, looked up from the identifiers engram's lines carry.

engram writes identifiers, counts and states into its audit details, never titles or reasons (see
:data:`engram.store.audit.chain.IDENTIFIER_KEYS`): the log is read by every tool of the root and kept for good,
and a scope marked sensitive later must not have its text left behind in it. A person reading the log still wants
to know what a line was about, so the title is looked up when it is shown: from the memory a slug names, or the
promotion an id names, and only while the scope is readable (not sensitive, or unlocked).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from engram.store.index import LOOKUP_VALUES
from engram.store.models import Memory, Promotion, tuples
from engram.store.service import Store


class Titles:
    """Titles of the memories and promotions audit lines name, looked up a batch of lines at a time."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.sensitive = store.sensitive_scopes()
        self._slugs: dict[str, tuple[str, str]] = {}  # slug -> (scope, title)
        self._promotions: dict[int, tuple[str, str]] = {}  # id -> (scope, title)

    def prefetch(self, events: Iterable[dict[str, Any]]) -> None:
        """Look up, in a few statements, every title ``events`` name that is not known yet."""
        slugs, ids = set(), set()
        for event in events:
            pid, slug = _named(event)
            if pid is not None and pid not in self._promotions:
                ids.add(pid)
            elif slug and slug not in self._slugs:
                slugs.add(slug)
        for batch in _batches(sorted(slugs)):
            memories = Memory.select(Memory.slug, Memory.scope_hash, Memory.title).where(Memory.slug.in_(batch))
            for slug, scope, title in tuples(memories):
                self._slugs[slug] = (scope, title)
        for batch in _batches(sorted(ids)):
            promotions = Promotion.select(Promotion.id, Promotion.scope_hash, Promotion.proposed_title)
            for pid, scope, title in tuples(promotions.where(Promotion.id.in_(batch))):
                self._promotions[pid] = (scope, title)

    def title(self, event: dict[str, Any]) -> str | None:
        """The title of what ``event`` is about, or None (unknown, gone, or its scope locked)."""
        pid, slug = _named(event)
        found = self._promotions.get(pid) if pid is not None else self._slugs.get(slug or "")
        if found is None:
            return None
        scope, title = found
        if scope in self.sensitive and not self.store.keys.can_open(scope):
            return None
        return title


def _named(event: dict[str, Any]) -> tuple[int | None, str | None]:
    """The promotion id or the memory slug an event is about."""
    details = event.get("details")
    if isinstance(details, str):  # as memoryd writes them: a JSON string
        try:
            details = json.loads(details)
        except ValueError:
            details = None
    if isinstance(details, dict) and isinstance(details.get("promotion_id"), int):
        return int(details["promotion_id"]), None
    target = event.get("target_id")
    if not isinstance(target, str) or not target:
        return None, None
    if target.isdigit() and str(event.get("event_type", "")).startswith("promotion"):
        return int(target), None
    return None, target


def _batches(values: list[Any]) -> Iterable[list[Any]]:
    for start in range(0, len(values), LOOKUP_VALUES):
        yield values[start : start + LOOKUP_VALUES]
