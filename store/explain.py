""" "Why is this here": one memory with everything that explains it, as Markdown for the console."""

from __future__ import annotations

import json

import yaml

from engram.store.audit.verify import EventFilter, events
from engram.store.frontmatter import parse
from engram.store.index import Promotion, SupersedesChain
from engram.store.memories import view_memory
from engram.store.promotions import dura_of
from engram.store.sensitive import binding
from engram.store.service import Store


def explain(store: Store, slug: str) -> str:
    """The memory's body and frontmatter, the promotion it came from (DURA, reasoning), its source session,
    what it supersedes and what supersedes it, and its audit events. Opening a sensitive memory is audited."""
    doc = view_memory(store, slug)
    fm = doc.frontmatter
    parts = [
        f"# {fm.title}",
        *_binding_warning(store, slug),
        doc.body,
        "---",
        "## Frontmatter",
        "```yaml\n" + yaml.safe_dump(fm.to_yaml_dict(), sort_keys=False, allow_unicode=True) + "```",
    ]
    why = []
    promotion = Promotion.get_or_none(Promotion.id == _promotion_id(slug)) if slug.startswith("promoted-") else None
    if promotion is not None:
        dura = ", ".join(f"{k} {v:.2f}" for k, v in dura_of(promotion).items())
        why.append(
            f"- Promoted from session `{promotion.source_session_slug}` (promotion #{promotion.id}, "
            f"{promotion.status}); DURA {dura}; reasoning: {promotion.reasoning or '—'}"
        )
    elif fm.promoted_from:
        why.append(f"- Promoted from session `{fm.promoted_from}`")
    why.append(f"- Source: {fm.source}; created {fm.created_at.isoformat()}")
    for row in SupersedesChain.select().where(SupersedesChain.newer_memory_id == slug):
        why.append(f"- Supersedes `{row.older_memory_id}` ({row.decided_by}, {row.confidence:.2f}): {row.reason or ''}")
    for row in SupersedesChain.select().where(SupersedesChain.older_memory_id == slug):
        why.append(f"- Superseded by `{row.newer_memory_id}` ({row.decided_by}): {row.reason or ''}")
    parts += ["## Why is this here", "\n".join(why)]
    trail = [
        f"- {e.get('ts', '')[:19]} {e.get('event_type')} by {e.get('actor', 'memoryd')}: {_short(e.get('details'))}"
        for e in events(store.layout.audit_path, EventFilter(target=slug))
    ]
    parts += ["## Audit events", "\n".join(trail[-20:]) or "none"]
    return "\n\n".join(parts)


def _binding_warning(store: Store, slug: str) -> list[str]:
    """For an encrypted memory whose file is not the one engram bound: say so above the text, which may be
    another memory's (swapped) or an older version (rolled back)."""
    rel = store.memory(slug).body_path
    if not rel.endswith(".md.enc"):
        return []
    data, plaintext = store.read_file(store.safe_relpath(rel))
    state = binding.verify(store, rel, data, parse(plaintext, rel), plaintext)
    if state.state in (binding.SWAPPED, binding.ROLLED_BACK):
        return [
            f"> **Warning: this file was {state.state.replace('_', ' ')}.** {state.detail}. "
            "Restore it from a backup, or run `engram check` for every such file."
        ]
    if state.state == binding.UNBOUND:
        return ["> Encrypted by memoryd and not yet bound by engram (`engram repair` binds it)."]
    return []


def _promotion_id(slug: str) -> int:
    try:
        return int(slug.split("-")[1])
    except (IndexError, ValueError):
        return -1


def _short(details: object) -> str:
    try:
        data = json.loads(details) if isinstance(details, str) else details or {}
    except json.JSONDecodeError:
        return str(details)[:80]
    if isinstance(data, dict):
        data.pop("op_id", None)
    return json.dumps(data, ensure_ascii=False)[:120]
