"""The guard every file read and write goes through: a ``body_path`` that lands outside ``scopes/`` (by ``..``,
an absolute path, or a symlinked file or directory) is refused, and the fast check agrees with plain
``realpath`` on every path tried."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.store.errors import UnsafePath
from engram.store.paths import RootLayout


@pytest.fixture
def tree(tmp_path: Path) -> RootLayout:
    """scopes/s1/facts/{a.md, out.md -> ../../../secret.md}, scopes/s1/linked -> ../../outside, and
    scopes/s2 -> s1 (a symlink that stays inside)."""
    root = tmp_path / "root"
    facts = root / "scopes" / "s1" / "facts"
    facts.mkdir(parents=True)
    (facts / "a.md").write_text("---\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "b.md").write_text("secret")
    (tmp_path / "root" / "secret.md").write_text("secret")
    (facts / "out.md").symlink_to("../../../secret.md")
    (root / "scopes" / "s1" / "linked").symlink_to(tmp_path / "outside")
    (root / "scopes" / "s2").symlink_to("s1")
    return RootLayout(root)


@pytest.mark.parametrize(
    "body_path",
    [
        "../secret.md",
        "scopes/s1/facts/out.md",
        "scopes/s1/linked/b.md",
        "scopes/s1/facts/../../../secret.md",
        "scopes/..",
        "/etc/passwd",
        "",
    ],
)
def test_escapes_are_refused(tree, body_path):
    with pytest.raises(UnsafePath):
        tree.resolve(body_path)


@pytest.mark.parametrize("body_path", ["scopes/s1/facts/a.md", "scopes/s2/facts/a.md", "scopes/s1/facts/new.md"])
def test_paths_inside_are_allowed(tree, body_path):
    assert tree.resolve(body_path) == tree.root / body_path


def test_a_directory_swapped_for_a_symlink_is_seen_on_a_fresh_layout(tree):
    """The directories' real paths are kept per layout (one per opened store), not across stores."""
    tree.resolve("scopes/s1/facts/a.md")
    facts = tree.root / "scopes" / "s1" / "facts"
    os.rename(facts, tree.root / "scopes" / "s1" / "old")
    facts.symlink_to(tree.root.parent / "outside")
    with pytest.raises(UnsafePath):
        RootLayout(tree.root).resolve("scopes/s1/facts/b.md")


PARTS = st.sampled_from(["scopes", "s1", "s2", "facts", "linked", "a.md", "out.md", "b.md", "..", ".", "x"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(PARTS, min_size=1, max_size=6))
def test_the_fast_check_agrees_with_realpath(tree, parts):
    body_path = "/".join(parts)
    scopes = os.path.realpath(tree.scopes_dir)
    real = os.path.realpath(tree.root / body_path)
    inside = real == scopes or real.startswith(scopes + os.sep)
    if inside:
        tree.resolve(body_path)
    else:
        with pytest.raises(UnsafePath):
            tree.resolve(body_path)
