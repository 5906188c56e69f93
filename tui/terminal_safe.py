"""Output that cannot drive the terminal: data (titles, bodies, memoryd's ``tool`` field, file names) may hold
escape sequences, and printed raw they would write to the clipboard (OSC 52), clear the screen or retitle the
window. Every CLI line goes through :class:`SafeWriter`, which shows each such character as its ``\\uXXXX``
escape instead: readable, and in ``--json`` output still the same string once parsed."""

from __future__ import annotations

import re
from typing import TextIO

# C0 controls but tab and newline, DEL, C1 controls, and the invisible bidi and line-separator marks that can
# reorder or hide what is shown
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str, allow: str = "") -> str:
    """``text`` with every unsafe character (but those in ``allow``) written as its ``\\uXXXX`` escape."""
    return UNSAFE.sub(lambda m: m.group() if m.group() in allow else f"\\u{ord(m.group()):04x}", text)


class SafeWriter:
    """A text stream's stand-in that makes everything written through it :func:`visible`. ``allow`` keeps the
    characters the program writes on purpose (the carriage return of a progress line on stderr)."""

    def __init__(self, stream: TextIO, allow: str = "") -> None:
        self._stream = stream
        self._allow = allow

    def write(self, text: str) -> int:
        return self._stream.write(visible(text, self._allow))

    def __getattr__(self, name: str) -> object:  # flush, isatty, fileno, encoding...
        return getattr(self._stream, name)
