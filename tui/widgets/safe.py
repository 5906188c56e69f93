"""What the console shows cannot drive the terminal, and data is never read as markup.

Titles, bodies, entity names, memoryd's ``tool`` field and file names may hold escape sequences (OSC 52 writes
the clipboard, ``ESC [2J`` clears the screen, OSC 2 retitles the window) and Rich markup (``[/x]`` would even
raise). Textual passes control characters in a widget's text straight to the terminal, so two layers:

- :func:`plain` makes a data string a :class:`~rich.text.Text` that shows each control character as its
  ``\\uXXXX`` escape and is never parsed as markup: what panes put in tables, trees, options and headings;
- :class:`ControlFilter`, a line filter on every line the console draws, drops whatever control character
  got past the first layer (zero cells wide, so the layout is unchanged): the guarantee.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.color import Color
from textual.filter import LineFilter

from engram.tui.terminal_safe import UNSAFE, visible


def plain(text: str, style: str = "") -> Text:
    """``text`` shown as it is: control characters as escapes, brackets as brackets."""
    return Text(visible(text), style=style)


class ControlFilter(LineFilter):
    """Removes control characters from the text of every segment drawn (Textual's own sequences are not in
    segment text, so they are untouched)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if not UNSAFE.search("".join(text for text, _, control in segments if not control)):
            return segments  # the common case: one scan of the line, nothing copied
        return [
            Segment(UNSAFE.sub("", text), style, control) if not control else Segment(text, style, control)
            for text, style, control in segments
        ]
