"""What composes a run before and around its step loop: the requests and outcome, the run context, the backend choice,
the store reference, preflight and the run-directory lifecycle transitions.

The package's names are its modules, imported by name; outside runtime/, use the runtime's face
(openadapt_flow/runtime/__init__.py)."""

__all__ = ["backend_select", "context", "launch", "lifecycle", "preflight", "runref"]
