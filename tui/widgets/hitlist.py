"""The search pane's result list (a :class:`LineList`).

A keystroke replaces the whole result set. A DataTable renders every visible cell again through Rich's padding
and wrapping (most of a keystroke's budget at 200x50); here a line is one Text cropped to the width,
and only the lines on screen are drawn, so results follow typing with no visible lag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import set_cell_size
from rich.style import Style
from rich.text import Text

from engram.tui.widgets.linelist import LineList
from engram.tui.widgets.safe import plain

if TYPE_CHECKING:  # numpy and rapidfuzz load with the search index's worker, not with the console
    from engram.store.search.rows import Hit

COLUMNS = (("type", 10), ("scope", 12), ("state", 16), ("created", 10))  # then the title takes the rest
NARROW = 100  # below this width the title keeps room to be read: type and a shorter state only
NARROW_COLUMNS = (("type", 10), ("state", 12))  # "alive locked" still fits
GAP = 2
MATCH = Style(bold=True, underline=True)


class HitList(LineList):
    """Two lines per hit: type, scope, state, created and the title with the typed words highlighted; under the
    title, the words in the body that matched, with a little around them (why it was found). The second line is
    filled in once the pane has read the bodies (``snippets``); a sensitive memory's body is not read for it."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.hits: Sequence[Hit] = ()
        self.words: list[str] = []
        self.locked: frozenset[str] = frozenset()
        self.snippets: dict[str, str] = {}

    def show(
        self, hits: Sequence[Hit], words: list[str], locked: frozenset[str] = frozenset(), keep: str | None = None
    ) -> None:
        """Replace the list. A new search puts the cursor back on the best hit; the same search again (more hits
        listed, or an index refreshed under it) keeps it on the hit ``keep`` (its row, if that hit is gone) and
        the body lines already read. Encrypted hits of ``locked`` scopes say so (their bodies are not searched
        until an unlock)."""
        slugs = [hit.slug for hit in hits]
        cursor = 0 if keep is None else slugs.index(keep) if keep in slugs else self.cursor
        if keep is None or words != self.words:
            self.snippets = {}
        self.hits, self.words, self.locked = hits, words, locked
        self.reset(cursor)

    def add_snippets(self, hits: Sequence[Hit], snippets: dict[str, str]) -> None:
        """The bodies' lines for ``hits``, if they are still the ones shown."""
        if hits is self.hits:
            self.snippets.update(snippets)
            self.refresh()

    @property
    def row_lines(self) -> int:
        return 2

    @property
    def row_count(self) -> int:
        return len(self.hits)

    @property
    def current(self) -> Hit | None:
        return self.hits[self.cursor] if 0 <= self.cursor < len(self.hits) else None

    def row_text(self, row: int) -> Text:
        """What line ``row`` shows (the typed words highlighted in the title)."""
        hit = self.hits[row]
        cells = {
            "type": hit.type,
            "scope": hit.scope_hash,
            "created": hit.created_at[:10],
            "state": hit.decay_state
            + ((" locked" if hit.scope_hash in self.locked else " enc") if hit.encrypted else ""),
        }
        title = plain(hit.title)
        title.highlight_words(self.words, style=MATCH, case_sensitive=False)
        return self._line(cells, title)

    def row_detail(self, row: int, line: int) -> Text:
        hit = self.hits[row]
        indent = " " * (1 + sum(width + GAP for _, width in self._columns()))
        if hit.encrypted:
            said = "locked: ctrl+u unlocks" if hit.scope_hash in self.locked else "sensitive: enter opens it"
            return Text(indent + said, style="dim italic", no_wrap=True, end="")
        text = plain(self.snippets.get(hit.slug, ""), "dim")
        text.highlight_words(self.words, style=MATCH, case_sensitive=False)
        return Text(indent, no_wrap=True, end="").append_text(text)

    def _columns(self) -> tuple[tuple[str, int], ...]:
        return COLUMNS if self.size.width >= NARROW else NARROW_COLUMNS

    def header_text(self) -> Text:
        return self._line({name: name for name, _ in COLUMNS}, Text("title"))

    def _line(self, cells: dict[str, str], last: Text) -> Text:
        line = Text(" ", no_wrap=True, end="")
        for name, width in self._columns():
            line.append(set_cell_size(cells[name], width) + " " * GAP)
        line.append_text(last)
        return line
