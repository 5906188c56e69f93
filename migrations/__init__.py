"""Numbered SQL migrations, applied in name order and recorded by file name in ``_schema_migrations``.

001-005 are equal in effect to memoryd's own files of the same names, so a root made by either tool is
never migrated twice by the other. engram's own tables start at ``100_engram_``.
"""

from __future__ import annotations

from importlib import resources


def migration_files() -> list[tuple[str, str]]:
    """``(file name, SQL)`` of every migration shipped with engram, in the order to apply them."""
    files = [f for f in resources.files(__name__).iterdir() if f.name.endswith(".sql")]
    return [(f.name, f.read_text(encoding="utf-8")) for f in sorted(files, key=lambda f: f.name)]
