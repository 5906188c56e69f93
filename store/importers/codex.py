"""Codex: rollout JSONL files (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``) and the rollout summaries
Codex keeps in ``memories/rollout_summaries/*.md``, as session memories the way memoryd's Codex mirror writes
them: ``source: codex-rollout``, the scope from the session's ``cwd`` by memoryd's rule, a
``codex-rollout-header`` block, and a slug from the date and the file's stem, so one rollout never lands twice
(not even when memoryd's mirror brought it in first: its sessions are recognised by their ``thread_id``).

Only what the person asked and what Codex answered is kept: injected ``<environment_context>`` and
``<user_instructions>`` blocks, tool calls and their output, and (encrypted) reasoning are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.store.errors import StoreError
from engram.store.importers.base import (
    UNSCOPED,
    Item,
    Malformed,
    Options,
    Origin,
    SessionItem,
    mapping,
    parse_time,
    read_jsonl,
    read_text,
    relative,
    slug_part,
    text_of,
)
from engram.store.models import Imported, Memory, tuples
from engram.store.paths import scope_hash_for
from engram.store.service import Store

SOURCE = "codex-rollout"
INJECTED = ("<environment_context>", "<user_instructions>", "<user_shell_command>", "# AGENTS.md instructions")
MAX_TURN = 4000  # characters kept of one message; the rest is cut with a note
_THREAD = re.compile(r"^thread_id:\s*(\S+)", re.MULTILINE)
ROLLOUT_FOOTER = "_Imported from Codex rollout `"  # a summary's footer says "rollout summary"
_MIRROR_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class CodexImporter:
    name = "codex"

    def read(self, path: Path, options: Options) -> Iterator[Item]:
        """``path`` is ``$CODEX_HOME``, its ``sessions`` directory, or one rollout file."""
        root = path if path.is_dir() else path.parent
        files = [path] if path.is_file() else sorted(path.rglob("rollout-*.jsonl"))
        for file in files:
            yield from _rollout(file, root)
        summaries = root / "memories" / "rollout_summaries"
        if path.is_dir() and summaries.is_dir():
            for file in sorted(summaries.glob("*.md")):
                yield _summary(file, root)

    @staticmethod
    def known_sessions(store: Store) -> dict[str, str]:
        """Sessions already in the store that no import record names, by key: the rollout summaries memoryd's
        mirror wrote (``codex:summary:<thread_id>``, read from their header block), and rollouts an engram run
        wrote before it was killed (``codex:<thread_id>``, told by their footer). Sessions an engram import
        recorded are known from its records and not read."""
        known = {}
        ours = Imported.select(Imported.memory_slug).where(Imported.memory_slug.is_null(False))
        for slug, body_path, scope in tuples(
            Memory.select(Memory.slug, Memory.body_path, Memory.scope_hash).where(
                (Memory.source == SOURCE) & Memory.slug.not_in(ours)
            )
        ):
            if body_path.endswith(".md.enc") and not store.keys.can_open(scope):
                continue
            try:
                body = store.read_doc(store.safe_relpath(body_path)).body
            except (StoreError, OSError):
                continue
            match = _THREAD.search(body[:2000])
            if match:  # the mirror copies rollout summaries; a rollout is only ever one of engram's own
                kind = "codex:" if ROLLOUT_FOOTER in body else "codex:summary:"
                known[f"{kind}{match.group(1)}"] = slug
        return known


def _rollout(file: Path, root: Path) -> Iterator[Item]:
    name = relative(file, root)
    meta: dict[str, Any] = {}
    first: datetime | None = None
    last: datetime | None = None
    turns: list[tuple[str, str]] = []
    events: list[tuple[str, str]] = []  # event_msg copies, used when a rollout has no response items
    lines = 0
    for entry in read_jsonl(file, root):
        if isinstance(entry, Malformed):
            yield entry
            continue
        n, obj = entry
        lines += 1
        if not isinstance(obj, dict) or not isinstance(obj.get("payload"), dict):
            yield Malformed(Origin(name, n), "not a rollout line ({timestamp, type, payload})")
            continue
        when = parse_time(obj.get("timestamp"))
        first, last = first or when, when or last
        kind, payload = obj.get("type"), obj["payload"]
        if kind == "session_meta":
            meta = payload
        elif kind == "response_item" and payload.get("type") == "message":
            text = _message_text(payload)
            if text and payload.get("role") in ("user", "assistant"):
                turns.append((payload["role"], text))
        elif kind == "event_msg" and payload.get("type") in ("user_message", "agent_message"):
            text = text_of(payload.get("message"))
            if text and not text.startswith(INJECTED):
                events.append(("user" if payload["type"] == "user_message" else "assistant", text))
    turns = turns or events
    if lines == 0:
        yield Malformed(Origin(name), "empty file")
        return
    if not any(role == "user" for role, _ in turns):
        yield Malformed(Origin(name), "no request from the person in this rollout")
        return
    started = parse_time(meta.get("timestamp")) or first or _time_from_name(file) or datetime.now(UTC)
    thread = text_of(meta.get("id")) or file.stem
    cwd = text_of(meta.get("cwd"))
    git = mapping(meta.get("git"))
    title = _title(next(text for role, text in turns if role == "user"))
    header = "\n".join(
        f"{k}: {v}"
        for k, v in (
            ("thread_id", thread),
            ("updated_at", (last or started).strftime("%Y-%m-%dT%H:%M:%SZ")),
            ("rollout_path", str(file.resolve())),
            ("cwd", cwd),
            ("git_branch", text_of(git.get("branch"))),
        )
        if v
    )
    conversation = "\n\n".join(f"**{'You' if role == 'user' else 'Codex'}:** {_cut(text)}" for role, text in turns)
    body = f"```codex-rollout-header\n{header}\n```\n\n# {title}\n\n{conversation}\n\n{ROLLOUT_FOOTER}{name}`._\n"
    stem = file.stem.removeprefix("rollout-")
    yield SessionItem(
        key=f"codex:{thread}",
        slug=f"{started:%Y-%m-%d}-{slug_part(stem, 100)}",
        title=title,
        body=body,
        scope_hash=scope_hash_for(cwd) if cwd else UNSCOPED,
        created_at=started,
        origin=Origin(name, key=thread),
        source=SOURCE,
        tags=["codex"],
    )


def _summary(file: Path, root: Path) -> Item:
    """A rollout summary: ``key: value`` lines, a blank line, then Markdown."""
    name = relative(file, root)
    text = read_text(file, root)
    if isinstance(text, Malformed):
        return text
    head, _, body = text.partition("\n\n")
    fields = dict(line.split(":", 1) for line in head.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    if not body.strip() or not fields:
        return Malformed(Origin(name), "no `key: value` header followed by a body")
    thread = fields.get("thread_id") or fields.get("rollout_id") or file.stem
    when = parse_time(fields.get("updated_at")) or datetime.now(UTC)
    cwd = fields.get("cwd", "")
    title = fields.get("title") or _title(body.strip().lstrip("# "))
    return SessionItem(
        key=f"codex:summary:{thread}",
        slug=f"{when:%Y-%m-%d}-{_MIRROR_UNSAFE.sub('_', file.stem)[:80]}",  # memoryd's mirror's slug
        title=title,
        body=f"```codex-rollout-header\n{head.strip()}\n```\n\n{body.strip()}\n\n"
        f"_Imported from Codex rollout summary `{name}`._\n",
        scope_hash=scope_hash_for(cwd) if cwd else UNSCOPED,
        created_at=when,
        origin=Origin(name, key=thread),
        source=SOURCE,
        tags=["codex", "rollout-summary"],
    )


def _message_text(payload: dict[str, Any]) -> str:
    """The text items of a message, without the blocks Codex injects into the first user turn."""
    parts = []
    for item in payload.get("content") or []:
        if isinstance(item, dict) and item.get("type") in ("input_text", "output_text"):
            text = text_of(item.get("text"))
            if text and not text.startswith(INJECTED):
                parts.append(text)
    return "\n\n".join(parts)


def _title(text: str) -> str:
    line = next((x.strip() for x in text.splitlines() if x.strip()), "Codex session")
    return line if len(line) <= 80 else line[:79].rstrip() + "…"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TURN else f"{text[:MAX_TURN]}… ({len(text) - MAX_TURN:,} characters cut)"


def _time_from_name(file: Path) -> datetime | None:
    match = re.search(r"(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})", file.name)
    if not match:
        return None
    return datetime.fromisoformat(f"{match.group(1)}T{match.group(2)}:{match.group(3)}:{match.group(4)}+00:00")
