"""``engram repair``: fix what ``engram check`` finds, where that loses nothing.

Each fix is its own mutation through the write path (one audit event ``repair_applied`` each), so a repair
interrupted half way is finished by running it again. What cannot be fixed without a person's decision or a
key is left and reported. engram's search index is a cache outside the data root: building it again is no
mutation of the root, and no event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engram.store import coexist
from engram.store.domain import OPEN_STATUSES
from engram.store.drift.adopt import adopt_file
from engram.store.drift.check import Finding, Report, check
from engram.store.errors import DatabaseLocked, ReadOnlyStore, StoreError
from engram.store.frontmatter import MemoryDoc
from engram.store.models import Memory, Promotion, Trigger
from engram.store.promotions import write_promoted
from engram.store.search import fulltext
from engram.store.sensitive import binding, registration
from engram.store.sensitive.convert import mark_sensitive
from engram.store.service import Store
from engram.store.write.atomic import remove_durably
from engram.store.write.change import Change

MAX_PASSES = 3  # a fix can reveal the next (a file indexed, then its interrupted approval completed)


@dataclass
class RepairResult:
    fixed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    remaining: Report | None = None


def repair(store: Store, progress: Callable[[int, int], None] | None = None) -> RepairResult:
    """Fix every fixable finding, re-checking until nothing fixable is left (or nothing more changes). A root
    opened read-only is refused whole, before anything is looked at: every fix would fail on its own."""
    if store.read_only:
        raise ReadOnlyStore(f"nothing repaired: {store.read_only_reason}")
    result = RepairResult()
    for _ in range(MAX_PASSES):
        report = check(store, progress)
        # A swapped or rolled-back file is a person's decision: no other fix may make it look right again.
        flagged = {f.path for f in report.of("binding_mismatch")}
        fixable = [f for f in report.findings if f.fixable and f.path not in flagged]
        if not fixable:
            result.remaining = report
            return _bind_unbound(store, result)
        before = len(result.fixed)
        result.failed = []  # only the last pass's failures stand: an earlier fix may have cleared one
        for finding in sorted(fixable, key=lambda f: ORDER.index(f.kind)):
            try:
                message = FIXES[finding.kind](store, finding)
            except DatabaseLocked as exc:  # every other fix would wait as long again: say so once, now
                done = f" ({len(result.fixed)} fixes made before it)" if result.fixed else ""
                raise DatabaseLocked(f"repair stopped{done}: {exc}; run it again once that process is done") from None
            except StoreError as exc:
                result.failed.append(f"{finding.kind} {finding.path or ''}: {exc}")
                continue
            if message:
                result.fixed.append(message)
        if len(result.fixed) == before:
            break
    result.remaining = check(store, progress)
    return _bind_unbound(store, result)


def _bind_unbound(store: Store, result: RepairResult) -> RepairResult:
    """Encrypted files memoryd wrote are bound once they decrypt (one event per scope); not drift, so last."""
    assert result.remaining is not None
    if result.remaining.unbound:
        try:
            n = binding.bind_unbound(store, result.remaining.unbound)
        except StoreError as exc:
            result.failed.append(f"binding: {exc}")
            return result
        if n:
            result.fixed.append(f"bound {n} encrypted files memoryd wrote (the binding manifest)")
            result.remaining.unbound = {}
    return result


def _encrypt_plaintext(store: Store, finding: Finding) -> str | None:
    """Finish what an interrupted mark (or a tool unaware of the scope) left, with mark's own resumable
    procedure; it takes the whole scope at once, so later findings of the same scope are already done."""
    if not store.layout.resolve(finding.path or "").exists():
        return None
    done = mark_sensitive(store, finding.data["scope_hash"])
    return f"encrypted {done.done} plaintext memories in sensitive scope {finding.data['scope_hash']}"


def _finish_scrub(store: Store, finding: Finding) -> str:
    """Zero and unlink what an interrupted encryption was scrubbing, once its encrypted twin is shown to hold the
    memory (it decrypts and parses with the scope's key): then the zeros carry nothing left to keep."""
    rel = finding.path or ""
    twin = store.read_doc(rel + ".enc")  # no key: KeyUnavailable, left for a run with the key
    store.apply(
        Change(
            "repair_applied",
            twin.frontmatter.slug,
            finding.data["scope_hash"],
            {"fix": "finished_scrub", "path": rel, "encrypted": rel + ".enc"},
            scrubs=[rel],
        )
    )
    return f"finished scrubbing {rel} (its encrypted copy decrypts)"


def _remove_temp(store: Store, finding: Finding) -> str:
    path = store.layout.resolve(finding.path or "")
    remove_durably(path)
    return f"removed temp file {finding.path}"


def _flush_audit(store: Store, finding: Finding) -> str | None:
    if store.flush_audit_outbox():
        raise StoreError(store.audit_warning or "audit log not writable")
    return f"appended queued audit event {finding.data['op_id']}"


def _finish_change(store: Store, finding: Finding) -> str | None:
    """Appending the queued events finishes their changes first (see :mod:`engram.store.write.retire`), even when
    the log cannot take the events yet (they stay queued, and ``audit_pending`` says so)."""
    store.flush_audit_outbox()
    if store.layout.resolve(finding.path or "").exists():
        raise StoreError("still there: " + (store.audit_warning or "changed since the change was made"))
    return f"finished an interrupted change: retired {finding.path}"


def _index_file(store: Store, finding: Finding) -> str | None:
    return adopt_file(store, finding.path or "")


def _drop_row(store: Store, finding: Finding) -> str | None:
    """A row whose file is gone (or points outside the root) says nothing the files do not; drop it,
    unless promotions hang off it: deleting would cascade them away."""
    slug = finding.data["slug"]
    if Promotion.select().where(Promotion.source_session_slug == slug).exists():
        raise StoreError(f"kept: promotions still refer to {slug}")

    def index_update() -> None:
        Trigger.delete().where(Trigger.slug == slug).execute()
        Memory.delete().where(Memory.slug == slug).execute()

    store.apply(
        Change(
            "repair_applied", slug, None, {"fix": "dropped_row", "body_path": finding.path}, index_update=index_update
        )
    )
    return f"dropped index row {slug} ({finding.path})"


def _reindex_row(store: Store, finding: Finding) -> str:
    """Files are the truth: refresh the row from its file. A slug changed by hand re-keys the row, unless
    the new slug is taken or promotions still hang off the old one."""
    rel = finding.path or ""
    doc = store.read_doc(rel)
    old_slug, new_slug = finding.data["slug"], doc.frontmatter.slug
    if new_slug != old_slug:
        if Memory.get_or_none(Memory.slug == new_slug) is not None:
            raise StoreError(f"its frontmatter slug {new_slug} is already used by another memory")
        if Promotion.select().where(Promotion.source_session_slug == old_slug).exists():
            raise StoreError(f"its slug changed from {old_slug} but promotions still refer to the old slug")

    def index_update() -> None:
        if new_slug != old_slug:
            Trigger.delete().where(Trigger.slug == old_slug).execute()
            Memory.delete().where(Memory.slug == old_slug).execute()
        store.upsert_memory_row(doc, rel, keep_runtime=new_slug == old_slug)

    store.apply(
        Change(
            "repair_applied",
            new_slug,
            doc.frontmatter.scope_hash,
            {"fix": "reindexed", "path": rel, "why": finding.detail, "old_slug": old_slug},
            index_update=index_update,
        )
    )
    return f"re-indexed {rel} ({finding.detail})"


def _write_decay_through(store: Store, finding: Finding) -> str:
    """memoryd decays in the index only; engram writes the state into the frontmatter too."""
    rel = finding.path or ""
    doc = store.read_doc(rel)
    row = store.memory(finding.data["slug"])
    new_doc = MemoryDoc(frontmatter=doc.frontmatter.replace(decay_state=row.decay_state), body=doc.body)
    write = store.rewrite(rel, new_doc)
    store.apply(
        Change(
            "repair_applied",
            row.slug,
            doc.frontmatter.scope_hash,
            {"fix": "decay_written_through", "path": rel, "decay_state": row.decay_state},
            writes=[write],
            index_update=lambda: store.upsert_memory_row(new_doc, write.relpath, keep_runtime=True),
            removals=[rel],
        )
    )
    return f"wrote decay state {row.decay_state} into {rel}"


def _write_approved(store: Store, finding: Finding) -> str:
    promotion = Promotion.get_by_id(finding.data["promotion_id"])
    slug = write_promoted(store, promotion, "repair_applied").slug
    return f"wrote the memory of approved promotion #{promotion.id} as {slug}"


def _finish_approval(store: Store, finding: Finding) -> str:
    promotion = Promotion.get_by_id(finding.data["promotion_id"])
    if promotion.status not in OPEN_STATUSES:
        return ""
    slug = write_promoted(store, promotion, "promotion_approved").slug
    return f"finished the interrupted approval of promotion #{promotion.id} ({slug})"


def _register_again(store: Store, finding: Finding) -> str:
    return registration.register_again(
        store, registration.Unregistered(finding.data["scope_hash"], finding.data.get("scope_root"), finding.detail)
    )


def _rebuild_search_index(store: Store, finding: Finding) -> str:
    return f"search index built again: {fulltext.rebuild(store).read} memories of plain scopes"


FIXES: dict[str, Callable[[Store, Finding], str | None]] = {
    "sensitive_unregistered": _register_again,  # first: nothing may be written in plaintext into such a scope
    "temp_file": _remove_temp,
    "change_unfinished": _finish_change,  # before indexing: the old copy of a move is not a memory of its own
    "scrub_unfinished": _finish_scrub,
    "audit_pending": _flush_audit,
    "file_without_row": _index_file,
    "enc_without_row": _index_file,
    "plaintext_in_sensitive_scope": _encrypt_plaintext,
    "unsafe_body_path": _drop_row,
    "row_without_file": _drop_row,
    "stale_row": _reindex_row,
    "decay_index_only": _write_decay_through,
    "approved_without_memory": _write_approved,
    "pending_already_written": _finish_approval,
    "promotion_lost": lambda store, _: coexist.restore_promotions(store),  # after enc_without_row: sessions first
    "index_rebuilt": lambda store, _: coexist.claim_index(store),  # last: only once nothing else is missing
    "search_index_damaged": _rebuild_search_index,
    "search_index_sensitive": _rebuild_search_index,
}
ORDER = list(FIXES)
