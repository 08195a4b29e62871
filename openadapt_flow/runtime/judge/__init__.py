"""Pure judgments read from a run's journal: its calls, progress, outcome, halts and policy (no backend, no store I/O).

The package's names are its modules, imported by name; outside runtime/, use the runtime's face
(openadapt_flow/runtime/__init__.py)."""

__all__ = ["calls", "fold", "halt", "outcome", "policy"]
