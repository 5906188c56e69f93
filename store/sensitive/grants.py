"""Read grants of sensitive scopes, in memoryd's format: ``grants/<scope_hash>.json`` holds
``{scope_hash, scope_root, duration, expires_at, issued_at, issued_by, task_id}``.

A grant lets memoryd's agents read a sensitive scope without asking: ``once`` for 90 seconds, ``session`` for
8 hours, ``task`` until revoked (memoryd writes 9999-12-31). It is valid while now < ``expires_at``. Issuing
replaces the scope's grant, revoking removes the file; both go through the store's write path and are audited.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.store.errors import BadInput, Conflict, NotFound
from engram.store.service import Store
from engram.store.write.change import Change, DataWrite

DURATIONS = {"once": timedelta(seconds=90), "session": timedelta(hours=8)}
UNTIL_REVOKED = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)  # memoryd's "task" expiry
ISSUER = "engram grant"


@dataclass(frozen=True)
class Grant:
    scope_hash: str
    scope_root: str | None
    duration: str
    expires_at: datetime
    issued_at: datetime | None
    issued_by: str | None
    task_id: str | None

    def valid(self, now: datetime) -> bool:
        return now < self.expires_at

    def to_json(self, now: datetime) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            expires_at=self.expires_at.isoformat(),
            valid=self.valid(now),
            issued_at=self.issued_at.isoformat() if self.issued_at else None,
        )
        return data

    def describe(self, now: datetime) -> str:
        """``session, 3h 12m left`` / ``task annual-checkup, until revoked`` / ``once, expired``."""
        what = f"{self.duration} {self.task_id}" if self.task_id else self.duration
        if not self.valid(now):
            return f"{what}, expired"
        if self.expires_at == UNTIL_REVOKED:
            return f"{what}, until revoked"
        left = int((self.expires_at - now).total_seconds())
        if left >= 3600:
            return f"{what}, {left // 3600}h {left % 3600 // 60}m left"
        return f"{what}, {left // 60}m {left % 60}s left"


def grants(store: Store) -> dict[str, Grant | str]:
    """Every grant file by scope; a file that cannot be read as a grant maps to the reason (never raises)."""
    found: dict[str, Grant | str] = {}
    folder = store.layout.grants_dir
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.json")):
        try:
            found[path.stem] = _parse(path.read_bytes())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            found[path.stem] = f"{path.name}: not a grant ({exc})"
    return found


def issue_grant(
    store: Store, scope_hash: str, duration: str, task_id: str | None = None, scope_root: str | None = None
) -> Grant:
    """Write the scope's grant (replacing any earlier one) and audit ``grant_issued``."""
    if duration not in (*DURATIONS, "task"):
        raise BadInput(f"duration must be once, session or task, not {duration!r}")
    if task_id and duration != "task":
        raise BadInput("a task id goes with --duration task")
    if scope_hash not in store.sensitive_scopes():
        raise Conflict(f"scope {scope_hash} is not sensitive: agents read it without a grant")
    now = store.now().astimezone(UTC).replace(microsecond=0)
    if scope_root is None:
        scope_root = next(
            (
                r.get("scope_root") or None
                for r in store.index.sensitive_scope_rows()
                if r.get("scope_hash") == scope_hash
            ),
            None,
        )
    grant = Grant(
        scope_hash,
        scope_root,
        duration,
        now + DURATIONS[duration] if duration in DURATIONS else UNTIL_REVOKED,
        now,
        ISSUER,
        task_id or None,
    )
    relpath = store.layout.grant_relpath(scope_hash)
    store.apply(
        Change(
            "grant_issued",
            scope_hash,
            scope_hash,
            {"duration": duration, "expires_at": grant.expires_at.isoformat(), "task_id": grant.task_id},
            writes=[DataWrite(relpath, _serialize(grant))],
        )
    )
    return grant


def revoke_grant(store: Store, scope_hash: str) -> Grant | str:
    """Remove the scope's grant file and audit ``grant_revoked``; what was revoked is returned."""
    current = grants(store).get(scope_hash)
    if current is None:
        raise NotFound(f"scope {scope_hash} has no grant")
    details = {"duration": current.duration, "task_id": current.task_id} if isinstance(current, Grant) else {}
    store.apply(
        Change("grant_revoked", scope_hash, scope_hash, details, removals=[store.layout.grant_relpath(scope_hash)])
    )
    return current


def _serialize(grant: Grant) -> bytes:
    """memoryd's shape: ``json.dumps(..., indent=2)``, keys in its order, no trailing newline."""
    return json.dumps(
        {
            "scope_hash": grant.scope_hash,
            "scope_root": grant.scope_root,
            "duration": grant.duration,
            "expires_at": grant.expires_at.isoformat(),
            "issued_at": grant.issued_at.isoformat() if grant.issued_at else None,
            "issued_by": grant.issued_by,
            "task_id": grant.task_id,
        },
        indent=2,
    ).encode("utf-8")


def _parse(data: bytes) -> Grant:
    raw = json.loads(data.decode("utf-8"))
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    issued = raw.get("issued_at") or raw.get("granted_at")  # the data-model notes call it granted_at
    return Grant(
        str(raw["scope_hash"]),
        raw.get("scope_root"),
        str(raw["duration"]),
        _when(raw["expires_at"]),
        _when(issued) if issued else None,
        raw.get("issued_by"),
        raw.get("task_id") or raw.get("task"),
    )


def _when(text: str) -> datetime:
    moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
