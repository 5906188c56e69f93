"""``engram check``: drift between the Markdown files (the truth) and index.db, with counts and examples.

Reading is all it does. Each finding says whether ``engram repair`` can fix it without losing anything.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from sys import intern
from typing import Any, NamedTuple, TypeVar

from peewee import Expression

from engram.store import coexist
from engram.store.audit.verify import events
from engram.store.conflicts import conflicts
from engram.store.domain import DecayState, PromotionStatus
from engram.store.drift import seen
from engram.store.drift.examine import Bad, Facts, Failed, Outcome, checked_facts, examined, facts
from engram.store.drift.scan import FileEntry, appeared_since, half_scrubbed, read_ahead, walk
from engram.store.errors import BadMemoryFile, DecryptionFailed, KeyUnavailable, StoreError, UnsafePath
from engram.store.frontmatter import MemoryDoc, parse
from engram.store.models import Binding, Memory, Promotion, PromotionNote, QuarantinedMemory, Rekey, tuples
from engram.store.promotions import slug_promoted_from
from engram.store.search import fulltext
from engram.store.search.fulltext import Verdict
from engram.store.sensitive import binding, reasons, registration
from engram.store.service import Store, chunked
from engram.store.supersedes import listed_links
from engram.store.write import retire

EXAMPLES = 5
A = TypeVar("A")
B = TypeVar("B")

# kind -> (what it means, can repair fix it)
KINDS: dict[str, tuple[str, bool]] = {
    "bad_file": ("memory file that cannot be parsed", False),
    "locked_file": ("encrypted file locked: no key for its scope", False),
    "wrong_key": ("sensitive scope whose key opens none of its files: wrong passphrase?", False),
    "undecryptable_file": ("encrypted file that does not decrypt with its scope's key", False),
    "old_key_file": (
        "encrypted file saved after its scope's rekey that the new key does not open: memoryd, still running with "
        "the key it started with, wrote it",
        False,
    ),
    "plaintext_in_sensitive_scope": ("plaintext memory file inside a sensitive scope", True),
    "change_unfinished": (
        "file a change retires (a move's old location, plaintext just encrypted) that a crash "
        "left behind: repair finishes the change",
        True,
    ),
    "scrub_unfinished": (
        "plaintext file an interrupted encryption was overwriting with zeros, beside its "
        "encrypted copy: repair finishes it once the copy decrypts",
        True,
    ),
    "file_without_row": ("memory file with no index row", True),
    "enc_without_row": ("encrypted memory file with no index row", True),
    "row_without_file": ("index row whose file is missing", True),
    "unsafe_body_path": ("index row whose body_path escapes the data root", True),
    "stale_row": ("index row that disagrees with its file", True),
    "decay_index_only": (
        "index-only decay from memoryd's sweep (not drift): repair writes it into the frontmatter so "
        "memoryd's rebuild-index keeps it",
        True,
    ),
    "approved_without_memory": ("approved promotion whose memory file was never written", True),
    "pending_already_written": ("pending promotion whose memory file exists (interrupted approval)", True),
    "orphaned_promotion": ("promotion whose source session has no index row", False),
    "temp_file": ("temp file left by an interrupted write", True),
    "audit_pending": ("audit event committed but not yet appended to the log", True),
    "binding_mismatch": ("encrypted file swapped with another or rolled back to an older version", False),
    "rekey_interrupted": ("rekey under way: files under two keys; run `engram scope rekey` again", False),
    "sensitive_unregistered": (
        "sensitive scope (known to engram, or holding encrypted files) missing from "
        "index.db's sensitive_scopes: memoryd would save plaintext there",
        True,
    ),
    "promotion_lost": ("promotion memoryd's rebuild-index removed from index.db (engram kept a copy)", True),
    "decision_lost": (
        "promotion engram decided that index.db no longer holds and engram kept no copy of (a sensitive scope's, "
        "with no key at hand to seal it): named from the audit log, to decide again if memoryd proposes it again",
        False,
    ),
    "decision_overwritten": (
        "promotion engram decided that another writer decided otherwise afterwards (memoryd "
        "approves and rejects without checking status): decide again",
        False,
    ),
    "supersedes_removed": (
        "supersedes link engram confirmed that the newer memory's frontmatter no longer lists "
        "(another writer re-saved it): confirm it again or undo it",
        False,
    ),
    "secret_in_plain_memory": (
        "memory of a scope that is not sensitive whose text looks like it holds a credential or personal data "
        "(not drift: edit it, or mark its scope sensitive)",
        False,
    ),
    "sync_conflict": (
        "local version a sync set aside beside the one that won (not drift: `engram conflicts` shows both, and "
        "keeps one)",
        False,
    ),
    "in_quarantine": (
        "memory or pending promotion engram holds in quarantine, out of memoryd's reach (not drift: engram "
        "release SLUG, or decide the promotion)",
        False,
    ),
    "quarantine_lifted": (
        "memory in engram's quarantine that is no longer soft-forgotten (edited or revived outside engram): "
        "memoryd injects it again; engram quarantined lists them, engram release or a new quarantine settles it",
        False,
    ),
    "index_rebuilt": ("index.db was rebuilt or replaced since engram last wrote (memoryd's rebuild-index?)", True),
    "search_index_damaged": ("engram's search index (a cache) is damaged: repair builds it again", True),
    "search_index_sensitive": (
        "engram's search index holds text of a sensitive scope (marked while engram was not running?): "
        "repair overwrites it with zeros and builds it again",
        True,
    ),
}
# reported and counted, but the normal work of memoryd or of a missing key: they do not make ``check`` fail
NOT_DRIFT = frozenset({"locked_file", "decay_index_only", "secret_in_plain_memory", "in_quarantine", "sync_conflict"})
# a person's work is named in full, in the text and in --json, never as a few examples: what repair cannot fix
# (but a missing key, which is one finding a file), and the decisions a rebuild took away
LISTED_IN_FULL = frozenset(
    {k for k, (_, fixable) in KINDS.items() if not fixable} - {"locked_file"} | {"promotion_lost"}
)


@dataclass
class Finding:
    kind: str
    path: str | None
    detail: str
    data: dict[str, Any] = field(default_factory=dict)
    seen: bool = False  # a person has seen it as it is (see engram.store.drift.seen): listed, not counted as drift

    @property
    def fixable(self) -> bool:
        return KINDS[self.kind][1]

    @property
    def ident(self) -> str:
        return seen.finding_id(self.kind, self.path, self.detail, self.data)

    @property
    def fingerprint(self) -> str:
        return seen.fingerprint(self.kind, self.ident, self.detail)


@dataclass
class Report:
    """All findings, plus what was looked at (so "nothing found" can be told from "nothing read")."""

    files: int = 0
    rows: int = 0
    findings: list[Finding] = field(default_factory=list)
    # encrypted files to bind, by scope: written by memoryd, or edited by it since engram bound them (its
    # mem_update: a newer version of the same memory), which is memoryd's normal work and no drift
    unbound: dict[str, list[str]] = field(default_factory=dict)
    search: Verdict | None = None  # engram's search index, when there is one: how many memories, how many behind

    def add(self, kind: str, path: str | None, detail: str, **data: Any) -> None:
        self.findings.append(Finding(kind, path, detail, data))

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    @property
    def drift(self) -> bool:
        """True when anything was found that is neither locked nor memoryd's normal work (:data:`NOT_DRIFT`), nor
        seen by a person as it is now."""
        return any(f.kind not in NOT_DRIFT and not f.seen for f in self.findings)

    def selected(self, selector: str) -> list[Finding]:
        """The findings ``KIND`` or ``KIND:ID`` names, not yet seen as they are (see :mod:`.seen`)."""
        kind, ident = seen.parse_selector(selector, KINDS)
        return [f for f in self.of(kind) if not f.seen and (ident is None or f.ident == ident)]

    def mark_seen(self, marks: dict[tuple[str, str], set[str]]) -> None:
        for f in self.findings:
            f.seen = f.fingerprint in marks.get((f.kind, f.ident), set())

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.kind] = out.get(f.kind, 0) + 1
        return out

    def to_json(self, every: bool = False) -> dict[str, Any]:
        """``every``: each kind's every finding under ``items``, not only those of :data:`LISTED_IN_FULL`."""
        return {
            "files": self.files,
            "rows": self.rows,
            "drift": self.drift,
            "counts": self.counts(),
            "unbound": {scope: len(paths) for scope, paths in self.unbound.items()},
            "search_index": None if self.search is None else vars(self.search),
            "findings": {
                kind: {
                    "meaning": KINDS[kind][0],
                    "fixable": KINDS[kind][1],
                    "drift": kind not in NOT_DRIFT,
                    "count": len(items),
                    "seen": sum(f.seen for f in items),
                    "examples": [{"path": f.path, "detail": f.detail} for f in items[:EXAMPLES]],
                    **(
                        {
                            "items": [
                                {"id": f.ident, "path": f.path, "detail": f.detail, "seen": f.seen, **f.data}
                                for f in items
                            ]
                        }
                        if every or kind in LISTED_IN_FULL
                        else {}
                    ),
                }
                for kind in KINDS
                if (items := self.of(kind))
            },
        }


