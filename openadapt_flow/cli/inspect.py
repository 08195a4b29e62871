"""Read-only commands: validate, status, runs, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.models import Step
from openadapt_flow.bundle.outcome import unverified_message, unverified_outcome
from openadapt_flow.cli.common import RUN_HELP, STORE_HELP, emit_json, fail, handle_errors, open_run_arg, root_store
from openadapt_flow.cli.nextsteps import echo_next, next_commands
from openadapt_flow.errors import ConfigError, FlowError, UsageError
from openadapt_flow.report.meanings import codes, headline, outcome_words
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import effective_state
from openadapt_flow.store import RunHandle
from openadapt_flow.verify.readers import unreadable_file_effect
from openadapt_flow.verify.screen import verification_plan


@handle_errors
def validate_cmd(
    bundle: Path = typer.Argument(..., help="bundle folder"),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="exit 2 when there is any warning (a step a replay cannot "
        "verify, a consequential step with no effect), as for an invalid bundle",
    ),
    allow_unverified: bool = typer.Option(
        False,
        "--allow-unverified",
        help="accept a bundle whose outcome (its last consequential step) nothing that depends on its params verifies",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Validate a bundle without running it. Warnings (what a replay could not check) come first; --strict fails on them.
    An outcome nothing checks with the params fails it (exit 2) unless --allow-unverified."""
    loaded = load_bundle(bundle)
    model = loaded.model
    for s in model.steps:  # a format no file effect reads would only ever be found as a run that cannot verify
        if s.effect is not None and (why := unreadable_file_effect(s.effect)):
            raise ConfigError(f"step {s.id!r}: {why}")
    unverified = unverified_outcome(model)
    if unverified is not None and not allow_unverified:  # a wrong result would replay as COMPLETED: refused
        raise UsageError(f"{bundle}: {unverified_message(unverified)}")
    reset = model.reset
    reset_steps = reset.steps or [] if reset is not None else []
    warnings = (
        effect_warnings(model.steps)
        + verification_warnings(model.steps)
        + ["reset " + w for w in verification_warnings(reset_steps)]
        + ([f"{unverified_message(unverified)} (accepted: --allow-unverified)"] if unverified else [])
    )
    refused = strict and bool(warnings)
    info = {
        "ok": not refused,
        "name": model.name,
        "steps": len(model.steps),
        "digest": loaded.digest,
        "templates": len(loaded.templates),
        "start": len(model.start),
        "reset": None if reset is None else "command" if reset.command else "steps",
        "reset_before_each": model.reset_before_each,
        "warnings": warnings,
        "strict": strict,
    }
    if as_json:
        emit_json(info)
        if refused:
            raise typer.Exit(2)
        return
    for w in warnings:  # first: a newcomer reads the top of the output, and these are what to fix
        typer.echo(f"warning: {w}", err=True)
    if refused:
        raise UsageError(f"{bundle}: {len(warnings)} warning(s) above, refused under --strict")
    resets = f", reset by {info['reset']}" + (" before each item" if model.reset_before_each else "") if reset else ""
    tail = f" ({len(warnings)} warning(s) above; --strict fails on them)" if warnings else ""
    typer.echo(
        f"ok: {model.name}: {info['steps']} steps, {info['templates']} templates, {info['start']} start facts"
        f"{resets}, {loaded.digest}{tail}"
    )


def effect_warnings(steps: list[Step]) -> list[str]:
    """Consequential steps that declare no effect: a replay sees the screen but cannot tell whether the write landed."""
    return [
        f"step {s.id!r} is consequential but declares no effect: a replay cannot check that it wrote, and a halt "
        "after it always needs reconciling; add effect: (docs/bundle.md)"
        for s in steps
        if not s.is_durable_kind and s.consequential and s.effect is None
    ]


def verification_warnings(steps: list[Step]) -> list[str]:
    """Steps that declare nothing to verify them (a bundle is still valid: they are weakly verified at run time)."""
    out = []
    for s in steps:
        if s.is_durable_kind:
            continue
        plan = verification_plan(s)
        if plan == "weak":
            where = "where it acted" if s.target is not None else "anywhere on the screen"
            why = (
                "types a secret (never read back) and declares no expect"
                if s.action == "type" and s.target is not None
                else "declares nothing to verify it (no expect, no effect)"
            )
            out.append(
                f"step {s.id!r} ({s.action}) {why}: it will only be "
                f"weakly verified, by the screen changing {where}; add expect: to say what it should do"
            )
        elif plan == "none":
            out.append(
                f"step {s.id!r} (wait) declares nothing to verify: it only waits; add expect: to wait for something"
            )
    return out


def _status_of(run: RunHandle) -> dict:
    m = run.manifest()
    st = effective_state(run)
    return {
        "run_dir": run.ref,
        "run_id": m.get("run_id"),
        "bundle": (m.get("bundle") or {}).get("name"),
        "state": st.get("state"),
        "paused_reason": st.get("paused_reason"),
        "transaction_outcome": st.get("transaction_outcome"),
        "halt_category": st.get("halt_category"),
        "message": st.get("message"),
        "updated_at": st.get("updated_at"),
        "pending_decision": _pending(run),
        "note": st.get("note"),
    }


