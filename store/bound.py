"""Which open index.db the models answer for.

peewee binds a model class to one database for the whole process. engram opens one root at a time (a command,
the console), but a test, a bench or a script may open a second before closing the first. The binding is kept
here, explicitly, so that case is never silent:

- the models answer for the root opened last, and closing it gives them back to the one opened before;
- with no root open, a query fails saying so (peewee would otherwise reopen a closed root's index.db);
- a write through a store the models do not answer for is refused (see ``Store.apply_many``): its files would
  go to one root and its rows into another's index.db.
"""

from __future__ import annotations

import threading
from typing import Any

import peewee

from engram.store.errors import StoreError
from engram.store.models import MODELS


class _NoRoot(peewee.SqliteDatabase):
    """What the models are bound to while no root is open."""

    def __init__(self) -> None:
        super().__init__(None)

    def connect(self, reuse_if_open: bool = False) -> bool:
        raise StoreError("no data root is open in this process: open a Store first")


_NO_ROOT = _NoRoot()
_OPEN: list[peewee.Database] = []  # every open root's database, the one the models answer for last
_LOCK = threading.Lock()


def _bind(db: peewee.Database) -> None:
    db.bind(MODELS, bind_refs=False, bind_backrefs=False)


def bind(db: peewee.Database) -> None:
    """The models answer for ``db`` from now on (a root just opened)."""
    with _LOCK:
        _OPEN.append(db)
        _bind(db)


def release(db: peewee.Database) -> None:
    """``db`` is closing: the models go back to the root opened before it, if it was the one they answered for."""
    with _LOCK:
        current = bool(_OPEN) and _OPEN[-1] is db
        _OPEN[:] = [other for other in _OPEN if other is not db]
        if current:
            _bind(_OPEN[-1] if _OPEN else _NO_ROOT)


def open_roots() -> int:
    """How many roots are open in this process."""
    return len(_OPEN)


def answers_for(db: Any) -> bool:
    """Do the models answer for ``db`` now?"""
    return bool(_OPEN) and _OPEN[-1] is db


_bind(_NO_ROOT)
