"""The recorded fixtures live in the repo's top-level fixtures/ (SPEC §15); the package ships the same recordings
for an installed `flow demo`. Two copies drift unless something fails when they differ: this test."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from openadapt_flow.cli.demo import DEMO_FIXTURES
from openadapt_flow.fixture.model import load_fixture

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[3]
TOP = REPO / "fixtures"


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_package_ships_every_top_level_fixture_byte_for_byte():
    top = {p.name for p in TOP.iterdir() if p.is_dir()}
    shipped = {p.name for p in DEMO_FIXTURES.iterdir() if p.is_dir()}
    assert top == shipped and {"normal", "dark", "twin"} <= top
    for name in sorted(top):
        assert _digests(TOP / name) == _digests(DEMO_FIXTURES / name), (
            f"fixtures/{name} and openadapt_flow/demo/fixtures/{name} differ: copy the one you re-recorded over the other"
        )


@pytest.mark.parametrize("name", ["normal", "dark", "twin"])
def test_each_top_level_fixture_loads(name):
    loaded = load_fixture(TOP / name)
    assert loaded.model.system_of_record is not None and loaded.model.transitions


def test_git_keeps_the_runs_root_and_its_readme_only():
    ignore = (REPO / ".gitignore").read_text().splitlines()
    assert "runs/*" in ignore and "!runs/README.md" in ignore
    assert (REPO / "runs" / "README.md").is_file()
