"""The context a Python workflow's durable calls go through (spec §14).

Every call — a tool, a question, a signal, a timer, a GUI replay, a child workflow, a model
call, a domain action — passes through `WorkflowContext._call`: the one place that looks up
the recorded output, else runs the call, then records it (journal `step_verified` with the
result, then checkpoint). On resume the workflow runs again from the top and recorded calls
return at once; a call whose kind or name differs from what the journal recorded at that
position is a divergence (the code changed) and stops the run.

Signals that stop the workflow at a pause or halt travel through user code as `WorkflowStop`,
a BaseException, so an `except Exception` in a workflow cannot swallow them.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import hmac
import inspect
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from datetime import date, datetime
from datetime import time as dtime
from decimal import Decimal
from enum import Enum
from pathlib import Path, PurePath
from typing import Any, Protocol
from uuid import UUID

from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import FlowError, RefusedError, RunSignal
from openadapt_flow.records.states import DecisionKind, PausedReason, RecordType
from openadapt_flow.records.stepdoc import CallFields, VerifiedBy, VerifiedData
from openadapt_flow.runtime.act.durable import calls, durable_call
from openadapt_flow.runtime.act.durable.calls import jsonable
from openadapt_flow.runtime.judge.calls import Call
from openadapt_flow.runtime.judge.halt import Halt, Pause, StopRequested
from openadapt_flow.runtime.judge.policy import PolicyBlock, check_step
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.runtime.workflow.api import entry_of, tool_info
from openadapt_flow.runtime.workflow.llm import Llm, chat


class WorkflowStop(RunSignal):
    """Carries a pause, halt, block, stop or divergence out through user code, which cannot catch it."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.exit_code = getattr(cause, "exit_code", 1)


class DivergedError(RefusedError):
    """The workflow's calls no longer match its journal: the code changed under an in-flight run."""

    def __init__(self, message: str, step: str | None) -> None:
        super().__init__(message)
        self.step = step


@dataclass
class Recorded:
    """What a call body returns when the result is not the runtime's own (an operator reconciled it)."""

    value: Any
    verified_by: VerifiedBy


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "call"


