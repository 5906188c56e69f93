"""Colours by what they mean, taken from the theme: Rich text built in code (DURA scores, decay states, the
supersedes tree, the audit's bad line, diffs) uses these instead of colour names, so every theme (the
high-contrast and light ones too) decides how "good", "warning" and "bad" look, as the stylesheets' ``$success``,
``$warning`` and ``$error`` do."""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from textual.dom import DOMNode

Paint = Callable[[str], Style]  # a role's name -> its style: what pure rendering helpers are handed

ROLES = {
    "good": "success",
    "warn": "warning",
    "bad": "error",
    "note": "accent",
    "other": "secondary",
}
_cache: dict[str, dict[str, str]] = {}  # theme name -> its variables (generating them costs a few ms)


def role(node: DOMNode, name: str, *, bold: bool = False, reverse: bool = False) -> Style:
    """The style for ``name`` (a key of :data:`ROLES`) in the theme ``node``'s app shows."""
    app = node.app
    variables = _cache.get(app.theme)
    if variables is None:
        variables = _cache[app.theme] = app.get_css_variables()
    return Style(color=variables.get(ROLES[name]), bold=bold, reverse=reverse)
