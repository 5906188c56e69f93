"""``screen``: every field of an item read through every view ``reveal`` offers, every rule applied, and the lane
decided from the findings and the context signals."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from engram.store.screen import reveal
from engram.store.screen.gates import Branches, first
from engram.store.screen.rules import (
    DISCUSSION,
    OFFICIAL_INSTALLERS,
    QUARANTINE,
    QUOTED,
    REVIEW,
    RULES,
    TOGETHER,
    Rule,
    Together,
)
from engram.store.screen.typosquats import typosquats
from engram.store.screen.verdict import CLEAN, Finding, Item, Screening, context_signals
from engram.store.secrets import find_secrets, masked

EXCERPT = 80  # characters of text around a finding
DEPTH = 2  # hidden inside hidden inside the text: read that deep

# A secret written next to an order to use it: a planted credential (the agent will send it where told).
PLANTING = re.compile(
    r"\b(?:use|always use|authenticate with|log ?in with|sign in with|set|export|configure|paste|put|switch to|"
    r"replace [^.\n]{0,20} with|the (?:new|correct|right|real|updated|current) (?:key|token|password|credential)s? "
    r"(?:is|are)|from now on)\b|(?:使用|改用|一律用|统一用|新的?(?:密钥|令牌|密码)(?:是|为))"
)


def screen(item: Item, allowed: frozenset[str] = frozenset()) -> Screening:
    """The lane of ``item`` and every finding that put it there. A finding about addresses that are all on
    ``allowed`` (hosts a person trusts, and their subdomains) is lowered to review, never dropped."""
    fields = {"title": item.title, "triggers": "\n".join(item.triggers), "body": item.body, "reasoning": item.reasoning}
    findings: dict[tuple[str, str], Finding] = {}
    for name, text in fields.items():
        if text:
            for finding in _read(text, name, "", DEPTH, allowed):
                findings.setdefault((finding.rule, finding.field), finding)
    found, signals = tuple(findings.values()), context_signals(item)
    return Screening(_lane(found, signals), found, signals)


def _lane(findings: Sequence[Finding], signals: Sequence[str]) -> str:
    """Quarantine for any finding of that weight, for review findings of two categories, or for one beside
    context (a signal, or text aimed at the memory machinery); review for any other finding. Context alone
    decides nothing."""
    if not findings:
        return CLEAN
    if any(f.weight == QUARANTINE for f in findings):
        return QUARANTINE
    categories = {f.category for f in findings if not f.rule.startswith("context.")}
    context = bool(signals) or any(f.rule.startswith("context.") for f in findings)
    return QUARANTINE if len(categories) >= 2 or (categories and context) else REVIEW


def _read(text: str, name: str, how: str, depth: int, allowed: frozenset[str] = frozenset()) -> Iterable[Finding]:
    """Findings in ``text`` of field ``name`` (``how`` it was uncovered, "" when written plainly), then in what
    it hides, ``depth`` levels down."""
    yield from _hidden(text, name)
    plain = reveal.normalised(text)
    seen: set[str] = set()
    views = list(dict.fromkeys((plain, reveal.deobfuscated(plain))))
    for view in views:
        active = GATES.active(view)
        for rule, match in _matches(view, active, seen):
            if not _innocent(rule, view, match):
                seen.add(rule.id)
                weight = _allowed(rule.category, rule.weight, _line(view, match), allowed)
                yield Finding(rule.id, rule.category, name, _excerpt(view, match), how, weight)
        for together, sentence in _together(view, active, seen):
            seen.add(together.id)
            weight = _allowed(together.category, together.weight, sentence, allowed)
            yield Finding(together.id, together.category, name, _cut(sentence), how, weight)
    yield from _planted(text, views, name, how)
    squats = {squat for view in views for squat in typosquats(view)}
    for squat in sorted(squats)[:1]:
        yield Finding("supply.typosquat", "supply_chain", name, squat, how, QUARANTINE)
    if depth:
        turns = frozenset(t for t in reveal.TURNS if t not in how)  # a line turned is not turned back
        for hidden in reveal.uncovered(reveal.unhidden(text), turns=turns):
            label = hidden.how if not how else f"{how}, then {hidden.how}"
            inner = list(_read(hidden.text, name, label, depth - 1, allowed))
            yield from inner
            if inner or hidden.suspicious:  # hiding an attack (or hiding text at all, where it has no other use)
                yield Finding(_hiding_rule(hidden), "hidden", name, _cut(hidden.text), label, QUARANTINE)


GATES = Branches()
RULE_BRANCHES = [(rule, GATES.add(rule.pattern)) for rule in RULES]
TOGETHER_BRANCHES = [(rule, [GATES.add(part) for part in rule.parts]) for rule in TOGETHER]


def _matches(view: str, active: set[int], skip: set[str]) -> Iterable[tuple[Rule, re.Match[str]]]:
    """The first match of each rule not in ``skip``, running only the branches ``active`` on the view."""
    for rule, compiled in RULE_BRANCHES:
        if rule.id not in skip:
            match = first(compiled, active, view)
            if match:
                yield rule, match


SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|[。！？；\n]+")


def _together(view: str, active: set[int], skip: set[str]) -> Iterable[tuple[Together, str]]:
    """The first sentence of the view holding a word of each part of a concept rule (rules already found
    skipped): a sentence, so that words of one concept in a long memory's distant paragraphs are not taken
    together."""
    for rule, parts in TOGETHER_BRANCHES:
        if rule.id in skip or not all(first(part, active, view) for part in parts):  # most texts stop here
            continue
        for sentence in SENTENCE_END.split(view):
            if all(first(part, active, sentence) for part in parts):
                yield rule, sentence
                break


URL_HOST = re.compile(r"\b(?:https?|ftp|s3|git)://([a-z0-9.-]+)|\b[\w.+-]+@([a-z0-9-]+(?:\.[a-z0-9-]+)+)")
ABOUT_HOSTS = frozenset({"command", "supply_chain", "exfiltration"})


def _allowed(category: str, weight: str, text: str, allowed: frozenset[str]) -> str:
    """``weight``, lowered to review when every address in ``text`` is a trusted host (or under one)."""
    if weight != QUARANTINE or not allowed or category not in ABOUT_HOSTS:
        return weight
    hosts = {a or b for a, b in URL_HOST.findall(text)}
    trusted = all(any(h == t or h.endswith("." + t) for t in allowed) for h in hosts)
    return REVIEW if hosts and trusted else weight


def _line(view: str, match: re.Match[str]) -> str:
    """The line of ``view`` the match is on (the addresses an allowlist judges are on it, not always in it)."""
    end = view.find("\n", match.end())
    return view[view.rfind("\n", 0, match.start()) + 1 : end if end >= 0 else len(view)]


def relaxed(found: Screening, allowed: frozenset[str]) -> Screening:
    """``found`` with the allowlist applied afterwards, by the addresses in each finding's excerpt (for a screen
    made where the allowlist was not at hand: a worker process)."""
    if not allowed or found.lane == CLEAN:
        return found
    findings = tuple(replace(f, weight=_allowed(f.category, f.weight, f.excerpt, allowed)) for f in found.findings)
    return Screening(_lane(findings, found.signals), findings, found.signals)


def _hiding_rule(hidden: reveal.Uncovered) -> str:
    if hidden.how.endswith("comment"):
        return "hidden.comment"
    return "hidden.markup" if hidden.suspicious else "hidden.encoded"


def _hidden(text: str, name: str) -> Iterable[Finding]:
    invisible = reveal.invisible_in_words(text)
    if invisible:
        yield Finding(
            "hidden.invisible", "hidden", name, ", ".join(sorted(set(invisible))), "invisible characters", REVIEW
        )
    if reveal.BIDI_OVERRIDE.search(text) and re.search(r"[A-Za-z]", text):
        codes = sorted({f"U+{ord(c):04X}" for c in reveal.BIDI_OVERRIDE.findall(text)})
        yield Finding("hidden.bidi", "hidden", name, ", ".join(codes), "bidirectional controls", REVIEW)
    mixed = reveal.mixed_words(text)
    if mixed:
        yield Finding("hidden.homoglyph", "hidden", name, ", ".join(mixed[:3]), "look-alike letters", REVIEW)


def _innocent(rule: Rule, view: str, match: re.Match[str]) -> bool:
    """A shell pipe from an installer its project publishes for that pipe; words an attack uses, quoted in a note
    about attacks (a note on prompt injection names the phrases it guards against). Quoting does not excuse the
    shapes that act by themselves when rendered or run: links that carry data out, tool calls."""
    if rule.id == "command.pipe_shell" and OFFICIAL_INSTALLERS.search(match.group()):
        return True
    if rule.category in ("exfiltration", "credential") or rule.id == "command.tool_call":
        return False
    quoted = any(q.start() <= match.start() and match.end() <= q.end() for q in QUOTED.finditer(view))
    return quoted and bool(DISCUSSION.search(view))


def _planted(text: str, views: Sequence[str], name: str, how: str) -> Iterable[Finding]:
    """A secret next to an order to use it, in the text as written or as read through its leetspeak."""
    if not any(PLANTING.search(view) for view in views):
        return
    for source in dict.fromkeys((text, reveal.unhidden(text), *views[1:])):
        secrets = [s for s in find_secrets(source) if s.kind not in ("e-mail address", "phone number")]
        if secrets:
            yield Finding(
                "credential.planted", "credential", name, f"{secrets[0].kind}: {secrets[0].masked}", how, QUARANTINE
            )
            return


def _excerpt(text: str, match: re.Match[str]) -> str:
    start = max(0, match.start() - 20)
    piece = " ".join(text[start : max(match.end(), start + 20) + 20].split())
    return _cut(("…" if start else "") + piece)


def _cut(text: str) -> str:
    """One line of at most EXCERPT characters, secrets in it masked (an excerpt is shown and kept in reports)."""
    flat = " ".join(masked(text).split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1] + "…"
