"""The store service: the one API through which engram reads and changes a data root.

Every mutation is a :class:`Change` handed to :meth:`Store.apply`, which (1) writes the files atomically,
(2) updates the index and queues the audit event in one transaction, (3) removes files the change retires,
and (4) appends the queued event to the audit log. A crash between any two steps leaves a root that opens;
``engram check`` names what is half done and ``engram repair`` (or re-running the action) finishes it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peewee import Database

from engram.store import bound
from engram.store.audit import chain, outbox
from engram.store.audit.checkpoints import default_book, holds_log
from engram.store.domain import FORGOTTEN_DIR, DecayState, MemoryType
from engram.store.drift.scan import holds_encrypted
from engram.store.errors import ENVIRONMENT_ERRORS, NoIndex, NotFound, StoreError, UnsafePath
from engram.store.history.keeper import Keeper
from engram.store.history.repo import is_memory_file
from engram.store.index import Index, as_peewee_errors
from engram.store.lazy import lazy_module
from engram.store.models import AuditOutbox, Memory, OutboxGuard
from engram.store.paths import RootLayout, engram_state_dir, load_memoryd_config, resolve_data_root
from engram.store.sensitive import binding, keyproof
from engram.store.sensitive.crypto import KeyRing, decrypt
from engram.store.write import faults, retire
from engram.store.write.atomic import (
    read_regular,
)
from engram.store.write.change import (
    ROW_COLUMNS,
    Change,
    DataWrite,
    FileWrite,
    IndexEntry,
    index_entry,
)
from engram.store.write.engine import FileEngine, Sealed

if TYPE_CHECKING:
    from engram.store import frontmatter
    from engram.store.frontmatter import MemoryDoc
    from engram.store.settings import Settings
else:
    frontmatter = lazy_module("engram.store.frontmatter")  # PyYAML and pydantic: not for the first frame


def utcnow() -> datetime:
    return datetime.now(UTC)


def memoryd_keys() -> KeyRing:
    """The key ring memoryd's config.toml describes; one that cannot be read locks the sensitive scopes with the
    reason, and the root opens all the same."""
    try:
        config = load_memoryd_config()
    except StoreError as exc:
        return KeyRing.locked_by(f"{exc}: sensitive scopes stay locked until it is fixed")
    return KeyRing.from_config(config)


class Store:
    """An open data root. Create with :meth:`open`; close with :meth:`close` (or use as a context manager)."""

    def __init__(
        self, layout: RootLayout, index: Index, keys: KeyRing, actor: str, settings: Settings | None = None
    ) -> None:
        self.layout = layout
        self.index = index
        self.keys = keys
        self.actor = actor
        self.audit_warning: str | None = None  # set when an event could not be appended yet
        self.notice: str | None = None  # set by close(): see audit_notice
        # what the layers above run before engram's first write once it noticed memoryd's rebuild-index (the
        # command line and the console register the sensitive scopes again: see engram.store.coexist.keep_registered)
        self.after_rebuild: list[Callable[[], object]] = []
        self._after_rebuild_running = False
        self.clock: Callable[[], datetime] = utcnow  # the demo fixes it, so a seed gives the same files
        self.checkpoints = default_book(layout.root, settings)
        self.files = FileEngine(layout, lambda scope: self.keys.key_for(scope), self._bind)
        self._move_checked = False  # see record_move
        self.history = Keeper(layout, engram_state_dir())
        self.keep_history = True  # the demo turns it off: its files are recorded by the first catch-up
        self.history_warning: str | None = None  # set when a change's revision could not be recorded
        self._plain_scopes: set[str] = set()  # scopes with no encrypted file, as found (see _encrypted_on_disk)
        self._closed = False

    def now(self) -> datetime:
        return self.clock()

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str] | None = None,
        *,
        actor: str = "engram-cli",
        create: bool = False,
        keys: KeyRing | None = None,
        create_index: bool = True,
        settings: Settings | None = None,
        stand_in: bool = False,
    ) -> Store:
        """Open the data root (``--root``, ``$MEMORYD_DATA_ROOT`` or memoryd's default). A root with memory files
        and no index.db gets an empty one, unless ``create_index`` is false (a command that only looks):
        then it raises :class:`NoIndex`.

        ``settings``: engram's, when the caller has them already (the console, which uses the defaults when the
        file is broken); else read here, and a broken file stops the command. ``stand_in``: an index.db that
        cannot be opened is replaced by an empty read-only stand-in (see :meth:`Index.stand_in`), for the
        console, which must open and say what is wrong."""
        layout = RootLayout(resolve_data_root(root))
        if layout.root.exists() and not layout.root.is_dir():
            raise StoreError(f"{layout.root} is a file, not a data root (a data root is a directory: use --root DIR)")
        if not create and not layout.root.is_dir():
            raise StoreError(f"{layout.root}: no such data root (use --root, or `engram demo` to make one)")
        if create:
            layout.scopes_dir.mkdir(parents=True, exist_ok=True)
        if not create_index and not layout.index_path.exists():
            raise NoIndex(
                f"{layout.index_path}: missing (memoryd's rebuild-index under way, or deleted): "
                "`engram repair` or `engram rebuild-index` makes it from the files"
            )
        try:
            index = Index.open(layout.index_path, create=create or layout.scopes_dir.is_dir())
        except StoreError as exc:
            if not stand_in:
                raise
            index = Index.stand_in(
                layout.index_path,
                f"{exc}. engram opened the root read-only with nothing indexed: `engram check` says more, and "
                "`engram rebuild-index` makes index.db again from the files",
            )
        try:
            store = cls(layout, index, keys or memoryd_keys(), actor, settings)
        except BaseException:  # a broken config.toml: the command stops, and leaves no root open behind it
            index.close()
            raise
        outbox.restore_cut(store)  # before anything plans a change on what a cut commit left
        binding.restore_cut(store)
        return store

    def close(self) -> None:
        """Once: closing again (a test's own close, then its fixture's) changes nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self.notice = self.audit_notice()  # what the session leaves untold in the log, said as it ends
        except ENVIRONMENT_ERRORS:
            self.notice = self.audit_warning
        self.notice = "; ".join(n for n in (self.notice, self.history_warning) if n) or None
        self.history.close()
        self.index.close()

    def audit_notice(self) -> str | None:
        """Why the last append or checkpoint failed, else how many committed events still wait for the log:
        a decision that is saved but not yet audited is never left unsaid."""
        waiting = len(self.queued_events())
        if self.audit_warning or not waiting:
            return self.audit_warning
        return (
            f"{waiting} audit event{'s' if waiting > 1 else ''} saved but not yet in audit/audit.jsonl; "
            "`engram audit repair` appends them"
        )

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- reading

    @property
    def read_only(self) -> bool:
        return self.index.read_only

    @property
    def read_only_reason(self) -> str | None:
        return self.index.read_only_reason

    def sensitive_scopes(self) -> set[str]:
        return {scope for row in self.index.sensitive_scope_rows() if (scope := row.get("scope_hash"))}

    def read_file(self, relpath: str) -> tuple[bytes, bytes]:
        """A memory file's bytes as stored, and its plaintext (decrypted in memory for ``.md.enc``): one read
        for callers that check the stored bytes too (the binding manifest)."""
        return self.opened(relpath, read_regular(self.layout.inside(relpath)))

    def opened(self, relpath: str, data: bytes) -> tuple[bytes, bytes]:
        """:meth:`read_file` of bytes already read (by :func:`~engram.store.drift.scan.read_ahead`'s threads)."""
        if relpath.endswith(".md.enc"):
            scope = relpath.split("/")[1]
            return data, decrypt(data, self.keys.key_for(scope), scope, relpath)
        return data, data

    def read_bytes(self, relpath: str) -> bytes:
        """A memory file's plaintext bytes (decrypted in memory for ``.md.enc``)."""
        return self.read_file(relpath)[1]

    def read_doc(self, relpath: str) -> MemoryDoc:
        return frontmatter.parse(self.read_bytes(relpath), relpath)

    def memory(self, slug: str) -> Memory:
        row = Memory.get_or_none(Memory.slug == slug)
        if row is None:
            raise NotFound(f"no memory with slug {slug!r}")
        return row

    # ----------------------------------------------------------------- the write path

    def apply(self, change: Change, *, durable: bool = True) -> None:
        """Carry out ``change``: under the index's write lock, files then index rows and the queued event in one
        transaction; then the removals; then the audit append."""
        self.apply_many([change], durable=durable)

    def apply_many(
        self, changes: list[Change], *, durable: bool = True, index_update: Callable[[], None] | None = None
    ) -> None:
        """Carry out several changes as one transaction, each with its own audit event (an import writes
        thousands of items, each audited: one transaction, one flush and one log fsync per batch instead of per
        item). ``durable=False`` skips the per-file fsync and flushes once before the index commits;
        ``index_update`` writes index rows for the whole batch at once, before the changes' own (which may refer
        to them)."""
        if not bound.answers_for(self.index.db):
            raise StoreError(
                f"{self.layout.root}: another data root was opened in this process after this one, and the index "
                "rows would go to its index.db: close it first"
            )
        self.index.writable()
        self.follow_move()
        if self.index.rebuilt and not self._after_rebuild_running:
            self._run_after_rebuild()
        queued: list[tuple[str, Change, dict[str, Any]]] = []  # op id, change, audit event
        for change in changes:
            op_id = uuid.uuid4().hex
            queued.append(
                (
                    op_id,
                    change,
                    {
                        "actor": self.actor,
                        "event_type": change.event_type,
                        "scope_hash": change.scope_hash,
                        "target_id": change.target_id,
                        "details": {**change.details, "op_id": op_id},
                    },
                )
            )
        writes = [w for change in changes for w in change.writes]
        # Before anything moves: every target path is inside the root and every key is at hand, so a
        # change needing a locked scope's key fails whole, not after its first file.
        targets = [(self.files.target(w), w) for w in writes]
        for scope in sorted({w.scope_hash for w in writes if not isinstance(w, DataWrite) and w.encrypted}):
            keyproof.prove(self, scope)  # a typo'd passphrase would encrypt memories nobody can open again
        self._history_before(changes)
        # The index's write lock is taken next, so a locked database fails the change before any file moves.
        faults.reach("planned")  # another writer may change anything up to here: preconditions run below
        with self.index.transaction():
            binding.settle(self)  # a crash's lost bindings back in engram.db, before this change's own
            for change in changes:
                if change.precondition is not None:
                    change.precondition()
            with self.files.written(targets, durable):
                if index_update is not None:
                    index_update()
                for change in changes:
                    if change.index_update is not None:
                        change.index_update()
            stamp = utcnow().isoformat()
            written = {write.relpath for write in writes}
            retiring = {
                op_id: retire.plan(self.layout, change.removals, change.scrubs, written) for op_id, change, _ in queued
            }
            for op_id, change, event in queued:  # details as the index update left them (it may add an id it made);
                # identifiers only, whatever the scope: it may be marked sensitive later
                event["details"] = chain.private_details({**change.details, "op_id": op_id})
            rows = [
                {
                    "op_id": op_id,
                    "created_at": stamp,
                    "event": json.dumps(
                        outbox.carry_rows(retire.carry(event, retiring[op_id]), change.kept_rows), ensure_ascii=False
                    ),
                }
                for op_id, change, event in queued
            ]
            for table in (AuditOutbox, OutboxGuard):  # see OutboxGuard: both, or neither after a crash
                for batch in chunked(rows, _BATCH):
                    table.insert_many(batch).execute()
        faults.reach("index_committed")
        for items in retiring.values():
            retire.finish(self.layout, items)
        self.flush_audit_outbox()
        self._record_history(changes, [event for _, _, event in queued])

    def _history_before(self, changes: list[Change]) -> None:
        """The files the changes replace, recorded first where the history has not seen them as they are (not
        the plaintext a change scrubs: that leaves the history with it)."""
        scrubbed = {p for c in changes for p in c.scrubs}
        paths = [p for p in self._history_paths(changes) if p not in scrubbed]
        if paths:
            with self.history_kept():
                self.history.before_change(paths, changes[0].event_type, self.now())

    def _record_history(self, changes: list[Change], events: list[dict[str, Any]]) -> None:
        """The change's revision, once it is complete."""
        paths = self._history_paths(changes)
        if paths:
            with self.history_kept():
                self.history.record_change(events, paths, [p for c in changes for p in c.scrubs], self.now())

    def _history_paths(self, changes: list[Change]) -> list[str]:
        """The files the changes touch, when they include a memory file and this store keeps history."""
        if not self.keep_history or self.read_only:
            return []
        paths = [p for c in changes for p in (*(w.relpath for w in c.writes), *c.removals, *c.scrubs)]
        return paths if any(is_memory_file(p) for p in paths) else []

    @contextmanager
    def history_kept(self) -> Iterator[None]:
        """A revision that fails leaves the change done: the next catch-up (``engram check``) records its files as
        seen changed. The failure is told, not raised."""
        try:
            yield
        except (StoreError, OSError) as exc:
            self.history_warning = f"history not recorded ({exc}): the next `engram check` records it"

    def follow_move(self) -> None:
        """:meth:`record_move`, once per session."""
        if not self._move_checked:
            self.record_move()

    def record_move(self) -> None:
        """A root moved or copied from where engram checkpointed its log is not tampered with: adopt the
        checkpoint signed for it there (see :meth:`CheckpointBook.adopt`) and record the move as its own event,
        before the first change here. Until that event is in, the adopted checkpoint still names the old place,
        so a crash in between is finished by the next write or verify. A read-only root adopts without
        recording."""
        self._move_checked = True
        try:
            adopted = self.checkpoints.adopt(self.layout.audit_path)
        except (StoreError, OSError) as exc:
            self.audit_warning = f"audit checkpoint not adopted: {exc}"
            return
        if adopted is None or adopted.root == self.checkpoints.root or self.read_only:
            return
        if any('"audit_root_moved"' in event or '"audit_root_copied"' in event for _, event in self.queued_events()):
            return  # recorded, waiting for the log to take appends again
        copied = holds_log(Path(adopted.root), adopted.log_id)
        with self.history_kept():
            self.history.adopt(Path(adopted.root), copied)
        details = {"from": adopted.root, "to": self.checkpoints.root, "lines": adopted.size, "signed": adopted.ts}
        self.apply(Change("audit_root_copied" if copied else "audit_root_moved", None, None, details))

    def _run_after_rebuild(self) -> None:
        """:attr:`after_rebuild`, before this write: their own writes come through here and do not run it again."""
        self._after_rebuild_running = True
        try:
            for step in self.after_rebuild:
                step()
        finally:
            self._after_rebuild_running = False

    def flush_audit_outbox(self) -> int:
        """Append every queued event to the audit log and advance the checkpoint (see
        :func:`engram.store.audit.outbox.flush`); returns how many are still queued."""
        return outbox.flush(self)

    def queued_events(self) -> list[tuple[str, str]]:
        """``(op_id, event)`` of every committed event not yet appended, oldest first."""
        return outbox.queued(self)

    def _bind(self, written: list[Sealed]) -> None:
        """Record the bindings of the encrypted memories written, and forget those of the ones now plaintext (the
        index's part), a statement for each kind whatever their number."""
        memories = [(w, data, plaintext) for w, data, _, plaintext in written if not isinstance(w, DataWrite)]
        binding.record(self, [(w.entry, data, plaintext) for w, data, plaintext in memories if plaintext is not None])
        binding.forget(self, [w.slug for w, _, plaintext in memories if plaintext is None])

    # ----------------------------------------------------------------- index rows

    def upsert_memory_row(self, doc: MemoryDoc, relpath: str, *, keep_runtime: bool = False) -> None:
        """:meth:`upsert_memory_rows` for one memory."""
        self.upsert_memory_rows([(doc, relpath)], keep_runtime=keep_runtime)

    def upsert_memory_rows(self, items: Iterable[tuple[MemoryDoc, str]], *, keep_runtime: bool = False) -> None:
        """Write the index rows and trigger rows of memories stored at the given relpaths, in batches
        (call inside a transaction; one statement per few hundred rows keeps 100k-memory rebuilds fast).

        ``keep_runtime`` keeps an existing row's decay state and recall figures where they are further along
        than the file's (memoryd records those in the index only), and leaves alone a row and triggers that are
        already what they would be written as.
        """
        self.upsert_index_entries([index_entry(doc, relpath) for doc, relpath in items], keep_runtime=keep_runtime)

    def upsert_index_entries(self, entries: Sequence[IndexEntry], *, keep_runtime: bool = False) -> None:
        """:meth:`upsert_memory_rows` from what the files contribute (:func:`index_entry`), so a caller that reads
        many files need not hold their documents until it writes."""
        for part in chunked(entries, 10 * _BATCH):
            if keep_runtime:
                part = _changed(self.index.db, part)
            self._upsert_rows([e.values for e in part], [(e.values[0], t) for e in part for t in e.triggers])

    def _upsert_rows(self, values: list[tuple[Any, ...]], triggers: list[tuple[str, str]]) -> None:
        # Plain executemany of the rows' values, not peewee's insert_many: building the SQL of each value took
        # longer than SQLite took to write it (most of a 100k-memory rebuild or demo).
        cursor = self.index.db.cursor()
        with as_peewee_errors():  # a UNIQUE clash or a lock raised as every other statement raises it
            for batch in chunked(values, _BATCH):
                cursor.executemany(_UPSERT, batch)
                slugs = [row[0] for row in batch]
                cursor.execute(f"DELETE FROM triggers WHERE slug IN ({', '.join('?' * len(slugs))})", slugs)
            cursor.executemany("INSERT INTO triggers (slug, trigger) VALUES (?, ?)", triggers)

    def memory_write(self, doc: MemoryDoc, *, forgotten: bool = False, encrypted: bool | None = None) -> FileWrite:
        """Where ``doc`` belongs: its type dir (or ``forgotten/``), encrypted when its scope is sensitive."""
        fm = doc.frontmatter
        if encrypted is None:
            encrypted = fm.scope_hash in self.sensitive_scopes() or self._encrypted_on_disk(fm.scope_hash)
        rel = self.layout.memory_relpath(fm.scope_hash, MemoryType(fm.type), fm.slug, encrypted, forgotten)
        return FileWrite(rel, doc, encrypted)

    def _encrypted_on_disk(self, scope: str) -> bool:
        """A scope the index does not list as sensitive whose files are encrypted is sensitive all the same: memoryd's
        rebuild-index drops the ``sensitive_scopes`` rows, and engram may hold no copy of them (it had written
        nothing to this root before), nor tell the rebuilt index from the old one. A new memory there is encrypted
        too. The first encrypted file ends the look; a scope found with none is not looked at again this session
        (a scope marked later is listed; one being unmarked stops being encrypted here once its last file is
        decrypted)."""
        if scope in self._plain_scopes:
            return False
        if holds_encrypted(self.layout, scope):
            return True
        self._plain_scopes.add(scope)
        return False

    def rewrite(self, relpath: str, doc: MemoryDoc) -> FileWrite:
        """Where a changed version of the file at ``relpath`` goes: a file memoryd's sweep moved to
        ``forgotten/`` stays there; otherwise its (possibly new) type dir, encrypted if its scope is sensitive. An
        encrypted file stays encrypted whatever the index says: after memoryd's rebuild-index, and before engram
        has a copy of the rows it dropped, the scope is not listed as sensitive, and a rewrite must not put its
        plaintext on disk (only unmarking the scope decrypts, and it does not come here)."""
        encrypted = True if relpath.endswith(".md.enc") else None
        return self.memory_write(doc, forgotten=relpath.split("/")[2] == FORGOTTEN_DIR, encrypted=encrypted)

    def safe_relpath(self, body_path: str) -> str:
        """Validate an index ``body_path`` before it is read or written."""
        self.layout.inside(body_path)
        if not (body_path.endswith(".md") or body_path.endswith(".md.enc")):
            raise UnsafePath(f"body_path {body_path!r} is not a memory file")
        return body_path


