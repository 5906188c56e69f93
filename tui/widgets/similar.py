"""What the promotion under the cursor resembles: the closest memories and other pending promotions, one line
each (how similar, what it is, its title, why), in the queue's detail. ``tab`` reaches it; ``enter`` opens a
line, ``m`` merges the promotion into a memory of it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engram.store.secrets import masked
from engram.tui.keymap import SIMILAR_ACTIONS, bindings
from engram.tui.widgets.safe import plain

if TYPE_CHECKING:  # numpy and rapidfuzz load with the first look for similar promotions
    from engram.store.similar import Similar


class SimilarList(OptionList):
    BINDINGS = bindings(SIMILAR_ACTIONS)

    class Chosen(Message):
        """A line was opened (``merge`` False) or chosen to merge into (True)."""

        def __init__(self, found: Similar, merge: bool) -> None:
            super().__init__()
            self.found, self.merge = found, merge

    class Left(Message):
        """The person went back to the queue's table."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.found: list[Similar] = []

    def show(self, memories: Sequence[Similar], pending: Sequence[Similar], scope: str) -> None:
        """Replace the lines: memories first, then pending promotions; the other scopes' marked as such."""
        self.clear_options()
        self.found = [*memories, *pending]
        self.display = bool(self.found)
        for found in self.found:
            self.add_option(Option(_line(found, scope)))

    def _highlighted_found(self) -> Similar | None:
        index = self.highlighted
        return self.found[index] if index is not None and 0 <= index < len(self.found) else None

    def action_open(self) -> None:
        if found := self._highlighted_found():
            self.post_message(self.Chosen(found, merge=False))

    def action_merge(self) -> None:
        if found := self._highlighted_found():
            self.post_message(self.Chosen(found, merge=True))

    def action_back(self) -> None:
        self.post_message(self.Left())


def _line(found: Similar, scope: str) -> Text:
    what = "memory" if found.kind == "memory" else f"#{found.key}"
    where = "" if found.scope_hash == scope else f" (scope {found.scope_hash[:6]})"
    line = Text.assemble(
        (f"{found.score:>4.0%} ", "bold"),
        (f"{what:<7}", "dim"),
        plain(masked(found.title)),
        (f"{where} · {found.reason}", "dim"),
    )
    line.no_wrap, line.overflow = True, "ellipsis"  # one line each: the reason is cut first
    return line
