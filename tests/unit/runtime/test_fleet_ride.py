"""A fleet worker waiting for its store (runtime/fleet/ride.py, issue 34): bounded, one line per attempt, and exit 75
once the window passed; `--db-retry-for` checked as a duration. A real restart: tests/attack/test_pg_restart.py."""

from __future__ import annotations

import threading
import time

import pytest

from openadapt_flow.cli.fleet import parse_duration
from openadapt_flow.demo.xvnc import free_port
from openadapt_flow.errors import Unavailable, UsageError
from openadapt_flow.runtime.fleet.ride import opened, wait_for_store
from openadapt_flow.store import StoreUnavailable


def _nowhere() -> str:
    return f"postgresql://flow@127.0.0.1:{free_port()}/postgres"  # nothing listens: refused at once


def test_a_store_that_never_answers_is_given_up_after_the_window_with_exit_75():
    lines: list[str] = []
    with pytest.raises(Unavailable) as e:
        wait_for_store(_nowhere(), 1.0, lines.append, threading.Event(), time.monotonic())
    assert e.value.exit_code == 75 and "has not answered for" in str(e.value) and "giving up" in str(e.value)
    assert "\n" not in str(e.value) and "--db-retry-for 1s" in str(e.value)
    assert len(lines) >= 2 and all(ln.startswith("fleet worker: store unreachable (attempt ") for ln in lines), lines
    assert [int(ln.split("attempt ")[1].split(",")[0]) for ln in lines] == list(range(1, len(lines) + 1))


def test_a_stop_request_ends_the_wait_without_an_error():
    stop = threading.Event()
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        stop.set()  # SIGTERM while it waits

    assert wait_for_store(_nowhere(), 300.0, say, stop, time.monotonic()) is False
    assert len(lines) == 1


@pytest.mark.parametrize(
    "text, seconds", [("300", 300.0), ("300s", 300.0), ("5m", 300.0), ("1h", 3600.0), ("0.5s", 0.5)]
)
def test_db_retry_for_reads_a_duration(text, seconds):
    assert parse_duration(text, "--db-retry-for") == seconds


@pytest.mark.parametrize("text", ["", "0", "-5s", "soon", "5d", "inf", "nan", "1e999"])
def test_db_retry_for_refuses_what_is_not_a_positive_duration_in_one_line(text):
    with pytest.raises(UsageError, match="--db-retry-for .*expected a duration such as 300s, 5m or 1h"):
        parse_duration(text, "--db-retry-for")


def test_a_store_that_refuses_the_workers_start_is_waited_for_within_the_same_window():
    lines: list[str] = []
    tries: list[int] = []

    def open_() -> None:
        tries.append(1)
        raise StoreUnavailable(
            "--store postgresql://…: cannot connect (Connection refused); nothing was run: retry later"
        )

    with pytest.raises(Unavailable, match="has not answered for"):
        opened(_nowhere(), open_, 1.0, lines.append)
    assert len(tries) == 1 and lines[0].startswith("fleet worker: store unreachable at start (--store"), lines
