"""Fixtures for end-to-end tests on a real Xvnc server: `xvnc` and the `demo_app` factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.demo_harness import DemoApp, start_demo_app
from tests.support.xserver import XvncServer, start_xvnc


@pytest.fixture
def xvnc() -> Iterator[XvncServer]:
    """A fresh 1024x768 Xvnc per test, stopped (by its pid) after it."""
    server = start_xvnc(1024, 768)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def demo_app(xvnc: XvncServer, tmp_path: Path) -> Iterator[Callable[..., DemoApp]]:
    """Factory: demo_app(variant="normal", refute_save=False, db_path=None) starts the app on `xvnc`.

    The database defaults to tmp_path/invoices.db; every app started is stopped after the test.
    """
    started: list[DemoApp] = []

    def start(variant: str = "normal", refute_save: bool = False, db_path: Path | None = None) -> DemoApp:
        app = start_demo_app(xvnc, db_path or tmp_path / "invoices.db", variant, refute_save)
        started.append(app)
        return app

    try:
        yield start
    finally:
        for app in started:
            app.stop()
