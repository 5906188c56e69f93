"""Which scopes are sensitive, as index.db records it: memoryd's ``sensitive_scopes`` row and its marker in the
project folder, written when a scope is marked and written again when memoryd's rebuild-index dropped them.

A workflow: engram registers the scopes it knew again before its first write after such a rebuild (memoryd's next
save into an unregistered scope would be plaintext; see :func:`engram.store.coexist.keep_registered`), and marking
a scope and ``repair`` register through the same functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.store.drift.scan import FileEntry
from engram.store.write.atomic import write_atomic
from engram.store.write.change import Change

if TYPE_CHECKING:
    from engram.store.service import Store

MARKER = ".memoryd-sensitive"


@dataclass(frozen=True)
class Unregistered:
    scope_hash: str
    scope_root: str | None
    why: str


def unregistered_scopes(store: Store, files: Iterable[FileEntry]) -> list[Unregistered]:
    """Scopes that are sensitive but missing from index.db's ``sensitive_scopes``: those engram's copy names
    (after a rebuild), and any scope holding encrypted files."""
    registered = {r["scope_hash"] for r in _index_rows(store)}
    found: dict[str, Unregistered] = {}
    if store.index.rebuilt:
        for row in store.index.sensitive_copy():
            if row["scope_hash"] not in registered:
                found[str(row["scope_hash"])] = Unregistered(
                    str(row["scope_hash"]), row.get("scope_root"), "sensitive before memoryd rebuilt index.db"
                )
    for entry in files:
        if entry.encrypted and entry.scope_hash not in registered and entry.scope_hash not in found:
            found[entry.scope_hash] = Unregistered(entry.scope_hash, None, f"holds encrypted files ({entry.relpath})")
    return list(found.values())


def _index_rows(store: Store) -> list[dict[str, Any]]:
    cols = store.index.columns("sensitive_scopes")
    cursor = store.index.db.execute_sql("SELECT * FROM main.sensitive_scopes")
    return [dict(zip(cols, row, strict=True)) for row in cursor]


def register_again(store: Store, scope: Unregistered) -> str:
    """The scope's ``sensitive_scopes`` row (and memoryd's marker in the project, where engram knows it)."""
    write_marker(scope.scope_root)
    store.apply(
        Change(
            "sensitive_scope_restored",
            scope.scope_hash,
            scope.scope_hash,
            {"scope_root": scope.scope_root, "why": scope.why},
            index_update=lambda: register(store, scope.scope_hash, scope.scope_root),
        )
    )
    return f"registered scope {scope.scope_hash} as sensitive again ({scope.why})"


def register(store: Store, scope_hash: str, scope_root: str | None) -> None:
    """The ``sensitive_scopes`` row, in whichever of memoryd's two table shapes this index has."""
    columns = store.index.columns("sensitive_scopes")
    values = {"scope_hash": scope_hash, "marked_at": store.now().isoformat()}
    if "scope_root" in columns:
        values["scope_root"] = scope_root or ""
    if "key_source" in columns:
        values["key_source"] = store.keys.key_source
    names = ", ".join(values)
    store.index.db.execute_sql(
        f"INSERT OR REPLACE INTO sensitive_scopes ({names}) VALUES ({', '.join('?' for _ in values)})",
        list(values.values()),
    )


def write_marker(scope_root: str | None) -> None:
    """memoryd's marker in the project itself, so its capture path knows without the index."""
    if scope_root and Path(scope_root).is_dir():
        write_atomic(Path(scope_root) / MARKER, f"scope_root: {scope_root}\n".encode())
