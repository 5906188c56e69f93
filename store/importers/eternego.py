"""eternego: a persona's ``home/``. Each day of conversation becomes a session memory: the live
``conversation.jsonl`` grouped by the day of each turn's ``time``, and the archived days in
``history/conversation-<date>.md``. ``memory.json`` (her live mind) becomes a session of its current messages,
and its ``context`` hand-off note a pending fact promotion. ``destiny/`` (reminders) and the fired reminders
and ``briefing.md`` in ``history/`` are schedules and indexes, not memories, and are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from engram.store.domain import MemoryType
from engram.store.importers.base import (
    UNSCOPED,
    Item,
    Malformed,
    Options,
    Origin,
    PromotionItem,
    SessionItem,
    listing,
    mapping,
    parse_time,
    read_json,
    read_jsonl,
    read_text,
    relative,
    short_hash,
    slug_part,
    text_of,
)

SOURCE = "importer-eternego"
SPEAKERS = {"person": "Person", "persona": "Persona"}
_ARCHIVED = re.compile(r"conversation-(\d{4}-\d{2}-\d{2})\.md$")
_TURN = re.compile(r"^\[([^\]]+)\] (person|persona): ")  # an archived turn: [time] speaker: text


class EternegoImporter:
    name = "eternego"

    def read(self, path: Path, options: Options) -> Iterator[Item]:
        """``path`` is the persona's ``home/`` directory."""
        persona = slug_part(path.resolve().parent.name if path.name == "home" else path.resolve().name)
        for file in sorted((path / "history").glob("conversation-*.md")):
            yield _archived_day(file, path, persona)
        if (path / "conversation.jsonl").exists():
            yield from _live_days(path / "conversation.jsonl", path, persona)
        if (path / "memory.json").exists():
            yield from _memory(path / "memory.json", path, persona)


def _day_session(persona: str, day: str, turns: list[str], origin: Origin) -> SessionItem:
    key = f"eternego:{persona}:day:{day}"
    return SessionItem(
        key=key,
        slug=f"{day}-eternego-{persona}-conversation",
        title=f"{persona}: conversation of {day}",
        body=f"# Conversation of {day}\n\n" + "\n\n".join(turns) + f"\n\n_Imported from eternego `{origin.file}`._\n",
        scope_hash=UNSCOPED,
        created_at=datetime.fromisoformat(f"{day}T00:00:00+00:00"),
        origin=origin,
        source=SOURCE,
        tags=["eternego", persona],
    )


def _archived_day(file: Path, home: Path, persona: str) -> Item:
    name = relative(file, home)
    named = _ARCHIVED.search(file.name)
    day = named.group(1) if named else ""
    try:
        date.fromisoformat(day)
    except ValueError:  # conversation-notes.md, conversation-2026-13-45.md: not a day eternego archived
        return Malformed(Origin(name), "not named conversation-YYYY-MM-DD.md with a real date")
    text = read_text(file, home)
    if isinstance(text, Malformed):
        return text
    turns = [
        _TURN.sub(lambda m: f"**{SPEAKERS[m.group(2)]}** ({m.group(1)[11:16]}): ", block.strip())
        for block in re.split(r"\n(?=\[)", text.strip())
    ]
    return _day_session(persona, day, turns, Origin(name, key=day))


def _live_days(file: Path, home: Path, persona: str) -> Iterator[Item]:
    name = relative(file, home)
    days: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    for entry in read_jsonl(file, home):
        if isinstance(entry, Malformed):
            yield entry
            continue
        n, turn = entry
        when = parse_time(turn.get("time")) if isinstance(turn, dict) else None
        role = turn.get("role") if isinstance(turn, dict) else None
        if when is None or role not in SPEAKERS or not isinstance(turn.get("content"), str):
            yield Malformed(Origin(name, n), "not a turn ({role: person|persona, content, time})")
            continue
        day = when.date().isoformat()
        first_line.setdefault(day, n)
        content = turn["content"].strip() or "(an image)"
        days.setdefault(day, []).append(f"**{SPEAKERS[role]}** ({when:%H:%M}): {content}")
    for day, turns in days.items():
        yield _day_session(persona, day, turns, Origin(name, first_line[day], day))


def _memory(file: Path, home: Path, persona: str) -> Iterator[Item]:
    name = relative(file, home)
    data = read_json(file, home)
    if isinstance(data, Malformed):
        yield data
        return
    mind = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None
    if mind is None:
        yield Malformed(Origin(name), "not a one-element array of {messages, archive, context}")
        return
    messages = [m for m in mind.get("messages") or [] if isinstance(m, dict)]
    context = text_of(mind.get("context"))
    if not messages and not context:
        return
    lines = [_message(m) for m in messages]
    archived = listing(mind.get("archive"))
    key = f"eternego:{persona}:mind:{short_hash(context + ''.join(lines))}"
    now = datetime.now(UTC)
    body = (
        f"# {persona}'s working memory\n\n{len(messages)} live messages, {len(archived)} archived stretches."
        + (f"\n\n## Hand-off note\n\n{context}" if context else "")
        + ("\n\n## Live messages\n\n" + "\n\n".join(lines) if lines else "")
        + f"\n\n_Imported from eternego `{name}`._\n"
    )
    yield SessionItem(
        key=key,
        slug=f"{now:%Y-%m-%d}-eternego-{persona}-mind-{key[-8:]}",
        title=f"{persona}: working memory",
        body=body,
        scope_hash=UNSCOPED,
        created_at=now,
        origin=Origin(name),
        source=SOURCE,
        tags=["eternego", persona],
    )
    if context:
        yield PromotionItem(
            key=f"eternego:{persona}:context:{short_hash(context)}",
            session_key=key,
            type=MemoryType.FACT,
            title=f"{persona}'s hand-off: {context.splitlines()[0][:90]}",
            body=context,
            scope_hash=UNSCOPED,
            origin=Origin(name, key="context"),
            dura={"D": 0.4, "U": 0.8, "R": 0.5, "A": 0.6},
            reasoning=f"eternego hand-off note (memory.json `context`), rewritten at each consolidation: what was "
            f"in motion and the next step. Imported from {name}.",
        )


def _message(message: dict[str, Any]) -> str:
    prompt = mapping(message.get("prompt"))
    who = {"user": "In", "assistant": "Persona"}.get(text_of(prompt.get("role")), "Note")
    return f"**{who}:** {text_of(message.get('content'))[:4000]}"
