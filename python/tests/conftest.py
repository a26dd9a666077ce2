"""Shared fixtures of the Python tests. They run against the installed wheel (`import mtr`
from a fresh venv; scripts/test.sh), never against the source tree: the package directory is
not on sys.path here."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

#: ../shared beside the repository (the data of the golden tests); absent on some clones
SHARED = Path(__file__).resolve().parents[3] / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "golden").is_dir():
        pytest.skip("../shared is absent: golden data not available")
    return SHARED


@pytest.fixture(scope="session")
def mtr_exe() -> str:
    """The `mtr` console script of the venv the tests run in."""
    exe = Path(sys.executable).parent / "mtr"
    found = str(exe) if exe.exists() else shutil.which("mtr")
    assert found, "the wheel's `mtr` command is not installed in this venv"
    return found


@pytest.fixture
def quiet_home(tmp_path: Path) -> dict:
    """An environment whose mtr folders (cache, data, config) are all under tmp_path."""
    env = dict(os.environ)
    env["HOME"] = str(tmp_path / "home")
    for var in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        env[var] = str(tmp_path / "home" / var.lower())
    env.pop("MTR_LOG", None)
    return env
