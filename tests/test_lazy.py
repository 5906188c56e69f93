"""A module bound with ``lazy_module``: imported on the first attribute read, asked of the import system once, and
its attributes read afresh each time."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from engram.store.lazy import lazy_module


@pytest.fixture
def a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a module nothing has imported yet."""
    (tmp_path / "engram_lazy_probe.py").write_text("VALUE = 1\n\ndef twice(n):\n    return 2 * n\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "engram_lazy_probe", raising=False)
    return "engram_lazy_probe"


def test_the_module_is_imported_on_the_first_attribute_read(a_module: str) -> None:
    module = lazy_module(a_module)
    assert a_module not in sys.modules
    assert module.twice(3) == 6
    assert a_module in sys.modules


def test_the_import_system_is_asked_once(a_module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = importlib.import_module

    def counting(name: str, package: str | None = None) -> object:
        asked.append(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", counting)
    module = lazy_module(a_module)
    assert [module.VALUE for _ in range(5)] == [1] * 5
    assert asked == [a_module]


def test_an_attribute_replaced_later_is_seen(a_module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    module = lazy_module(a_module)
    assert module.VALUE == 1
    monkeypatch.setattr(sys.modules[a_module], "VALUE", 2)
    assert module.VALUE == 2
