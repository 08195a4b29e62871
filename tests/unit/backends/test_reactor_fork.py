"""A process forked from one running the RFB reactor is told so at once, instead of waiting out a connect."""

from __future__ import annotations

import os

from openadapt_flow.backends import rfb_mirror
from openadapt_flow.errors import BackendError


def test_a_forked_child_of_a_process_running_the_reactor_refuses_vnc_at_once() -> None:
    rfb_mirror.ensure_reactor(5.0)
    rfb_mirror.ensure_reactor(5.0)  # the process that runs it: a no-op
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            rfb_mirror.ensure_reactor(5.0)
        except BackendError as e:
            code = 0 if "forked" in str(e) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
