"""The PostgreSQL journal writer after a lost connection (issue 34, finding 2), on a stand-in for the connector: the
server's rows, its `losses` count, and a crash that drops the asynchronously committed rows not yet flushed. The real
server's case is tests/attack/test_pg_restart.py."""

from __future__ import annotations

import errno
import json
from typing import Any

import pytest

from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.journal import make_record, verify_chain
from openadapt_flow.store.lease import LeaseLost
from openadapt_flow.store.postgres.journal import PostgresJournal

KEY = b"k" * 32


class Run:
    ref = "pg:t"

    def id(self, create: bool = False) -> int:
        return 1


class Server:
    """flow_journal's rows, and the connector's face the writer uses (`one`, `held_lease`, `losses`)."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[bytes, bool]] = {}  # seq -> (line, flushed)
        self.losses = 0
        self.cut_after_commit = False  # the next append commits, then its answer is lost

    def held_lease(self, run: Any) -> None:
        return None

    def one(self, sql: str, params: Any = ()) -> Any:
        if sql.startswith("SELECT flow_append"):
            _, seq, _, _, line, sync, *_ = params
            if seq in self.rows:
                raise AssertionError("the writer re-used a seq")
            self.rows[seq] = (line, False)
            if sync:
                self.rows = {s: (ln, True) for s, (ln, _) in self.rows.items()}
            if self.cut_after_commit:
                self.cut_after_commit = False
                self.losses += 1
                raise StorageFault("pg", OSError(errno.EIO, "server closed the connection unexpectedly"))
            return (True,)
        if sql.startswith("SELECT seq, line FROM flow_journal"):
            if not self.rows:
                return None
            seq = max(self.rows)
            return (seq, self.rows[seq][0])
        if sql.startswith("SELECT pg_current_xact_id"):
            self.rows = {s: (ln, True) for s, (ln, _) in self.rows.items()}
            return (1,)
        raise AssertionError(sql)

    def crash(self) -> None:
        """The server restarted `-m immediate`: unflushed rows are gone, every connection with them."""
        self.rows = {s: v for s, v in self.rows.items() if v[1]}
        self.losses += 1

    def journal(self) -> bytes:
        return b"".join(self.rows[s][0] for s in sorted(self.rows))


def _writer(server: Server) -> PostgresJournal:
    return PostgresJournal(Run(), server, KEY)  # type: ignore[arg-type]


def test_a_record_lost_by_a_crash_is_a_missing_suffix_not_a_hole():
    server = Server()
    j = _writer(server)
    j.append("run_started")
    j.append("action_dispatched", "save")  # synchronous
    j.append("action_sent", "save")  # asynchronous: lost below
    server.crash()
    j.append("interrupted", data={"reason": "storage"})
    records, _, _ = verify_chain(server.journal(), KEY, "pg:t")  # raises "journal chain broken" on a hole
    assert [(r["seq"], r["type"]) for r in records] == [
        (1, "run_started"),
        (2, "action_dispatched"),
        (3, "interrupted"),
    ]
    assert j.lost == [3] and "action_sent" not in j.last_of


def test_without_a_lost_connection_the_tail_is_not_read_again():
    server = Server()
    j = _writer(server)
    j.append("run_started")
    server.rows.clear()  # were it re-read, the writer would chain to nothing
    j.append("step_started", "a")
    assert server.rows[2][0] and j.seq == 2 and j.lost == []


def test_a_record_whose_commit_answer_was_lost_but_landed_is_chained_to():
    server = Server()
    j = _writer(server)
    j.append("run_started")
    server.cut_after_commit = True
    with pytest.raises(StorageFault):
        j.append("action_dispatched", "save")
    j.append("interrupted")
    records, _, _ = verify_chain(server.journal(), KEY, "pg:t")
    assert [r["type"] for r in records] == ["run_started", "action_dispatched", "interrupted"]


def test_a_tail_another_writer_appended_stops_this_one():
    server = Server()
    j = _writer(server)
    j.append("run_started")
    j.append("step_started", "a")
    server.crash()  # nothing lost (run_started flushed, step_started not: lost), then another writer takes over
    first = json.loads(server.rows[1][0])["hash"]
    _, line = make_record(KEY, 2, first, "interrupted", None, {})
    server.rows = {1: server.rows[1], 2: (line, True)}
    with pytest.raises(LeaseLost, match="not a record this process appended"):
        j.append("step_verified", "a")
    assert server.rows[2][0] == line
