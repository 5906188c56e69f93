"""What the panes share besides the store, handed to each when the console builds it (dependency injection,
not a call into the app): the search index the search pane loads, which the merge picker and "add link" need
too, and the audit log's last verdict, which the status line and the audit pane both show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engram.store.service import Store

if TYPE_CHECKING:  # numpy and rapidfuzz load with the search pane's worker, not with the console
    from engram.store.audit.verify import Verdict
    from engram.store.search.index import SearchIndex


@dataclass
class Shared:
    store: Store
    search: SearchIndex | None = None  # None until the search pane has loaded it
    verdict: Verdict | None = None  # the audit log's, from the console's own check or the audit pane's v
