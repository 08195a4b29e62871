"""`flow replay`: run a bundle against a backend."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import typer

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import load_config
from openadapt_flow.bundle.params import read_params_file
from openadapt_flow.cli.common import STORE_HELP, emit_json, handle_errors, with_store
from openadapt_flow.cli.nextsteps import echo_next, next_commands
from openadapt_flow.cli.progress import step_progress
from openadapt_flow.errors import ParamError, UsageError, control_char, shown
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import ReplayRequest, open_ref, replay, select_backend


def parse_params(pairs: list[str], params_file: Path | None) -> tuple[dict[str, Any], frozenset[str]]:
    values: dict[str, Any] = {}
    if params_file is not None:
        values.update(read_params_file(params_file))
    flags = set()
    for pair in pairs:
        if "=" not in pair or not pair.split("=", 1)[0]:
            raise ParamError(f"--param {shown(pair)}: expected NAME=VALUE")
        k, v = pair.split("=", 1)
        if k in flags:  # which one was meant? a script that sets a param twice has a bug
            raise ParamError(f"--param {shown(k) if control_char(k) or len(k) > 64 else k} is given more than once")
        values[k] = v
        flags.add(k)
    return values, frozenset(flags)


@handle_errors
def replay_cmd(
    bundle: Path = typer.Argument(..., help="bundle folder (containing flow.yaml)"),
    param: list[str] = typer.Option([], "--param", "-p", help="NAME=VALUE (repeatable)"),
    params_file: Optional[Path] = typer.Option(
        None, "--params-file", help="YAML/JSON mapping of params (at most 1 MiB)"
    ),
    backend: Optional[str] = typer.Option(None, "--backend", help="vnc | screen | fixture | rdp"),
    url: Optional[str] = typer.Option(None, "--url", help="vnc://host[:port], fixture:PATH, rdp://host[:port]"),
    rdp_host: Optional[str] = typer.Option(None, "--rdp-host", help="RDP server host"),
    config: Optional[Path] = typer.Option(None, "--config", help="deployment config (deploy.yaml)"),
    durable: bool = typer.Option(False, "--durable", help="run with the durable runtime"),
    run_dir: Optional[Path] = typer.Option(
        None, "--run-dir", help="run directory (default runs/replay-YYYYMMDD-HHMMSS)"
    ),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    allow_model: bool = typer.Option(False, "--allow-model", help="allow the model rung (one call per step)"),
    password_env: Optional[str] = typer.Option(
        None,
        "--password-env",
        help="env var holding the VNC/RDP password (as in flow record; the value is never written anywhere)",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Replay a bundle: resolve, act and verify every step; halt instead of guessing.

    Example, a VNC desktop whose password is in $LEDGER_VNC_PASSWORD:

    flow replay bundles/post-invoice --url vnc://10.0.0.5:5901 --password-env LEDGER_VNC_PASSWORD --param vendor=Globex --param amount=99.50 --durable

    Paused (exit 3)? flow status RUN says why, flow approve RUN decides, flow resume RUN goes on. Exit codes below."""
    cfg = with_store(load_config(config), store)
    values, flags = parse_params(param, params_file)
    spec = with_password_env(select_backend(cfg.backend, backend=backend, url=url, rdp_host=rdp_host), password_env)
    req = ReplayRequest(
        bundle=bundle,
        params=values,
        backend=spec,
        config=cfg,
        run_dir=run_dir,
        durable=durable,
        allow_model=allow_model,
        param_flags=flags,
    )
    with step_progress(not as_json) as progress:
        outcome = replay(req, progress=progress, reporter=write_reports)
    run = open_ref(outcome.run_dir)
    summary = {
        "state": outcome.state,
        "exit_code": outcome.exit_code,
        "run_dir": str(outcome.run_dir),
        "report": run.describe("report_md"),
        "category": outcome.category,
        "message": outcome.message or None,
    }
    commands = next_commands(run) if outcome.exit_code != 0 else []
    if as_json:
        emit_json({**summary, "next_commands": commands})
    else:
        typer.echo(f"{outcome.state}: run dir {outcome.run_dir} (report: {run.describe('report_html')})")
        if outcome.message:
            typer.echo(f"  {outcome.category or 'note'}: {outcome.message}", err=True)
        echo_next(commands)
    raise typer.Exit(outcome.exit_code)


def with_password_env(spec: BackendSpec | None, password_env: str | None) -> BackendSpec | None:
    """`--password-env NAME` over the config's: the desktop's password is read from $NAME when connecting."""
    if password_env is None:
        return spec
    if spec is None or spec.kind not in ("vnc", "rdp"):
        raise UsageError(
            "--password-env is the password of a VNC or RDP desktop: give --url vnc://… or --rdp-host "
            "(or a config with one)"
        )
    return replace(spec, password_env=password_env)
