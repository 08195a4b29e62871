"""`flow queue …` and `flow relay` as typed (in-process): credentials and tokens shown once, the key printed, and bad
input one line with exit 2; a relay that cannot reach its queue is bad input too, before anything is published."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

from openadapt_flow.cli.app import build_app
from openadapt_flow.errors import RefusedError
from openadapt_flow.phone.queue.db import QueueDB

pytestmark = pytest.mark.timeout(60)


def flow(*args: str, env: dict | None = None):
    return CliRunner().invoke(build_app(args[0]), list(args), env=env)


def test_queue_commands(tmp_path):
    db = str(tmp_path / "q.sqlite3")
    r = flow("queue", "key", "--db", db)
    assert r.exit_code == 6 and "no signing key yet" in r.stderr and len(r.stderr.splitlines()) == 1
    r = flow("queue", "operator", "add", "pat", "--db", db, "--json")
    assert r.exit_code == 0, r.output
    cred = json.loads(r.stdout)["credential"]
    assert cred.encode() not in (tmp_path / "q.sqlite3").read_bytes()
    assert flow("queue", "operator", "add", "pat", "--db", db).exit_code == 6
    assert flow("queue", "operator", "add", "bad name", "--db", db).exit_code == 2
    token = json.loads(flow("queue", "relay-token", "--db", db, "--json").stdout)["token"]
    assert token.encode() not in (tmp_path / "q.sqlite3").read_bytes()
    r = flow(
        "queue", "serve", "--tls-cert", str(tmp_path / "none.pem"), "--tls-key", str(tmp_path / "none.key"), "--db", db
    )
    assert r.exit_code == 2 and "not a file" in r.stderr
    assert flow("queue", "relay-token", "--db", str(tmp_path / "no" / "q.sqlite3")).exit_code == 2


@pytest.mark.parametrize(
    "args, env, says",
    [
        (["--queue", "http://127.0.0.1:1", "--queue-key", "ed25519:" + "A" * 43], {"T": "x"}, "https:// URL"),
        (["--queue", "https://127.0.0.1:1", "--queue-key", "rsa:AAAA"], {"T": "x"}, "--queue-key"),
        (["--queue", "https://127.0.0.1:1", "--queue-key", "ed25519:" + "A" * 43], {}, "not set"),
        (["--queue", "https://127.0.0.1:1", "--queue-key", "ed25519:" + "A" * 43], {"T": "x"}, "queue unreachable"),
    ],
)
def test_relay_bad_input_is_one_line_and_exit_2(tmp_path, args, env, says):
    (tmp_path / "runs").mkdir()
    r = flow("relay", *args, "--token-env", "T", "--root", str(tmp_path / "runs"), env={"T": "", **env})
    assert r.exit_code == 2 and says in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def test_queue_operator_list_and_disable(tmp_path):
    db = tmp_path / "q.sqlite3"
    creds = {
        n: json.loads(flow("queue", "operator", "add", n, "--db", str(db), "--json").stdout)["credential"]
        for n in ("pat", "sam")
    }
    queue = QueueDB(db)
    for n in ("pat", "sam"):
        queue.add_device(n, {"endpoint": f"https://push.example/{n}", "keys": {"p256dh": "k", "auth": "a"}})
    r = flow("queue", "operator", "list", "--db", str(db), "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [(o["name"], o["disabled"], o["devices"]) for o in rows] == [("pat", False, 1), ("sam", False, 1)]
    assert all(c not in r.stdout for c in creds.values()) and "hash" not in r.stdout
    r = flow("queue", "operator", "disable", "pat", "--db", str(db))
    assert r.exit_code == 0 and "pat: disabled" in r.stdout
    listed = flow("queue", "operator", "list", "--db", str(db)).stdout.splitlines()
    assert [line.split("\t")[:3] for line in listed] == [
        ["pat", "disabled", "0 phone(s)"],
        ["sam", "active", "1 phone(s)"],
    ]
    assert [d["endpoint"] for d in queue.devices()] == ["https://push.example/sam"]  # pat's phone gets no more pushes
    assert not queue.operator_active("pat") and queue.operator_active("sam")
    with pytest.raises(RefusedError):
        queue.authenticate("pat", creds["pat"], "test")
    assert queue.authenticate("sam", creds["sam"], "test") == "sam"
    r = flow("queue", "operator", "disable", "nobody", "--db", str(db))
    assert r.exit_code == 2 and "no queue operator 'nobody'" in r.stderr and len(r.stderr.splitlines()) == 1
    events = [json.loads(e) for (e,) in sqlite3.connect(db).execute("SELECT event FROM audit ORDER BY seq")]
    assert {"event": "operator_disabled", "operator": "pat"} in events
