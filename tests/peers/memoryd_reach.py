"""What memoryd's own code would hand an agent from a root: run it with a Python that has memoryd's package on its
path (its source is the public repository EthanQC/memory-system, under memoryd/src; it needs pydantic, pyyaml,
cryptography, keyring and networkx), never from the test suite (a fresh machine has no memoryd).

    python tests/peers/memoryd_reach.py ROOT memory SLUG WORD   # injected at session start? found by its search?
    python tests/peers/memoryd_reach.py ROOT promotion ID       # in the session-start grey zone? in its pending list?

engram's quarantine must answer no to each (docs/poisoning.md says how this was checked); the tests emulate the
same queries.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path


def memory(root: Path, slug: str, word: str) -> str:
    from memoryd.inject import _recent_memories_rows
    from memoryd.search.sessions import search_sessions

    con = sqlite3.connect(root / "index.db")
    con.row_factory = sqlite3.Row
    row = con.execute("SELECT scope_hash FROM memories WHERE slug = ?", (slug,)).fetchone()
    scope = row[0] if row else ""
    types = ["decision", "preference", "fact", "playbook", "warning"]
    injected = slug in {r["slug"] for r in _recent_memories_rows(con, scope=scope, types=types, limit=100_000)}
    found = any(slug in repr(hit) for hit in search_sessions(root, scope, word))
    return f"injected={injected} found_by_search={found}"


def promotion(root: Path, pid: int) -> str:
    from memoryd.governance.analyze import list_pending_promotions
    from memoryd.inject import _grey_zone_preview

    grey = {r["id"] for r in _grey_zone_preview(root, limit=100_000)}
    listed = {r["id"] for r in list_pending_promotions(root)}
    return f"in_grey_zone={pid in grey} in_pending_list={pid in listed}"


def main() -> None:
    root, kind, *rest = sys.argv[1:]
    print(memory(Path(root), rest[0], rest[1]) if kind == "memory" else promotion(Path(root), int(rest[0])))


if __name__ == "__main__":
    main()
