"""STYLE.md: a module past 800 lines must be split (import direction and cycles: `lint-imports`, pyproject.toml)."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(30)

PKG = Path(__file__).resolve().parents[2] / "openadapt_flow"


def test_no_module_past_800_lines() -> None:
    big = [f"{p.relative_to(PKG)}: {n}" for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > 800]
    assert not big
