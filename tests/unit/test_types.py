"""The package type-checks (STYLE: typed public API, mypy clean); mypy's settings are in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_mypy_finds_no_type_errors(tmp_path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], cwd=REPO, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.timeout(300)
def test_the_runtime_and_the_store_type_check_strictly(tmp_path) -> None:
    """records/ defines the run's records, store/ holds them for every other part and runtime/ moves them: all three
    are held to `mypy --strict` (no Any leaking out, every generic parameterised), and so is every module they import."""
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            "openadapt_flow/runtime",
            "openadapt_flow/store",
            "openadapt_flow/records",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
