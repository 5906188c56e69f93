"""The poisoning screen: one pure function over a proposal or a memory, returning what in it reads as an attack on
the agents that will be handed it, and the lane it belongs in (``clean``, ``review`` or ``quarantine``).

A memory is pasted into every later agent session as trusted history, so a poisoned one is a prompt injection
that never expires. The screen is deterministic and explains itself: each finding names its rule, its category,
the field it was found in, the words, and what was uncovered to find it (decoded base64, tag characters...).

The rules compile when :mod:`engram.store.screen.screen` is first imported, which holds ``screen``; the verdict's
types are here without them, for code that passes a verdict on or finds it kept (see
:mod:`engram.store.screen_cache`).
"""

from engram.store.screen.verdict import CLEAN, Finding, Item, ScreenedText, Screening

__all__ = ["CLEAN", "Finding", "Item", "Screening", "ScreenedText"]
