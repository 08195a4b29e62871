"""Durable-run commands: approve, resume, reconcile."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from openadapt_flow.cli.common import emit_json, handle_errors
from openadapt_flow.cli.progress import ConsoleProgress
from openadapt_flow.cli.replay import parse_params
from openadapt_flow.errors import UsageError
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.backend_select import select_backend
from openadapt_flow.runtime.config import BackendConfig
from openadapt_flow.runtime.decisions import approve
from openadapt_flow.runtime.reconciler import reconcile_root
from openadapt_flow.runtime.resume import resume


@handle_errors
def approve_cmd(
    run_dir: Path = typer.Argument(..., help="run directory"),
    decision: str = typer.Option("continue", "--decision", help="continue | skip | reject | reconcile"),
    operator: str = typer.Option(..., "--operator", help="who decides (recorded with the OS user)"),
    note: Optional[str] = typer.Option(None, "--note"),
    effect: Optional[str] = typer.Option(None, "--effect", help="with reconcile: landed | absent"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Record a signed decision on the run's pending escalation."""
    out = approve(run_dir, decision, operator, note=note, effect=effect, reporter=write_reports)
    if as_json:
        emit_json(out)
    elif out.get("noop"):
        typer.echo(f"already recorded: {decision}")
    else:
        typer.echo(f"recorded: {decision} by {out['operator']} ({out['os_user']}) for {out['pause_id']}")


@handle_errors
def resume_cmd(
    run_dir: Path = typer.Argument(..., help="run directory"),
    require_approval: bool = typer.Option(False, "--require-approval", help="refuse unless a valid, unused approval exists"),
    backend: Optional[str] = typer.Option(None, "--backend"),
    url: Optional[str] = typer.Option(None, "--url"),
    rdp_host: Optional[str] = typer.Option(None, "--rdp-host"),
    param: list[str] = typer.Option([], "--param", "-p", help="must equal the run's bound value"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Continue a paused or interrupted durable run from its last verified checkpoint."""
    spec = select_backend(BackendConfig(), backend=backend, url=url, rdp_host=rdp_host) if (backend or url or rdp_host) else None
    values, _ = parse_params(param, None)
    out = resume(run_dir, backend=spec, require_approval=require_approval, params=values,
                 progress=None if as_json else ConsoleProgress(), reporter=write_reports)
    summary = {"state": out.state, "exit_code": out.exit_code, "run_dir": str(out.run_dir), "category": out.category, "message": out.message or None}
    if as_json:
        emit_json(summary)
    else:
        typer.echo(f"{out.state}: run dir {out.run_dir}" + (f" — {out.message}" if out.message else ""))
    raise typer.Exit(out.exit_code)


@handle_errors
def reconcile_cmd(root: Path = typer.Argument(Path("runs"), help="runs root"), as_json: bool = typer.Option(False, "--json")) -> None:
    """Finalise runs whose owner died as INTERRUPTED (never touches a live run)."""
    if not root.is_dir():
        raise UsageError(f"{root}: runs root not found")
    rows = reconcile_root(root)
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        if r["action"] != "none":
            typer.echo(f"{r['run_dir']}\t{r['action']}\t{r.get('state', '')}\t{r.get('transaction_outcome') or r.get('error', '')}")
