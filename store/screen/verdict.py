"""What the screen reads and what it says: an item, its findings, its lane. Apart from the rules, so that a verdict
can be passed around, shown and kept without compiling them (see :mod:`engram.store.screen_cache`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

CLEAN = "clean"
REVIEW = "review"
QUARANTINE = "quarantine"
UNTRUSTED_SOURCES = ("web", "browser", "fetch", "tool", "import", "mcp", "email", "issue", "pr-comment")


@dataclass(frozen=True)
class Item:
    """What the screen reads of a proposal or a memory. ``source`` is where its text came from when known (a
    session captured from tool output or web content is context, never proof); ``signals`` are context the caller
    found (a burst of proposals, a re-proposal of a rejected one)."""

    title: str = ""
    body: str = ""
    triggers: Sequence[str] = ()
    reasoning: str = ""
    source: str = ""
    signals: Sequence[str] = ()


@dataclass(frozen=True)
class Finding:
    rule: str
    category: str
    field: str
    excerpt: str
    revealed: str  # how the words were found: "" when written plainly, else "base64", "tag characters"...
    weight: str

    def as_json(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "category": self.category,
            "field": self.field,
            "excerpt": self.excerpt,
            "revealed": self.revealed,
        }


@dataclass(frozen=True)
class Screening:
    lane: str
    findings: tuple[Finding, ...] = ()
    signals: tuple[str, ...] = field(default=())

    @property
    def rules(self) -> list[str]:
        return sorted({f.rule for f in self.findings})

    def as_json(self) -> dict[str, object]:
        return {"lane": self.lane, "findings": [f.as_json() for f in self.findings], "signals": list(self.signals)}


def context_signals(item: Item) -> tuple[str, ...]:
    """The context the screen weighs beside what it finds in ``item``: the caller's signals, and a source of
    text from outside (tool output, web content). Context alone decides nothing: without a finding, the lane is
    clean."""
    signals = tuple(item.signals)
    if item.source and any(word in item.source.lower() for word in UNTRUSTED_SOURCES):
        signals += (f"source: {item.source}",)
    return signals


class ScreenedText(NamedTuple):
    """A text's screening, and the key to keep it under when it was screened clean just now (the caller keeps it:
    a worker process reads the cache of clean texts, only the process it works for writes it)."""

    screening: Screening
    clean_key: bytes | None
