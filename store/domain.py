"""The vocabulary of a memoryd data root: memory types, decay states, promotion statuses."""

from __future__ import annotations

from enum import StrEnum


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


class DecayState(StrEnum):
    ALIVE = "alive"
    DIM = "dim"
    SOFT_FORGOTTEN = "soft-forgotten"

    @property
    def rank(self) -> int:
        """Order of decay, so the further-decayed of two states can be chosen."""
        return list(DecayState).index(self)


class PromotionStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
