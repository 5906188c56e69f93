"""The installed package: one name in site-packages, ``python -m engram``, ``--version``, ``--root`` before or after
the subcommand, and the data files (migrations, themes, the console's CSS) inside the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from engram import __version__

REPO = Path(__file__).parent.parent
# one worker builds the wheel for every test here: two builds of one checkout at once share its build/ folder
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("engram-*.whl"))


def test_the_wheel_holds_one_package_and_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"engram", f"engram-{__version__}.dist-info"}
    assert any(n.startswith("engram/migrations/") and n.endswith(".sql") for n in names)
    assert any(n.startswith("engram/themes/") and n.endswith(".toml") for n in names)
    assert "engram/tui/engram.tcss" in names
    # every folder of Python code is in the wheel (a subpackage left out of pyproject's list works in a checkout)
    folders = {p.parent.relative_to(REPO) for top in ("store", "tui") for p in (REPO / top).rglob("__init__.py")}
    for folder in folders:
        assert f"engram/{folder.as_posix()}/__init__.py" in names, folder


def test_installed_in_a_fresh_venv_it_adds_only_engram(wheel, tmp_path, fixture_root):
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=False)  # this run's pip installs into it (pip --python): no ensurepip
    python = fresh / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    before = set(os.listdir(site))
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    assert set(os.listdir(site)) - before == {"engram", f"engram-{__version__}.dist-info"}
    # the dependencies come from this test run's environment, after the fresh site-packages: engram is the wheel's
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, "-m", "engram", *args], env=env, capture_output=True, text=True, cwd=tmp_path)

    where = subprocess.run(
        [python, "-c", "import engram; print(engram.__file__)"], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert where.stdout.startswith(str(site))
    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"engram {__version__}"
    before_sub, after_sub = run("--root", str(fixture_root), "stats"), run("stats", "--root", str(fixture_root))
    assert before_sub.returncode == after_sub.returncode == 0
    assert before_sub.stdout == after_sub.stdout and before_sub.stdout.startswith("memories 198")
