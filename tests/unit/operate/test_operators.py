"""Authenticated operators (SPEC §20): credentials hashed in the store, disabled refused, quorum of distinct operators."""

from __future__ import annotations

import json

import pytest

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.runtime.operate.approval import DecisionOptions, approve
from openadapt_flow.runtime.operate.operators import (
    add_operator,
    authenticate,
    check_active,
    disable_operator,
    list_operators,
    reset_operator,
)
from openadapt_flow.store import FilesystemStore, MemoryStore, PostgresStore
from openadapt_flow.store.operators import AUDIT_FILE, OPERATORS_FILE
from tests.support.pg import pg_server, store_spec  # noqa: F401 — pg_server is a session fixture
from tests.unit.runtime.test_durable import App, cfg, env, go, rows, start, store  # noqa: F401  (fixtures)
from tests.unit.runtime.test_engine import home

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["filesystem", "memory", "postgres"])
def book_store(request, tmp_path, monkeypatch):
    if request.param == "postgres":  # a fresh schema per test on the session's server (migrations 0001…0002)
        return PostgresStore(
            store_spec(request.getfixturevalue("pg_server"), f"o{abs(hash(request.node.nodeid)):x}", monkeypatch)
        )
    return FilesystemStore(tmp_path / "runs") if request.param == "filesystem" else MemoryStore()


def test_credential_is_stored_only_as_an_argon2id_hash(book_store, tmp_path):
    cred = add_operator(book_store, "alice", "admin")
    rec = book_store.operators().get("alice")
    assert rec["hash"].startswith("$argon2id$") and cred not in json.dumps(rec)
    assert "hash" not in list_operators(book_store)[0]
    if isinstance(book_store, FilesystemStore):  # at the runs root, never in a run directory; the secret nowhere
        root = tmp_path / "runs"
        assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [AUDIT_FILE, OPERATORS_FILE]
        assert all(cred not in p.read_text() for p in root.iterdir() if p.is_file())
    assert authenticate(book_store, "alice", cred, channel="console")["role"] == "admin"


def test_wrong_unknown_and_disabled_are_refused_and_audited(book_store):
    cred = add_operator(book_store, "alice")
    with pytest.raises(RefusedError, match="wrong credential"):
        authenticate(book_store, "alice", cred + "x", channel="console")
    with pytest.raises(RefusedError, match="wrong credential"):
        authenticate(book_store, "mallory", cred, channel="console")
    disable_operator(book_store, "alice")
    with pytest.raises(RefusedError, match="disabled"):
        authenticate(book_store, "alice", cred, channel="console")
    with pytest.raises(RefusedError, match="disabled"):
        check_active(book_store, "alice")
    new = reset_operator(book_store, "alice")  # re-enables with a new credential; the old one is dead
    with pytest.raises(RefusedError):
        authenticate(book_store, "alice", cred, channel="console")
    authenticate(book_store, "alice", new, channel="console")
    events = [(e["event"], e.get("why")) for e in book_store.operators().audit_log()]
    assert events == [
        ("operator_added", None),
        ("login_failed", "bad credential"),
        ("login_failed", "bad credential"),
        ("operator_disabled", None),
        ("login_failed", "disabled"),
        ("operator_reset", None),
        ("login_failed", "bad credential"),
        ("login", None),
    ]


def test_bad_names_roles_and_duplicates(book_store):
    with pytest.raises(UsageError):
        add_operator(book_store, "../x")
    with pytest.raises(UsageError):
        add_operator(book_store, "bob", "root")
    add_operator(book_store, "bob")
    with pytest.raises(RefusedError, match="already exists"):
        add_operator(book_store, "bob")
    with pytest.raises(UsageError, match="no operator"):
        disable_operator(book_store, "carol")


def test_an_edited_audit_log_breaks_its_chain(tmp_path):
    runs = FilesystemStore(tmp_path / "runs")
    add_operator(runs, "alice")
    add_operator(runs, "bob")
    path = tmp_path / "runs" / AUDIT_FILE
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[1:]) + "\n")  # the first entry removed
    with pytest.raises(RefusedError, match="hash chain"):
        runs.operators().audit_log()


def test_quorum_counts_distinct_authenticated_operators(tmp_path, env, store):  # noqa: F811
    config = DeployConfig.model_validate({**cfg(tmp_path, store).model_dump(by_alias=True), "approvals": {"quorum": 2}})
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store, config=config)
    app.refute = False
    app.show(home())
    audited: list[dict] = []
    # one operator on the console twice (even from two OS users' consoles) counts once
    assert (
        approve(
            out.run_dir,
            "continue",
            "alice",
            os_user="svc",
            channel="console",
            options=DecisionOptions(audit=audited.append),
        )["complete"]
        is False
    )
    assert approve(out.run_dir, "continue", "alice", os_user="other", channel="console")["noop"]
    assert (
        approve(out.run_dir, "continue", "bob", os_user="svc", channel="console")["complete"] is True
    )  # same OS user, two operators
    assert (
        audited[0]["event"] == "decision" and audited[0]["operator"] == "alice" and audited[0]["channel"] == "console"
    )
    assert go(out.run_dir, app).state == "COMPLETED"
    assert rows(env) == 1


def test_approvals_channels_refuse_the_runner_hosts_cli_on_a_consequential_step(tmp_path, env, store):  # noqa: F811
    """approvals.channels: [console] is signed into the pause's task; `flow approve` (channel cli) is refused, an
    operator on the console decides, and the run completes with one row."""
    config = DeployConfig.model_validate(
        {**cfg(tmp_path, store).model_dump(by_alias=True), "approvals": {"channels": ["console"]}}
    )
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store, config=config)
    app.refute = False
    app.show(home())
    with pytest.raises(RefusedError, match="only from an authenticated channel"):
        approve(out.run_dir, "continue", "root", os_user="root")  # the runner host's CLI
    assert approve(out.run_dir, "continue", "alice", os_user="svc", channel="console")["recorded"]
    assert go(out.run_dir, app).state == "COMPLETED"
    assert rows(env) == 1
