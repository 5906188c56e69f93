"""Which root the models answer for, when a process opens more than one (see ``engram.store.bound``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import events

from engram.store import bound
from engram.store.errors import StoreError
from engram.store.models import Memory
from engram.store.paths import engram_config_dir
from engram.store.scopes import set_label
from engram.store.service import Store


@pytest.fixture
def two_roots(fixture_root: Path, tmp_path: Path) -> tuple[Path, Path]:
    other = tmp_path / "other"
    shutil.copytree(fixture_root, other)
    with Store.open(other) as store:
        slug = Memory.select(Memory.slug).first().slug
        store.index.writable()
        with store.index.transaction():
            Memory.delete().where(Memory.slug == slug).execute()
    return fixture_root, other


def test_closing_the_root_opened_last_gives_the_models_back_to_the_one_before(two_roots):
    first, second = two_roots
    with Store.open(first):
        count = Memory.select().count()
        with Store.open(second):
            assert Memory.select().count() == count - 1
        assert Memory.select().count() == count  # not the closed root's index.db, reopened


def test_a_write_through_a_root_the_models_do_not_answer_for_is_refused(two_roots):
    first, second = two_roots
    with Store.open(first) as store, Store.open(second):
        before = events(first)
        with pytest.raises(StoreError, match="another data root was opened"):
            set_label(store, "710d5aaf7a15", "web shop")
        assert events(first) == before
    with Store.open(first) as store:
        set_label(store, "710d5aaf7a15", "web shop")  # alone, it writes
        assert events(first)[-1]["event_type"] == "scope_labeled"


def test_with_no_root_open_a_query_says_so(fixture_root):
    with Store.open(fixture_root):
        assert Memory.select().count()
    with pytest.raises(StoreError, match="no data root is open"):
        Memory.select().count()


def test_a_store_that_fails_to_open_leaves_no_root_open(fixture_root):
    engram_config_dir().mkdir(parents=True, exist_ok=True)
    (engram_config_dir() / "config.toml").write_text("not = [toml")  # the isolated home's
    with pytest.raises(StoreError, match="config"):
        Store.open(fixture_root)
    assert bound.open_roots() == 0
