"""The entity graph from scripts: entities, an entity's neighbours, conflicting relations; rename an entity,
merge one into another. The same store functions as the graph pane, each change audited."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from engram.store.graph import Hop, conflicts, entities, merge_entities, neighbourhood, rename_entity
from engram.tui.cli.common import EXIT_OK, Handler, Parser, Subparsers, count, emit, open_store


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    group = sub.add_parser("graph", parents=[common], help="the entity graph").add_subparsers(
        dest="graph_command", required=True
    )
    listing = group.add_parser("entities", parents=[common, report], help="entities, most mentioned first")
    listing.add_argument("text", nargs="?", default="", help="a name to look for (fuzzy)")
    listing.add_argument("--scope", help="only this scope hash")
    listing.add_argument("--limit", type=count, default=50, metavar="N")
    near = group.add_parser("neighbours", parents=[common, report], help="what an entity is related to")
    near.add_argument("entity", metavar="ENTITY_ID")
    near.add_argument("--hops", type=int, default=1, choices=[1, 2, 3])
    clash = group.add_parser("conflicts", parents=[common, report], help="relations that contradict each other")
    clash.add_argument("entity", metavar="ENTITY_ID", nargs="?", help="only this entity's")
    rename = group.add_parser("rename", parents=[common, report], help="rename an entity (the old name stays an alias)")
    rename.add_argument("entity", metavar="ENTITY_ID")
    rename.add_argument("name", metavar="NAME")
    merge = group.add_parser("merge", parents=[common, report], help="merge OTHER into KEEP (relations move)")
    merge.add_argument("keep", metavar="KEEP")
    merge.add_argument("other", metavar="OTHER")
    return {
        "graph entities": _entities,
        "graph neighbours": _neighbours,
        "graph conflicts": _conflicts,
        "graph rename": _rename,
        "graph merge": _merge,
    }


def _entities(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        rows = entities(store, args.text, args.scope, args.limit)
    text = "\n".join(f"{r.mentions:>6} {r.type:<12} {r.id}  {r.name}" for r in rows)
    emit(args, [asdict(r) for r in rows], text or "no entities")
    return EXIT_OK


def _neighbours(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        centre = neighbourhood(store, args.entity, args.hops)
    emit(args, _hop_json(centre), "\n".join(_hop_lines(centre, 0)))
    return EXIT_OK


def _hop_json(hop: Hop) -> dict[str, Any]:
    return {
        "id": hop.node_id,
        "label": hop.label,
        "relations": {
            predicate: [{**asdict(rel), "to": _hop_json(child)} for rel, child in listed]
            for predicate, listed in hop.by_predicate.items()
        },
        "more": hop.more,
    }


def _hop_lines(hop: Hop, depth: int) -> list[str]:
    lines = [f"{'  ' * depth}{hop.label} ({hop.node_id})"] if depth == 0 else []
    for predicate, listed in hop.by_predicate.items():
        for _rel, child in listed:
            lines.append(f"{'  ' * (depth + 1)}{predicate} -> {child.label} ({child.node_id})")
            lines += _hop_lines(child, depth + 1)
        if hop.more.get(predicate):
            lines.append(f"{'  ' * (depth + 1)}{predicate}: {hop.more[predicate]} more")
    return lines


def _conflicts(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        found = conflicts(store, args.entity)
    data = [
        {"subject": subject, "predicate": predicate, "relations": [asdict(r) for r in rels]}
        for (subject, predicate), rels in found.items()
    ]
    text = "\n".join(
        f"{subject} {predicate}: " + ", ".join(r.object_id for r in rels)
        for (subject, predicate), rels in found.items()
    )
    emit(args, data, text or "no conflicting relations")
    return EXIT_OK


def _rename(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        rename_entity(store, args.entity, args.name)
    emit(args, {"id": args.entity, "name": args.name}, f"{args.entity} is now called {args.name!r}")
    return EXIT_OK


def _merge(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        moved = merge_entities(store, args.keep, args.other)
    emit(
        args,
        {"keep": args.keep, "merged": args.other, "relations_moved": moved},
        f"merged {args.other} into {args.keep}: {moved} relations moved",
    )
    return EXIT_OK
