"""What each pane computes when it opens, timed on a demo root (default: the 20k root bench_store.py builds,
the graph issue's scale: ~500 entities and tens of thousands of relations). The screens draw only what fits.

Usage: python bench/bench_panes.py [--root bench/roots/demo-20000]
Latest figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.store import decay, graph, supersedes  # noqa: E402
from engram.store.audit.view import AuditLog  # noqa: E402
from engram.store.demo import DEMO_PASSPHRASE  # noqa: E402
from engram.store.models import Entity, Relation  # noqa: E402
from engram.store.scopes import scopes  # noqa: E402
from engram.store.sensitive.crypto import KeyRing  # noqa: E402
from engram.store.service import Store  # noqa: E402


def timed(label: str, work: Callable[[], object]) -> object:
    t = time.perf_counter()
    result = work()
    print(f"{label:<58} {1000 * (time.perf_counter() - t):8.1f} ms")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).parent / "roots" / "demo-20000"))
    args = parser.parse_args()
    with Store.open(args.root, keys=KeyRing(passphrase=DEMO_PASSPHRASE)) as store:
        print(f"root: {args.root} ({Entity.select().count()} entities, {Relation.select().count()} relations)")
        timed("supersedes: the forest of chains (index)", lambda: supersedes.forest(store))
        listed = timed("supersedes: every file's frontmatter links (worker)", lambda: supersedes.listed_links(store))
        timed("supersedes: the forest with the files' links", lambda: supersedes.forest(store, listed))
        timed("decay: distribution per scope and type", lambda: decay.distribution(store))
        timed("decay: the first list (ttl running out in 14 days)", lambda: decay.listing(store, "expiring"))
        timed("decay: a sweep's dry run", lambda: decay.plan_sweep(store))
        rows = timed("graph: entities by mentions", lambda: graph.entities(store))
        timed("graph: fuzzy filter 'kafka'", lambda: graph.entities(store, "kafka"))
        top = rows[0].id  # type: ignore[index]
        for hops in (1, 2, 3):
            timed(
                f"graph: neighbourhood of the most mentioned, {hops} hop(s)",
                lambda hops=hops: graph.neighbourhood(store, top, hops),
            )
        timed("graph: conflicts of every entity (GROUP BY)", lambda: graph.conflicts(store))
        timed("graph: memories mentioning the most mentioned", lambda: graph.mentioned_in(store, top))
        timed("audit: open the log (every line found)", lambda: AuditLog(store.layout.audit_path).close())
        timed("scopes: labels, counts, grants, leaks (no discovery)", lambda: scopes(store))


if __name__ == "__main__":
    main()
