"""The side-by-side view of two memories: every line of each text appears once, in order, on its own side."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engram.tui.widgets.sidediff import aligned

lines = st.lists(st.sampled_from(["a", "b", "c", "use vite", "use sentry", ""]), max_size=12)


@given(lines, lines)
def test_each_side_keeps_its_lines_in_order(older, newer):
    rows = aligned(older, newer)
    assert [left for left, _, _ in rows if left is not None] == older
    assert [right for _, right, _ in rows if right is not None] == newer
    assert all(left == right for left, right, tag in rows if tag == "equal")


def test_a_replaced_line_faces_its_replacement():
    assert aligned(["# t", "use vite"], ["# t", "use sentry"]) == [
        ("# t", "# t", "equal"),
        ("use vite", "use sentry", "replace"),
    ]
