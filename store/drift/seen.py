"""Findings a person has seen: true, needing no repair, and no longer news.

Some findings are true but nothing repairs them: memoryd decided a promotion engram had decided
(``decision_overwritten``), a re-save dropped a link engram confirmed (``supersedes_removed``), a file memoryd wrote
under the old passphrase. Left as they are they keep ``check`` at exit 1 for good, and a person can no longer tell
today's news from last week's. ``engram check --ack KIND[:ID]`` (and ``s`` on the scopes pane's findings) records
that a person saw them, as one audit event naming each finding and what it said. A seen finding is still listed,
marked seen, and no longer counts for the exit code; once it says something else (the same promotion overridden
again) it is news again.

The record is the audit log itself, read in the pass ``check`` already makes over engram's lines: nothing to keep
in step with it, and the log says who saw what, when.
"""

from __future__ import annotations

import hashlib
from typing import Any

from engram.store.errors import BadInput, NotFound
from engram.store.service import Store
from engram.store.write.change import Change

SEEN = "findings_seen"  # engram's event naming the findings a person has seen


def finding_id(kind: str, path: str | None, detail: str, data: dict[str, Any]) -> str:
    """What a finding is about, as ``--ack KIND:ID`` names it: a promotion's id, a link, a file, else its text."""
    if "promotion_id" in data:
        return str(data["promotion_id"])
    if "newer" in data and "older" in data:
        return f"{data['newer']}>{data['older']}"
    if path:
        return path
    return hashlib.sha256(detail.encode("utf-8")).hexdigest()[:12]


def fingerprint(kind: str, ident: str, detail: str) -> str:
    """What the finding said when it was seen: a different detail later is news again."""
    return hashlib.sha256(f"{kind}\0{ident}\0{detail}".encode()).hexdigest()[:16]


def seen_in(details: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(kind, id, fingerprint)`` of each finding one of engram's ``findings_seen`` events names."""
    found = []
    for item in details.get("findings") or []:
        if isinstance(item, dict) and all(isinstance(item.get(k), str) for k in ("kind", "id", "fingerprint")):
            found.append((item["kind"], item["id"], item["fingerprint"]))
    return found


def parse_selector(selector: str, kinds: dict[str, tuple[str, bool]]) -> tuple[str, str | None]:
    """``KIND`` or ``KIND:ID``, checked: a kind repair fixes is no one's to set aside."""
    kind, _, ident = selector.partition(":")
    if kind not in kinds:
        raise BadInput(f"no finding kind {kind!r} (kinds: engram check --json lists those found)")
    if kinds[kind][1]:
        raise BadInput(f"{kind} is repaired by `engram repair`, not set aside: run that instead")
    return kind, ident or None


def acknowledge(store: Store, findings: list[tuple[str, str, str]], selector: str) -> None:
    """Record that a person has seen ``findings`` (``(kind, id, fingerprint)``, as :func:`finding_id` and
    :func:`fingerprint` make them), chosen by ``selector``: one audit event naming them all."""
    if not findings:
        raise NotFound(f"nothing found that {selector!r} names: `engram check` lists what there is")
    items = [{"kind": kind, "id": ident, "fingerprint": print_} for kind, ident, print_ in findings]
    store.apply(Change(SEEN, None, None, {"selector": selector, "findings": items}))
