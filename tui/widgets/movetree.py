"""A Tree that takes the same steps as every list (j k g G through the pane's ``move`` action)."""

from __future__ import annotations

from typing import TypeVar

from textual.widgets import Tree

T = TypeVar("T")


class MoveTree(Tree[T]):
    def action_move(self, step: int | str) -> None:
        """The cursor by ``step`` lines, a page (``page``/``-page``) or to an end (``all``/``-all``)."""
        page = max(1, self.size.height - 1)
        delta = {"page": page, "-page": -page, "all": self.last_line + 1, "-all": -self.last_line - 1}.get(str(step))
        self.move_cursor_to_line(max(0, min(self.last_line, self.cursor_line + (delta or int(step)))))
