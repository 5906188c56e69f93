"""Running an importer: a preview that writes nothing, then the import through the store's write path.

The preview reads everything, drops what an earlier run (or memoryd's own mirror) already brought in, and
counts the rest per type and scope, with the malformed input and the secret-looking strings found. Applying it
writes each session memory and queues each promotion as one audited change (``import_item``, with the item's
origin), in batches of one transaction each, then records the run (``import_run``). ``engram_imports`` keeps
every item's key and origin, so a second run, or a rerun after a crash, adds only what is missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.store.domain import MemoryType, PromotionStatus
from engram.store.errors import BadInput
from engram.store.frontmatter import Frontmatter, MemoryDoc
from engram.store.importers.base import (
    Importer,
    Malformed,
    Options,
    Origin,
    PromotionItem,
    SessionItem,
    Skipped,
    SupersedeItem,
)
from engram.store.models import Imported, Memory, Promotion, SupersedesChain, tuples
from engram.store.paths import check_scope_name, scope_hash_for
from engram.store.promotions import Proposal, promoted_slug, promotion_values
from engram.store.secrets import Finding, find_secrets, redact
from engram.store.sensitive import keyproof
from engram.store.service import Store, chunked
from engram.store.write.change import Change

BATCH = 200  # items per transaction: one fsync of the log and one checkpoint per batch
FIRST = 8  # items shown in a preview


@dataclass
class Preview:
    """What an import would write, and what it found wrong; nothing is written until :func:`apply_import`."""

    system: str
    path: str
    sessions: list[SessionItem] = field(default_factory=list)
    promotions: list[PromotionItem] = field(default_factory=list)
    supersedes: list[SupersedeItem] = field(default_factory=list)
    malformed: list[Malformed] = field(default_factory=list)
    refused: list[tuple[Origin, str]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    secrets: list[tuple[Origin, str, Finding]] = field(default_factory=list)
    already: int = 0
    adopted: list[SessionItem] = field(default_factory=list)  # already memories, not yet recorded as imported
    slugs: dict[str, str] = field(default_factory=dict)  # session key -> slug, for promotions to attach to

    @property
    def items(self) -> int:
        return len(self.sessions) + len(self.promotions) + len(self.supersedes)

    def counts(self) -> dict[tuple[str, str], int]:
        """How many memories or promotions per (type, scope)."""
        found = Counter(("session", s.scope_hash) for s in self.sessions)
        found.update((p.type.value, p.scope_hash) for p in self.promotions)
        return dict(sorted(found.items()))

    def first(self) -> list[tuple[str, str, str]]:
        """The first sessions and promotions as (kind, title, origin), secret-looking strings masked."""
        return [("session", redact(s.title), str(s.origin)) for s in self.sessions[:FIRST]] + [
            (p.type.value, redact(p.title), str(p.origin)) for p in self.promotions[:FIRST]
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "path": self.path,
            "sessions": len(self.sessions),
            "promotions": len(self.promotions),
            "supersedes": len(self.supersedes),
            "already_imported": self.already,
            "per_type_and_scope": [{"type": t, "scope": s, "count": n} for (t, s), n in self.counts().items()],
            "first": [{"kind": kind, "title": title, "origin": origin} for kind, title, origin in self.first()],
            "malformed": [{"origin": str(m.origin), "reason": m.reason} for m in self.malformed],
            "refused": [{"origin": str(o), "reason": r} for o, r in self.refused],
            "skipped": [{"origin": str(k.origin), "reason": k.reason} for k in self.skipped],
            "secrets": [{"origin": str(o), "title": t, "kind": h.kind, "masked": h.masked} for o, t, h in self.secrets],
        }


@dataclass(frozen=True)
class ImportResult:
    sessions: int
    promotions: int
    supersedes: int


def resolve_scope(scope: str | None) -> str | None:
    """``--scope``: a 12-hex scope hash or a name such as ``global`` as it is, anything else a directory whose
    scope hash memoryd's rule gives."""
    if scope is None:
        return None
    directory = Path(scope).expanduser()
    if "/" not in scope and not scope.startswith((".", "~")) and not directory.exists():
        check_scope_name(scope)
        return scope
    if not directory.is_dir():  # a typo would otherwise become a scope of its own
        raise BadInput(f"--scope {scope}: no such directory (give a scope hash, global, or a project directory)")
    return scope_hash_for(directory)