_BATCH = 400  # rows per statement: 14 columns x 400 stays far below SQLite's bound-variable limit
# ON CONFLICT never SETs the key column: doing so would make SQLite check every promotion that references the
# row (promotions.source_session_slug has no index).
_UPSERT = (
    f"INSERT INTO memories ({', '.join(ROW_COLUMNS)}) VALUES ({', '.join('?' * len(ROW_COLUMNS))}) "
    "ON CONFLICT (slug) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in ROW_COLUMNS if c != "slug")
)


def _changed(db: Database, entries: list[IndexEntry]) -> list[IndexEntry]:
    """``entries`` with each existing row's decay state and recall figures kept where further along (see
    :func:`merge_runtime`), less those whose row and triggers are already what they would be written as: a
    rebuild of an index in step with its files then writes nothing. (Rewriting every row took each batch
    through all five of memoryd's indexes, the most of a rebuild at 1M.) The rows there are read as SQLite's own tuples:
    peewee's models of them were a third of a 100k rebuild's writing."""
    changed: list[IndexEntry] = []
    for batch in chunked(entries, _BATCH):
        slugs = [e.values[0] for e in batch]
        marks = ", ".join("?" * len(slugs))
        olds = {row[0]: row for row in db.execute_sql(f"{_ROWS} WHERE slug IN ({marks})", slugs)}
        triggers: dict[str, list[str]] = {}
        query = f"SELECT slug, trigger FROM triggers WHERE slug IN ({marks}) ORDER BY rowid"
        for slug, trigger in db.execute_sql(query, slugs):
            triggers.setdefault(slug, []).append(trigger)
        for entry in batch:
            old = olds.get(entry.values[0])
            if old is None:
                changed.append(entry)
                continue
            values = _runtime_of(old, entry.values)
            if values != old or tuple(triggers.get(entry.values[0], ())) != entry.triggers:
                changed.append(IndexEntry(values, entry.triggers))
    return changed


