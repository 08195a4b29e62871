"""A batch connects for its next item while the item before writes its report (runtime/batch/desk.py)."""

from __future__ import annotations

import pytest

from openadapt_flow.backends.spec import parse_url
from openadapt_flow.errors import ConnectionFailed
from openadapt_flow.runtime.batch.desk import NextDesk

pytestmark = pytest.mark.timeout(30)
VNC = parse_url("vnc://127.0.0.1:5901")


class Conn:
    def __init__(self, n: int) -> None:
        self.n, self.closed = n, False

    def close(self) -> None:
        self.closed = True


class Opener:
    def __init__(self, fail_first: bool = False) -> None:
        self.opened: list[Conn] = []
        self.fail_first = fail_first

    def __call__(self, spec):
        if self.fail_first and not self.opened and not getattr(self, "failed", False):
            self.failed = True
            raise ConnectionFailed("refused")
        self.opened.append(Conn(len(self.opened)))
        return self.opened[-1]


def test_the_next_run_takes_the_connection_opened_while_the_last_one_reported():
    opener = Opener()
    desk = NextDesk(opener)
    first = desk.factory(VNC)
    desk.before_report(VNC)
    second = desk.factory(VNC)
    assert second is not first and len(opener.opened) == 2  # a connection of its own, opened ahead
    assert desk.factory(VNC) is opener.opened[2]  # nothing opened ahead: it connects then
    desk.close()


def test_a_connection_that_failed_ahead_is_opened_again_by_the_run():
    opener = Opener(fail_first=True)
    desk = NextDesk(opener)
    desk.before_report(VNC)
    got = desk.factory(VNC)
    assert got is opener.opened[0] and not got.closed
    desk.close()


def test_one_not_taken_is_closed_and_none_is_opened_ahead_but_on_vnc():
    opener = Opener()
    desk = NextDesk(opener)
    desk.before_report(VNC)
    desk.drop()  # a reset runs before the next item: it connects afresh
    assert opener.opened[0].closed
    desk.before_report(parse_url("fixture:/nowhere"))
    desk.close()
    assert len(opener.opened) == 1
