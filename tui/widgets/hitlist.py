"""The search pane's result list, drawn a line at a time with Textual's line API.

A keystroke replaces the whole result set. A DataTable renders every visible cell again through Rich's padding
and wrapping (about 40 ms at 200x50, most of a keystroke's budget); here a line is one Text cropped to the width,
and only the lines on screen are drawn, so results follow typing with no visible lag.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from store.search import Hit

COLUMNS = (("type", 10), ("scope", 12), ("state", 16), ("created", 10))  # then the title takes the rest
NARROW = 100  # below this width the title keeps room to be read: type and a shorter state only
NARROW_COLUMNS = (("type", 10), ("state", 12))  # "alive locked" still fits
GAP = 2
MATCH = Style(bold=True, underline=True)


class HitList(ScrollView, can_focus=True):
    """A header line, then one line per hit; the cursor row is highlighted and Enter (or a click) selects it."""

    COMPONENT_CLASSES = {"hitlist--header", "hitlist--cursor", "hitlist--stripe"}
    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "move('-page')", "Page up", show=False),
        Binding("pagedown", "move('page')", "Page down", show=False),
        Binding("home", "move('-all')", "First", show=False),
        Binding("end", "move('all')", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    cursor: reactive[int] = reactive(0, repaint=False)

    class Selected(Message):
        """Enter or a click on a hit."""

        def __init__(self, hit_list: HitList, hit: Hit) -> None:
            super().__init__()
            self.hit_list, self.hit = hit_list, hit

        @property
        def control(self) -> HitList:
            return self.hit_list

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.hits: Sequence[Hit] = ()
        self.words: list[str] = []
        self.locked: frozenset[str] = frozenset()

    def show(self, hits: Sequence[Hit], words: list[str], locked: frozenset[str] = frozenset()) -> None:
        """Replace the list (a new search): the cursor goes back to the best hit. Encrypted hits of ``locked``
        scopes say so (their bodies are not searched until an unlock)."""
        self.hits, self.words, self.locked = hits, words, locked
        self.virtual_size = Size(self.size.width, len(hits) + 1)
        self.set_reactive(HitList.cursor, 0)
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    @property
    def current(self) -> Hit | None:
        return self.hits[self.cursor] if 0 <= self.cursor < len(self.hits) else None

    def row_text(self, row: int) -> Text:
        """What line ``row`` shows (the typed words highlighted in the title)."""
        hit = self.hits[row]
        cells = {"type": hit.type, "scope": hit.scope_hash, "created": hit.created_at[:10],
                 "state": hit.decay_state + ((" locked" if hit.scope_hash in self.locked else " enc")
                                             if hit.encrypted else "")}
        title = Text(hit.title)
        title.highlight_words(self.words, style=MATCH, case_sensitive=False)
        return self._line(cells, title)

    def _line(self, cells: dict[str, str], last: Text) -> Text:
        line = Text(" ", no_wrap=True, end="")
        for name, width in COLUMNS if self.size.width >= NARROW else NARROW_COLUMNS:
            line.append(set_cell_size(cells[name], width) + " " * GAP)
        line.append_text(last)
        return line

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            style = self.get_component_rich_style("hitlist--header")
            return self._strip(self._line({name: name for name, _ in COLUMNS}, Text("title")), style)
        row = self.scroll_offset.y + y - 1
        if row >= len(self.hits):
            return Strip.blank(width, self.rich_style)
        if row == self.cursor:
            style = self.get_component_rich_style("hitlist--cursor")
        elif row % 2:
            style = self.get_component_rich_style("hitlist--stripe")
        else:
            style = self.rich_style
        return self._strip(self.row_text(row), style)

    def _strip(self, line: Text, style: Style) -> Strip:
        """``line`` on a background of ``style``, cut or padded to the width."""
        segments = [Segment(s.text, style + s.style if s.style else style) for s in line.render(self.app.console)]
        return Strip(segments).crop_extend(0, self.size.width, style)

    def watch_cursor(self, old: int, new: int) -> None:
        top = self.scroll_offset.y
        rows = max(1, self.size.height - 1)
        if new < top:
            self.scroll_to(y=new, animate=False, immediate=True)
        elif new >= top + rows:
            self.scroll_to(y=new - rows + 1, animate=False, immediate=True)
        self.refresh()

    def action_move(self, step: int | str) -> None:
        if not self.hits:
            return
        page = max(1, self.size.height - 2)
        delta = {"page": page, "-page": -page, "all": len(self.hits), "-all": -len(self.hits)}.get(str(step))
        self.cursor = max(0, min(len(self.hits) - 1, self.cursor + (delta if delta is not None else int(step))))

    def action_select(self) -> None:
        if self.current is not None:
            self.post_message(self.Selected(self, self.current))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = self.scroll_offset.y + offset.y - 1
        if 0 <= row < len(self.hits):
            self.cursor = row
            self.action_select()

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.hits) + 1)
