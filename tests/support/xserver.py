"""Tests use the package's own Xvnc launcher (it also serves `flow demo`)."""

from openadapt_flow.demo.xvnc import XvncServer, free_port, start_xvnc, wait_until

__all__ = ["XvncServer", "free_port", "start_xvnc", "wait_until"]
