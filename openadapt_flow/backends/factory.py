"""Open the backend a spec names: the one module that knows every backend class (spec.py knows none).

Each backend module is imported when a spec of its kind is first opened: VNC loads
twisted, RDP and screen load Xlib and mss, and a command that never connects
(`flow status`, `flow approve`) should not pay for them. Nothing in backends/
imports this module, so these imports close no cycle.
"""

from __future__ import annotations

import sys

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import UsageError


def open_backend(spec: BackendSpec) -> Backend:
    """Connect to the desktop `spec` names and return a ready backend (first frame received)."""
    if spec.kind == "vnc":
        from openadapt_flow.backends.vnc import VncBackend

        return VncBackend(spec)
    if spec.kind == "screen":
        from openadapt_flow.backends.screen import ScreenBackend

        return ScreenBackend(spec)
    if spec.kind == "fake":
        raise UsageError("the fake backend is for tests: build FakeBackend(frame) directly")
    if spec.kind == "fixture":
        from openadapt_flow.backends.fixture import FixtureBackend

        return FixtureBackend(spec)
    if spec.kind == "rdp":
        if sys.platform == "win32":
            raise UsageError(
                "the rdp backend needs Linux (Xvfb and xfreerdp's X11 client); on Windows use vnc:// or screen:"
            )
        from openadapt_flow.backends.rdp import RdpBackend

        return RdpBackend(spec)
    raise UsageError(f"{spec.kind} backend is not available yet")
