"""Python workflows (spec §14): the decorators users write, and how an entry point is found and called.

Light on purpose: `from openadapt_flow import workflow, tool` imports this module only. The
durable machinery lives in `workflow_ctx` (the context a workflow's calls go through) and
`workflow_run` (starting, resuming and waiting on runs).

    @tool                       marks a function as a named tool (ctx.tool(fn, ...) runs it durably)
    @workflow                   marks `fn(ctx, **args)` (sync or async) as a workflow entry point
    @agent                      marks a class: inside its @workflow methods, a direct call of one of
                                its @tool methods is a durable step, exactly as if made through ctx.tool
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sys
import types
import typing
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from openadapt_flow.bundle.params import parse_number
from openadapt_flow.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)

# The context of the workflow running in this thread/task, so an @agent's tool methods can find it.
ACTIVE: ContextVar[Any] = ContextVar("openadapt_flow_workflow", default=None)


@dataclass(frozen=True)
class ToolInfo:
    name: str
    consequential: bool = False  # a write: if its call was dispatched but not recorded, never re-run blindly


def tool(fn: F | None = None, *, name: str | None = None, consequential: bool = False) -> Any:
    """Mark a function as a tool; `ctx.tool(fn, ...)` records its JSON result and never runs it twice."""

    def mark(f: F) -> F:
        f.__flow_tool__ = ToolInfo(name or f.__qualname__, consequential)  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


def workflow(fn: F) -> F:
    """Mark `fn(ctx, **args)` (def or async def) as a durable workflow entry point."""
    fn.__flow_workflow__ = True  # type: ignore[attr-defined]
    return fn


class _AgentTool:
    """An @agent's @tool method: a direct call inside a running workflow goes through ctx.tool."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]  # a descriptor that looks like its method

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self.fn
        bound = types.MethodType(self.fn, obj)

        @functools.wraps(self.fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            ctx = ACTIVE.get()
            if ctx is None or ctx.in_step:  # outside a workflow, or nested inside another step: a plain call
                return bound(*args, **kwargs)
            return ctx.tool(bound, *args, **kwargs)

        return call


def agent(cls: C) -> C:
    """Mark a class grouping tools and workflows; its @tool methods become durable steps inside its workflows."""
    for attr, value in list(vars(cls).items()):
        if callable(value) and hasattr(value, "__flow_tool__"):
            setattr(cls, attr, _AgentTool(value))
    cls.__flow_agent__ = True  # type: ignore[attr-defined]
    return cls


def tool_info(fn: Callable[..., Any]) -> ToolInfo:
    """The tool's recorded name (what divergence checks compare) and whether it writes."""
    info = getattr(fn, "__flow_tool__", None)
    if isinstance(info, ToolInfo):
        return info
    return ToolInfo(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)


def entry_of(fn: Callable[..., Any]) -> str:
    """`module:qualname` of a workflow function or agent method, as a manifest records it."""
    target = getattr(fn, "__func__", fn)
    return f"{target.__module__}:{target.__qualname__}"


def resolve_entry(entry: str) -> Callable[..., Any]:
    """`module:function` or `module:Agent.method` → the callable (an agent is instantiated with no args).

    UsageError naming what is missing; the current directory is searched as `python -m` would.
    """
    mod_name, _, attr_path = entry.partition(":")
    if not mod_name or not attr_path:
        raise UsageError(f"{entry!r}: expected module:function")
    try:
        module = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if os.getcwd() in sys.path or e.name != mod_name.split(".")[0]:
            raise UsageError(f"{entry!r}: cannot import {mod_name} ({e})") from None
        sys.path.insert(0, os.getcwd())
        return resolve_entry(entry)
    except ImportError as e:
        raise UsageError(f"{entry!r}: cannot import {mod_name} ({e})") from None
    obj: Any = module
    for i, part in enumerate(attr_path.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            raise UsageError(f"{entry!r}: {mod_name} has no {'.'.join(attr_path.split('.')[: i + 1])}")
        if isinstance(obj, type) and i < len(attr_path.split(".")) - 1:
            if not getattr(obj, "__flow_agent__", False):
                raise UsageError(f"{entry!r}: {obj.__qualname__} is not an @agent class")
            obj = obj()
    if not callable(obj) or not getattr(obj, "__flow_workflow__", False):
        raise UsageError(f"{entry!r} is not a @workflow (decorate it with openadapt_flow.workflow)")
    return obj  # type: ignore[no-any-return]


def parse_arg_pairs(pairs: list[str]) -> dict[str, str]:
    """`--arg k=v` pairs → a dict; UsageError for a pair without a name."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--arg {pair!r}: expected NAME=VALUE")
        out[name] = value
    return out


def bind_args(fn: Callable[..., Any], given: Mapping[str, Any], *, from_text: bool = False) -> dict[str, object]:
    """The workflow's keyword args, checked against its signature (and, from the CLI, coerced to its annotations)."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]  # the first is ctx
    names = {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable annotations only cost us coercion
        hints = {}
    out: dict[str, object] = {}  # JSON values, by argument name
    for name, value in given.items():
        if name not in names and not takes_any:
            raise UsageError(
                f"--arg {name}: {fn.__qualname__} takes no argument {name!r} (takes: {', '.join(names) or 'none'})"
            )
        out[name] = _coerce(name, hints.get(name), value) if from_text and isinstance(value, str) else value
    missing = [n for n, p in names.items() if p.default is p.empty and n not in out]
    if missing:
        raise UsageError(f"{fn.__qualname__} needs --arg {missing[0]}=VALUE")
    try:
        json.dumps(out)
    except (TypeError, ValueError) as e:
        raise UsageError(f"workflow args must be JSON values ({e})") from None
    return out


def _coerce(name: str, hint: Any, value: str) -> Any:
    try:
        if hint is int:
            return int(value)
        if hint is float:
            return float(parse_number(value))  # finite only
        if hint is bool:
            if value.lower() not in ("true", "false", "yes", "no", "1", "0"):
                raise ValueError(value)
            return value.lower() in ("true", "yes", "1")
        if hint in (dict, list) or typing.get_origin(hint) in (dict, list):
            parsed = json.loads(value)
            if not isinstance(parsed, typing.get_origin(hint) or hint):
                raise ValueError(value)
            return parsed
    except ValueError:
        raise UsageError(f"--arg {name}={value!r} is not a valid {getattr(hint, '__name__', hint)}") from None
    return value
