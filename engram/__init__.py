"""engram: a keyboard-speed console for reviewing and keeping a memoryd memory store trustworthy.

The repository keeps one folder per concern (``store/``, ``tui/``, ``migrations/``, ``themes/``); installed, they
are this package's subpackages (``engram.store`` and so on: see ``[tool.setuptools.package-dir]``), so engram
adds exactly one name to site-packages.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

# Run from a checkout (``PYTHONPATH`` at the repository, or ``python -m engram`` inside it) rather than
# installed, the subpackages are this folder's siblings: the mapping ``[tool.setuptools.package-dir]`` makes.
_CHECKOUT = Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "store" / "service.py").is_file():
    __path__.append(str(_CHECKOUT))

try:
    __version__ = version("engram")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
