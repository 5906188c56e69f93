"""Approval rate against DURA average, drawn with block characters, and memoryd's two thresholds on it.

One column per bin of the DURA average (0.05 wide): its height is the share of the decided promotions in that
bin that the person approved; a bin with no decisions is a dotted floor. Columns at or above the auto-approval
line are drawn in the "good" colour, those below the auto-reject line in the "bad" one, and the axis marks both
lines (``R`` and ``A``), so the plot reads at 80x24 without colour too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.style import Style
from rich.text import Text

from engram.store.calibration import Bin

HEIGHT = 8  # rows of the plot
EIGHTHS = " ▁▂▃▄▅▆▇█"
COLUMN = 3  # characters per bin: a bar two wide and a gap


def plot(bins: Sequence[Bin], promote_at: float, reject_below: float, paint: Callable[[str], Style]) -> Text:
    """The plot as one Text: a rate axis on the left, one column per bin, the DURA axis and the two lines."""
    out = Text()
    for row in range(HEIGHT, 0, -1):
        label = f"{(row / HEIGHT):>4.0%} │" if row in (HEIGHT, HEIGHT // 2) else "     │"
        out.append(label, "dim")
        for b in bins:
            out.append(_cell(b, row), _colour(b, promote_at, reject_below, paint))
            out.append(" " * (COLUMN - 2))
        out.append("\n")
    width = COLUMN * len(bins)
    out.append("     └" + "─" * width + "\n", "dim")
    numbers = [" "] * (width + 3)
    for value in (0.0, 0.5, 1.0):
        _put(numbers, _x(value, len(bins)), f"{value:.1f}")
    marks = [" "] * (width + 3)
    for mark, value in (("▲R", reject_below), ("▲A", promote_at)):
        _put(marks, _x(value, len(bins)), mark)
    out.append("      " + "".join(numbers).rstrip() + "\n", "dim")
    out.append("      " + "".join(marks).rstrip() + "\n", "bold")
    out.append("      by DURA average · R auto-reject below · A auto-approve at · ░ none", "dim")
    return out


def sparkline(bins: Sequence[Bin], promote_at: float, reject_below: float, paint: Callable[[str], Style]) -> Text:
    """The plot in one line, for one group among many: a bar's height as one character per bin (``·`` none),
    under the same colours and columns as :func:`plot`."""
    out = Text()
    for b in bins:
        rate = b.rate
        glyph = "·" if rate is None else EIGHTHS[max(1, round(rate * 8))]
        out.append(glyph * 2, _colour(b, promote_at, reject_below, paint))
        out.append(" " * (COLUMN - 2))
    return out


def _cell(b: Bin, row: int) -> str:
    rate = b.rate
    if rate is None:
        return "░░" if row == 1 else "  "
    filled = rate * HEIGHT - (row - 1)  # how much of this row the bar covers
    if filled >= 1:
        return "██"
    if filled <= 0:
        return "▁▁" if row == 1 and rate == 0 else "  "
    return EIGHTHS[max(1, round(filled * 8))] * 2


def _colour(b: Bin, promote_at: float, reject_below: float, paint: Callable[[str], Style]) -> Style:
    if b.low + 1e-9 >= promote_at:
        return paint("good")
    if b.low + 0.05 <= reject_below + 1e-9:
        return paint("bad")
    return paint("warn")


def _x(value: float, count: int) -> int:
    """The column of ``value`` on the DURA axis (1.0 ends under the last bar)."""
    return min(round(value * count * COLUMN), count * COLUMN - 2)


def _put(axis: list[str], at: int, text: str) -> None:
    for i, ch in enumerate(text):
        if at + i < len(axis):
            axis[at + i] = ch
