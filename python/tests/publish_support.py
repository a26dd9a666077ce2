"""What the publishing tests share: the `mtr` binary they run (`$MTR_BIN`, else the test venv's
console script, the wheel's CLI, else the one on PATH, else the workspace's debug build), a run
that must succeed, and a `datasets` load with a cache of its own, so that no earlier export's
cache answers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def mtr_bin() -> str:
    venv = Path(sys.executable).parent / "mtr"
    for candidate in (
        os.environ.get("MTR_BIN"),
        str(venv) if venv.exists() else None,
        shutil.which("mtr"),
    ):
        if candidate:
            return candidate
    built = REPO / "target" / "debug" / "mtr"
    if built.is_file():
        return str(built)
    pytest.skip("no mtr binary (set MTR_BIN or build the workspace)")


def mtr(*args: str | Path) -> str:
    """Runs `mtr ARGS`; it must exit 0. Returns its stdout."""
    out = subprocess.run(
        [mtr_bin(), *map(str, args)], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def load(datasets, path: Path, name: str | None, split: str):
    """`datasets.load_dataset(path, name, split=split)` with a fresh cache beside `path`."""
    cache = path.parent / "hf-cache"
    return datasets.load_dataset(str(path), name, split=split, cache_dir=str(cache))


def fingerprint(bench: Path) -> str:
    """The data fingerprint a benchmark's manifest records."""
    return next(
        line.split(" = ")[1].strip('"')
        for line in (bench / "benchmark.toml").read_text(encoding="utf-8").splitlines()
        if line.startswith("fingerprint")
    )
