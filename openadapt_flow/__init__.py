"""openadapt-flow: replay demonstrated GUI workflows that verify every step and never guess."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openadapt_flow.version import __version__

if TYPE_CHECKING:
    from openadapt_flow.runtime.workflow.api import agent, tool, workflow
    from openadapt_flow.runtime.workflow.wait import WaitResult, wait

__all__ = ["WaitResult", "__version__", "agent", "tool", "wait", "workflow"]

# The Python API (spec §14), imported on first use so `import openadapt_flow` stays cheap: the
# decorators need only a light module; `wait` brings the runtime.
_LAZY = {
    "workflow": "openadapt_flow.runtime.workflow.api",
    "tool": "openadapt_flow.runtime.workflow.api",
    "agent": "openadapt_flow.runtime.workflow.api",
    "wait": "openadapt_flow.runtime.workflow.wait",
    "WaitResult": "openadapt_flow.runtime.workflow.wait",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'openadapt_flow' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
