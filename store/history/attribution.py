"""Who changed a file engram saw rather than wrote: memoryd's audit lines appended since the last look.

memoryd records an event when a tool of its reaches a sensitive scope (its access gate: ``access_granted`` with
the tool's name, ``mem_update`` say), not when it writes a file. So a revision seen changed in a scope names the
memoryd events of that scope logged since engram last looked: where memoryd said something, the history says
it too; where it did not, the revision says only that it was seen changed, and when.
"""

from __future__ import annotations

import json
from pathlib import Path

from engram.store.audit.chain import open_log

TAIL = 8 * 1024 * 1024  # bytes of the log read at most: a look after a long absence names the latest events
NAMED = 20  # events a revision names at most


def memoryd_events(log: Path, since: int | None, scopes: set[str]) -> tuple[list[str], int]:
    """memoryd's events of ``scopes`` in ``log`` after byte ``since`` (None: the first look, which only notes
    where the log ends), as trailer values; and where the log ends now."""
    try:
        size = log.stat().st_size
    except OSError:
        return [], 0
    if since is None or not scopes:
        return [], size
    start = since if since <= size else 0  # a shorter log is another file (a repair, a restore): read its end
    start = max(start, size - TAIL)
    with open_log(log) as fh:
        fh.seek(start)
        data = fh.read(size - start)
    told = []
    for raw in data.splitlines()[1 if start and start != since else 0 :]:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or "this_hash" in line or line.get("scope_hash") not in scopes:
            continue  # engram's own lines are named by engram's revisions
        parts = [line.get("event_type"), line.get("tool"), f"scope {line.get('scope_hash')}", f"at {line.get('ts')}"]
        told.append(" ".join(str(p) for p in parts if p))
    return told[-NAMED:], size
