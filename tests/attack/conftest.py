"""The adversarial suite: attacks on the durable promise (tamper, copy/restore, concurrent commands, kills, full disks,
odd values). Each test is named after the behaviour it pins; extend it by adding a case, not by patching a test.

Shared fixtures: a real Xvnc (`xvnc`) and the demo app with its SQLite system of record (`demo_app`).
"""

from tests.e2e.conftest import demo_app, xvnc  # noqa: F401
