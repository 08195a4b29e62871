"""`flow demo`: the whole loop on the bundled demo app — start it on a private Xvnc, replay, report."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Optional

import typer

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.cli.common import emit_json, handle_errors
from openadapt_flow.cli.progress import ConsoleProgress
from openadapt_flow.errors import UsageError
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.config import DeployConfig
from openadapt_flow.runtime.engine import ReplayRequest, replay

DEMO_BUNDLE = Path(__file__).resolve().parents[1] / "demo" / "bundle"


@handle_errors
def demo_cmd(
    run_dir: Optional[Path] = typer.Option(None, "--run-dir", help="run directory (default runs/replay-…)"),
    variant: str = typer.Option("normal", "--variant", help="demo app variant: normal | dark | shifted | twin"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run the demo: the invoice app on a private loopback Xvnc, replayed over VNC, verified in its SQLite."""
    if shutil.which("Xvnc") is None:
        raise UsageError("flow demo needs TigerVNC's Xvnc: run `make setup` (or apt-get install tigervnc-standalone-server)")
    from openadapt_flow.demo.launch import start_demo

    demo = start_demo(variant=variant)
    try:
        os.environ["DEMO_DB_DSN"] = f"sqlite:///{demo.db_path}"
        req = ReplayRequest(
            bundle=DEMO_BUNDLE,
            params={"vendor": "ACME Corp", "amount": "1250.50"},
            backend=BackendSpec(kind="vnc", host="127.0.0.1", port=demo.xvnc.port),
            config=DeployConfig.default(),
            run_dir=run_dir,
        )
        outcome = replay(req, progress=None if as_json else ConsoleProgress(), reporter=write_reports)
        conn = sqlite3.connect(demo.db_path)
        rows = conn.execute("SELECT id, vendor, amount FROM invoices").fetchall()
        conn.close()
    finally:
        demo.stop()
    if as_json:
        emit_json({"state": outcome.state, "run_dir": str(outcome.run_dir), "rows": rows})
    else:
        typer.echo(f"{outcome.state}: the app's database now holds {rows}")
        typer.echo(f"report: {outcome.run_dir / 'REPORT.md'} and {outcome.run_dir / 'report.html'}")
    raise typer.Exit(outcome.exit_code)
