"""`flow run-py module:function`: start a Python workflow (spec §14)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from openadapt_flow.bundle.config import load_config
from openadapt_flow.cli.common import STORE_HELP, emit_json, handle_errors, with_store
from openadapt_flow.cli.progress import step_progress
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import WorkflowRequest, parse_arg_pairs, select_backend, start_workflow


@handle_errors
def run_py_cmd(
    entry: str = typer.Argument(
        ..., help="module:function (or module:Agent.method) of a @workflow; the current directory is importable"
    ),
    arg: list[str] = typer.Option(
        [], "--arg", "-a", help="NAME=VALUE (repeatable), coerced to the function's annotations"
    ),
    backend: Optional[str] = typer.Option(
        None, "--backend", help="vnc | screen | fixture | rdp (what ctx.replay drives)"
    ),
    url: Optional[str] = typer.Option(None, "--url", help="vnc://host[:port], fixture:PATH, rdp://host[:port]"),
    rdp_host: Optional[str] = typer.Option(None, "--rdp-host", help="RDP server host"),
    config: Optional[Path] = typer.Option(None, "--config", help="deployment config (deploy.yaml)"),
    run_dir: Optional[Path] = typer.Option(
        None, "--run-dir", help="run directory (default runs/replay-YYYYMMDD-HHMMSS)"
    ),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Start a durable Python workflow; every call through its ctx is checkpointed."""
    cfg = with_store(load_config(config), store)
    spec = select_backend(cfg.backend, backend=backend, url=url, rdp_host=rdp_host)
    req = WorkflowRequest(entry, parse_arg_pairs(arg), spec, cfg, run_dir=run_dir, args_from_text=True)
    with step_progress(not as_json) as progress:
        out = start_workflow(req, progress=progress, reporter=write_reports)
    summary = {
        "state": out.state,
        "exit_code": out.exit_code,
        "run_dir": str(out.run_dir),
        "category": out.category,
        "message": out.message or None,
    }
    if as_json:
        emit_json(summary)
    else:
        typer.echo(f"{out.state}: run dir {out.run_dir}" + (f" — {out.message}" if out.message else ""))
    raise typer.Exit(out.exit_code)
