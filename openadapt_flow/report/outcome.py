"""Whether a finished run's outcome was checked with its params (issue 35, finding 4): a run whose bundle's last
consequential step nothing that depends on its params verifies is not a plain COMPLETED: a wrong result would have
finished the same. Read from the bundle the run replayed (its path in the manifest), only while that bundle is the
one it ran (same digest); otherwise nothing is said."""

from __future__ import annotations

from typing import Any

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.outcome import unverified_outcome
from openadapt_flow.errors import FlowError


def unverified_step(bundle: dict[str, Any]) -> str | None:
    """The id of the run's unverified outcome step (the manifest's `bundle`), None when it was verified or the
    bundle is gone or changed since."""
    path, digest = bundle.get("path"), bundle.get("digest")
    if not path:
        return None
    try:
        loaded = load_bundle(path)
    except (FlowError, OSError):
        return None
    return unverified_outcome(loaded.model) if loaded.digest == digest else None
