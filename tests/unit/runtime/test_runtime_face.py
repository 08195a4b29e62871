"""The runtime's face (runtime/__init__.py): every name it pins resolves, importing it loads no room, and the rooms'
old names are gone (no shims)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import openadapt_flow.runtime as runtime

pytestmark = pytest.mark.timeout(60)


def test_every_name_of_the_face_resolves() -> None:
    missing = [name for name in runtime.__all__ if getattr(runtime, name, None) is None]
    assert not missing, f"openadapt_flow.runtime: __all__ names {missing}, which do not resolve"
    assert runtime.resume_run.__module__ == "openadapt_flow.runtime.runs"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(runtime, "no_such_name")


def test_importing_the_face_loads_no_room() -> None:
    code = (
        "import sys, openadapt_flow.runtime; "
        "print(sorted(m for m in sys.modules if m.startswith('openadapt_flow.runtime.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "old",
    [
        "openadapt_flow.runtime.decide",
        "openadapt_flow.runtime.act.context",
        "openadapt_flow.runtime.act.launch",
        "openadapt_flow.runtime.fleet.queue",
        "openadapt_flow.runtime.operate.decisions",
        "openadapt_flow.store.postgres.queue",
    ],
)
def test_old_room_names_do_not_import(old: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


@pytest.mark.parametrize("room", ["act", "act.durable", "fleet", "judge", "operate", "resume", "start", "workflow"])
def test_every_room_pins_its_names(room: str) -> None:
    module = importlib.import_module(f"openadapt_flow.runtime.{room}")
    names = module.__all__
    assert names == sorted(names, key=str.lower) or room in ("act.durable", "resume")
    for name in names:
        assert getattr(module, name, None) is not None or importlib.import_module(f"{module.__name__}.{name}")