def preview(
    store: Store,
    importer: Importer,
    path: str | Path,
    options: Options = Options(),
    progress: Callable[[int], None] | None = None,
) -> Preview:
    """Read ``path`` with ``importer`` and work out what an import would add. ``progress`` gets the number of
    items read so far (the total is not known before the end)."""
    source = Path(path).expanduser()
    if not source.exists():
        raise BadInput(f"{source}: no such file or directory")
    scope = resolve_scope(options.scope)
    records = list(tuples(Imported.select(Imported.source_key, Imported.kind, Imported.memory_slug)))
    done = {key for key, _, _ in records}
    known = {key: slug for key, kind, slug in records if kind == "session"}
    known.update(getattr(importer, "known_sessions", lambda _store: {})(store))
    result = Preview(importer.name, str(source), slugs=dict(known))
    sensitive = store.sensitive_scopes()
    seen: set[str] = set()  # a host may hold one item twice (an archived day and the live transcript)
    refused: set[str] = set()  # sessions not to be written: their promotions are refused with them
    for n, item in enumerate(importer.read(source, options), 1):
        if progress is not None and n % 500 == 0:
            progress(n)
        if isinstance(item, Malformed):
            result.malformed.append(item)
            continue
        if isinstance(item, Skipped):
            result.skipped.append(item)
            continue
        if isinstance(item, SupersedeItem):
            if item.key in done:
                result.already += 1
            else:
                result.supersedes.append(item)
            continue
        if scope is not None:
            item.scope_hash = scope
        if item.key in done or item.key in seen:
            result.already += 1
            continue
        if isinstance(item, SessionItem) and item.key in known:  # memoryd's mirror wrote it
            seen.add(item.key)
            item.slug = known[item.key]
            result.adopted.append(item)
            result.already += 1
            continue
        seen.add(item.key)
        for hit in find_secrets(f"{item.title}\n{item.body}"):
            result.secrets.append((item.origin, redact(item.title), hit))
        if options.redact:
            item.title, item.body = redact(item.title), redact(item.body)
        if isinstance(item, SessionItem):
            if item.scope_hash in sensitive and not store.keys.can_open(item.scope_hash):
                result.refused.append(
                    (
                        item.origin,
                        f"scope {item.scope_hash} is sensitive and locked: unlock it to "
                        "import sessions into it (they are written encrypted)",
                    )
                )
                refused.add(item.key)
                continue
            result.sessions.append(item)
            result.slugs[item.key] = item.slug
        elif item.scope_hash in sensitive:
            result.refused.append(
                (
                    item.origin,
                    f"scope {item.scope_hash} is sensitive: a pending promotion's text would sit in index.db in clear",
                )
            )
        elif item.session_key in refused:
            result.refused.append((item.origin, "its session was refused"))
        elif item.session_key not in result.slugs:
            result.malformed.append(Malformed(item.origin, "its session was neither imported nor found"))
        else:
            result.promotions.append(item)
    _drop_written_sessions(result)
    result.supersedes = [s for s in result.supersedes if s.newer_key in result.slugs and s.older_key in result.slugs]
    return result


def _drop_written_sessions(result: Preview) -> None:
    """Sessions whose slug is already a memory (written by a run that died before recording them, or by
    memoryd) are not written again; their promotions still attach to them, and the run records them as imported
    (``adopted``, as it does the sessions memoryd's mirror wrote) so the import records name every memory an
    import brought in, and the next run need not look for them again."""
    existing: set[str] = set()
    for batch in chunked([s.slug for s in result.sessions], 500):
        existing.update(slug for (slug,) in tuples(Memory.select(Memory.slug).where(Memory.slug.in_(batch))))
    if existing:
        written = [s for s in result.sessions if s.slug in existing]
        result.adopted += written
        result.already += len(written)
        result.sessions = [s for s in result.sessions if s.slug not in existing]


