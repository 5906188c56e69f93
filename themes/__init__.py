"""engram's colour themes, as data: one TOML file per theme (``name``, ``dark`` and Textual's colour slots).

The console registers each as a Textual theme; stylesheets use only the theme variables ($primary, $panel …).
"""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

COLOUR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "warning",
    "error",
    "success",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
)


def theme_specs() -> list[dict[str, Any]]:
    """Every shipped theme as a dict of Textual ``Theme`` arguments, sorted by name."""
    specs = []
    for item in resources.files(__name__).iterdir():
        if item.name.endswith(".toml"):
            data = tomllib.loads(item.read_text(encoding="utf-8"))
            specs.append(
                {
                    "name": str(data["name"]),
                    "dark": bool(data.get("dark", True)),
                    **{k: str(data[k]) for k in COLOUR_KEYS if k in data},
                }
            )
    return sorted(specs, key=lambda s: s["name"])
