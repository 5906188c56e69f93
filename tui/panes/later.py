"""Panes whose work is planned but not built yet: they say so plainly instead of pretending."""

from __future__ import annotations

from textual.widgets import Static

PLANNED = {
    "graph": "Entities, their neighbourhood and conflicts; rename and merge aliases.",
}


class LaterPane(Static):
    def __init__(self, name: str) -> None:
        super().__init__(f"[b]{name.capitalize()}[/b]\n\nNot built yet. Planned: {PLANNED[name]}",
                         id=f"{name}-pane", classes="later")
