"""Operating runs: signed operator approvals, the operators' roster, reconcile, teach patches, truth and upgrades.

The package's names are its modules, imported by name; outside runtime/, use the runtime's face
(openadapt_flow/runtime/__init__.py)."""

__all__ = ["approval", "operators", "reconciler", "teach", "truth", "upgrade"]  # not-vocabulary: module names
