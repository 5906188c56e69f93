"""memoryd's thresholds, learned from a person's decisions.

memoryd scores each proposal's DURA and, by the average of its scores, approves it on its own at or above
``[governance] auto_promote_threshold`` (0.85 unless set), drops it below ``auto_reject_threshold`` (0.5), and
leaves the rest pending for a person (its ``governance/analyze.py``). Every promotion a person decided says
where those lines should be: this module tells, for any pair of thresholds, what memoryd would have done with
those decisions, suggests a pair, and writes it to memoryd's ``config.toml`` when asked (atomically, keeping the
file's comments and order, audited with the old values).

A person's decisions are the approved, merged (kept, in another memory) and rejected promotions that memoryd did
not decide itself: it stamps an approval of its own with ``decided_at`` equal to ``created_at``; it never keeps
a row it rejected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.store.columns import dura_scores
from engram.store.errors import BadInput, Conflict, StoreError
from engram.store.models import Memory, Promotion, tuples
from engram.store.paths import load_memoryd_config, memoryd_config_path
from engram.store.service import Store
from engram.store.write.atomic import read_regular, write_atomic
from engram.store.write.change import Change

PROMOTE_DEFAULT = 0.85  # memoryd's own defaults, when its config does not set them
REJECT_DEFAULT = 0.5
BINS = 20  # the plot's columns: DURA average 0.00-0.05, 0.05-0.10, ...
ENOUGH = 20  # decisions below which no threshold is suggested: too few to say anything
TRUSTED = 0.95  # an auto-approval line keeps at least this share of what is above it approved by the person
MISSED = 0.05  # an auto-reject line drops at most this share of what the person approved below it


@dataclass(frozen=True)
class Decided:
    """One promotion a person decided: memoryd's score of it and whether the person kept it."""

    score: float  # the DURA average, as memoryd computes it
    kept: bool  # approved or merged
    type: str
    source: str  # the source session's (claude-code, codex, ...)


def memoryd_average(raw: str | None) -> float:
    """The DURA average as memoryd takes it: the mean of every number in the score object."""
    values = [v for v in dura_scores(raw).values() if isinstance(v, int | float) and math.isfinite(v)]
    return sum(values) / len(values) if values else 0.0


def decisions(store: Store) -> list[Decided]:
    """Every promotion a person decided (see the module's notes), oldest first."""
    sources = dict(tuples(Memory.select(Memory.slug, Memory.source).where(Memory.type == "session")))
    columns = (
        Promotion.status,
        Promotion.dura_score,
        Promotion.proposed_type,
        Promotion.source_session_slug,
        Promotion.created_at,
        Promotion.decided_at,
    )
    out = []
    for status, dura, ptype, session, created, decided in tuples(
        Promotion.select(*columns)
        .where(Promotion.status.in_(("approved", "merged", "rejected")))
        .order_by(Promotion.id)
    ):
        if status == "approved" and decided == created:  # memoryd approved it on its own
            continue
        out.append(Decided(memoryd_average(dura), status != "rejected", ptype or "", sources.get(session, "")))
    return out


@dataclass(frozen=True)
class Outcome:
    """What memoryd would have done with a person's decisions under a pair of thresholds."""

    promote_at: float
    reject_below: float
    kept_auto_approved: int  # approved by the person, and memoryd would have approved it too
    dropped_auto_approved: int  # rejected by the person, but memoryd would have approved it: a wrong memory
    kept_auto_rejected: int  # approved by the person, but memoryd would have dropped it: a memory lost
    dropped_auto_rejected: int  # rejected by the person, and memoryd would have dropped it too
    left_for_review: int  # between the lines: a person still decides

    @property
    def decided(self) -> int:
        return (
            self.kept_auto_approved
            + self.dropped_auto_approved
            + self.kept_auto_rejected
            + self.dropped_auto_rejected
            + self.left_for_review
        )


def outcome(decided: Sequence[Decided], promote_at: float, reject_below: float) -> Outcome:
    """Run ``decided`` through memoryd's rule: approve at or above ``promote_at``, drop below ``reject_below``."""
    counts = [0, 0, 0, 0, 0]
    for d in decided:
        if d.score >= promote_at:
            counts[0 if d.kept else 1] += 1
        elif d.score < reject_below:
            counts[2 if d.kept else 3] += 1
        else:
            counts[4] += 1
    return Outcome(promote_at, reject_below, *counts)


@dataclass(frozen=True)
class Suggestion:
    promote_at: float | None  # None: the decisions cannot support an auto-approval line
    reject_below: float | None
    why: str


