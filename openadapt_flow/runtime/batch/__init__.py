"""`flow batch`: one run per work item on one live app, each item exactly once (runner.py); what an earlier attempt
at an item means for this batch (prior.py); an item's status and effect verdict (status.py); the results files
(results.py). Outside runtime/, use the runtime's face (openadapt_flow/runtime/__init__.py)."""

__all__ = ["prior", "results", "runner", "status"]
