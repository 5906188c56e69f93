"""engram: a keyboard-speed console for reviewing and keeping a memoryd memory store trustworthy.

The repository keeps one folder per concern (``store/``, ``tui/``, ``migrations/``, ``themes/``); installed, they
are this package's subpackages (``engram.store`` and so on: see ``[tool.setuptools.package-dir]``), so engram
adds exactly one name to site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path

# numpy's BLAS starts a pool of threads at import that spin on the other cores; engram does no linear algebra
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Run from a checkout (``PYTHONPATH`` at the repository, or ``python -m engram`` inside it) rather than
# installed, the subpackages are this folder's siblings: the mapping ``[tool.setuptools.package-dir]`` makes.
_CHECKOUT = Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "store" / "service.py").is_file():
    __path__.append(str(_CHECKOUT))


def __getattr__(name: str) -> str:
    """``engram.__version__``, from the package metadata when first asked for: reading the metadata costs tens
    of milliseconds that every start of the console would otherwise pay."""
    if name != "__version__":
        raise AttributeError(f"module 'engram' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("engram")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"
