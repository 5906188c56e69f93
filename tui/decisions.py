"""The queue's decisions as steps a person can take back: deciding promotions one by one (in bulk too), undoing a
step, deciding it again, and the two stacks that hold them.

No widget here: the queue pane runs a step's work in a worker (:func:`decide_each`, :func:`undo_step`, or a
step's ``redo``) and hands the :class:`Outcome` to :meth:`History.settle` on the UI thread, which moves the step
between the stacks. A promotion memoryd decided or changed meanwhile is skipped and named, never forced; any
other refusal stops the rest, and what was done stays undoable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from engram.store.errors import Conflict, NotFound, StoreError
from engram.store.lazy import lazy_module
from engram.store.secrets import masked
from engram.store.service import Store

if TYPE_CHECKING:
    from engram.store import promotions
else:
    promotions = lazy_module("engram.store.promotions")  # the frontmatter's models: not for the first frame

PAST = {"approve": "approved", "reject": "rejected", "defer": "deferred", "merge": "merged", "snooze": "snoozed"}


@dataclass
class Step:
    """One entry of the undo stack: what was decided (possibly in bulk) and how to decide it again."""

    label: str
    decisions: list[promotions.Decision]
    redo: Callable[[], Outcome]


@dataclass
class Outcome:
    """What a decision, an undo or a redo did: the step, why some promotions were skipped (decided or changed
    elsewhere meanwhile), and what stopped it early, if anything did."""

    step: Step
    skipped: list[str] = field(default_factory=list)
    stopped: str | None = None


class Kind(Enum):
    """Which work made an outcome: it says which stack the step comes from and goes to."""

    DECIDE = "decide"
    UNDO = "undo"
    REDO = "redo"


def decide_each(label: str, act: Callable[[int], promotions.Decision], ids: list[int]) -> Outcome:
    """Decide each promotion (in a worker). One that another writer (memoryd) decided or removed meanwhile is
    skipped and named; any other refusal stops the rest. The step redoes the promotions it decided."""
    done: list[promotions.Decision] = []  # the step's: undo empties it
    decided: list[int] = []  # what redo decides again
    outcome = Outcome(Step(label, done, lambda: decide_each(label, act, list(decided))))
    for pid in ids:
        try:
            done.append(act(pid))
            decided.append(pid)
        except (Conflict, NotFound) as exc:
            outcome.skipped.append(str(exc))
        except StoreError as exc:
            outcome.stopped = str(exc)
            break
    return outcome


def undo_step(store: Store, step: Step) -> Outcome:
    """Undo the step's decisions newest first, each dropped from the step once done. One that cannot be undone any
    more (memoryd decided the promotion again, the memory was edited) is skipped and named; any other refusal
    stops, and the step keeps the rest, so undo again goes on from there."""
    outcome = Outcome(step)
    while step.decisions:
        try:
            promotions.undo(store, step.decisions[-1])
        except (Conflict, NotFound) as exc:
            outcome.skipped.append(str(exc))
        except StoreError as exc:
            outcome.stopped = str(exc)
            break
        step.decisions.pop()
    return outcome


class History:
    """The undo and redo stacks of a queue, and the promotions decided in this session (and not undone): the
    progress the status line shows."""

    def __init__(self) -> None:
        self.undo_stack: list[Step] = []
        self.redo_stack: list[Step] = []
        self.decided: set[int] = set()
        self.undoing: list[int] = []  # the ids the running undo reverses

    def next_undo(self) -> Step | None:
        """The step undo takes back (noting which promotions it reverses), or None."""
        if not self.undo_stack:
            return None
        step = self.undo_stack[-1]
        self.undoing = [d.promotion_id for d in step.decisions]
        return step

    def next_redo(self) -> Step | None:
        return self.redo_stack[-1] if self.redo_stack else None

    def settle(self, outcome: Outcome, kind: Kind) -> bool:
        """Move the outcome's step between the stacks; True when a new decision was recorded (a person's new
        decision clears what could be redone)."""
        step = outcome.step
        if kind is Kind.UNDO:
            self.decided -= set(self.undoing) - {d.promotion_id for d in step.decisions}
            if not step.decisions:  # all undone (a stopped undo keeps the rest on the stack)
                self.undo_stack.pop()
                self.redo_stack.append(step)
            return False
        if kind is Kind.REDO:
            self.redo_stack.pop()
        else:
            self.redo_stack.clear()
        if step.decisions:
            self.undo_stack.append(step)
            self.decided |= {d.promotion_id for d in step.decisions}
        return kind is Kind.DECIDE


def short(title: str, width: int = 40) -> str:
    """A title in a prompt or a toast: masked as the queue's table shows it (a proposal may hold a secret, and
    a toast is on screen for anyone beside the person), then cut to ``width``."""
    title = masked(title)
    return title if len(title) <= width else title[: width - 1] + "…"


def told(label: str, step: Step, undone: bool, titles: dict[int, str]) -> str:
    """What happened to what, for the toast: "rejected #12 'Keep PRs small'", "merged #116 into 'Deploys…'",
    "approved 3: #4, #7, #9" (``titles``: the promotions' titles as they were shown before the decision)."""
    if undone:
        return f"undid {step.label}"
    decisions = step.decisions
    verb = PAST.get(label.split(" ")[0], label)
    if len(decisions) == 1:
        decision = decisions[0]
        title = short(titles.get(decision.promotion_id, ""))
        if isinstance(decision, promotions.Merged):
            return f"merged #{decision.promotion_id} '{title}' into '{short(decision.before.frontmatter.title)}'"
        return f"{verb} #{decision.promotion_id} '{title}'"
    ids = ", ".join(f"#{d.promotion_id}" for d in decisions[:8])
    more = f" and {len(decisions) - 8} more" if len(decisions) > 8 else ""
    return f"{verb} {len(decisions)}: {ids}{more}"
