"""memoryd's JSON index columns, read leniently: they are hand-editable text, and a bad value must read as
empty rather than stop a listing. Apart from the promotions' write path so that the queue's first page can
read them without importing it (it brings the frontmatter's pydantic and PyYAML along)."""

from __future__ import annotations

import json
import sys
from typing import Any

from engram.store.models import Promotion


def parse_json_list(text: str | None) -> list[Any]:
    """A JSON array column; anything else reads as empty (memoryd's columns are hand-editable text)."""
    try:
        value = json.loads(text or "[]")
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def dura_of(promotion: Promotion) -> dict[str, float]:
    """DURA scores as floats; memoryd writes ints at times and may add keys."""
    return dura_scores(promotion.dura_score)


def dura_average(scores: dict[str, float]) -> float:
    """The queue's DURA average: the mean of whichever of D, U, R and A the scores hold (0 for none)."""
    values = [scores[k] for k in "DURA" if k in scores]
    return sum(values) / len(values) if values else 0.0


def dura_scores(text: str | None, numbers: Repeats | None = None) -> dict[str, float]:
    """:func:`dura_of` from the column's text; with ``numbers``, each score as the one equal to it read before."""
    try:
        raw = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    if not isinstance(raw, dict):
        return {}
    scores = {k: float(v) for k, v in raw.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return {k: numbers(v) for k, v in scores.items()} if numbers is not None else scores


def shared(value: Any) -> Any:
    """One string object for a value many rows repeat (a type, a scope, a session, a trigger, a title proposed
    again): 50,000 pending promotions held a copy of each per item, 15 MB of the queue. Interned strings go with
    their last reference, and the queue and the near-duplicates' texts then hold one copy of a title between them."""
    return sys.intern(value) if type(value) is str else value


class Repeats(dict[Any, Any]):
    """Values a read meets again as one object each, for the values :func:`shared` does not intern: the same DURA
    score (a float, 24 bytes: four per pending promotion), the same triggers. Held while one read builds its
    items, and gone with it; values of one kind only (``1 == 1.0 == True``)."""

    def __call__(self, value: Any) -> Any:
        return self.setdefault(value, value)
