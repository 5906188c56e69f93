""" "Why is this here": one memory with everything that explains it, as data, or as Markdown for the console."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from engram.store.audit.verify import EventFilter, events
from engram.store.columns import dura_of
from engram.store.frontmatter import MemoryDoc, parse
from engram.store.memories import view_memory
from engram.store.models import Promotion, SupersedesChain
from engram.store.sensitive import binding
from engram.store.service import Store


@dataclass
class Explanation:
    """One memory with what explains it: the console renders it as Markdown, ``engram show --json`` as data."""

    slug: str
    doc: MemoryDoc
    warnings: list[str]
    promotion: dict[str, Any] | None  # the promotion it came from: id, status, session, DURA, reasoning
    supersedes: list[dict[str, Any]]  # rows where it is the newer memory
    superseded_by: list[dict[str, Any]]
    events: list[dict[str, Any]]  # its audit events, oldest first

    def markdown(self) -> str:
        fm = self.doc.frontmatter
        why = []
        if self.promotion is not None:
            p = self.promotion
            dura = ", ".join(f"{k} {v:.2f}" for k, v in p["dura"].items())
            why.append(
                f"- Promoted from session `{p['session']}` (promotion #{p['id']}, {p['status']}); DURA {dura}; "
                f"reasoning: {p['reasoning'] or '—'}"
            )
        elif fm.promoted_from:
            why.append(f"- Promoted from session `{fm.promoted_from}`")
        why.append(f"- Source: {fm.source}; created {fm.created_at.isoformat()}")
        why += [
            f"- Supersedes `{r['older']}` ({r['decided_by']}, {r['confidence']:.2f}): {r['reason'] or ''}"
            for r in self.supersedes
        ]
        why += [f"- Superseded by `{r['newer']}` ({r['decided_by']}): {r['reason'] or ''}" for r in self.superseded_by]
        trail = [
            f"- {e.get('ts', '')[:19]} {e.get('event_type')} by {e.get('actor', 'memoryd')}: {_short(e.get('details'))}"
            for e in self.events[-20:]
        ]
        frontmatter = yaml.safe_dump(fm.to_yaml_dict(), sort_keys=False, allow_unicode=True)
        parts = [f"# {fm.title}", *self.warnings, self.doc.body, "---", "## Frontmatter", f"```yaml\n{frontmatter}```"]
        parts += ["## Why is this here", "\n".join(why), "## Audit events", "\n".join(trail) or "none"]
        return "\n\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "frontmatter": self.doc.frontmatter.to_yaml_dict(),
            "body": self.doc.body,
            "warnings": self.warnings,
            "promotion": self.promotion,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "audit_events": self.events,
        }


def explain(store: Store, slug: str) -> str:
    """:func:`explanation` as Markdown, for the console."""
    return explanation(store, slug).markdown()


def explanation(store: Store, slug: str) -> Explanation:
    """The memory's body and frontmatter, the promotion it came from (DURA, reasoning), its source session,
    what it supersedes and what supersedes it, and its audit events. Opening a sensitive memory is audited."""
    doc = view_memory(store, slug)
    promotion = Promotion.get_or_none(Promotion.id == _promotion_id(slug)) if slug.startswith("promoted-") else None
    return Explanation(
        slug,
        doc,
        _binding_warning(store, slug),
        None
        if promotion is None
        else {
            "id": promotion.id,
            "status": promotion.status,
            "session": promotion.source_session_slug,
            "dura": dura_of(promotion),
            "reasoning": promotion.reasoning,
        },
        [_link(r) for r in SupersedesChain.select().where(SupersedesChain.newer_memory_id == slug)],
        [_link(r) for r in SupersedesChain.select().where(SupersedesChain.older_memory_id == slug)],
        list(events(store.layout.audit_path, EventFilter(target=slug))),
    )


def _link(row: SupersedesChain) -> dict[str, Any]:
    return {
        "newer": row.newer_memory_id,
        "older": row.older_memory_id,
        "decided_by": row.decided_by,
        "confidence": row.confidence,
        "reason": row.reason,
    }


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
