"""`flow operator add|list|disable|reset` as a user types them: the credential once, exit codes of SPEC §13."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(120)


def test_operator_commands(tmp_path):
    env = flow_env(tmp_path)

    def flow(*args):
        return run_flow([*args, "--root", "runs"], tmp_path, env=env)

    r = flow("operator", "add", "alice", "--role", "admin", "--json")
    assert r.returncode == 0, r.stderr
    cred = json.loads(r.stdout)["credential"]
    assert len(cred) >= 20 and cred not in (tmp_path / "runs" / "operators.json").read_text()
    r = flow("operator", "add", "alice")
    assert r.returncode == 6 and "already exists" in r.stderr and len(r.stderr.splitlines()) == 1
    r = flow("operator", "add", "bob", "--role", "root")
    assert r.returncode == 2 and "--role 'root'" in r.stderr
    assert flow("operator", "disable", "alice").returncode == 0
    rows = json.loads(flow("operator", "list", "--json").stdout)
    assert [(o["name"], o["role"], o["disabled"]) for o in rows] == [("alice", "admin", True)] and "hash" not in rows[0]
    r = flow("operator", "reset", "alice")
    assert r.returncode == 0 and "shown once" in r.stdout and cred not in r.stdout
    assert flow("operator", "reset", "carol").returncode == 2
