"""What a root holds, for scripts: ``ls`` lists every memory, ``stats`` counts them. A module of their own, so
that a listing does not load what checking, repairing or writing a demo root needs."""

from __future__ import annotations

import argparse

from engram.store.stats import counts, list_memories
from engram.tui.cli.common import EXIT_OK, Handler, Parser, Subparsers, emit, open_store


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    sub.add_parser("ls", parents=[common, report], help="list every memory with its type, scope and state")
    sub.add_parser("stats", parents=[common, report], help="counts of memories, promotions and the graph")
    return {"ls": _ls, "stats": _stats}


def _ls(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        items = list_memories(store)
    text = "\n".join(
        f"{i.type:<10} {i.scope_hash:<13} {i.decay_state:<14} {i.state:<22} {i.slug}  {i.title}" for i in items
    )
    emit(args, [vars(i) for i in items], text)
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        c = counts(store)
    text = "\n".join(
        [
            f"memories {c.memories} ({c.encrypted} encrypted)",
            "by type: " + ", ".join(f"{k} {v}" for k, v in c.by_type.items()),
            "by decay: " + ", ".join(f"{k} {v}" for k, v in c.by_decay.items()),
            "promotions: " + ", ".join(f"{k} {v}" for k, v in sorted(c.promotions.items())),
            f"graph: {c.entities} entities, {c.relations} relations, {c.supersedes} supersedes",
            "sensitive scopes: " + (", ".join(c.sensitive_scopes) or "none"),
        ]
    )
    emit(args, c.to_json(), text)
    return EXIT_OK