def _runtime_of(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, ...]:
    """``new``'s values with ``old``'s runtime figures where further along."""
    runtime = (new[_DECAY], new[_RECALLS], new[_RECALLED])
    merged = merge_runtime((old[_DECAY], old[_RECALLS], old[_RECALLED]), runtime)
    if merged == runtime:
        return new
    values = list(new)
    values[_DECAY], values[_RECALLS], values[_RECALLED] = merged
    return tuple(values)


_ROWS = f"SELECT {', '.join(ROW_COLUMNS)} FROM memories"
_DECAY, _RECALLS, _RECALLED = (ROW_COLUMNS.index(c) for c in ("decay_state", "recall_count", "last_recalled_at"))
_RANKS = {state.value: state.rank for state in DecayState}


def merge_runtime(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, int, Any]:
    """Of an index row's and a file's (decay state, recall count, last recall): the further decay state (the
    file's when either is one no writer knows), the higher count, the later recall. A damaged row's figure of the
    wrong kind (a count that is text, a time that is a number) counts as none."""
    decay = old[0] if _RANKS.get(old[0], -1) > _RANKS.get(new[0], len(_RANKS)) else new[0]
    recalls = [v for v in (old[2], new[2]) if v and isinstance(v, str)]
    return decay, max(_count(old[1]), _count(new[1])), max(recalls) if recalls else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def chunked(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    """Batches for multi-row inserts (SQLite caps bound variables per statement)."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