def suggest(decided: Sequence[Decided]) -> Suggestion:
    """The lowest auto-approval line above which at least :data:`TRUSTED` of the decisions were approvals, and the
    highest auto-reject line below which at most :data:`MISSED` were (each in steps of 0.01, each with at least
    five decisions on its side), the reject line never above the approval line."""
    if len(decided) < ENOUGH:
        return Suggestion(None, None, f"{len(decided)} decisions so far: {ENOUGH} are needed to suggest anything")
    steps = [i / 100 for i in range(101)]
    promote = next((t for t in steps if _share_kept([d for d in decided if d.score >= t], at_least=5) >= TRUSTED), None)
    reject = next(
        (t for t in reversed(steps) if _share_kept([d for d in decided if d.score < t], at_least=5) <= MISSED),
        None,
    )
    if promote is not None and reject is not None and reject > promote:
        reject = promote
    why = (
        f"approve at {promote:.2f}: {TRUSTED:.0%} of what you decided above it you approved"
        if promote is not None
        else f"no line keeps {TRUSTED:.0%} of what is above it approved"
    )
    why += (
        f"; reject below {reject:.2f}: at most {MISSED:.0%} of what you decided below it you approved"
        if reject is not None
        else f"; no line keeps what you approved below it under {MISSED:.0%}"
    )
    return Suggestion(promote, reject, why)


def _share_kept(decided: Sequence[Decided], at_least: int) -> float:
    """The share of ``decided`` kept; NaN (no comparison holds) for fewer than ``at_least``."""
    if len(decided) < at_least:
        return math.nan
    return sum(d.kept for d in decided) / len(decided)


@dataclass(frozen=True)
class Bin:
    low: float
    kept: int
    dropped: int

    @property
    def rate(self) -> float | None:
        total = self.kept + self.dropped
        return self.kept / total if total else None


def bins(decided: Iterable[Decided], count: int = BINS) -> list[Bin]:
    """Approvals and rejections by DURA average, in ``count`` equal bins over 0..1 (1.0 falls in the last)."""
    kept = [0] * count
    dropped = [0] * count
    for d in decided:
        i = min(max(int(d.score * count), 0), count - 1)
        if d.kept:
            kept[i] += 1
        else:
            dropped[i] += 1
    return [Bin(i / count, kept[i], dropped[i]) for i in range(count)]


def grouped(decided: Sequence[Decided], by: str) -> dict[str, list[Decided]]:
    """``decided`` by ``type`` or ``source`` (or all of it under "all"), the largest group first."""
    if by == "all":
        return {"all": list(decided)}
    groups: dict[str, list[Decided]] = {}
    for d in decided:
        groups.setdefault(getattr(d, by) or "(none)", []).append(d)
    return dict(sorted(groups.items(), key=lambda item: -len(item[1])))


def current_thresholds(path: Path | None = None) -> tuple[float, float]:
    """memoryd's thresholds as it reads them: its config's ``[governance]`` values, else its defaults."""
    governance = load_memoryd_config(path).get("governance") or {}
    if not isinstance(governance, dict):
        return PROMOTE_DEFAULT, REJECT_DEFAULT
    try:
        return (
            float(governance.get("auto_promote_threshold", PROMOTE_DEFAULT)),
            float(governance.get("auto_reject_threshold", REJECT_DEFAULT)),
        )
    except (TypeError, ValueError):  # memoryd falls back to its defaults on a value it cannot read
        return PROMOTE_DEFAULT, REJECT_DEFAULT


def set_thresholds(store: Store, promote_at: float, reject_below: float, path: Path | None = None) -> dict[str, Any]:
    """Write both thresholds into memoryd's config.toml (``[governance]``; every other line kept as it was), as
    one audited change whose event holds the old values and the new. Refuses values memoryd would misread, and a
    config changed by someone else between reading and writing. Returns the event's details."""
    import tomlkit  # only this writes TOML

    if not (0.0 <= reject_below <= promote_at <= 1.1):
        raise BadInput(
            f"thresholds must satisfy 0 <= reject ({reject_below}) <= approve ({promote_at}) <= 1.1; nothing changed"
        )
    path = path or memoryd_config_path()
    before = _config_bytes(path)
    old = current_thresholds(path)
    try:
        document = tomlkit.parse(before.decode("utf-8"))
    except (UnicodeDecodeError, tomlkit.exceptions.TOMLKitError) as exc:
        raise StoreError(f"{path}: not valid TOML ({exc}); nothing changed") from None
    governance = document.get("governance")
    if governance is None:
        governance = tomlkit.table()
        document["governance"] = governance
    governance["auto_promote_threshold"] = round(promote_at, 2)
    governance["auto_reject_threshold"] = round(reject_below, 2)
    data = tomlkit.dumps(document).encode("utf-8")
    details: dict[str, Any] = {
        "path": str(path),
        "old": {"auto_promote_threshold": old[0], "auto_reject_threshold": old[1]},
        "new": {"auto_promote_threshold": round(promote_at, 2), "auto_reject_threshold": round(reject_below, 2)},
    }

    def unchanged() -> None:
        if _config_bytes(path) != before:
            raise Conflict(f"{path} changed while the thresholds were being set; nothing changed, try again")

    def write() -> None:
        write_atomic(path, data, mode=0o600)

    store.apply(Change("thresholds_set", None, None, details, precondition=unchanged, index_update=write))
    return details


def _config_bytes(path: Path) -> bytes:
    try:
        return read_regular(path)
    except FileNotFoundError:
        return b""
    except OSError as exc:
        raise StoreError(f"{path}: {exc.strerror or exc}; nothing changed") from None
