"""Strings that look like credentials, flagged in an import's preview so a person sees them before a
transcript full of them becomes a memory. Patterns follow the common token formats; matches are reported by
kind with the value masked, never printed whole."""

from __future__ import annotations

import re
from dataclasses import dataclass

PATTERNS: dict[str, re.Pattern[str]] = {
    "private key": re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
    "AWS access key": re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    "Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    "OpenAI-style API key": re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"),
    "Google API key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    "JSON web token": re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    "bearer token": re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{20,}"),
    "cookie": re.compile(r"(?i)\b(?:set-)?cookie:\s*[^;\s]+=[^;\s]{16,}"),
    "password assignment": re.compile(
        r"(?i)\b(?:password|passwd|secret|api[_-]?key|token)\s*[:=]\s*['\"]?[^\s'\"]{8,}"
    ),
}


@dataclass(frozen=True)
class SecretHit:
    kind: str
    masked: str  # the first four characters, then stars: enough to find it, not to use it


def redact(text: str) -> str:
    """``text`` with every secret-looking string replaced by ``[redacted <kind>]``."""
    for kind, pattern in PATTERNS.items():
        text = pattern.sub(f"[redacted {kind}]", text)
    return text


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret-looking string in ``text``, at most one per kind."""
    hits = []
    for kind, pattern in PATTERNS.items():
        match = pattern.search(text)
        if match:
            value = match.group(0)
            hits.append(SecretHit(kind, value[:4] + "*" * min(12, max(4, len(value) - 4))))
    return hits
