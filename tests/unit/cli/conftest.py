"""`flow` run in-process through its real entry point (cli/app.py main), with the environment isolated."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from openadapt_flow.cli import app as app_module


@dataclass
class Ran:
    code: int
    out: str
    err: str


@pytest.fixture
def flow(monkeypatch, capsys, tmp_path) -> Callable[..., Ran]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "flow-state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("FLOW_DEBUG", raising=False)

    def run(*argv: str) -> Ran:
        monkeypatch.setattr(sys, "argv", ["flow", *argv])
        capsys.readouterr()
        with pytest.raises(SystemExit) as done:
            app_module.main()
        captured = capsys.readouterr()
        code = done.value.code
        return Ran(code if isinstance(code, int) else (0 if code is None else 1), captured.out, captured.err)

    return run
