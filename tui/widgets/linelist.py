"""A list drawn a line at a time with Textual's line API: a header line, then one line per row, of which only
the ones on screen are ever rendered. Search results and the audit log (a million lines) are built on it.

Subclasses say how many rows there are (``row_count``), what a row and the header look like (``row_text``,
``header_text``), and may style a row (``row_style``). A row may take more than one line (``row_lines``, each
line after the first drawn by ``row_detail``): search results carry a line of the body under their title. The
cursor, scrolling, keys and clicks live here, counted in rows.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from engram.tui.keymap import LIST_ACTIONS, bindings


class LineList(ScrollView, can_focus=True):
    """Rows under a header line; the cursor row is highlighted and Enter (or a click) selects it."""

    COMPONENT_CLASSES = {"linelist--header", "linelist--cursor", "linelist--stripe"}
    BINDINGS = bindings(LIST_ACTIONS)

    cursor: reactive[int] = reactive(0, repaint=False)

    class Selected(Message):
        """Enter or a click on a row."""

        def __init__(self, line_list: LineList, row: int) -> None:
            super().__init__()
            self.line_list, self.row = line_list, row

        @property
        def control(self) -> LineList:
            return self.line_list

    @property
    def row_count(self) -> int:
        raise NotImplementedError

    def row_text(self, row: int) -> Text:
        raise NotImplementedError

    def header_text(self) -> Text:
        raise NotImplementedError

    @property
    def row_lines(self) -> int:
        """Lines each row takes on screen."""
        return 1

    def row_detail(self, row: int, line: int) -> Text:
        """Line ``line`` (1 and up) of a row of more than one line."""
        return Text()

    def row_style(self, row: int) -> Style | None:
        """A style of the row's own (a flagged line, say) under the cursor and stripes; None for none."""
        return None

    def reset(self, cursor: int = 0) -> None:
        """The rows changed: size the scroll area and put the cursor on ``cursor`` (scrolled into view)."""
        self.virtual_size = self._virtual()
        self.set_reactive(LineList.cursor, max(0, min(cursor, self.row_count - 1)))
        self.scroll_to(y=0, animate=False, immediate=True)
        self.watch_cursor(0, self.cursor)

    def render_line(self, y: int) -> Strip:
        if y == 0:
            return self._strip(self.header_text(), self.get_component_rich_style("linelist--header"))
        row, part = divmod(self.scroll_offset.y + y - 1, self.row_lines)
        if row >= self.row_count:
            return Strip.blank(self.size.width, self.rich_style)
        if row == self.cursor:
            style = self.get_component_rich_style("linelist--cursor")
        elif row % 2:
            style = self.get_component_rich_style("linelist--stripe")
        else:
            style = self.rich_style
        own = self.row_style(row)
        text = self.row_detail(row, part) if part else self.row_text(row)
        return self._strip(text, style + own if own else style)

    def _strip(self, line: Text, style: Style) -> Strip:
        """``line`` on a background of ``style``, cut or padded to the width."""
        segments = [Segment(s.text, style + s.style if s.style else style) for s in line.render(self.app.console)]
        return Strip(segments).crop_extend(0, self.size.width, style)

    def _virtual(self) -> Size:
        return Size(self.size.width, self.row_count * self.row_lines + 1)

    @property
    def rows_shown(self) -> int:
        """Whole rows that fit under the header."""
        return max(1, (self.size.height - 1) // self.row_lines)

    def watch_cursor(self, old: int, new: int) -> None:
        lines = self.row_lines
        top = self.scroll_offset.y
        if new * lines < top:
            self.scroll_to(y=new * lines, animate=False, immediate=True)
        elif (new + 1) * lines > top + max(1, self.size.height - 1):
            self.scroll_to(y=(new + 1) * lines - max(1, self.size.height - 1), animate=False, immediate=True)
        self.refresh()

    def action_move(self, step: int | str) -> None:
        if not self.row_count:
            return
        page = max(1, self.rows_shown - 1)
        delta = {"page": page, "-page": -page, "all": self.row_count, "-all": -self.row_count}.get(str(step))
        self.cursor = max(0, min(self.row_count - 1, self.cursor + (delta if delta is not None else int(step))))

    def action_select(self) -> None:
        if 0 <= self.cursor < self.row_count:
            self.post_message(self.Selected(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = (self.scroll_offset.y + offset.y - 1) // self.row_lines
        if 0 <= row < self.row_count:
            self.cursor = row
            self.action_select()

    def on_resize(self) -> None:
        self.virtual_size = self._virtual()