def check(store: Store, progress: Callable[[int, int], None] | None = None) -> Report:
    """Compare every file with the index; ``progress(done, total)`` is called as files are read."""
    with ThreadPoolExecutor(1) as beside:  # engram's search index is checked by SQLite while the files are read
        search = beside.submit(fulltext.verifier(store))
        with store.index.read_ahead():  # its rows are looked up a few files at a time
            report = _check(store, progress)
        _check_search_index(search.result(), report)
    return report


def _check(store: Store, progress: Callable[[int, int], None] | None) -> Report:
    report = Report()
    report.rows = int(store.index.db.execute_sql("SELECT count(*) FROM memories").fetchone()[0])
    entries = list(walk(store.layout))
    files = [e for e in entries if isinstance(e, FileEntry)]
    report.files = len(files)
    for temp in (e for e in entries if isinstance(e, str)):
        report.add("temp_file", temp, "left by an interrupted write")
    for found in conflicts(store):
        report.add("sync_conflict", found.aside, f"{found.slug}, set aside by {found.source} (id {found.id})")
    sensitive = store.sensitive_scopes()
    queued = store.queued_events()
    present = _leftovers(store, files, queued, report)  # not memories of their own: nothing else is said of them
    files = [e for e in files if e.relpath not in present]
    for entry in files:
        if entry.scope_hash in sensitive and not entry.encrypted:
            report.add(
                "plaintext_in_sensitive_scope",
                entry.relpath,
                f"scope {entry.scope_hash} is sensitive",
                scope_hash=entry.scope_hash,
            )
    _check_files(store, files, sensitive, present, report, progress)
    for row in _rows(store.index.db.execute_sql(*Memory.select(*_ROW_COLUMNS).sql())):
        try:
            store.safe_relpath(row.body_path)
        except UnsafePath as exc:
            report.add("unsafe_body_path", row.body_path, str(exc), slug=row.slug)
            continue
        # The rows are read after the walk: a row whose file memoryd saved since has that file now.
        if row.body_path in present or appeared_since(store.layout, row.body_path):
            continue
        if not _moved_meanwhile(store, row, present):
            report.add("row_without_file", row.body_path, f"slug {row.slug}", slug=row.slug)
    _wrong_keys(files, report)
    _check_promotions(store, report)
    _check_quarantine(store, report)
    for rekey in Rekey.select() if store.index.has(Rekey) else []:
        report.add(
            "rekey_interrupted",
            f"scopes/{rekey.scope_hash}",
            f"started {rekey.started_at} (to {rekey.new_source}); run it again with both keys",
            scope_hash=rekey.scope_hash,
        )
    decided = _engram_decisions(store)
    _old_key_files(store, decided.rekeys, report)
    lost = _check_rebuild(store, files, decided, report)
    _check_engram_decisions(store, decided, lost, report)
    for op_id, _ in queued:
        report.add("audit_pending", None, f"event {op_id}", op_id=op_id)
    report.mark_seen(decided.seen)
    return report


