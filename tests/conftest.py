"""Shared fixtures: a private copy of the memoryd-written root for each test, and an isolated environment."""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
import textual._wait
from forked import pbkdf2_once
from hypothesis import settings
from keyring.backend import KeyringBackend
from keyring.backends import fail
from textual.notifications import Notification

from engram.store import bound
from engram.store.sensitive.crypto import KeyRing
from engram.store.service import Store

# Pilot waits, after every key it presses, until the app is idle: it samples the process's CPU time every
# SLEEP_GRANULARITY (20 ms) until one sample shows almost none used. A test process runs nothing but the app, so
# a 5 ms sample tells the same, and the suite's thousands of key presses stop costing half a minute of sleep.
assert textual._wait.SLEEP_GRANULARITY == 1 / 50, "Textual changed how Pilot waits: look at this again"
textual._wait.SLEEP_GRANULARITY = 1 / 200
textual._wait.SLEEP_IDLE = textual._wait.SLEEP_GRANULARITY / 20

# The console's tests spend a fifth of their time in the cyclic garbage collector: Textual makes and drops many
# small objects per frame (strips, segments, caches), and with Python's default threshold (a collection every 700
# allocations) every frame triggers several, each walking every object the imported modules made. So the
# modules' objects are moved out of the collector's sight, and it runs every 50,000 allocations: cycles are still
# collected, later; the tests' CPU time drops by a fifth. (A setting of the test processes only, as above.)
gc.freeze()
gc.set_threshold(50_000)

# A toast stays until its test has read it. Textual drops one a few seconds after it is raised (a decision's
# toast after 3 s), and on a loaded machine the keys' work before the test reads it can take longer: a test
# reading what a toast said would race the wall clock (two did, in a CI run). Here a toast has all the time a
# test needs, and what it said is read, and drawn, as on a machine that keeps up.
Notification.time_left = property(lambda self: 3600.0)  # type: ignore[method-assign, assignment]

# Property tests are not timed: Hypothesis's default deadline (200 ms an example) failed a test of the segments on
# a loaded two-core CI (one example took 894 ms, the same one 25 ms when run again). Speed is the bench's business.
settings.register_profile("engram", deadline=None)
settings.load_profile("engram")

FIXTURE = Path(__file__).parent / "fixtures" / "memoryd-small"
PASSPHRASE = "engram-fixture-passphrase-2026"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than there are CPUs. About a third of the suite's time is spent waiting
    (console tests for the app to go idle after each key, crash tests for their children), which a spare
    worker fills: on two cores the suite takes a tenth less time."""
    return (os.cpu_count() or 1) + 1


@pytest.fixture(autouse=True)
def kdf_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each (passphrase, salt, iterations) is derived once per test run, not once per test: the fixture keeps
    memoryd's real 600,000 iterations, and PBKDF2 is a pure function, so a remembered result is the same key.
    (Test processes only: engram itself derives per session and forgets on lock.)"""
    monkeypatch.setattr(hashlib, "pbkdf2_hmac", pbkdf2_once)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real home, config or data root."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    monkeypatch.setenv("MEMORYD_CONFIG_HOME", str(FIXTURE / "config" / "memoryd"))
    monkeypatch.delenv("MEMORYD_DATA_ROOT", raising=False)
    monkeypatch.delenv("MEMORYD_MASTER_PASSPHRASE", raising=False)
    monkeypatch.delenv("ENGRAM_CRASH_AT", raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # never the machine's keyring
    keyring.set_keyring(fail.Keyring())  # and no backend a test before this one chose (memory_keyring restores it)


@pytest.fixture
def fixture_root(tmp_path: Path) -> Path:
    """A writable copy of the data root the real memoryd wrote."""
    root = tmp_path / "dataroot"
    shutil.copytree(FIXTURE / "dataroot", root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return root


@pytest.fixture
def reading_root(fixture_root: Path) -> Iterator[Path]:
    """``fixture_root`` with a store open on it for the test's own look at its rows: the commands a test runs
    open and close their own meanwhile, and the models come back to this one (see ``engram.store.bound``)."""
    with Store.open(fixture_root):
        yield fixture_root


@pytest.fixture
def unlocked_keys() -> KeyRing:
    return KeyRing(passphrase=PASSPHRASE)


@pytest.fixture
def store(fixture_root: Path, unlocked_keys: KeyRing):
    with Store.open(fixture_root, keys=unlocked_keys, actor="engram-test") as s:
        yield s


class MemoryKeyring(KeyringBackend):
    """An OS keyring stand-in holding secrets in a dict."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.secrets.get((service, username))

    def set_password(self, service, username, password):
        self.secrets[(service, username)] = password

    def delete_password(self, service, username):
        self.secrets.pop((service, username), None)


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def no_root_left_open() -> Iterator[None]:
    """A root a test (or the code it runs) leaves open would answer the next test's queries (see
    ``engram.store.bound``): every store opened is closed by the end."""
    before = bound.open_roots()
    yield
    assert bound.open_roots() == before, "a store was left open"