def _canonical(value: Any) -> Any:
    """The arguments as JSON that is equal in every process exactly when they are equal: mappings as
    sorted [key, value] pairs (keys of any type), values JSON cannot say by what they mean — dates and
    times as ISO text, decimals and UUIDs as text, enums by value, dataclasses and pydantic models by
    their fields, paths as text, sets sorted, bytes by digest — each tagged with its type, and anything
    else (a connection, a client: a handle whose repr carries a memory address) by its type alone."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        pairs = [[_canonical(k), _canonical(v)] for k, v in value.items()]
        return {"dict": sorted(pairs, key=lambda p: json.dumps(p[0], sort_keys=True))}
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if isinstance(value, (set, frozenset)):
        return {kind: sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))}
    if isinstance(value, Enum):
        return {kind: _canonical(value.value)}
    if isinstance(value, (datetime, date, dtime)):
        return {kind: value.isoformat()}
    if isinstance(value, (Decimal, UUID, PurePath)):
        return {kind: str(value)}
    if isinstance(value, (bytes, bytearray)):
        return {kind: hashlib.sha256(value).hexdigest()}
    if is_dataclass(value) and not isinstance(value, type):
        return {kind: _canonical(asdict(value))}
    if hasattr(value, "model_dump"):
        return {kind: _canonical(value.model_dump(mode="json"))}
    return {kind: None}


def invoke(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, object]) -> Any:
    """Call a tool (or a workflow); an async one runs to completion on its own event loop (in a thread if one runs here)."""
    value = fn(*args, **kwargs)
    if not inspect.isawaitable(value):
        return value

    async def wait_for() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait_for())
    values: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            values.append(asyncio.run(wait_for()))
        except BaseException as e:  # handed to the caller's thread below
            errors.append(e)

    t = threading.Thread(target=contextvars.copy_context().run, args=(run,), name="flow-async-call")
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return values[0]


class WorkflowContext:
    """`ctx` in `def my_workflow(ctx, ...)`: every method is a durable call (awaitable in an async workflow)."""

    def __init__(
        self, rc: RunContext, entry: str, calls: dict[int, Call], runner: ChildRunner, *, is_async: bool = False
    ) -> None:
        self.rc = rc
        self.entry = entry
        self.calls = calls
        self.runner = runner
        self.is_async = is_async
        self.in_step = False
        self._next = 0
        self._ids: dict[str, int] = {}
        self.llm = Llm(self)

    @property
    def run_id(self) -> str:
        return self.rc.run_id

    @property
    def index(self) -> int:
        """The position of the call being made (its `step_started` index)."""
        return self._next - 1

    # -- the one durable-step function ---------------------------------------------------------------

    def _call(
        self,
        kind: str,
        name: str,
        base_id: str,
        fields: CallFields,
        body: Callable[[Step, Call | None], Any],
        inputs: Any = None,
    ) -> Any:
        """Look up the recorded output of this call, else run `body`, then record it (runtime/act/durable's durable_call).

        `inputs` are the call's arguments: a keyed digest of them is journaled, and a recorded result is
        only ever returned to a call with the same ones (else the run diverged: the code or its inputs
        changed, and the recorded result may not be theirs).
        """
        if self.in_step:
            raise WorkflowStop(
                Halt("input", f"ctx.{kind} was called inside another durable call; durable calls cannot nest")
            )
        index = self._next
        self._next += 1
        n = self._ids[base_id] = self._ids.get(base_id, 0) + 1
        past = self.calls.get(index)
        digest = self._digest(inputs)
        if past is not None:
            self._check_same(past, index, kind, name, digest)
        try:
            step = Step(id=past.step if past else (base_id if n == 1 else f"{base_id}-{n}"), **fields)
        except ValueError as e:  # e.g. ask_user("") or a non-number sleep: the workflow's bug, an input halt
            raise WorkflowStop(Halt("input", f"ctx.{kind}({name!r}): {str(e).splitlines()[-1].strip()}")) from None
        rc = self.rc
        began: list[float] = []

        def perform() -> VerifiedData:
            """Not in the journal yet: run it (the engine's view of the calls — pauses, outcome — gets it first)."""
            rc.steps[step.id] = step
            if rc.stop.is_set():
                raise StopRequested()
            if past is None:
                blocked = check_step(rc.config.policy, rc.budget, step, None)
                if blocked is not None:
                    raise blocked
                calls.started(
                    rc,
                    step,
                    index,
                    intent=f"{kind} {name}",
                    sync=True,
                    action=kind,
                    name=name,
                    inputs=digest,
                    consequential=step.is_consequential,
                )
            rc.progress.step_started(index, max(index + 1, len(self.calls)), step.id, f"{kind} {name}")
            began.append(time.monotonic())
            self.in_step = True
            try:
                out = body(step, past)
            finally:
                self.in_step = False
            rec = out if isinstance(out, Recorded) else Recorded(jsonable(out, f"{kind} {name!r}"), "runtime")
            return {"index": index, "verified_by": rec.verified_by, "result": rec.value, "screen_facts": []}

        try:
            verified = durable_call(rc, step.id, perform)
        except Halt as h:
            h.step = h.step or step.id
            raise WorkflowStop(h) from None
        except (Pause, PolicyBlock, StopRequested, RefusedError) as e:
            raise WorkflowStop(e) from None
        if began:
            rc.progress.step_finished(
                index,
                max(index + 1, len(self.calls)),
                step.id,
                {"ok": True, "rung": kind, "ms": (time.monotonic() - began[0]) * 1000},
            )
        return self._ret(verified["data"].get("result"))

    def _check_same(self, past: Call, index: int, kind: str, name: str, digest: str) -> None:
        """The call the journal recorded at this position must be this one, with the same arguments."""
        if (past.kind, past.name) != (kind, name):
            raise WorkflowStop(
                DivergedError(
                    f"workflow {self.entry} diverged from its journal at call #{index}: the journal recorded "
                    f"{past.kind} {past.name!r}, the code now calls {kind} {name!r} (the code changed under this run; "
                    "redeploy the version that started it, or start a new run)",
                    past.step,
                )
            )
        if past.inputs is not None and past.inputs != digest:
            raise WorkflowStop(
                DivergedError(
                    f"workflow {self.entry} diverged from its journal at call #{index}: {kind} {name!r} is called with "
                    "other arguments than the journal recorded, so its recorded result is not returned (the code or "
                    "what it computes its arguments from changed; a workflow must call with the same arguments on "
                    "resume: no clocks or random values in them)",
                    past.step,
                )
            )

    def _digest(self, inputs: Any) -> str:
        """HMAC-SHA256 (the journal's key) of the arguments as canonical JSON: comparable across resumes,
        and no dictionary attack on a secret passed as an argument."""
        text = json.dumps(_canonical(inputs), separators=(",", ":"))
        return hmac.new(self.rc.journal.key, text.encode(), hashlib.sha256).hexdigest()

    def _ret(self, value: Any) -> Any:
        if not self.is_async:
            return value

        async def result() -> Any:
            return value

        return result()

    def unreached(self) -> None:
        """At the workflow's return: a journal with calls the code no longer makes is a divergence too."""
        later = [c for i, c in self.calls.items() if i >= self._next]
        if later:
            c = min(later, key=lambda c: c.index)
            raise DivergedError(
                f"workflow {self.entry} diverged from its journal at call #{c.index}: the journal recorded "
                f"{c.kind} {c.name!r}, the code now returns without making it (the code changed under this run)",
                c.step,
            )

    # -- acting calls: guarded dispatch -------------------------------------------------------------

    def _dispatch(self, step: Step, past: Call | None, what: str, act: Callable[[], Any]) -> Any:
        """Never a blind re-run of an uncertain write; then the durable dispatch (calls.dispatch: approval before,
        fencing, `action_dispatched`, the act itself), approved by an operator's `continue` where the step needs it."""
        since = 0
        open_ = past.open_dispatch if past is not None else None
        if open_ is not None and step.is_consequential:
            d = past.decision_after(open_["seq"]) if past is not None else None
            if d is not None and d.get("decision") == DecisionKind.RECONCILE and d.get("effect") == "landed":
                return Recorded(None, "operator")
            if not (d is not None and d.get("decision") == DecisionKind.RECONCILE and d.get("effect") == "absent"):
                raise Pause(
                    PausedReason.AWAITING_APPROVAL,
                    step.id,
                    f"{what} was dispatched but its result was never recorded; it is "
                    "not re-run blindly: flow approve RUN --decision reconcile --effect landed|absent",
                    category="uncertain",
                )
            since = open_["seq"]  # the operator established it did not happen: that decision authorises the retry
        d = past.decision_after(0) if past is not None else None
        approved = bool(since) or (d is not None and d.get("decision") == DecisionKind.CONTINUE)
        return calls.dispatch(self.rc, step, what, act, approved=approved)

    # -- the calls ----------------------------------------------------------------------------------

    def tool(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args, **kwargs)` once; its JSON result is recorded and returned from the journal on resume."""
        info = tool_info(fn)
        fields: CallFields = {"action": "tool", "call": _call_name(fn, info.name), "consequential": info.consequential}
        return self._call(
            "tool",
            info.name,
            _slug(info.name),
            fields,
            lambda step, past: self._dispatch(step, past, f"tool {info.name!r}", lambda: invoke(fn, args, kwargs)),
            inputs=[args, kwargs],
        )

    def domain(self, action: Callable[..., Any], *args: Any, human_in_the_loop: bool = True, **kwargs: Any) -> Any:
        """A named domain action (a write): paused for an operator's approval before each call when human_in_the_loop."""
        info = tool_info(action)
        fields: CallFields = {
            "action": "tool",
            "call": _call_name(action, info.name),
            "consequential": True,
            "approval": "before" if human_in_the_loop else None,
        }
        return self._call(
            "domain",
            info.name,
            _slug(info.name),
            fields,
            lambda step, past: self._dispatch(
                step, past, f"domain action {info.name!r}", lambda: invoke(action, args, kwargs)
            ),
            inputs=[args, kwargs, human_in_the_loop],
        )

    def ask_user(self, question: str, choices: list[str] | None = None, type: str | None = None) -> Any:
        """Pause PAUSED(awaiting_user) until `flow answer RUN VALUE`; returns the answer (checked against choices/type)."""

        def body(step: Step, past: Call | None) -> Any:
            if type not in (None, "string", "number", "integer", "boolean"):
                raise Halt("input", f"ask_user type {type!r}: expected string, number, integer or boolean")
            calls.ask_user(self.rc, step.id, self.index, question, choices, type)

        fields: CallFields = {
            "action": "ask_user",
            "question": question,
            "choices": list(choices) if choices else None,
            "type": type,
        }
        return self._call("ask_user", "ask_user", "ask-user", fields, body, inputs=[question, choices, type])

    def wait_signal(self, name: str) -> Any:
        """Pause PAUSED(awaiting_signal) until `flow signal RUN NAME [--data JSON]`; returns the signal's data."""

        def body(step: Step, past: Call | None) -> Any:
            calls.wait_signal(self.rc, step.id, self.index, name)

        return self._call("wait_signal", name, "signal-" + _slug(name), {"action": "wait_signal", "signal": name}, body)

    def sleep(self, seconds: float) -> Any:
        """A durable timer: PAUSED(awaiting_timer) holding no process until due (then `flow resume` or `flow worker`)."""

        def body(step: Step, past: Call | None) -> Any:
            calls.sleep(self.rc, step.id, self.index, lambda: time.time() + float(seconds))

        return self._call("sleep", "sleep", "sleep", {"action": "sleep", "seconds": float(seconds)}, body)

    def replay(self, bundle: str | Path, params: Mapping[str, object] | None = None) -> Any:
        """Run a bundle's GUI steps as a child run (`children/<call id>`, each step checkpointed there) on the run's backend."""
        name, values = str(bundle), dict(params or {})
        fields: CallFields = {"action": "flow", "bundle": name, "params": values}
        return self._call(
            "replay",
            name,
            "replay-" + _slug(Path(name).name),
            fields,
            lambda step, past: self.runner.replay(self, step, name, values),
            inputs=values,
        )

    def child(self, wf: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run another @workflow as a child run of this one (`children/<call id>`); returns what it returns."""
        entry = entry_of(wf)
        fields: CallFields = {"action": "flow", "bundle": "workflow:" + entry}
        return self._call(
            "child",
            entry,
            "child-" + _slug(entry.rpartition(":")[2]),
            fields,
            lambda step, past: self.runner.child(self, step, wf, args, kwargs),
            inputs=[args, kwargs],
        )

    def generate(self, prompt: str, **options: Any) -> Any:
        """`ctx.llm.generate`: one model call through the configured endpoint, recorded and counted in the model budget."""
        model = options.get("model") or self.rc.config.ladder.model.model

        def body(step: Step, past: Call | None) -> Any:
            policy, budget = self.rc.config.policy, self.rc.budget
            if policy.max_model_calls is not None and budget.model_calls >= policy.max_model_calls:
                raise PolicyBlock(
                    "max_model_calls",
                    budget.model_calls + 1,
                    policy.max_model_calls,
                    step.id,
                    f"model call {budget.model_calls + 1} would exceed max_model_calls {policy.max_model_calls}",
                )
            self.rc.before_dispatch(step)
            self.rc.journal.append(
                RecordType.LLM_CALL, step.id, {"model_calls": 1, "model": model}, sync=True
            )  # counted even if it fails
            try:
                return chat(self.rc.config.ladder.model, prompt, **options)
            except FlowError as e:
                raise Halt("model", str(e), step=step.id, dispatched=True) from None

        return self._call(
            "llm", model, "llm", {"action": "tool", "call": "llm:" + model}, body, inputs=[prompt, options]
        )


class ChildRunner(Protocol):
    """Starts or continues child runs for a workflow (implemented by workflow_run, which owns the engine)."""

    def replay(self, ctx: WorkflowContext, step: Step, bundle: str, params: dict[str, object]) -> Any: ...

    def child(
        self,
        ctx: WorkflowContext,
        step: Step,
        wf: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, object],
    ) -> Any: ...


def _call_name(fn: Callable[..., Any], fallback: str) -> str:
    try:
        return entry_of(fn)
    except AttributeError:
        return f"tool:{fallback}"
