"""Secret-looking strings and personal data in text that is about to become a memory, or already is: one detector
for the importers' preview, the review queue and ``engram check``.

Patterns follow the common token formats (API keys, private keys, bearer tokens, cookies), credentials written
into text (a password in a URL, a connection string, ``password = ...``), and personal data (e-mail addresses,
phone numbers). They are tuned against what memories hold all the time and must not flag: hashes and UUIDs, dates
and versions, line counts, file paths. A match is reported by kind, where it is, and masked (its first four
characters, then stars), never whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PATTERNS: dict[str, re.Pattern[str]] = {
    "private key": re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    "AWS access key": re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    "Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    "OpenAI-style API key": re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"),
    "Google API key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    "JSON web token": re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    "bearer token": re.compile(r"(?i:\bbearer\s+[A-Za-z0-9._~+/=-]{20,})"),
    "cookie": re.compile(r"(?i:\b(?:set-)?cookie:\s*[^;\s]+=[^;\s]{16,})"),
    "password in URL": re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:[^\s/@]{3,}@[^\s/@]+"),
    "connection string": re.compile(
        r"(?i:\b(?:server|host|data source|address)\s*=\s*[^;\n]+;(?:[^;\n]*;)*?\s*(?:password|pwd)\s*=\s*[^;\s]+)"
    ),
    "password assignment": re.compile(
        r"(?i:(?<![a-z0-9])(?:password|passwd|secret|api[_-]?key|token)\s*[:=]\s*['\"]?[^\s'\"]{8,})"
    ),
    # "the staging DB password is Sup3rS3cret", "密码是 hunter42": a credential said in a sentence. The value must
    # hold a digit or a symbol, so that "the password is required" or "password is in the vault" is not one; only
    # the value (the group) is masked and redacted, so the sentence still says what it was.
    "password in prose": re.compile(
        r"(?i:(?<![a-z0-9])(?:password|passphrase|passwd|pwd)s?\s+(?:is|was|are)\s+(?:now\s+|still\s+)?"
        r"['\"\u201c]?(?P<value>(?=[^\s'\"\u201d]*[0-9!@#$%^&*])[^\s'\"\u201d,;]{6,}))"
        r"|(?:密码|口令)\s*(?:是|为|:|：)\s*(?P<zh>[A-Za-z0-9!@#$%^&*_.-]{4,})"
    ),
    "e-mail address": re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    "phone number": re.compile(
        r"(?<![\w+.-])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)|\d{1,4})[ .-]?\d{3,4}[ .-]?\d{3,4}"
        r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?![\w.-])"
    ),
}


# What each kind cannot match without (in the text lowercased): Python's ``re`` tries a pattern that starts with
# ``\b`` or an alternation at every offset, and ``check`` reads every memory; one pass for these words is a
# fraction of one such pattern's cost, and most memories hold none of them (docs/performance-history.md).
GATES: dict[str, tuple[str, ...]] = {
    "private key": ("private key",),
    "AWS access key": ("akia", "asia"),
    "GitHub token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "Slack token": ("xox",),
    "OpenAI-style API key": ("sk-",),
    "Google API key": ("aiza",),
    "JSON web token": ("eyj",),
    "bearer token": ("bearer",),
    "cookie": ("cookie",),
    "password in URL": ("://",),
    "connection string": ("password", "pwd"),
    "password assignment": ("passw", "secret", "api", "token"),
    "password in prose": ("passw", "passphrase", "pwd", "密码", "口令"),
    "e-mail address": ("@",),
}
_GATE = re.compile("|".join(re.escape(word) for words in GATES.values() for word in words))  # any of them: one pass
_DIGITS = str.maketrans("0123456789", "9999999999")
_PHONE_SHAPES = ("+9", "(999)", "999-999-9999", "999.999.9999")  # how the phone pattern's numbers start, or are


def _phone_shaped(text: str) -> bool:
    """Could ``text`` hold a phone number? (Its digits made alike, then substring tests, where a pattern starting
    with a digit is tried at every offset.)"""
    alike = text.translate(_DIGITS)
    return any(shape in alike for shape in _PHONE_SHAPES)


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int  # where the match is in the text scanned (for highlighting it)
    end: int
    masked: str  # the first four characters, then stars: enough to find it, not to use it


def scan(text: str) -> list[Finding]:
    """Every secret-looking string and piece of personal data in ``text``, in the order they occur."""
    lower = text.lower()
    kinds = (
        [kind for kind, words in GATES.items() if any(word in lower for word in words)] if _GATE.search(lower) else []
    )
    if _phone_shaped(text):
        kinds.append("phone number")
    found = []
    for kind in kinds:
        for match in PATTERNS[kind].finditer(text):
            start, end = _span(match)
            found.append(Finding(kind, start, end, mask(text[start:end])))
    return sorted(found, key=lambda f: (f.start, f.end))


def _span(match: re.Match[str]) -> tuple[int, int]:
    """Where the secret itself is: a pattern's ``value`` (or ``zh``) group where it has one (the words around it
    stay), else the whole match."""
    for group in ("value", "zh"):
        if group in match.re.groupindex and match.group(group) is not None:
            return match.span(group)
    return match.span()


def kinds_in(*texts: str) -> list[str]:
    """The kinds of what :func:`scan` finds in any of ``texts``, sorted (a promotion's title, triggers, body)."""
    return sorted({finding.kind for text in texts for finding in scan(text)})


def find_secrets(text: str) -> list[Finding]:
    """The first match of each kind in ``text`` (what an import's preview lists per item)."""
    first: dict[str, Finding] = {}
    for finding in scan(text):
        first.setdefault(finding.kind, finding)
    return list(first.values())


def masked(text: str, shown: str = "{}") -> str:
    """``text`` with each match shown masked, in ``shown`` (a title or body that holds one: a person sees where
    and what kind, not the value)."""
    out, at = [], 0
    for finding in scan(text):
        if finding.start >= at:
            out += [text[at : finding.start], shown.format(finding.masked)]
            at = finding.end
    return "".join(out) + text[at:]


def mask(value: str) -> str:
    return value[:4] + "*" * min(12, max(4, len(value) - 4))


def redact(text: str) -> str:
    """``text`` with every match (its value, where the pattern names one) replaced by ``[redacted <kind>]``."""
    for kind, pattern in PATTERNS.items():

        def replaced(match: re.Match[str], kind: str = kind) -> str:
            start, end = _span(match)
            whole = match.group(0)
            return whole[: start - match.start()] + f"[redacted {kind}]" + whole[end - match.start() :]

        text = pattern.sub(replaced, text)
    return text
