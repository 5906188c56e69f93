"""Where a memory file's frontmatter ends and its body begins.

Split out of :mod:`engram.store.frontmatter` so that a reader that needs the body alone (a search's snippet) does
not load PyYAML and pydantic for it; the frontmatter's parser splits through it too, so both agree on every file.
"""

from __future__ import annotations

from dataclasses import dataclass

FENCE = "---\n"


@dataclass(frozen=True)
class Parts:
    header: str  # the YAML between the fences
    lead: str  # the blank lines between the closing fence and the body (kept to write the file back alike)
    body: str


def split(text: str) -> Parts | str:
    """The parts of a memory file's text, or why it has none (a reason a person can act on)."""
    if not text.startswith(FENCE):
        return "no frontmatter: file does not start with '---'"
    end = text.find("\n" + FENCE, len(FENCE) - 1)
    if end < 0:
        return "frontmatter is not closed by a '---' line"
    rest = text[end + 1 + len(FENCE) :]
    rest = rest[1:] if rest.startswith("\n") else rest
    body = rest.lstrip("\n")
    return Parts(text[len(FENCE) : end + 1], rest[: len(rest) - len(body)], body)
