"""CogniRelay: continuity capsules (``memory/continuity/*.json``) become session memories rendered for a person
to read, and what they hold that lasts becomes pending promotions:

- ``stable_preferences`` → preference promotions (user and peer capsules);
- ``negative_decisions`` and ``rationale_entries`` whose status is ``active`` → decision promotions; an entry's
  ``supersedes`` tag names the entry it replaces (proposed as superseded once that one is a memory);
- ``active_constraints`` → warning promotions;
- a thread whose ``thread_descriptor.lifecycle`` is ``superseded`` → a proposed supersede of its session by its
  successor's, shown in the supersedes pane.

Capsules in subdirectories (archive envelopes, fallback snapshots, cold artifacts) are read only on request.
A capsule is imported once per subject (its key); promotions are keyed per item, so a later capsule adds only
its new preferences, decisions and constraints.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engram.store.domain import MemoryType
from engram.store.importers.base import (
    GLOBAL,
    UNSCOPED,
    Item,
    Malformed,
    Options,
    Origin,
    PromotionItem,
    SessionItem,
    Skipped,
    SupersedeItem,
    clamp,
    mapping,
    parse_time,
    read_json,
    relative,
    short_hash,
    slug_part,
    strings,
    text_of,
)

SOURCE = "importer-cognirelay"
KINDS = ("user", "peer", "thread", "task")
FRESHNESS_D = {"persistent": 0.9, "durable": 0.8, "situational": 0.5, "ephemeral": 0.2}
VERIFIED_A = {
    "user_confirmed": 0.9,
    "peer_confirmed": 0.85,
    "system_confirmed": 0.85,
    "externally_supported": 0.8,
    "self_attested": 0.5,
    "unverified": 0.4,
    "conflicted": 0.2,
}
SECTIONS = (
    ("top_priorities", "Top priorities"),
    ("active_concerns", "Active concerns"),
    ("active_constraints", "Active constraints"),
    ("open_loops", "Open loops"),
    ("drift_signals", "Drift signals"),
    ("working_hypotheses", "Working hypotheses"),
    ("long_horizon_commitments", "Long-horizon commitments"),
    ("session_trajectory", "Session trajectory"),
    ("curiosity_queue", "Curiosity queue"),
    ("trailing_notes", "Trailing notes"),
)


class CogniRelayImporter:
    name = "cognirelay"

    def read(self, path: Path, options: Options) -> Iterator[Item]:
        """``path`` is the CogniRelay repository (holding ``memory/continuity/``) or that directory itself."""
        folder = path / "memory" / "continuity" if (path / "memory" / "continuity").is_dir() else path
        for file in sorted(folder.rglob("*.json")):
            if file.parent != folder and not options.everything:
                yield Skipped(
                    Origin(relative(file, path)),
                    "archived, fallback or cold capsule (read only when asked for everything)",
                )
                continue
            data = read_json(file, path)
            if isinstance(data, Malformed):
                yield data
                continue
            yield from _capsule(
                data.get("capsule", data) if isinstance(data, dict) else data, Origin(relative(file, path))
            )


def _capsule(capsule: Any, origin: Origin) -> Iterator[Item]:
    if not isinstance(capsule, dict):
        yield Malformed(origin, "not a capsule object")
        return
    kind, subject = text_of(capsule.get("subject_kind")), text_of(capsule.get("subject_id"))
    state = capsule.get("continuity")
    updated = parse_time(capsule.get("updated_at"))
    if kind not in KINDS or not subject or not isinstance(state, dict) or updated is None:
        yield Malformed(origin, "capsule without subject_kind, subject_id, updated_at or continuity")
        return
    key = f"cognirelay:{kind}:{subject}"
    origin = Origin(origin.file, key=f"{kind}:{subject}")
    descriptor = mapping(capsule.get("thread_descriptor"))
    title = text_of(descriptor.get("label")) or f"{kind.capitalize()} {subject}: continuity"
    scope = GLOBAL if kind in ("user", "peer") else UNSCOPED
    yield SessionItem(
        key=key,
        slug=f"{updated:%Y-%m-%d}-cognirelay-{slug_part(kind)}-{slug_part(subject)}-{short_hash(key)}",
        title=title,
        body=_render(capsule, state, descriptor, origin),
        scope_hash=scope,
        created_at=updated,
        origin=origin,
        source=SOURCE,
        tags=["cognirelay", kind, *strings(descriptor.get("keywords"))][:8],
    )
    scores = _dura(capsule)

    def promotion(
        item_key: str, mtype: MemoryType, item_title: str, body: str, why: str, supersedes: tuple[str, ...] = ()
    ) -> PromotionItem:
        return PromotionItem(
            key=f"{key}:{item_key}",
            session_key=key,
            type=mtype,
            title=item_title[:120],
            body=body,
            scope_hash=scope,
            origin=Origin(origin.file, key=f"{kind}:{subject} {item_key}"),
            dura=scores,
            reasoning=f"CogniRelay {kind} capsule {subject}: {why}. Imported from {origin.file}.",
            supersedes_keys=supersedes,
        )

    for pref in capsule.get("stable_preferences") or []:
        if isinstance(pref, dict) and text_of(pref.get("tag")) and text_of(pref.get("content")):
            yield promotion(
                f"pref:{pref['tag'].strip()}",
                MemoryType.PREFERENCE,
                pref["content"].strip(),
                pref["content"].strip(),
                f"stable preference `{pref['tag'].strip()}`",
            )
    for decision in state.get("negative_decisions") or []:
        if isinstance(decision, dict) and text_of(decision.get("decision")):
            text = decision["decision"].strip()
            yield promotion(
                f"no:{short_hash(text)}",
                MemoryType.DECISION,
                f"Decided not to: {text}",
                f"Decided not to: {text}\n\nWhy: {text_of(decision.get('rationale')) or '-'}",
                "negative decision",
            )
    for entry in state.get("rationale_entries") or []:
        if not isinstance(entry, dict) or text_of(entry.get("status")) != "active" or not text_of(entry.get("tag")):
            continue
        tag, old = entry["tag"].strip(), text_of(entry.get("supersedes"))
        body = "\n\n".join(
            x
            for x in (
                text_of(entry.get("summary")),
                _prefixed("Reasoning: ", entry.get("reasoning")),
                _listed("Alternatives considered", entry.get("alternatives_considered")),
                _listed("Depends on", entry.get("depends_on")),
            )
            if x
        )
        yield promotion(
            f"rationale:{tag}",
            MemoryType.DECISION,
            text_of(entry.get("summary")) or tag,
            body,
            f"active {text_of(entry.get('kind')) or 'decision'} rationale `{tag}`"
            + (f", superseding `{old}`" if old else ""),
            (f"{key}:rationale:{old}",) if old else (),
        )
    for constraint in strings(state.get("active_constraints")):
        yield promotion(
            f"constraint:{short_hash(constraint)}", MemoryType.WARNING, constraint, constraint, "active constraint"
        )
    if text_of(descriptor.get("lifecycle")) == "superseded" and text_of(descriptor.get("superseded_by")):
        successor = descriptor["superseded_by"].strip()
        yield SupersedeItem(
            newer_key=f"cognirelay:{kind}:{successor}",
            older_key=key,
            origin=origin,
            reason=f"CogniRelay: thread {subject} superseded by {successor}",
        )


def _dura(capsule: dict[str, Any]) -> dict[str, float]:
    """D from ``freshness.freshness_class``, U from how much the capsule says, R from
    ``confidence.continuity``, A from ``verification_state.status``."""
    fresh = mapping(capsule.get("freshness"))
    confidence = mapping(capsule.get("confidence"))
    verified = mapping(capsule.get("verification_state"))
    continuity = confidence.get("continuity")
    return {
        "D": FRESHNESS_D.get(text_of(fresh.get("freshness_class")), 0.6),
        "U": 0.7,
        "R": clamp(continuity) if isinstance(continuity, int | float) else 0.5,
        "A": VERIFIED_A.get(text_of(verified.get("status")), 0.5),
    }


def _render(capsule: dict[str, Any], state: dict[str, Any], descriptor: dict[str, Any], origin: Origin) -> str:
    kind, subject = capsule["subject_kind"], capsule["subject_id"]
    lines = [
        f"# {text_of(descriptor.get('label')) or subject}",
        "",
        f"CogniRelay {kind} capsule `{subject}`, updated {text_of(capsule.get('updated_at'))}"
        + (f", lifecycle {descriptor['lifecycle']}" if text_of(descriptor.get("lifecycle")) else "")
        + ".",
    ]
    if text_of(state.get("stance_summary")):
        lines += ["", f"**Stance:** {state['stance_summary'].strip()}"]
    for field, heading in SECTIONS:
        listed = _listed(heading, state.get(field))
        if listed:
            lines += ["", listed]
    decisions = [
        f"- not {d['decision'].strip()}: {text_of(d.get('rationale'))}"
        for d in state.get("negative_decisions") or []
        if isinstance(d, dict) and text_of(d.get("decision"))
    ]
    if decisions:
        lines += ["", "## Negative decisions", "", *decisions]
    rationale = [
        f"- `{e.get('tag')}` ({text_of(e.get('kind'))}, {text_of(e.get('status'))}): {text_of(e.get('summary'))}"
        for e in state.get("rationale_entries") or []
        if isinstance(e, dict)
    ]
    if rationale:
        lines += ["", "## Rationale", "", *rationale]
    prefs = [
        f"- `{p.get('tag')}`: {text_of(p.get('content'))}"
        for p in capsule.get("stable_preferences") or []
        if isinstance(p, dict)
    ]
    if prefs:
        lines += ["", "## Stable preferences", "", *prefs]
    lines += ["", f"_Imported from CogniRelay `{origin.file}`._"]
    return "\n".join(lines) + "\n"


def _prefixed(prefix: str, value: Any) -> str:
    return f"{prefix}{value.strip()}" if text_of(value) else ""


def _listed(heading: str, values: Any) -> str:
    items = strings(values)
    return f"## {heading}\n\n" + "\n".join(f"- {v}" for v in items) if items else ""
