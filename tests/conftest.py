"""Every test (and every `flow` subprocess it starts) keeps the run ledger in a private state dir, never in ~."""

import os
import tempfile

os.environ.setdefault("FLOW_STATE_DIR", tempfile.mkdtemp(prefix="flow-state-"))

pytest_plugins = [
    "tests.realapps.figure",  # the real-app suite's figure, printed by the controller
    "tests.support.run_records",  # every run directory a passing test leaves is validated against the run-record models
]
