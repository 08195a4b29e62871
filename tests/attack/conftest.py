"""The adversarial suite: attacks on the durable promise (tamper, copy/restore, concurrent commands, kills, full disks,
odd values). Each test is named after the behaviour it pins; extend it by adding a case, not by patching a test.

Shared fixtures: a real Xvnc (`xvnc`) and the demo app with its SQLite system of record (`demo_app`); `demo`, the demo
app and `flow` on each store (attack_support.DemoRuns; a test picks its cases per store with `on_stores`).
"""

import pytest

from tests.attack.attack_support import STORES, DemoRuns
from tests.e2e.conftest import demo_app, xvnc  # noqa: F401
from tests.support.pg import pg_server  # noqa: F401  (the session's PostgreSQL server: the postgres store's)


@pytest.fixture(params=STORES)
def demo(request, tmp_path, monkeypatch) -> DemoRuns:
    return DemoRuns.start(request.param, request, tmp_path, monkeypatch)
