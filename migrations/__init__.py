"""Numbered SQL migrations, applied in name order and recorded by file name in ``_schema_migrations``.

001-005 are equal in effect to memoryd's own files of the same names and go into memoryd's index.db, so a root
made by either tool is never migrated twice by the other. engram's own tables start at ``100_engram_`` and go
into engram.db beside it (each database records its own migrations), where memoryd's ``rebuild-index``, which
deletes index.db, cannot take them.
"""

from __future__ import annotations

from importlib import resources

ENGRAM_PREFIX = "_engram_"  # after the number: 100_engram_audit_outbox.sql


def migration_files(engram: bool) -> list[tuple[str, str]]:
    """``(file name, SQL)`` of the migrations for engram.db (``engram``) or for memoryd's index.db, in the
    order to apply them."""
    files = [
        f
        for f in resources.files(__name__).iterdir()
        if f.name.endswith(".sql") and (ENGRAM_PREFIX in f.name) == engram
    ]
    return [(f.name, f.read_text(encoding="utf-8")) for f in sorted(files, key=lambda f: f.name)]
