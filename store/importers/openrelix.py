"""OpenRelix: a state root's windows become session memories and its memory registry rows become pending
promotions.

Windows come from ``raw/windows/<date>/<window_id>.json`` (or, when a day has none there, the ``windows`` of
``raw/daily/<date>.json``): the person's prompts and the conclusions, scoped by the window's ``cwd``. Registry
rows come from ``registry/memory_entries.jsonl`` (``memory_items.jsonl`` when that is missing); each is proposed
from the window it cites, else from one session per registry file. Rows with ``injection_policy: never`` are
read only on request. DURA comes from the row (see :func:`dura`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.store.domain import MemoryType
from engram.store.importers.base import (
    GLOBAL,
    UNSCOPED,
    Item,
    Malformed,
    Options,
    Origin,
    PromotionItem,
    SessionItem,
    Skipped,
    clamp,
    parse_time,
    read_json,
    read_jsonl,
    relative,
    short_hash,
    slug_part,
    strings,
    text_of,
)
from engram.store.paths import scope_hash_for

SOURCE = "importer-openrelix"
TYPES = {
    "preference": MemoryType.PREFERENCE,
    "procedural": MemoryType.PLAYBOOK,
    "workflow": MemoryType.PLAYBOOK,
    "semantic": MemoryType.FACT,
    "episodic": MemoryType.FACT,
    "rule": MemoryType.DECISION,
    "task": MemoryType.DECISION,
}
POLICY_D = {"global_context": 0.9, "project_context": 0.8, "on_demand": 0.6, "local_only": 0.4, "never": 0.2}
PRIORITY_U = {"high": 0.9, "medium": 0.6, "low": 0.3}


class OpenRelixImporter:
    name = "openrelix"

    def read(self, path: Path, options: Options) -> Iterator[Item]:
        """``path`` is the state root (the directory holding ``raw/`` and ``registry/``)."""
        scopes: dict[str, str] = {}  # window id -> scope, for registry rows that cite it
        for item in _windows(path):
            if isinstance(item, SessionItem):
                scopes[item.origin.key or ""] = item.scope_hash
            yield item
        registry = path / "registry" / "memory_entries.jsonl"
        if not registry.exists():
            registry = path / "registry" / "memory_items.jsonl"
        if registry.exists():
            yield from _registry(registry, path, scopes, options)


def _windows(root: Path) -> Iterator[Item]:
    seen: set[str] = set()
    for file in sorted((root / "raw" / "windows").glob("*/*.json")):
        data = read_json(file, root)
        if isinstance(data, Malformed):
            yield data
            continue
        yield from _window(data, Origin(relative(file, root)), seen)
    for file in sorted((root / "raw" / "daily").glob("*.json")):
        data = read_json(file, root)
        if isinstance(data, Malformed):
            yield data
            continue
        windows = data.get("windows") if isinstance(data, dict) else None
        if not isinstance(windows, list):
            yield Malformed(Origin(relative(file, root)), "no `windows` array")
            continue
        for n, window in enumerate(windows):
            yield from _window(window, Origin(f"{relative(file, root)}#windows[{n}]"), seen)


def _window(data: Any, origin: Origin, seen: set[str]) -> Iterator[Item]:
    if not isinstance(data, dict) or not text_of(data.get("window_id")):
        yield Malformed(origin, "not a window (no window_id)")
        return
    wid = data["window_id"].strip()
    if wid in seen:  # the same window in raw/windows and in the daily file
        return
    seen.add(wid)
    prompts = [
        (text_of(p.get("ts") or p.get("local_time")), text_of(p.get("text")))
        for p in data.get("prompts") or []
        if isinstance(p, dict)
    ]
    conclusions = [
        (text_of(c.get("completed_at")), text_of(c.get("text")))
        for c in data.get("conclusions") or []
        if isinstance(c, dict)
    ]
    prompts, conclusions = [p for p in prompts if p[1]], [c for c in conclusions if c[1]]
    if not prompts and not conclusions:
        yield Malformed(Origin(origin.file, key=wid), "window with no prompts and no conclusions")
        return
    when = parse_time(data.get("started_at")) or parse_time(data.get("date")) or datetime.now(UTC)
    title = (
        text_of(data.get("thread_title"))
        or text_of(data.get("window_summary"))
        or (prompts[0][1] if prompts else conclusions[0][1])
    ).splitlines()[0][:80]
    cwd = text_of(data.get("cwd"))
    parts = [
        f"# {title}",
        "",
        f"OpenRelix window `{wid}` ({text_of(data.get('ai_host')) or 'codex'}"
        f"{', ' + cwd if cwd else ''}), {when:%Y-%m-%d}.",
    ]
    if text_of(data.get("window_summary")):
        parts += ["", data["window_summary"].strip()]
    if prompts:
        parts += ["", "## Prompts", ""] + [f"- {t[:19] + ' ' if t else ''}{text}" for t, text in prompts]
    if conclusions:
        parts += ["", "## Conclusions", ""] + [f"- {t[:19] + ' ' if t else ''}{text}" for t, text in conclusions]
    parts += ["", f"_Imported from OpenRelix `{origin.file}`._"]
    yield SessionItem(
        key=f"openrelix:window:{wid}",
        slug=f"{when:%Y-%m-%d}-openrelix-{slug_part(wid)}-{short_hash(wid)}",
        title=title,
        body="\n".join(parts) + "\n",
        scope_hash=scope_hash_for(cwd) if cwd else UNSCOPED,
        created_at=when,
        origin=Origin(origin.file, key=wid),
        source=SOURCE,
        tags=["openrelix"],
    )


def _registry(file: Path, root: Path, scopes: dict[str, str], options: Options) -> Iterator[Item]:
    name = relative(file, root)
    batch_key = f"openrelix:registry:{name}"
    batch_open = False
    for entry in read_jsonl(file, root):
        if isinstance(entry, Malformed):
            yield entry
            continue
        n, row = entry
        origin = Origin(name, n)
        if not isinstance(row, dict) or not text_of(row.get("title")) or not text_of(row.get("value_note")):
            yield Malformed(origin, "registry row without title and value_note")
            continue
        mid = text_of(row.get("memory_id")) or text_of(row.get("id")) or short_hash(row["title"] + row["value_note"])
        origin = Origin(name, n, mid)
        policy = text_of(row.get("injection_policy"))
        if policy == "never" and not options.everything:
            yield Skipped(origin, "injection_policy never (read only when asked for everything)")
            continue
        windows = [w for w in strings(row.get("source_window_ids")) if w in scopes]
        session_key = f"openrelix:window:{windows[0]}" if windows else batch_key
        if not windows and not batch_open:
            batch_open = True
            yield _batch_session(batch_key, name)
        scope = GLOBAL if text_of(row.get("scope")) == "global" else scopes[windows[0]] if windows else UNSCOPED
        yield PromotionItem(
            key=f"openrelix:memory:{mid}",
            session_key=session_key,
            type=TYPES.get(text_of(row.get("memory_type")), MemoryType.FACT),
            title=row["title"].strip()[:120],
            body=_body(row),
            scope_hash=scope,
            origin=origin,
            dura=dura(row),
            reasoning=(
                f"OpenRelix registry row {mid}: priority {text_of(row.get('priority')) or '-'}, "
                f"injection_policy {policy or '-'}, seen {row.get('occurrence_count') or 1} time(s). "
                f"Imported from {origin.file}:{origin.line}."
            ),
            triggers=strings(row.get("keywords"))[:6],
        )


def dura(row: dict[str, Any]) -> dict[str, float]:
    """D from ``injection_policy`` (how widely OpenRelix would inject it), U from ``priority``, R from
    ``occurrence_count`` (0.3 for one sighting, +0.15 each more), A from how many ``evidence_contexts`` back it."""
    count = seen if isinstance(seen := row.get("occurrence_count"), int) else 1
    return {
        "D": POLICY_D.get(text_of(row.get("injection_policy")), 0.5),
        "U": PRIORITY_U.get(text_of(row.get("priority")), 0.5),
        "R": clamp(0.3 + 0.15 * (max(1, count) - 1)),
        "A": clamp(0.4 + 0.15 * len(strings(row.get("evidence_contexts")))),
    }


def _body(row: dict[str, Any]) -> str:
    parts = [row["value_note"].strip()]
    evidence = strings(row.get("evidence_contexts"))
    if evidence:
        parts += ["", "Evidence:"] + [f"- {e}" for e in evidence]
    project = text_of(row.get("project_label")) or text_of(row.get("project_key"))
    if project:
        parts += ["", f"Project: {project}"]
    return "\n".join(parts)


def _batch_session(key: str, name: str) -> SessionItem:
    now = datetime.now(UTC)
    return SessionItem(
        key=key,
        slug=f"openrelix-registry-{slug_part(name)}-{short_hash(key)}",
        title=f"OpenRelix registry ({name})",
        body=f"Registry rows imported from OpenRelix `{name}` that cite no imported window; each "
        "is a pending promotion proposed from this session.\n",
        scope_hash=UNSCOPED,
        created_at=now,
        origin=Origin(name),
        source=SOURCE,
        tags=["openrelix"],
    )
