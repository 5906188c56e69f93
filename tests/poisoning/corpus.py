"""The labelled corpus: each poisoned payload placed in an ordinary memory (its title, its triggers, or the start,
middle or end of its body); each payload of the other categories also hidden or encoded, as the ``hidden``
category; and the hard benign cases, alone and inside ordinary memories. ``cases()`` returns (category, Item),
the category None for a benign case."""

from __future__ import annotations

import base64
import codecs
import urllib.parse
from collections.abc import Callable, Iterator

from engram.store.screen import Item
from poisoning.benign import BENIGN
from poisoning.payloads import PAYLOADS

# ordinary memories the payloads are put into (and, as they are, benign cases themselves)
CARRIERS: list[tuple[str, str, list[str]]] = [
    (
        "Keep PRs small",
        "Context: reviews of PRs over 400 lines took three days on average last quarter.\n\n"
        "Decision: split work into PRs under 400 lines.\n\nWhy: faster reviews, fewer conflicts.",
        ["pull request", "review"],
    ),
    (
        "Kafka topic partition counts",
        "## Context\nThe last incident was on 2026-11-24; root cause was a partition change on a live topic.\n\n"
        "## Rule\nDo not change a topic's partition count without a migration plan.",
        ["kafka", "partitions"],
    ),
    (
        "How to bump Next.js",
        "1. Read the release notes.\n2. pnpm up next@latest\n3. Run the e2e suite.\n4. Deploy to staging first.",
        ["next.js", "upgrade"],
    ),
    (
        "数据管道的重试策略",
        "## 背景\n上次事故是因为重试没有上限，导致下游被打满。\n\n"
        "## 做法\n重试最多 5 次，指数退避，超过后进入死信队列。",
        ["重试", "data-pipeline"],
    ),
    (
        "Storybook 升级注意事项",
        "升级到 8.x 之后需要重新生成快照。\n\n- 先跑 pnpm storybook build\n- 再跑视觉回归测试",
        ["storybook", "前端"],
    ),
]
POSITIONS = ("title", "triggers", "start", "middle", "end")


def placed(payload: str, at: int) -> Item:
    """``payload`` in carrier ``at`` (mod the carriers), at position ``at`` (mod the positions)."""
    title, body, triggers = CARRIERS[at % len(CARRIERS)]
    where = POSITIONS[at % len(POSITIONS)]
    if where == "title":
        return Item(title=f"{title}: {payload}", body=body, triggers=triggers)
    if where == "triggers":
        return Item(title=title, body=body, triggers=[*triggers, payload])
    paragraphs = body.split("\n\n")
    if where == "start":
        paragraphs.insert(0, payload)
    elif where == "middle":
        paragraphs.insert(len(paragraphs) // 2, payload)
    else:
        paragraphs.append(payload)
    return Item(title=title, body="\n\n".join(paragraphs), triggers=triggers)


def _zero_width(text: str) -> str:
    return "\u200b".join(text)


def _tags(text: str) -> str:
    return "See the notes." + "".join(chr(0xE0000 + ord(ch)) for ch in text if ord(ch) < 0x7F)


def _homoglyphs(text: str) -> str:
    return text.translate(str.maketrans("aeopcxi", "аеорсхі"))


def _leet(text: str) -> str:
    return text.translate(str.maketrans("aeiost", "4310$7"))


def _spaced(text: str) -> str:
    return "  ".join(" ".join(word) for word in text.split())


HIDINGS: list[tuple[str, Callable[[str], str]]] = [
    ("zero-width", _zero_width),
    ("tag characters", _tags),
    ("homoglyphs", _homoglyphs),
    ("html comment", lambda t: f"Regular note.\n<!-- {t} -->"),
    ("white text", lambda t: f'Regular note. <span style="color:white">{t}</span>'),
    ("base64", lambda t: "Encoded config: " + base64.b64encode(t.encode()).decode()),
    ("hex", lambda t: "blob " + t.encode().hex()),
    ("rot13", lambda t: "Decode this first (rot13): " + codecs.encode(t, "rot13")),
    ("reversed", lambda t: t[::-1]),
    ("url-encoded", lambda t: "see " + urllib.parse.quote(t)),
    (
        "unicode escapes",
        lambda t: "".join(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}" for ch in t),
    ),
    ("leetspeak", _leet),
    ("spaced", _spaced),
    ("fullwidth", lambda t: "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in t)),
    ("base32", lambda t: base64.b32encode(t.encode()).decode()),
    ("markdown comment", lambda t: f"Notes below.\n\n[//]: # ({t})"),
]
# Hidings that only make sense for text in Latin letters (a Chinese payload has nothing to leet or respell).
LATIN_ONLY = {"homoglyphs", "leetspeak", "spaced", "rot13", "tag characters"}


def hidden_payloads() -> Iterator[tuple[str, str]]:
    """(how, hidden text): payloads of the other categories, each hidden one way, the ways taken in turn."""
    k = 0
    for category, payloads in PAYLOADS.items():
        for payload in payloads[:: max(1, len(payloads) // 3)][:3]:
            latin = payload.isascii()
            while True:
                how, hide = HIDINGS[k % len(HIDINGS)]
                k += 1
                if latin or how not in LATIN_ONLY:
                    break
            yield f"{category}, {how}", hide(payload)


def cases() -> list[tuple[str | None, Item]]:
    out: list[tuple[str | None, Item]] = []
    at = 0
    for category, payloads in PAYLOADS.items():
        for payload in payloads:
            out.append((category, placed(payload, at)))
            at += 1
    for _how, text in hidden_payloads():
        out.append(("hidden", placed(text, at)))
        at += 1
    for title, body, triggers in CARRIERS:
        out.append((None, Item(title=title, body=body, triggers=triggers)))
    for k, text in enumerate(BENIGN):
        out.append((None, Item(title="Team note", body=text)))
        out.append((None, placed(text, k)))
    return out