def _check_quarantine(store: Store, report: Report) -> None:
    """What engram holds in quarantine (counted, a person's to settle), and held memories memoryd would inject
    again because something lifted their soft-forgotten state."""
    for (pid,) in tuples(Promotion.select(Promotion.id).where(Promotion.status == PromotionStatus.QUARANTINED.value)):
        report.add("in_quarantine", None, f"promotion #{pid}", promotion_id=pid)
    if not store.index.has(QuarantinedMemory):
        return
    for held in QuarantinedMemory.select():
        row = Memory.get_or_none(Memory.slug == held.slug)
        if row is None:
            continue  # deleted since: nothing left to hold
        if row.decay_state != DecayState.SOFT_FORGOTTEN.value:
            report.add("quarantine_lifted", row.body_path, f"{held.slug} is {row.decay_state}", slug=held.slug)
        else:
            report.add("in_quarantine", row.body_path, f"memory {held.slug}", slug=held.slug)


def _check_files(
    store: Store,
    files: list[FileEntry],
    sensitive: set[str],
    present: set[str],
    report: Report,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Every file against its row. Files of plain scopes are examined by worker processes
    (:func:`examined`) while this process decrypts and reads the others, taken in step with them so that
    neither waits on the other for long; the findings are then put back in the order of the walk, as if each
    file had been read in turn. The rows are looked up :data:`_LOOKUP` files at a time, by path: a million of
    them held at once took 670 MB."""
    bound = binding.bindings(store)
    plain = [e for e in files if not e.encrypted and e.scope_hash not in sensitive]
    kept = [e for e in files if e.encrypted or e.scope_hash in sensitive]  # their text stays in this process
    first = len(report.findings)
    with (
        closing(examined(store.layout, plain, checked_facts)) as examining,
        closing(read_ahead(store.layout, kept)) as reading,
    ):
        done = 0
        for part in chunked(_in_step(examining, len(plain), reading, len(kept)), _LOOKUP):
            rows = _rows_at(store, [entry.relpath for entry, _ in part])
            for entry, outcome in part:
                present.add(entry.relpath)
                row = rows.get(entry.relpath) or _row_now(Memory.body_path == entry.relpath)
                if callable(outcome):  # the bytes of a kept file, read ahead by a thread
                    _check_kept_file(store, entry, outcome, row, bound, report)
                else:
                    _check_plain_file(entry, outcome, row, report)
                done += 1
                if progress is not None:
                    progress(done, len(files))
    walked = {entry.relpath: at for at, entry in enumerate(files)}
    report.findings[first:] = sorted(report.findings[first:], key=lambda f: walked[f.path or ""])


def _in_step(first: Iterator[A], firsts: int, second: Iterator[B], seconds: int) -> Iterator[A | B]:
    """The items of both iterators (``firsts`` and ``seconds`` of them), the second's taken in proportion to the
    first's: after ``k`` of the first's, ``k * seconds / firsts`` of the second's."""
    taken = 0
    for at, item in enumerate(first, 1):
        yield item
        while taken * firsts < at * seconds:
            yield next(second)
            taken += 1
    yield from second


class Row(NamedTuple):
    """The columns of an index row that ``check`` compares with its file (a model object per row was a tenth
    of a check's time)."""

    slug: str
    type: str
    scope_hash: str
    title: str
    source: str
    created_at: str
    ttl_days: int | None
    fingerprint: str
    scope_sensitive: int
    decay_state: str
    body_path: str


_ROW_COLUMNS = [getattr(Memory, name) for name in Row._fields]


def _rows(query: Iterable[Any]) -> Iterator[Row]:
    """Rows with one copy of each value of the columns that hold few (type, scope, source, decay state): a
    million rows held 240 MB of copies. ``query`` may be SQLite's own cursor: peewee's conversion of every value
    cost more than the check's reading (the values are SQLite's text and integers either way)."""
    for slug, kind, scope, title, source, created, ttl, fingerprint, sensitive, decay, path in query:
        yield Row(
            slug,
            intern(kind),
            intern(scope),
            title,
            intern(source),
            created,
            ttl,
            fingerprint,
            sensitive,
            intern(decay),
            path,
        )


_LOOKUP = 500  # files whose rows are looked up together


def _rows_at(store: Store, paths: list[str]) -> dict[str, Row]:
    """The index rows at ``paths``, by path (the index's own UNIQUE index on ``body_path`` finds each)."""
    query = f"SELECT {', '.join(Row._fields)} FROM memories WHERE body_path IN ({{}})"
    return {row.body_path: row for row in _rows(store.index.lookup(query, paths))}


def _row_now(where: Expression) -> Row | None:
    """An index row as it is now, for a file whose row its batch's lookup did not find, or a row whose file the
    walk did not: memoryd may have moved the memory in between (its sweep moves files to ``forgotten/`` and then
    updates the row)."""
    return next(_rows(Memory.select(*_ROW_COLUMNS).where(where).tuples()), None)


def _moved_meanwhile(store: Store, row: Row, present: set[str]) -> bool:
    """A row whose file the walk did not find, because the file has moved since and the row with it."""
    now = _row_now(Memory.slug == row.slug)
    if now is None or now.body_path == row.body_path:
        return False
    try:
        return now.body_path in present or os.path.lexists(store.layout.inside(now.body_path))
    except UnsafePath:
        return False


def _check_search_index(verdict: Verdict, report: Report) -> None:
    """engram's search index is a cache: being behind the files is no drift (the next sync takes them in),
    but a damaged file, or one holding a sensitive scope's text, is."""
    if not verdict.exists:
        return
    report.search = verdict
    if verdict.damaged:
        report.add("search_index_damaged", verdict.path, verdict.damaged)
    elif verdict.sensitive:
        report.add("search_index_sensitive", verdict.path, f"{verdict.sensitive} memories of sensitive scopes")


@dataclass
class EngramDecisions:
    """What engram decided, by its own audit lines (one pass over the log)."""

    promotions: dict[int, tuple[str, int, str]] = field(default_factory=dict)  # id -> (status, line, ts) standing
    links: dict[tuple[str, str], int] = field(default_factory=dict)  # (newer, older) -> line of the confirmation
    seen: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (kind, id) -> fingerprints seen
    rekeys: dict[str, tuple[str, str]] = field(default_factory=dict)  # scope -> (when its last rekey started, source)


def _engram_decisions(store: Store) -> EngramDecisions:
    decided = EngramDecisions()
    for event in events(store.layout.audit_path):
        if "this_hash" not in event:
            continue
        kind, target = event.get("event_type"), str(event.get("target_id"))
        if kind == seen.SEEN:
            for found, ident, print_ in seen.seen_in(_details(event)):
                decided.seen.setdefault((found, ident), set()).add(print_)
        elif kind == "rekey_started":
            details = _details(event)
            for scope in details.get("scopes") or []:
                decided.rekeys[str(scope)] = (str(event.get("ts", "")), str(details.get("new_source", "")))
        elif kind in DECISIONS or kind == "undo_applied":
            pid = _promotion_of(kind, target, _details(event))
            if pid is not None:
                decided.promotions.pop(pid, None)
                if kind in DECISIONS:
                    decided.promotions[pid] = (DECISIONS[kind], event["line"], str(event.get("ts", "")))
        elif kind in ("supersede_confirmed", "supersede_rejected", "supersede_undone"):
            older = _details(event).get("older")
            if isinstance(older, str):
                decided.links.pop((target, older), None)
                if kind == "supersede_confirmed":
                    decided.links[(target, older)] = event["line"]
    return decided


def _check_engram_decisions(store: Store, decided: EngramDecisions, lost: set[int], report: Report) -> None:
    """What engram decided that the root contradicts now: a promotion whose status is no longer the one engram's
    last decision gave it (memoryd approves and rejects without looking at the status), one index.db no longer
    holds at all and that no copy of engram's can put back (``lost``: those a copy can), and a supersedes link
    engram confirmed (and never took back) that the newer memory's frontmatter no longer lists."""
    ids = [pid for pid in decided.promotions if pid not in lost]
    found: set[int] = set()
    for batch in range(0, len(ids), 500):
        for row in Promotion.select(Promotion.id, Promotion.status).where(Promotion.id.in_(ids[batch : batch + 500])):
            found.add(row.id)
            status, line, _ = decided.promotions[row.id]
            if row.status != status:
                report.add(
                    "decision_overwritten",
                    None,
                    f"#{row.id}: {status} by engram (audit line {line}), {row.status} now",
                    promotion_id=row.id,
                    engram=status,
                    now=row.status,
                )
    for pid in (pid for pid in ids if pid not in found):
        status, line, ts = decided.promotions[pid]
        report.add(
            "decision_lost",
            None,
            f"#{pid}: {status} by engram at {ts} (audit line {line}); index.db no longer holds it",
            promotion_id=pid,
            engram=status,
            decided_at=ts,
        )
    _check_confirmed_links(store, decided.links, report)


# engram's decision events and the status each leaves the promotion in
DECISIONS = {"promotion_approved": "approved", "promotion_rejected": "rejected", "memories_merged": "merged"}
_PROMOTED = re.compile(r"^promoted-(\d+)-")


def _promotion_of(kind: str, target: str, details: dict[str, Any]) -> int | None:
    """The promotion an engram decision (or its undo) is about: the target of a rejection, the details of an
    approval or merge, the memory's name (``promoted-<id>-…``) of an undone approval."""
    if isinstance(details.get("promotion_id"), int):
        return int(details["promotion_id"])
    if target.isdigit():
        return int(target)
    found = _PROMOTED.match(target)
    return int(found.group(1)) if found else None


def _check_confirmed_links(store: Store, confirmed: dict[tuple[str, str], int], report: Report) -> None:
    newer = sorted({n for n, _ in confirmed if Memory.get_or_none(Memory.slug == n) is not None})
    if not newer:
        return
    listed = listed_links(store, slugs=newer)  # a locked scope's files are not read: nothing said about them
    readable = {
        n
        for n in newer
        if store.keys.can_open(store.memory(n).scope_hash) or not store.memory(n).body_path.endswith(".md.enc")
    }
    for (new, old), line in sorted(confirmed.items()):
        if new in readable and (new, old) not in listed.pairs:
            report.add(
                "supersedes_removed",
                store.memory(new).body_path,
                f"{new} → {old}: confirmed by engram (audit line {line}), no longer in the frontmatter",
                newer=new,
                older=old,
            )


def _details(event: dict[str, Any]) -> dict[str, Any]:
    """An event's details: a JSON string on engram's lines (as memoryd writes them), a dict when parsed."""
    details = event.get("details")
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            return {}
    return details if isinstance(details, dict) else {}


def _check_rebuild(store: Store, files: list[FileEntry], decided: EngramDecisions, report: Report) -> set[int]:
    """What memoryd's rebuild-index took: registrations, and every promotion a copy of engram's can put back,
    each named with what was decided and by whom. Returns the ids of those promotions."""
    for scope in registration.unregistered_scopes(store, files):
        report.add(
            "sensitive_unregistered",
            f"scopes/{scope.scope_hash}",
            scope.why,
            scope_hash=scope.scope_hash,
            scope_root=scope.scope_root,
        )
    named: set[int] = set()
    for row in coexist.lost_promotions(store):
        named.add(row["id"])
        what = _decided(row["id"], row["status"], row["decided_at"], decided)
        report.add(
            "promotion_lost",
            None,
            f"#{row['id']} ({row['proposed_title']}): {what}",
            promotion_id=row["id"],
            status=row["status"],
            decided_at=row["decided_at"],
        )
    for sealed in coexist.lost_sealed(store)[1]:
        named.add(sealed.id)
        what = _decided(sealed.id, sealed.status, sealed.decided_at, decided)
        report.add(
            "promotion_lost",
            None,
            f"#{sealed.id} (sealed: scope {sealed.scope_hash} is sensitive; unlock it to put it back): {what}",
            promotion_id=sealed.id,
            status=sealed.status,
            decided_at=sealed.decided_at,
        )
    if store.index.rebuilt:
        report.add(
            "index_rebuilt",
            "index.db",
            "engram's identity is missing from it: what memoryd's rebuild "
            "removed is listed above, and `engram repair` restores it",
        )
    return named


def _decided(pid: int, status: str, decided_at: str | None, decided: EngramDecisions) -> str:
    """What was decided about a promotion, and by whom: engram (its audit line), memoryd, or nobody yet."""
    by_engram = decided.promotions.get(pid)
    if by_engram is not None and by_engram[0] == status:
        return f"{status} by engram at {decided_at or by_engram[2]} (audit line {by_engram[1]})"
    note = PromotionNote.get_or_none(PromotionNote.promotion_id == pid) if status == "pending" else None
    if note is not None and note.deferred_at:
        reason = f": {note.defer_reason}" if note.defer_reason and not reasons.is_sealed(note.defer_reason) else ""
        return f"deferred by engram at {note.deferred_at}{reason}"
    if status == "pending":
        return "pending"
    if status == "quarantined":
        return "held in engram's quarantine (undecided)"
    return f"{status}{f' at {decided_at}' if decided_at else ''} (not by engram: memoryd's decision)"


def _check_plain_file(entry: FileEntry, outcome: Outcome[Facts], row: Row | None, report: Report) -> None:
    """A file of a plain scope, as :func:`examined` found it, against its index row."""
    if outcome is None:  # moved since the walk (memoryd's sweep to forgotten/): nothing to say of it
        return
    if isinstance(outcome, Bad):
        report.add("bad_file", entry.relpath, outcome.reason)
        return
    if isinstance(outcome, Failed):
        raise StoreError(outcome.error)
    if outcome.secrets:
        report.add("secret_in_plain_memory", entry.relpath, outcome.secrets, slug=outcome.slug)
    _compare(entry, outcome, row, report)


def _check_kept_file(
    store: Store,
    entry: FileEntry,
    stored: Callable[[], bytes],
    row: Row | None,
    bound: dict[str, Binding],
    report: Report,
) -> None:
    """A file of a sensitive scope (or an encrypted one anywhere), decrypted and read in this process, against its
    index row and, encrypted, its binding."""
    try:
        data, plaintext = store.opened(entry.relpath, stored())
        doc = parse(plaintext, entry.relpath)
    except FileNotFoundError:  # moved since the walk (memoryd's sweep to forgotten/): nothing to say of it
        return
    except BadMemoryFile as exc:
        report.add("bad_file", entry.relpath, exc.reason)
        return
    except KeyUnavailable as exc:
        report.add("locked_file", entry.relpath, str(exc), has_row=row is not None)
        if row is None:
            report.add("enc_without_row", entry.relpath, "needs the scope's key to be indexed", slug=entry.slug)
        return
    except DecryptionFailed as exc:
        report.add("undecryptable_file", entry.relpath, str(exc))
        return
    if entry.encrypted:
        _check_binding(store, entry, data, doc, plaintext, bound, report)
    _compare(entry, facts(doc, scanned=False), row, report)


def _compare(entry: FileEntry, file: Facts, row: Row | None, report: Report) -> None:
    """A file's facts against its index row: a file without one, a row that disagrees, decay only the index has."""
    if row is None:
        owner = _row_now(Memory.slug == file.slug)
        detail = f"slug {file.slug} is taken by {owner.body_path}" if owner else f"slug {file.slug}"
        kind = "enc_without_row" if entry.encrypted else "file_without_row"
        report.add(kind, entry.relpath, detail, slug=file.slug, taken_by=owner.body_path if owner else None)
        return
    index_decay, file_decay = _decay_rank(row.decay_state), DecayState(file.decay_state).rank
    differences = [
        name
        for name, file_value, row_value in (
            ("slug", file.slug, row.slug),
            ("type", file.type, row.type),
            ("scope_hash", file.scope_hash, row.scope_hash),
            ("title", file.title, row.title),
            ("source", file.source, row.source),
            ("created_at", file.created_at, row.created_at),
            ("ttl_days", file.ttl_days, row.ttl_days),
            ("fingerprint", file.fingerprint, row.fingerprint),
            ("scope_sensitive", int(entry.encrypted), row.scope_sensitive),
        )
        if file_value != row_value
    ]
    if index_decay < file_decay:  # no writer leaves the index behind its file; reindexing takes the further state
        differences.append("decay_state")
    if differences:
        report.add("stale_row", entry.relpath, "differs in " + ", ".join(differences), slug=row.slug)
    if index_decay > file_decay:  # memoryd's sweep decays in the index only
        report.add(
            "decay_index_only",
            entry.relpath,
            f"index says {row.decay_state}, frontmatter says {file.decay_state}",
            slug=row.slug,
        )


def _decay_rank(state: str) -> int:
    """An index row's decay state in decay order; a value no writer knows ranks before them all."""
    try:
        return DecayState(state).rank
    except ValueError:
        return -1


def _check_binding(
    store: Store,
    entry: FileEntry,
    data: bytes,
    doc: MemoryDoc,
    plaintext: bytes,
    bound: dict[str, Binding],
    report: Report,
) -> None:
    state = binding.verify(store, entry.relpath, data, doc, plaintext, bound)
    if state.state in (binding.UNBOUND, binding.CHANGED):
        report.unbound.setdefault(entry.scope_hash, []).append(entry.relpath)
    elif state.state in (binding.SWAPPED, binding.ROLLED_BACK) and not _rekeying(store, entry.scope_hash):
        report.add(
            "binding_mismatch",
            entry.relpath,
            f"{state.state.replace('_', ' ')}: {state.detail}",
            scope_hash=entry.scope_hash,
        )


def _leftovers(store: Store, files: list[FileEntry], queued: list[tuple[str, str]], report: Report) -> set[str]:
    """Files a change a crash cut short left behind: the old copies it retires, and plaintext it was zeroing
    beside an encrypted twin the walk found (only those are opened). Returns their paths."""
    retiring = {r.path for r in retire.pending(store.layout, queued)}
    encrypted = {e.relpath for e in files if e.encrypted}
    found = set()
    for entry in files:
        if entry.relpath in retiring:
            report.add(
                "change_unfinished",
                entry.relpath,
                "the old copy of a change a crash cut short (moved, encrypted or replaced): repair retires it",
                scope_hash=entry.scope_hash,
            )
        elif entry.relpath + ".enc" in encrypted and half_scrubbed(store.layout, entry):
            report.add(
                "scrub_unfinished",
                entry.relpath,
                f"its encrypted copy is {entry.relpath}.enc",
                scope_hash=entry.scope_hash,
                slug=entry.slug,
            )
        else:
            continue
        found.add(entry.relpath)
    return found


def _rekeying(store: Store, scope_hash: str) -> bool:
    """A rekey under way leaves files whose binding is still the old key's (the rerun binds them again):
    ``rekey_interrupted`` says so, not a swap or rollback alarm per file."""
    return store.index.has(Rekey) and Rekey.get_or_none(Rekey.scope_hash == scope_hash) is not None


def _wrong_keys(files: list[FileEntry], report: Report) -> None:
    """A scope none of whose files decrypt has the wrong key, not hundreds of damaged files: say so once."""
    failed = report.of("undecryptable_file")
    unread = {f.path for f in failed} | {f.path for f in report.of("locked_file")}
    opened = {e.scope_hash for e in files if e.encrypted and e.relpath not in unread}
    by_scope: dict[str, list[Finding]] = {}
    for finding in failed:
        by_scope.setdefault((finding.path or "").split("/")[1], []).append(finding)
    wrong = {scope: found for scope, found in by_scope.items() if scope not in opened}
    dropped = {id(f) for found in wrong.values() for f in found}
    report.findings = [f for f in report.findings if id(f) not in dropped]
    for scope, found in wrong.items():
        report.add(
            "wrong_key", f"scopes/{scope}", f"the key does not open any of its {len(found)} files", scope_hash=scope
        )


def _old_key_files(store: Store, rekeys: dict[str, tuple[str, str]], report: Report) -> None:
    """An encrypted file that does not open, in a scope engram rekeyed, saved since that rekey started: memoryd keeps
    the key it started with, so this is memoryd's save under the old key, not damage. Said as such, with the one
    command that fixes it (the rekey's own last step re-encrypts what memoryd saved while it ran)."""
    for finding in report.of("undecryptable_file"):
        scope = (finding.path or "").split("/")[1] if finding.path else ""
        if scope not in rekeys:
            continue
        started, source = rekeys[scope]
        try:
            saved = datetime.fromtimestamp(store.layout.resolve(finding.path or "").stat().st_mtime, UTC)
            since = datetime.fromisoformat(started.replace("Z", "+00:00"))
        except (OSError, ValueError, StoreError):
            continue
        if saved < since:
            continue
        fix = (
            "memoryd still runs with the old passphrase. Restart memoryd with the new one, then run "
            "`MEMORYD_MASTER_PASSPHRASE=<old passphrase> ENGRAM_NEW_PASSPHRASE=<new passphrase> engram scope rekey` "
            "to re-encrypt it"
            if source == "passphrase"
            else "memoryd still holds the scope's old key: restart memoryd; the file opens only with that old key"
        )
        finding.kind, finding.detail = (
            "old_key_file",
            f"saved {saved:%Y-%m-%d %H:%M}, after the rekey of {started}: {fix}",
        )
        finding.data["scope_hash"] = scope


def _check_promotions(store: Store, report: Report) -> None:
    """Promotions whose source session has no row, approved ones whose memory has none, pending ones whose memory
    has one; the rows named are looked up a few hundred at a time."""
    columns = (Promotion.id, Promotion.status, Promotion.source_session_slug, Promotion.proposed_title)
    promotions: list[tuple[int, str, str, str]] = store.index.db.execute_sql(
        *Promotion.select(*columns).sql()
    ).fetchall()
    named = sorted({source for _, _, source, _ in promotions} | {slug_promoted_from(p[0], p[2]) for p in promotions})
    paths: dict[str, str] = dict(store.index.lookup("SELECT slug, body_path FROM memories WHERE slug IN ({})", named))
    for pid, status, source, title in promotions:
        slug = slug_promoted_from(pid, source)
        if source not in paths:
            report.add("orphaned_promotion", None, f"#{pid} from {source}", promotion_id=pid)
        if status == "approved" and slug not in paths:
            report.add("approved_without_memory", None, f"#{pid} ({title})", promotion_id=pid)
        elif status in ("pending", "quarantined") and slug in paths:
            report.add("pending_already_written", paths[slug], f"#{pid}", promotion_id=pid)
