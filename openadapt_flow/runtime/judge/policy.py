"""Policy and budgets (spec §11): limits and deny rules checked before a step acts.

A violation is a recorded governance decision — BLOCKED with incident.json —
not an exception. Counters span resumes: they are summed from the journal.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openadapt_flow.bundle.config import PolicyConfig
from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import RunSignal
from openadapt_flow.records.entry import JournalEntry, step_of
from openadapt_flow.records.states import RecordType, is_a

SEGMENT_START = (RecordType.RUN_STARTED, RecordType.RUN_RESUMED)
SEGMENT_END = (RecordType.PAUSED, RecordType.RUN_FINISHED, RecordType.INTERRUPTED)


@dataclass
class PolicyBlock(RunSignal):
    """A policy rule or budget stops the run: the run signal; what the journal keeps of it is a `records.Blocked`."""

    exit_code = 4  # BLOCKED

    rule: str
    observed: Any
    limit: Any
    step: str | None
    message: str


def _ts(rec: JournalEntry) -> float:
    return datetime.fromisoformat(rec["ts"].replace("Z", "+00:00")).timestamp()


def running_seconds(records: list[JournalEntry]) -> float:
    """RUNNING time of the run's closed segments. A segment that died without an end record counts to its
    last record (a finalised death's own record is written later, by reconcile or resume, and does not count)."""
    total, start, last = 0.0, None, None
    for r in records:
        if is_a(r, *SEGMENT_START):
            if start is not None and last is not None:
                total += last - start
            start = _ts(r)
        elif is_a(r, *SEGMENT_END) and start is not None:
            end = last if (is_a(r, RecordType.INTERRUPTED) and r["data"].get("finalized")) else _ts(r)
            total += max(0.0, (end or start) - start)
            start = None
        last = _ts(r)
    if start is not None and last is not None:
        total += last - start
    return total


class Budget:
    """What the policy limits, seeded from the journal (so limits span resumes) and kept current per record."""

    def __init__(self, records: list[JournalEntry]) -> None:
        self.steps_started = 0
        self.dispatches: dict[str, int] = {}
        self.model_calls = 0
        self.step_model_calls = 0  # in the step attempt under way (since its step_started)
        for r in records:
            self.note(r)
        self.earlier_running_s = running_seconds(records)
        self.segment_started = time.time()

    @property
    def running_s(self) -> float:
        return self.earlier_running_s + (time.time() - self.segment_started)

    def note(self, rec: JournalEntry) -> None:
        if is_a(rec, RecordType.STEP_STARTED):
            self.steps_started += 1
            self.step_model_calls = 0
        elif is_a(rec, RecordType.ACTION_DISPATCHED):
            step = step_of(rec)
            self.dispatches[step] = self.dispatches.get(step, 0) + 1
        elif is_a(rec, RecordType.RESOLVED, RecordType.LLM_CALL):
            calls = int(rec["data"].get("model_calls", 0) or 0)
            self.model_calls += calls
            self.step_model_calls += calls


def model_call_refusal(policy: PolicyConfig, budget: Budget, step: Step) -> str | None:
    """Before a GUI step's model call (spec §4, §11): one call per step, and never past max_model_calls
    (that would be a violation: PolicyBlock is raised, and the call is not made)."""
    if budget.step_model_calls >= 1:
        return "the step has made its one model call (while the screen was changing); no second"
    limit = policy.max_model_calls
    if limit is not None and budget.model_calls >= limit:
        raise PolicyBlock(
            "max_model_calls",
            budget.model_calls + 1,
            limit,
            step.id,
            f"model call {budget.model_calls + 1} would exceed max_model_calls {limit}",
        )
    return None


def check_step(policy: PolicyConfig, budget: Budget, step: Step, typed: str | None) -> PolicyBlock | None:
    """Before a step starts: step count, duration, model budget, deny rules, effect requirement."""
    if policy.max_steps is not None and budget.steps_started >= policy.max_steps:
        return PolicyBlock(
            "max_steps",
            budget.steps_started,
            policy.max_steps,
            step.id,
            f"the run has started {budget.steps_started} steps (max_steps {policy.max_steps})",
        )
    running_s = budget.running_s
    if policy.max_duration_s is not None and running_s >= policy.max_duration_s:
        return PolicyBlock(
            "max_duration_s",
            round(running_s, 1),
            policy.max_duration_s,
            step.id,
            f"the run has been RUNNING {running_s:.1f}s (max_duration_s {policy.max_duration_s})",
        )
    if policy.max_model_calls is not None and budget.model_calls > policy.max_model_calls:
        return PolicyBlock(
            "max_model_calls",
            budget.model_calls,
            policy.max_model_calls,
            step.id,
            f"{budget.model_calls} model calls exceed max_model_calls {policy.max_model_calls}",
        )
    if policy.require_effect_for_consequential and step.is_consequential and step.effect is None:
        return PolicyBlock(
            "require_effect_for_consequential",
            "no effect declared",
            "effect required",
            step.id,
            f"consequential step {step.id!r} declares no effect verifier",
        )
    for i, rule in enumerate(policy.deny):
        if _matches(rule, step, typed):
            why = rule.reason or f"deny rule {i + 1}"
            return PolicyBlock(
                f"deny[{i}]",
                step.id,
                rule.model_dump(exclude_none=True),
                step.id,
                f"step {step.id!r} is denied by policy ({why})",
            )
    return None


def check_dispatch(policy: PolicyConfig, budget: Budget, step: Step) -> PolicyBlock | None:
    """Before input: a retry is a second action_dispatched for the same step."""
    if policy.max_retries_per_step is None:
        return None
    retries = budget.dispatches.get(step.id, 0)  # dispatches so far; this one would be retry number `retries`
    if retries > policy.max_retries_per_step:
        return PolicyBlock(
            "max_retries_per_step",
            retries,
            policy.max_retries_per_step,
            step.id,
            f"step {step.id!r} was already dispatched {retries} times (max_retries_per_step {policy.max_retries_per_step})",
        )
    return None


def _matches(rule: Any, step: Step, typed: str | None) -> bool:
    if rule.step is not None and rule.step != step.id:
        return False
    if rule.action is not None and rule.action != step.action:
        return False
    if rule.call is not None and rule.call != step.call:
        return False
    if rule.text_matches is not None and not (typed is not None and re.search(rule.text_matches, typed)):
        return False
    return True
