"""The vocabulary of a memoryd data root: memory types, decay states, promotion statuses."""

from __future__ import annotations

import re
from enum import StrEnum

SLUG_RE = re.compile(r"^[A-Za-z0-9._-]+$")


class MemoryType(StrEnum):
    SESSION = "session"
    DECISION = "decision"
    PREFERENCE = "preference"
    FACT = "fact"
    PLAYBOOK = "playbook"
    WARNING = "warning"

    @property
    def dir_name(self) -> str:
        """memoryd files each type under the plural of its name."""
        return f"{self.value}s"


FORGOTTEN_DIR = "forgotten"
"""Where memoryd's decay sweep moves soft-forgotten files; their type then lives only in frontmatter."""

TYPE_DIRS = {t.dir_name: t for t in MemoryType}

DECAY_LISTS = ("expiring", "dim", "soft-forgotten", "recalled")
"""The decay pane's lists, the first shown first. Here, not with the lists' code: a command line's parser offers
them, and the code reads memory files."""

KEEP_SIDES = ("local", "remote")
"""The versions a sync conflict's resolution can keep as they are (the third way is a merge)."""


class DecayState(StrEnum):
    ALIVE = "alive"
    DIM = "dim"
    SOFT_FORGOTTEN = "soft-forgotten"

    @property
    def rank(self) -> int:
        """Order of decay, so the further-decayed of two states can be chosen."""
        return _DECAY_RANKS[self]


_DECAY_RANKS = {state: at for at, state in enumerate(DecayState)}  # asked for twice per file by a check


class PromotionStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    QUARANTINED = "quarantined"  # engram's: held out of memoryd's reach, still undecided (see engram.store.hold)


# Undecided promotions, as engram's queue shows them. memoryd reads only ``pending`` (its review tools and the
# titles its session-start injection pastes), and its own reject needs ``pending`` too: a ``quarantined`` one is
# out of its reach until a person decides it in engram.
OPEN_STATUSES = (PromotionStatus.PENDING.value, PromotionStatus.QUARANTINED.value)


def check_slug(slug: str) -> str:
    """A slug is a file name and a primary key: it must never name a path outside its directory."""
    if not SLUG_RE.match(slug) or ".." in slug or slug.startswith("."):
        raise ValueError(f"slug {slug!r} is not of the form [A-Za-z0-9._-]+ without '..' or a leading dot")
    return slug
