"""Preflight: everything a run needs, checked before its first input (spec §16: bad input is exit 2, never a halt
at the step that writes after a dozen inputs).

Params (required, typed, secrets in the environment) and templates (present, decodable) are checked by loading
and binding the bundle. Here: every effect's verifier is built (its `use:`, its env vars, its binds, a DSN or URL it
understands), then each system of record is read once, read-only — a wrong DSN, an unreachable database or
server, a missing database file, or a file effect whose folder does not exist is found now. Errors name the step
and the variable they came from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.effect import Effect
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.bundle.models import Step
from openadapt_flow.bundle.params import BoundParams
from openadapt_flow.errors import ConfigError, ParamError, Unavailable
from openadapt_flow.verify.effects import Reading, make_reader, resolve_effect

# a reading that failed because the system of record did not answer (exit 75), not because what was asked is wrong
UNREACHABLE = re.compile(
    r"refused|timed out|timeout expired|unreachable|could not connect|connection failed|"
    r"Name or service not known|Temporary failure in name resolution|HTTP 5\d\d",
    re.IGNORECASE,
)
PREFLIGHT_RUN_ID = "run-check"  # the run id a reader is built with when no run exists yet (binds only)


def _effects(loaded: LoadedBundle, config: DeployConfig) -> list[tuple[Step, Effect]]:
    out = []
    for step in loaded.model.steps:
        if step.effect is not None:
            try:
                out.append((step, resolve_effect(step.effect, config.effects)))
            except ConfigError as e:
                raise ConfigError(f"step {step.id!r}: {e}") from None
    return out


def _reader(step: Step, effect: Effect, params: BoundParams, run_id: str) -> Callable[[], Reading]:
    try:
        return make_reader(effect, params.values | {"run_id": run_id})
    except ConfigError as e:
        raise ConfigError(f"step {step.id!r}: {e}") from None


def source(effect: Effect) -> str:
    """Where an effect reads from, named as the bundle or config names it (never a DSN's value from the environment)."""
    if effect.kind == "sql":
        return f"dsn_env {effect.dsn_env}" if effect.dsn_env else f"dsn {effect.dsn}"
    if effect.kind == "http":
        return f"url {effect.url}"
    return f"path {effect.path}"


def check_model_key(config: DeployConfig, allow_model: bool) -> None:
    """A model rung that will be used has the API key its config names (else its first call fails mid-run)."""
    mc = config.ladder.model
    if (allow_model or mc.enabled) and mc.api_key_env and not os.environ.get(mc.api_key_env):
        raise ConfigError(
            f"ladder.model.api_key_env {mc.api_key_env} is not set in the environment (the model rung "
            "is on: --allow-model or ladder.model.enabled)"
        )


def check_effects(
    loaded: LoadedBundle, config: DeployConfig, params: BoundParams, run_id: str = PREFLIGHT_RUN_ID
) -> None:
    """Every declared effect can be read with what this run has — its `use:` in the config, its env vars, its binds, a
    DSN it understands (exit 2, before a run directory or a connection exists)."""
    for step, effect in _effects(loaded, config):
        _reader(step, effect, params, run_id)


def check_settings(
    loaded: LoadedBundle,
    config: DeployConfig,
    params: BoundParams | None,
    allow_model: bool,
    unbound: ParamError | None = None,
) -> None:
    """Every setting the run needs — each effect's verifier (its `use:`, env vars, binds) and the model key — checked
    together: one error names all that are missing or wrong, with `unbound` (the params that could not be bound;
    `params` is None then), instead of one per try. (The backend's password variable is the backend's to read at
    connect: a backend factory other than the default may not need it.)"""
    problems: list[str] = []
    for step in loaded.model.steps:
        if step.effect is None:
            continue
        try:
            effect = resolve_effect(step.effect, config.effects)
            if params is not None:
                make_reader(effect, params.values | {"run_id": PREFLIGHT_RUN_ID})
            else:  # the binds cannot be judged without params; the environment can
                problems += [
                    f"step {step.id!r}: effect {f} {getattr(effect, f)} is not set in the environment"
                    for f in ("dsn_env", "token_env")
                    if getattr(effect, f, None) and not os.environ.get(getattr(effect, f))
                ]
        except ConfigError as e:
            problems.append(f"step {step.id!r}: {e}")
    try:
        check_model_key(config, allow_model)
    except ConfigError as e:
        problems.append(str(e))
    if unbound is not None and not problems:
        raise unbound
    problems = ([str(unbound)] if unbound is not None else []) + problems
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError("missing or wrong settings (all of them): " + "; ".join(problems))


def probe_effects(
    loaded: LoadedBundle,
    config: DeployConfig,
    params: BoundParams,
    run_id: str = PREFLIGHT_RUN_ID,
    started: Collection[str] = (),
) -> None:
    """Read every effect's system of record once, before the first input: one that cannot be read now could never
    give the baseline its step needs, so the run is refused here (exit 2) instead of halting after earlier inputs.

    The same source and query are read once however many steps declare them. Steps in `started` (a resumed run's
    steps that already began) are left to resume's re-check: an operator's `reconcile` must still be able to settle
    a step whose system of record stays unreadable."""
    seen: dict[tuple[Any, ...], str] = {}
    for step, effect in _effects(loaded, config):
        if step.id in started:
            continue
        if effect.kind == "file" and effect.path and not Path(effect.path).parent.is_dir():
            raise ConfigError(
                f"step {step.id!r}: effect path {effect.path}: folder {Path(effect.path).parent} does not "
                "exist; nothing was sent"
            )
        key = (
            effect.kind,
            effect.dsn,
            os.environ.get(effect.dsn_env or ""),
            effect.query,
            effect.url,
            effect.path,
            effect.json_path,
            effect.contains,
            str(effect.changes),
            str(effect.tables),
            effect.max_rows,
        )
        if key in seen:
            continue
        reading = _reader(step, effect, params, run_id)()
        if not reading.ok:
            why = f"step {step.id!r}: effect {source(effect)} cannot be read before the run starts ({_one_line(reading.error or '')})"
            if UNREACHABLE.search(reading.error or ""):  # the environment, not the input: exit 75, a retry may succeed
                raise Unavailable(f"{why}; nothing was sent; retry once it answers")
            raise ConfigError(f"{why}; nothing was sent")  # it answered: the DSN, file, query or URL is wrong
        seen[key] = step.id


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "no reading"
