"""Named crash points for the crash-test matrix (tests/crash/).

When the environment variable FLOW_CRASH_AT names a point (optionally
`point@step-id`; journal points are `after:<record type>`), the process SIGKILLs itself there — the most abrupt death a
run can suffer, at an exact place in the write-ahead protocol. Unset (always
in production) it costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "FLOW_CRASH_AT"
SIGNAL_ENV = "FLOW_CRASH_SIGNAL"  # TERM: deliver SIGTERM instead (a graceful stop at the same point)


def crash_point(name: str, step: str | None = None) -> None:
    want = os.environ.get(ENV)
    if not want:
        return
    point, _, for_step = want.partition("@")
    if point == name and (not for_step or for_step == step):
        sig = signal.SIGTERM if os.environ.get(SIGNAL_ENV) == "TERM" else signal.SIGKILL
        os.kill(os.getpid(), sig)
