"""`flow resume`: continue a paused or interrupted durable run from its last verified checkpoint (spec §8–§10).

One resume path for every kind of run, in two parts: plan.py reads the run — journal, state, checkpoint, the pause's
views, approvals — and returns a plan (the repairs to make, then the pause to resolve, the decision, the verified
checkpoint to continue from, or why it stops or is refused), writing nothing; execute.py, the one executor, takes the
lease, makes the plan's writes in order and continues a bundle's steps (bundle.py) or a Python workflow's code
(workflow.py). `flow resume --dry-run` prints the plan.
"""

from __future__ import annotations

from openadapt_flow.runtime.resume.execute import resume
from openadapt_flow.runtime.resume.opened import Opened, resumed
from openadapt_flow.runtime.resume.plan import ResumePlan, ResumeRequest, plan, plan_resume

__all__ = ["Opened", "ResumePlan", "ResumeRequest", "plan", "plan_resume", "resume", "resumed"]
