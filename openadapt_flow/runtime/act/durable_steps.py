"""Durable step kinds (spec §2): ask_user, wait_signal, sleep, wait_until, tool, flow.

Each either completes with a JSON result that is checkpointed (and restored on
resume, never recomputed) or raises Pause, leaving no process behind.
"""

from __future__ import annotations

import importlib
import time
from datetime import datetime, timezone
from functools import partial
from typing import Any

from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import UsageError
from openadapt_flow.records.stepdoc import VerifiedBy, VerifiedData
from openadapt_flow.runtime.act.durable import calls
from openadapt_flow.runtime.judge.halt import Halt
from openadapt_flow.runtime.start.context import RunContext


def _verified(index: int, result: dict[str, object], verified_by: VerifiedBy = "runtime") -> VerifiedData:
    """The data of a durable step's `step_verified` record (runtime/act/durable records it)."""
    return {"index": index, "verified_by": verified_by, "result": result, "screen_facts": []}


def parse_when(value: str) -> float:
    """An ISO-8601 time (naive = UTC) as a Unix timestamp."""
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"wait_until: {value!r} is not an ISO-8601 time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def load_callable(call: str) -> Any:
    """`module:function` → the function; UsageError naming what is missing."""
    mod_name, _, fn_name = call.partition(":")
    if not mod_name or not fn_name:
        raise UsageError(f"tool call {call!r}: expected module:function")
    try:
        module = importlib.import_module(mod_name)
    except ImportError as e:
        raise UsageError(f"tool call {call!r}: cannot import {mod_name} ({e})") from None
    fn = getattr(module, fn_name, None)
    if fn is None or not callable(fn):
        raise UsageError(f"tool call {call!r}: {mod_name} has no callable {fn_name}")
    return getattr(fn, "__wrapped_tool__", fn)


def _interp_args(ctx: RunContext, value: Any) -> Any:
    if isinstance(value, str):
        return ctx.interp(value)
    if isinstance(value, list):
        return [_interp_args(ctx, v) for v in value]
    if isinstance(value, dict):
        return {k: _interp_args(ctx, v) for k, v in value.items()}
    return value


def run_durable_step(ctx: RunContext, index: int, step: Step) -> VerifiedData:
    """Complete a durable step (returning its step_verified data) or raise Pause/Halt: the durable calls of
    runtime/act/durable/calls.py, as a Python workflow's context makes them."""
    a = step.action
    inbox = ctx.inbox.pop(step.id, None)
    if a == "ask_user":
        if inbox is not None:
            return _verified(index, {"answer": inbox["value"]}, "operator")
        calls.ask_user(ctx, step.id, index, ctx.interp(step.question or ""), step.choices, step.type)
    if a == "wait_signal":
        if inbox is not None:
            return _verified(index, {"signal": inbox["name"], "data": inbox.get("data")}, "operator")
        calls.wait_signal(ctx, step.id, index, step.signal)
    if a in ("sleep", "wait_until"):
        due = calls.sleep(ctx, step.id, index, partial(_due, ctx, step))
        return _verified(index, {"due_epoch": due, "fired_epoch": time.time()})
    if a == "tool":
        try:
            fn = load_callable(step.call or "")
        except UsageError as e:
            raise Halt("tool", str(e), step=step.id) from None
        args = _interp_args(ctx, step.args or {})
        value = calls.dispatch(
            ctx, step, f"tool {step.call}", lambda: fn(**args), approved=ctx.approved_before == step.id
        )
        return _verified(index, {"result": value})
    raise Halt("input", f"step kind {a!r} is not supported here", step=step.id)


def _due(ctx: RunContext, step: Step) -> float:
    return time.time() + float(step.seconds or 0) if step.action == "sleep" else parse_when(ctx.interp(step.at or ""))
