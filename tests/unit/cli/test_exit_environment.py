"""Issue 25, item 5: an exit code tells the environment from the input. A desktop that refuses the connection and a
system of record that does not answer exit 75 (EX_TEMPFAIL: a retry loop retries), not 2; wrong credentials, bad
bundles and flags, and a system of record that answers that the query or file is wrong stay 2; and every missing setting is named in one error, not one per try."""

from __future__ import annotations

import socket

import pytest

from openadapt_flow.cli.exits import EXIT_CODES
from openadapt_flow.errors import AuthFailed, ConnectionFailed
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_table_has_75_and_the_errors_their_codes():
    from openadapt_flow.errors import Unavailable

    assert next(e for e in EXIT_CODES if e.code == 75).kind == "unavailable"
    assert (ConnectionFailed("x").exit_code, Unavailable("x").exit_code, AuthFailed("x").exit_code) == (75, 75, 2)


def test_a_desktop_that_refuses_the_connection_is_75(flow, tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_DB_DSN", f"sqlite:///{tmp_path / 'x.db'}")
    r = flow("replay", str(BUNDLE), "--url", f"vnc://127.0.0.1:{_free_port()}", *PARAMS, "--run-dir", "r")
    assert r.code == 75, (r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "refused the connection" in r.err
    assert not (tmp_path / "r").exists()


def test_a_system_of_record_that_does_not_answer_is_75(flow, tmp_path, monkeypatch):
    monkeypatch.setenv("DEMO_DB_DSN", f"postgresql://flow@127.0.0.1:{_free_port()}/ledger")
    monkeypatch.setenv("FLOW_FIXTURE_DB", str(tmp_path / "app.db"))  # the app's own: only the verifier's is broken
    r = flow("replay", str(BUNDLE), "--url", f"fixture:{FIXTURES / 'normal'}", *PARAMS, "--run-dir", "r")
    assert r.code == 75, (r.out, r.err)
    assert "cannot be read before the run starts" in r.err and len(r.err.strip().splitlines()) == 1


def test_a_bad_flag_is_still_2(flow):
    assert flow("replay", str(BUNDLE), "--no-such-flag").code == 2


def test_every_missing_setting_is_named_at_once(flow, monkeypatch):
    monkeypatch.delenv("DEMO_DB_DSN", raising=False)
    r = flow("replay", str(BUNDLE), "--url", f"fixture:{FIXTURES / 'normal'}", "--run-dir", "r")
    assert r.code == 2, (r.out, r.err)
    line = r.err.strip()
    assert len(line.splitlines()) == 1
    for name in ("param 'vendor' is required", "param 'amount' is required", "DEMO_DB_DSN"):
        assert name in line, line
