"""Is what a bundle is for checked by anything that depends on its params? (issue 35, finding 4)

The outcome is its last consequential step (the last step that acts when none is consequential). A replay of
it with other values must be able to tell a wrong result from a right one: so something on it, or after it, must
depend on a param: a declared effect, an `expect` whose text holds a `{param}`, or a `type` with a target that
reads its `{param}` back. A tooltip going away, a literal recorded result or "the screen changed" hold as well
for a wrong result as for the right one. A bundle that types no (non-secret) param replays the same input each
time: its facts check it, and this rule has nothing to say.
"""

from __future__ import annotations

import re

from openadapt_flow.bundle.models import Bundle, Step

_PARAM = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")
HOW = (
    "add an expect: whose text_present holds a {param} in the region where the result shows (the value read "
    "back there), or a declared effect: (docs/bundle.md); flow validate --allow-unverified accepts it as it is"
)


def outcome_step(steps: list[Step]) -> Step | None:
    """The last consequential step, else the last step that acts on the screen (not a wait, not a durable kind)."""
    acting = [s for s in steps if not s.is_durable_kind and s.action != "wait"]
    return next((s for s in reversed(acting) if s.consequential), acting[-1] if acting else None)


def _uses_param(text: str | None, params: set[str]) -> bool:
    return bool(text) and any(name in params for name in _PARAM.findall(text or ""))


def checks_with_params(s: Step, params: set[str]) -> bool:
    """Does step `s` check something that depends on a param (an effect, a `{param}` fact, a readback)?"""
    if s.effect is not None:
        return True
    if any(_uses_param(f.text_present if f.text_present is not None else f.text_absent, params) for f in s.expect):
        return True
    return s.action == "type" and s.target is not None and _uses_param(s.text, params)


def unverified_outcome(model: Bundle) -> str | None:
    """The id of the outcome step when nothing on it or after it checks something that depends on a param; None
    when something does, or when no step types a (non-secret) param."""
    # the params the run types: what the outcome depends on (a param declared and never typed changes nothing)
    params = {
        name
        for name, p in model.params.items()
        if not p.secret and any(_uses_param(s.text, {name}) for s in model.steps if s.action == "type")
    }
    step = outcome_step(model.steps)
    if not params or step is None:
        return None
    after = model.steps[model.steps.index(step) :]
    return None if any(checks_with_params(s, params) for s in after) else step.id


def unverified_message(step_id: str) -> str:
    """The one line said of an outcome nothing checks (record's warning, validate's refusal)."""
    return (
        f"step {step_id!r} is the bundle's outcome, and nothing that depends on its params verifies it (a wrong "
        f"result would pass as well): {HOW}"
    )
