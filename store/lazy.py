"""Modules imported when first used.

The console's first frame waits for every module imported at the top of the modules it runs, and most of the
store's modules reach PyYAML and pydantic through the frontmatter though the first frame parses no file. A
module that only calls into a heavy one from its functions binds it with :func:`lazy_module` (and imports it
under ``TYPE_CHECKING`` for the types); the module is imported, in full, on the first attribute read.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _LazyModule:
    """Stands for a module until an attribute is read. ``importlib.import_module`` does the import, so two
    threads asking at once wait on the import system's own lock (the standard ``LazyLoader`` is not
    thread-safe before Python 3.12). The module found is kept: asking the import system on every read was a
    visible part of the demo's build (three reads of the frontmatter module per memory). Its attributes are
    still read from the module each time, so a module's attribute replaced later (a test's patch) is seen."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> ModuleType:
    """``name``, imported on the first attribute read."""
    return _LazyModule(name)  # type: ignore[return-value]  # it answers as the module does
