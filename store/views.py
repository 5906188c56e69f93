"""Saved views of the review queue: a filter and a sort under a name, switched with a key.

Three ship with engram; a person's own are kept in ``views.json`` in engram's config folder (beside its
config.toml: a preference of the person, not part of any data root), written whole and atomically. A view of
theirs with a default's name replaces that default. A broken file is one clear error and the defaults still work.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from engram.store.errors import BadInput, StoreError
from engram.store.paths import engram_config_dir
from engram.store.query import QuerySyntaxError
from engram.store.queue import SORTS, queue_query
from engram.store.write.atomic import read_regular, write_atomic


@dataclass(frozen=True)
class View:
    name: str
    filter: str
    sort: str


DEFAULTS = (
    View("low DURA from codex", "source:codex dura:<0.6", "dura_avg"),
    View("secrets", "secret:yes", "created"),
    View("duplicates of approved", "dup:known", "dura_avg"),
    View("waiting longest", "age:>7", "created"),
)


def views_path() -> Path:
    return engram_config_dir() / "views.json"


def load_views(path: Path | None = None) -> list[View]:
    """The defaults, then the person's own views (one of theirs with a default's name takes its place). Raises
    :class:`StoreError` naming what is wrong with the file (the caller still has :data:`DEFAULTS`)."""
    path = path or views_path()
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
        saved = [_checked(View(**entry)) for entry in data["views"]]
    except FileNotFoundError:
        saved = []
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError, BadInput) as exc:
        raise StoreError(f"{path}: not a list of saved views ({exc}); the default views only") from None
    names = {view.name for view in saved}
    return [view for view in DEFAULTS if view.name not in names] + saved


def save_view(view: View, path: Path | None = None) -> list[View]:
    """Keep ``view`` (replacing one of the same name) and return every view. Refuses a name, filter or sort the
    queue could not use, and writes nothing then."""
    path = path or views_path()
    _checked(view)
    try:
        kept = [v for v in load_views(path) if v not in DEFAULTS and v.name != view.name]
    except StoreError:
        kept = []  # a broken file is replaced by what is saved now
    views = [*kept, view]
    write_atomic(path, json.dumps({"views": [asdict(v) for v in views]}, indent=2).encode(), mode=0o600)
    return load_views(path)


def _checked(view: View) -> View:
    if not isinstance(view.name, str) or not view.name.strip():
        raise BadInput("a view needs a name")
    if view.sort not in SORTS:
        raise BadInput(f"view {view.name!r}: unknown sort {view.sort!r} (one of {', '.join(SORTS)})")
    try:
        queue_query(view.filter)
    except (QuerySyntaxError, AttributeError) as exc:
        raise BadInput(f"view {view.name!r}: {exc}") from None
    return view