def _pending(run: RunHandle) -> dict | None:
    if not run.has_pending():
        return None
    try:
        data = run.read_pending()
    except FlowError:
        data = None
    if data is None:
        return {"error": "pending_escalation.json unreadable"}
    return {k: data.get(k) for k in ("pause_id", "category", "step", "allowed_decisions", "expires_at")}


@handle_errors
def status_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    as_json: bool = typer.Option(False, "--json"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
) -> None:
    """Show one run's state (read-only)."""
    run = open_run_arg(run_dir, store)
    try:
        info = _status_of(run)
    except FlowError as e:  # a damaged run file is shown, not failed on: status only reads (exit 0)
        info = {"run_dir": run.ref, "state": "UNREADABLE", "message": str(e)}
    commands = next_commands(run) if info.get("state") != "UNREADABLE" else []
    if as_json:
        emit_json({**info, "next_commands": commands})
        return
    for line in status_lines(info):
        typer.echo(line)
    echo_next(commands)


def status_lines(info: dict[str, Any]) -> list[str]:
    """`flow status` for people: one fact a line, in words (no Python reprs); the JSON keeps the fields."""
    reason = f" ({info['paused_reason']})" if info.get("paused_reason") else ""
    lines = [
        plain_line(info),
        f"run: {info['run_dir']}" + (f" (run id {info['run_id']})" if info.get("run_id") else ""),
        f"state: {info.get('state')}{reason}",
    ]
    if info.get("bundle"):
        lines.append(f"bundle: {info['bundle']}")
    outcome = info.get("transaction_outcome")
    if outcome:
        words = outcome_words(outcome)
        lines.append(f"transaction outcome: {outcome}" + (f" — {words}" if words else ""))
    if info.get("message"):
        lines.append(f"why: {info['halt_category'] + ': ' if info.get('halt_category') else ''}{info['message']}")
    pending = info.get("pending_decision")
    if pending:
        lines.append(_pending_line(pending))
    if info.get("note"):
        lines.append(f"note: {info['note']}")
    if info.get("updated_at"):
        lines.append(f"updated: {info['updated_at']}")
    return lines


def plain_line(info: dict[str, Any]) -> str:
    """What a person reads first: the run in plain words, the codes beside them."""
    pending = info.get("pending_decision") or {}
    category = info.get("halt_category") or pending.get("category")
    args = (info.get("state"), info.get("paused_reason"), category)
    return (
        f"{headline(*args, info.get('message'), info.get('transaction_outcome'))}  "
        f"[{codes(*args, info.get('transaction_outcome'))}]"
    )


def _pending_line(p: dict[str, Any]) -> str:
    if p.get("error"):
        return f"pending decision: {p['error']}"
    allowed = ", ".join(p.get("allowed_decisions") or []) or "none"
    return (
        f"pending decision: pause {p.get('pause_id')} on step {p.get('step')} ({p.get('category')}); "
        f"allowed: {allowed}; expires {p.get('expires_at')}"
    )


@handle_errors
def runs_cmd(
    root: Path = typer.Argument(Path("runs"), help="runs root"),
    state: Optional[str] = typer.Option(None, "--state", help="only runs in this state"),
    as_json: bool = typer.Option(False, "--json"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
) -> None:
    """A table of runs under ROOT, or in --store (read-only)."""
    rows = []
    for run in root_store(root, store).list_runs():
        try:
            rows.append(_status_of(run))
        except Exception as e:  # one unreadable run must not hide the others
            rows.append({"run_dir": run.ref, "state": "UNREADABLE", "message": str(e)})
    if state:
        rows = [r for r in rows if r.get("state") == state.upper()]
    if as_json:
        emit_json(rows)
        return
    if rows:  # a header row names the columns (tab-separated, as the rows; the last one is in words)
        typer.echo("\t".join(RUNS_COLUMNS))
    for r in rows:
        typer.echo(
            f"{r['run_dir']}\t{r.get('state')}\t{r.get('bundle') or ''}\t{r.get('transaction_outcome') or ''}\t"
            f"{r.get('updated_at') or ''}\t{_row_words(r)}"
        )


RUNS_COLUMNS = ("RUN", "STATE", "BUNDLE", "TRANSACTION_OUTCOME", "UPDATED", "WHAT")


def _row_words(r: dict[str, Any]) -> str:
    pending = r.get("pending_decision") or {}
    return headline(
        r.get("state"),
        r.get("paused_reason"),
        r.get("halt_category") or pending.get("category"),
        r.get("message"),
        r.get("transaction_outcome"),
    )


@handle_errors
def report_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    as_json: bool = typer.Option(False, "--json"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
) -> None:
    """Re-render a run's report from its records."""
    run = open_run_arg(run_dir, store)
    rep = write_reports(run)
    if as_json:
        emit_json(rep)
    else:
        typer.echo(f"wrote {run.describe('report_md')} and {run.describe('report_html')}")
