"""Durable step kinds (spec §2): ask_user, wait_signal, sleep, wait_until, tool, flow.

Each either completes with a JSON result that is checkpointed (and restored on
resume, never recomputed) or raises Pause, leaving no process behind.
"""

from __future__ import annotations

import importlib
import json
import time
from datetime import datetime, timezone
from typing import Any

from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import UsageError
from openadapt_flow.runtime.act.context import RunContext
from openadapt_flow.runtime.decide.halt import Halt, Pause


def _verified(index: int, result: dict[str, Any], verified_by: str = "runtime") -> dict[str, Any]:
    """The data of a durable step's `step_verified` record (runtime/act/durable.py records it)."""
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


def run_durable_step(ctx: RunContext, index: int, step: Step) -> dict[str, Any]:
    """Complete a durable step (returning its step_verified data) or raise Pause/Halt."""
    a = step.action
    inbox = ctx.inbox.pop(step.id, None)
    if a == "ask_user":
        if inbox is not None:
            return _verified(index, {"answer": inbox["value"]}, "operator")
        if step.id not in ctx.fold.asked:
            ctx.journal.append("asked", step.id, {"index": index, "question": ctx.interp(step.question or ""), "choices": step.choices, "type": step.type})
        raise Pause("awaiting_user", step.id, ctx.interp(step.question or ""), category="ask_user")
    if a == "wait_signal":
        if inbox is not None:
            return _verified(index, {"signal": inbox["name"], "data": inbox.get("data")}, "operator")
        ctx.journal.append("waiting_signal", step.id, {"index": index, "signal": step.signal})
        raise Pause("awaiting_signal", step.id, f"waiting for signal {step.signal!r}", category="wait_signal")
    if a in ("sleep", "wait_until"):
        due = ctx.fold.timers.get(step.id)
        if due is None:
            due = time.time() + float(step.seconds or 0) if a == "sleep" else parse_when(ctx.interp(step.at or ""))
            ctx.journal.append("timer_set", step.id, {"index": index, "due_epoch": due})
        if time.time() >= due:
            return _verified(index, {"due_epoch": due, "fired_epoch": time.time()})
        raise Pause("awaiting_timer", step.id, f"timer due at {datetime.fromtimestamp(due, timezone.utc).isoformat(timespec='seconds')}", category="timer")
    if a == "tool":
        try:
            fn = load_callable(step.call or "")
        except UsageError as e:
            raise Halt("tool", str(e), step=step.id) from None
        args = _interp_args(ctx, step.args or {})
        ctx.before_dispatch(step)
        ctx.journal.append("action_dispatched", step.id, {"action": "tool", "call": step.call, "lease_generation": ctx.lease_generation})
        try:
            value = fn(**args)
            json.dumps(value)
        except TypeError as e:
            raise Halt("tool", f"tool {step.call} returned or took something that is not JSON ({e})", step=step.id, dispatched=True) from None
        except Exception as e:  # a tool that raises halts like any step
            raise Halt("tool", f"tool {step.call} raised {type(e).__name__}: {e}", step=step.id, dispatched=True) from None
        return _verified(index, {"result": value})
    raise Halt("input", f"step kind {a!r} is not supported here", step=step.id)
