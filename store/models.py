"""The peewee models of index.db's tables (memoryd's) and of engram.db's (engram's own, prefixed ``engram_``), and
the field types that read a row another program wrote without failing on it.

The schema, nothing more: opening the files, binding the models to them and applying migrations are
:mod:`engram.store.index`'s; the migrations themselves are SQL files in ``migrations/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import peewee
from peewee import AutoField, BlobField, CompositeKey, Model


def tuples(query: Any) -> Iterator[tuple[Any, ...]]:
    """The rows of a select as plain tuples (no model instance per row), typed as tuples: peewee's stubs give
    ``query.tuples()`` the query's own type, so a loop over it would look like a loop over model instances."""
    return iter(query.tuples())


class TextField(peewee.TextField):
    """Text as read from a row another program wrote: bytes that are not UTF-8 read with U+FFFD, and a number in
    a text column as its digits, so that one damaged row cannot stop a listing, a check or the console."""

    def python_value(self, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return str(value)


class IntegerField(peewee.IntegerField):
    """A whole number as read: text that is none (``'many'``) reads as the column's default, or None."""

    def python_value(self, value: Any) -> Any:
        try:
            return super().python_value(value)
        except (TypeError, ValueError):
            return self.default if isinstance(self.default, int) else None


class FloatField(peewee.FloatField):
    """A number as read: text that is none reads as None."""

    def python_value(self, value: Any) -> Any:
        try:
            return super().python_value(value)
        except (TypeError, ValueError):
            return None


class _Base(Model):
    class Meta:
        legacy_table_names = False


class Memory(_Base):
    slug = TextField(primary_key=True)
    type = TextField()
    scope_hash = TextField()
    title = TextField()
    source = TextField()
    created_at = TextField()
    updated_at = TextField(null=True)
    ttl_days = IntegerField(null=True)
    decay_state = TextField(default="alive")
    last_recalled_at = TextField(null=True)
    recall_count = IntegerField(default=0)
    fingerprint = TextField()
    body_path = TextField(unique=True)
    scope_sensitive = IntegerField(default=0)

    class Meta:
        table_name = "memories"


class Trigger(_Base):
    slug = TextField()
    trigger = TextField()

    class Meta:
        table_name = "triggers"
        primary_key = CompositeKey("slug", "trigger")


class Promotion(_Base):
    id = AutoField()
    source_session_slug = TextField()
    proposed_type = TextField()
    proposed_title = TextField()
    proposed_body = TextField()
    proposed_triggers = TextField()
    dura_score = TextField()
    reasoning = TextField(null=True)
    proposed_supersedes = TextField(default="[]")
    scope_hash = TextField()
    status = TextField(default="pending")
    created_at = TextField()
    decided_at = TextField(null=True)

    class Meta:
        table_name = "promotions"


class SensitiveScope(_Base):
    """memoryd's code writes ``(scope_hash, scope_root, marked_at)``; its docs show ``key_source`` instead.
    Read it through :func:`sensitive_scope_rows`, which takes whichever columns the table has."""

    scope_hash = TextField(primary_key=True)
    scope_root = TextField()
    marked_at = TextField()

    class Meta:
        table_name = "sensitive_scopes"


class Entity(_Base):
    id = TextField(primary_key=True)
    name = TextField()
    type = TextField()
    aliases = TextField(null=True)
    context = TextField(null=True)
    first_seen_at = TextField()
    last_seen_at = TextField()
    mention_count = IntegerField(default=1)
    scope_hash = TextField(null=True)
    decay_state = TextField(default="fresh")

    class Meta:
        table_name = "entities"


class Relation(_Base):
    id = AutoField()
    subject_id = TextField()
    subject_kind = TextField()
    predicate = TextField()
    object_id = TextField()
    object_kind = TextField()
    source_memory_id = TextField(null=True)
    scope_hash = TextField(null=True)
    confidence = FloatField(null=True)
    created_at = TextField()
    superseded_at = TextField(null=True)

    class Meta:
        table_name = "relations"


class SupersedesChain(_Base):
    newer_memory_id = TextField()
    older_memory_id = TextField()
    entity_id = TextField(null=True)
    confidence = FloatField()
    decided_at = TextField()
    decided_by = TextField()
    reason = TextField(null=True)

    class Meta:
        table_name = "supersedes_chain"
        primary_key = CompositeKey("newer_memory_id", "older_memory_id")


class ProfileVersion(_Base):
    id = AutoField()
    version_num = IntegerField(unique=True)
    written_at = TextField()
    trigger = TextField()
    content_md = TextField()
    diff_from_prev = TextField(null=True)
    change_summary = TextField(null=True)
    sources_count = IntegerField(null=True)
    sources_window_start = TextField(null=True)
    sources_window_end = TextField(null=True)

    class Meta:
        table_name = "profile_versions"


class TriggerStat(_Base):
    trigger = TextField()
    scope_hash = TextField(default="_global")
    day = TextField()
    hits = IntegerField(default=1)

    class Meta:
        table_name = "trigger_stats"
        primary_key = CompositeKey("trigger", "scope_hash", "day")


class ProfileChangeReport(_Base):
    id = AutoField()
    period = TextField(unique=True)
    generated_at = TextField()
    content_md = TextField()
    versions_count = IntegerField(null=True)
    supersedes_count = IntegerField(null=True)
    entities_added = IntegerField(null=True)
    entities_dropped = IntegerField(null=True)

    class Meta:
        table_name = "profile_change_reports"


class _Own(_Base):
    """engram's own tables: in engram.db, attached to the index connection as ``engram``."""

    class Meta:
        schema = "engram"


class AuditOutbox(_Own):
    op_id = TextField(primary_key=True)
    event = TextField()
    created_at = TextField()

    class Meta:
        table_name = "engram_audit_outbox"


class OutboxGuard(AuditOutbox):
    """The audit outbox's twin inside index.db (same columns). SQLite commits a WAL database and an attached one
    separately, so a crash between the two commits could keep an index change without its queued event; written
    in the same transaction as the index change, this copy cannot. Recreated whenever missing (see
    :meth:`Index.writable`)."""

    class Meta:
        schema = None  # main: index.db
        table_name = "engram_outbox_guard"


class IndexIdentity(_Base):
    """The root's identity as index.db last knew it (engram.db's ``engram_root`` holds the same id)."""

    root_id = TextField(primary_key=True)
    written_at = TextField()

    class Meta:
        table_name = "engram_identity"


class RootRecord(_Own):
    root_id = TextField(primary_key=True)
    created_at = TextField()

    class Meta:
        table_name = "engram_root"


class PromotionNote(_Own):
    promotion_id = IntegerField(primary_key=True)
    deferred_at = TextField(null=True)
    defer_reason = TextField(null=True)
    reject_reason = TextField(null=True)
    merged_into = TextField(null=True)
    snoozed_until = TextField(null=True)  # migration 109: out of the queue until then

    class Meta:
        table_name = "engram_promotion_notes"


class Binding(_Own):
    slug = TextField(primary_key=True)
    scope_hash = TextField()
    version = IntegerField()
    updated_at = TextField(null=True)
    file_mac = TextField()
    content_mac = TextField()
    bound_at = TextField()

    class Meta:
        table_name = "engram_binding"


class BindingGuard(Binding):
    """The binding manifest's twin inside index.db (same columns), for the rows of the latest change: a crash
    between the two databases' commits would keep a rewritten file's index row and lose its new binding, and
    the file would then read as rolled back (see :mod:`engram.store.sensitive.binding`). Recreated whenever
    missing (see :meth:`Index.writable`)."""

    class Meta:
        schema = None  # main: index.db
        table_name = "engram_binding_guard"


class Rekey(_Own):
    scope_hash = TextField(primary_key=True)
    started_at = TextField()
    new_source = TextField()

    class Meta:
        table_name = "engram_rekey"


class ScopeLabel(_Own):
    scope_hash = TextField(primary_key=True)
    label = TextField()
    set_at = TextField()

    class Meta:
        table_name = "engram_scope_labels"


class Imported(_Own):
    """What an importer brought in (migration 105): a second run skips every ``source_key`` found here."""

    source_key = TextField(primary_key=True)
    system = TextField()
    kind = TextField()
    memory_slug = TextField(null=True)
    promotion_id = IntegerField(null=True)
    origin = TextField()
    imported_at = TextField()

    class Meta:
        table_name = "engram_imports"


class KeyVerifier(_Own):
    """Proof of the root's master passphrase (migration 107): see :mod:`engram.store.sensitive.keyproof`."""

    id = IntegerField(primary_key=True)
    salt = TextField()
    kdf_iters = IntegerField()
    sealed = TextField()
    set_at = TextField()

    class Meta:
        table_name = "engram_key_verifier"


class SealedPromotion(_Own):
    """A promotion of a sensitive scope engram decided, sealed under its scope's key (migration 108): see
    :func:`engram.store.coexist.seal_promotion`."""

    id = IntegerField(primary_key=True)
    scope_hash = TextField()
    status = TextField()
    decided_at = TextField(null=True)
    sealed = BlobField()

    class Meta:
        table_name = "engram_sealed_promotions"


class QuarantinedMemory(_Own):
    """A memory engram quarantined (migration 110): soft-forgotten on disk and in the index, ``was`` the decay state
    its release restores, ``rules`` the screen's findings (a JSON list of rule ids)."""

    slug = TextField(primary_key=True)
    was = TextField()
    rules = TextField(default="[]")
    at = TextField()

    class Meta:
        table_name = "engram_quarantine"


class AllowedHost(_Own):
    """A host a person trusts (migration 111): a poisoning finding whose addresses are all such hosts is lowered
    to review."""

    host = TextField(primary_key=True)
    added_at = TextField()
    note = TextField(null=True)

    class Meta:
        table_name = "engram_allowlist"


MODELS = (
    Memory,
    Trigger,
    Promotion,
    SensitiveScope,
    Entity,
    Relation,
    SupersedesChain,
    ProfileVersion,
    TriggerStat,
    ProfileChangeReport,
    AuditOutbox,
    OutboxGuard,
    IndexIdentity,
    RootRecord,
    PromotionNote,
    Binding,
    BindingGuard,
    Rekey,
    ScopeLabel,
    Imported,
    KeyVerifier,
    SealedPromotion,
    QuarantinedMemory,
    AllowedHost,
)


def table_of(model: type[Model]) -> str:
    """``model``'s table as plain SQL names it: engram's own tables live in the attached ``engram`` schema."""
    return f"{model._meta.schema or 'main'}.{model._meta.table_name}"