def apply_import(store: Store, plan: Preview, progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Write what ``plan`` found: sessions first (promotions attach to them), then promotions, then the proposed
    supersedes, each one audited change; batches of :data:`BATCH` share a transaction. Ends with one
    ``import_run`` event carrying the counts."""
    items: list[SessionItem | PromotionItem | SupersedeItem] = [*plan.sessions, *plan.promotions, *plan.supersedes]
    for scope in sorted({s.scope_hash for s in plan.sessions} & store.sensitive_scopes()):
        keyproof.prove(store, scope)  # a wrong key refuses the whole import before its first item
    done = 0
    for batch in chunked(items, BATCH):
        docs: list[tuple[MemoryDoc, str]] = []
        records: list[dict[str, Any]] = []
        changes = [_change(store, plan, item, docs, records) for item in batch]

        def batch_rows(docs: list[tuple[MemoryDoc, str]] = docs, records: list[dict[str, Any]] = records) -> None:
            store.upsert_memory_rows(docs)
            for rows in chunked(records, 100):
                Imported.insert_many(rows).on_conflict_replace().execute()

        store.apply_many(changes, durable=False, index_update=batch_rows)
        done += len(batch)
        if progress is not None:
            progress(done, len(items))
    now = store.now().isoformat()
    adopted = [_record(plan.system, s.key, "session", str(s.origin), now, memory_slug=s.slug) for s in plan.adopted]

    def adopt_rows() -> None:
        for rows in chunked(adopted, 100):
            Imported.insert_many(rows).on_conflict_replace().execute()

    store.apply(
        Change(
            "import_run",
            None,
            None,
            {
                "system": plan.system,
                "path": plan.path,
                "sessions": len(plan.sessions),
                "promotions": len(plan.promotions),
                "supersedes": len(plan.supersedes),
                "already_imported": plan.already,
                "adopted": len(plan.adopted),
                "malformed": len(plan.malformed),
                "refused": len(plan.refused),
                "skipped": len(plan.skipped),
                "secrets_flagged": len(plan.secrets),
            },
            index_update=adopt_rows,
        )
    )
    return ImportResult(len(plan.sessions), len(plan.promotions), len(plan.supersedes))


def _change(
    store: Store,
    plan: Preview,
    item: SessionItem | PromotionItem | SupersedeItem,
    docs: list[tuple[MemoryDoc, str]],
    records: list[dict[str, Any]],
) -> Change:
    """The audited change for one item. Session rows and their import records go to ``docs`` and ``records``,
    written for the whole batch at once before the changes run; a promotion's row is inserted by its change,
    which records the new id."""
    now = store.now().isoformat()
    if isinstance(item, SessionItem):
        doc = MemoryDoc(
            frontmatter=Frontmatter(
                title=item.title,
                slug=item.slug,
                type=MemoryType.SESSION,
                scope_hash=item.scope_hash,
                tags=item.tags,
                source=item.source,
                created_at=item.created_at,
            ),
            body=item.body,
        )
        write = store.memory_write(doc)
        docs.append((doc, write.relpath))
        records.append(_record(plan.system, item.key, "session", str(item.origin), now, memory_slug=item.slug))
        return Change("import_item", item.slug, item.scope_hash, _details(plan, item, "session"), writes=[write])
    if isinstance(item, PromotionItem):
        session = plan.slugs[item.session_key]
        proposal = Proposal(
            session,
            item.type,
            item.title,
            item.body,
            item.triggers,
            item.dura,
            item.reasoning,
            item.scope_hash,
            _approved_slugs(item.supersedes_keys),
        )

        def promotion_row() -> None:
            promotion_id = Promotion.insert(**promotion_values(proposal, now)).execute()
            Imported.insert(
                _record(plan.system, item.key, "promotion", str(item.origin), now, promotion_id=promotion_id)
            ).on_conflict_replace().execute()

        return Change(
            "import_item",
            session,
            item.scope_hash,
            {**_details(plan, item, "promotion"), "title": item.title},
            index_update=promotion_row,
        )
    newer, older = plan.slugs[item.newer_key], plan.slugs[item.older_key]

    def supersede_row() -> None:
        SupersedesChain.insert(
            newer_memory_id=newer,
            older_memory_id=older,
            confidence=0.5,
            decided_at=now,
            decided_by="digest",
            reason=item.reason,
        ).on_conflict_ignore().execute()
        Imported.insert(
            _record(plan.system, item.key, "supersede", str(item.origin), now, memory_slug=newer)
        ).on_conflict_replace().execute()

    return Change(
        "import_item",
        newer,
        None,
        {"system": plan.system, "kind": "supersede", "older": older, "origin": str(item.origin)},
        index_update=supersede_row,
    )


def _details(plan: Preview, item: SessionItem | PromotionItem, kind: str) -> dict[str, Any]:
    return {"system": plan.system, "kind": kind, "key": item.key, "origin": str(item.origin)}


def _record(
    system: str,
    key: str,
    kind: str,
    origin: str,
    now: str,
    *,
    memory_slug: str | None = None,
    promotion_id: int | None = None,
) -> dict[str, Any]:
    return {
        "source_key": key,
        "system": system,
        "kind": kind,
        "origin": origin,
        "imported_at": now,
        "memory_slug": memory_slug,
        "promotion_id": promotion_id,
    }


def _approved_slugs(keys: tuple[str, ...]) -> tuple[str, ...]:
    """The memories that earlier imported items became once a person approved them."""
    if not keys:
        return ()
    ids = [pid for (pid,) in tuples(Imported.select(Imported.promotion_id).where(Imported.source_key.in_(keys)))]
    approved = Promotion.select().where(Promotion.id.in_(ids) & (Promotion.status == PromotionStatus.APPROVED.value))
    return tuple(promoted_slug(p) for p in approved)
