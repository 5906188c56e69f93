"""The queue's triage help from scripts: what a promotion resembles, the clusters of near-duplicates and deciding
one cluster at once (``engram promotions similar|clusters|cluster``), and memoryd's thresholds against the
decisions made (``engram thresholds show|set``). The same store functions as the console's keys."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from engram.store.errors import BadInput, StoreError
from engram.store.secrets import masked
from engram.tui.cli.common import EXIT_FINDING, EXIT_OK, Handler, Parser, Subparsers, completed, emit, open_with_key
from engram.tui.cli.common import count as whole_number
from engram.tui.completion import complete_pending


def add_promotion_commands(promos: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    """Under ``engram promotions``."""
    similar = promos.add_parser(
        "similar", parents=[common, report], help="the memories and pending promotions closest to one, and why"
    )
    completed(similar.add_argument("id", type=int, metavar="ID"), complete_pending)
    similar.add_argument("--limit", type=whole_number, default=5, metavar="N", help="how many of each (default 5)")
    promos.add_parser("clusters", parents=[common, report], help="pending near-duplicates grouped, best first")
    cluster = promos.add_parser(
        "cluster", parents=[common, report], help="approve the best of a promotion's cluster; reject or merge the rest"
    )
    completed(cluster.add_argument("id", type=int, metavar="ID"), complete_pending)
    rest = cluster.add_mutually_exclusive_group(required=True)
    rest.add_argument("--reject-rest", action="store_true", help="reject the others as duplicates of the best")
    rest.add_argument("--merge-rest", action="store_true", help="merge the others into the best's memory")
    cluster.add_argument("--dry-run", action="store_true", help="say what would be decided; change nothing")
    return {"promotions similar": _similar, "promotions clusters": _clusters, "promotions cluster": _cluster}


def add_commands(sub: Subparsers, common: Parser, report: Parser) -> dict[str, Handler]:
    thresholds = sub.add_parser(
        "thresholds", parents=[common], help="memoryd's auto-approve/reject lines against your decisions"
    ).add_subparsers(dest="thresholds_command", required=True)
    show = thresholds.add_parser(
        "show", parents=[common, report], help="what memoryd would have done with your decisions, and a suggestion"
    )
    show.add_argument("--by", choices=("all", "type", "source"), default="all", help="also per type or source")
    show.add_argument(
        "--try", nargs=2, type=float, metavar=("X", "Y"), dest="trying", help="also with approve at X, reject below Y"
    )
    put = thresholds.add_parser("set", parents=[common, report], help="write both lines to memoryd's config.toml")
    put.add_argument("--approve", type=float, required=True, metavar="X", help="auto_promote_threshold")
    put.add_argument("--reject", type=float, required=True, metavar="Y", help="auto_reject_threshold")
    put.add_argument("--yes", action="store_true", help="write without asking (needed off a terminal)")
    return {"thresholds show": _show, "thresholds set": _set}


def _similar(args: argparse.Namespace) -> int:
    from engram.store.similar import Similarity

    with open_with_key(args, lambda store: False) as store:
        built = Similarity.build(store)
        if args.id not in built.by_id:
            raise BadInput(f"no pending promotion #{args.id}")
        memories, pending = built.similar(args.id, args.limit)
    found = [*memories, *pending]
    lines = [
        f"{s.score:>4.0%} {'memory' if s.kind == 'memory' else '#' + s.key:<8} {s.scope_hash:<13} "
        f"{masked(s.title)}  ({s.reason})" + (f"  {s.key}" if s.kind == "memory" else "")
        for s in found
    ]
    emit(
        args,
        [{**asdict(s), "title": masked(s.title)} for s in found],
        "\n".join(lines) or f"nothing similar to #{args.id} is known",
    )
    return EXIT_OK


def _clusters(args: argparse.Namespace) -> int:
    from engram.store.similar import Similarity

    with open_with_key(args, lambda store: False) as store:
        built = Similarity.build(store)
        clusters = built.clusters()
    titles = {p.id: p.text.title for p in built.pending}
    data = [{"best": members[0], "members": members} for members in clusters.members]
    lines = [
        f"cluster of {len(members)}: "
        + ", ".join(f"#{pid}" + (" (best)" if pid == members[0] else "") for pid in members)
        + f"  {masked(titles[members[0]])}"
        for members in clusters.members
    ]
    known = sorted(clusters.repeats_memory)
    emit(
        args,
        {"clusters": data, "repeat_a_memory": known},
        "\n".join(
            [
                *lines,
                f"{len(known)} pending {'repeats' if len(known) == 1 else 'repeat'} a memory of their scope "
                "(filter: dup:known)",
            ]
        ),
    )
    return EXIT_OK


def _cluster(args: argparse.Namespace) -> int:
    from engram.store import promotions
    from engram.store.similar import Similarity

    how = "reject" if args.reject_rest else "merge"
    with open_with_key(args) as store:
        members = Similarity.build(store).clusters().of(args.id)
        if not members:
            raise BadInput(f"#{args.id} is in no cluster of near-duplicates (engram promotions clusters lists them)")
        if args.dry_run:
            emit(args, {"best": members[0], "rest": members[1:], "how": how, "done": []}, _plan(members, how))
            return EXIT_OK
        promotions.prove_keys(store, members)
        decide = promotions.cluster_decider(store, members[0], how)
        done, failed = [], []
        for pid in members:
            try:
                decide(pid)
                done.append(pid)
            except StoreError as exc:
                failed.append({"id": pid, "error": str(exc)})
                if pid == members[0]:
                    break
    text = "\n".join(
        [_plan(done, how).replace("would ", "") if done else "nothing decided"]
        + [f"engram: #{f['id']}: {f['error']}" for f in failed]
    )
    emit(args, {"best": members[0], "rest": members[1:], "how": how, "done": done, "failed": failed}, text)
    return EXIT_FINDING if failed else EXIT_OK


def _plan(members: list[int], how: str) -> str:
    rest = ", ".join(f"#{pid}" for pid in members[1:]) or "nothing else"
    verb = "reject as duplicates of it" if how == "reject" else "merge into it"
    return f"would approve #{members[0]}, {verb}: {rest}"


def _show(args: argparse.Namespace) -> int:
    from engram.store.calibration import current_thresholds, decisions, grouped, outcome, suggest

    with open_with_key(args, lambda store: False) as store:
        decided = decisions(store)
    current = current_thresholds()
    suggestion = suggest(decided)
    pairs = {"memoryd now": current}
    if args.trying:
        pairs["trying"] = (args.trying[0], args.trying[1])
    if suggestion.promote_at is not None and suggestion.reject_below is not None:
        pairs["suggested"] = (suggestion.promote_at, suggestion.reject_below)
    report = {
        name: {label: asdict(outcome(group, *pair)) for label, pair in pairs.items()}
        for name, group in grouped(decided, args.by).items()
    }
    if args.by != "all":
        report = {"all": {label: asdict(outcome(decided, *pair)) for label, pair in pairs.items()}, **report}
    lines = [f"{len(decided)} decisions (memoryd's own approvals left out); {suggestion.why}"]
    for name, by_pair in report.items():
        for label, o in by_pair.items():
            lines.append(
                f"{name:<12} {label:<12} ≥{o['promote_at']:.2f} <{o['reject_below']:.2f}: "
                f"auto-approved {o['kept_auto_approved']} you approved, {o['dropped_auto_approved']} you rejected; "
                f"auto-rejected {o['kept_auto_rejected']} you approved, {o['dropped_auto_rejected']} you rejected; "
                f"{o['left_for_review']} left for you"
            )
    emit(
        args,
        {
            "decisions": len(decided),
            "current": {"auto_promote_threshold": current[0], "auto_reject_threshold": current[1]},
            "suggested": {
                "auto_promote_threshold": suggestion.promote_at,
                "auto_reject_threshold": suggestion.reject_below,
            },
            "why": suggestion.why,
            "outcomes": report,
        },
        "\n".join(lines),
    )
    return EXIT_OK


def _set(args: argparse.Namespace) -> int:
    from engram.store.calibration import current_thresholds, set_thresholds

    if not args.yes:
        if not sys.stdin.isatty():
            raise BadInput("thresholds set: add --yes to write memoryd's config.toml")
        now = current_thresholds()
        question = f"memoryd's thresholds {now[0]:.2f} / {now[1]:.2f} -> {args.approve:.2f} / {args.reject:.2f}? [y/N] "
        if input(question).strip().lower() not in ("y", "yes"):
            emit(args, {"written": False}, "nothing written")
            return EXIT_FINDING
    with open_with_key(args, lambda store: False) as store:
        details = set_thresholds(store, args.approve, args.reject)
    emit(args, {"written": True, **details}, f"wrote {details['new']} to {details['path']} (was {details['old']})")
    return EXIT_OK
