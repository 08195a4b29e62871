"""`flow record`: a demonstration, driven through a recording proxy, compiled to a bundle (and a fixture)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from openadapt_flow import __version__
from openadapt_flow.cli.common import emit_json, handle_errors
from openadapt_flow.cli.fixture import check_new_folder, record_session
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.compile import compile_recording
from openadapt_flow.fixture.model import FONTS_DIR
from openadapt_flow.record.compile import compile_bundle


def _log(message: str) -> None:
    print(f"record: {message}", file=sys.stderr, flush=True)


@handle_errors
def record_cmd(
    url: str = typer.Option(..., "--url", help="the live VNC server the demonstration runs on: vnc://host[:port]"),
    out: Path = typer.Option(..., "--out", help="new bundle folder to write"),
    fixture: Optional[Path] = typer.Option(None, "--fixture", help="also write the recording as a fixture folder (for CI)"),
    port: int = typer.Option(0, "--port", help="port your VNC viewer connects to (0 picks a free one)", min=0, max=65535),
    host: Optional[str] = typer.Option(None, "--host", help="address the viewer connects to (default 127.0.0.1)"),
    password_env: Optional[str] = typer.Option(None, "--password-env", help="env var holding the live server's VNC password"),
    watch_sqlite: Optional[Path] = typer.Option(None, "--watch-sqlite", help="the app's SQLite file: rows a step adds make it consequential, with an effect"),
    watch_jsonl: Optional[Path] = typer.Option(None, "--watch-jsonl", help="the app's JSON-lines file: lines a step adds make it consequential"),
    dsn_env: Optional[str] = typer.Option(None, "--dsn-env", help="variable the bundle's SQL effects read the DSN from (default NAME_DSN)"),
    settle_ms: int = typer.Option(300, "--settle-ms", help="quiet time that counts as a settled screen", min=20, max=10000),
    name: Optional[str] = typer.Option(None, "--name", help="bundle name (default: the folder name)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Record a demonstration through a proxy (point a VNC viewer or a script at it, do the task, then Ctrl+C)
    and compile it to a bundle: one step per input, typed values as params, facts, effects."""
    check_new_folder(out, "--out")
    if fixture is not None:
        check_new_folder(fixture, "--fixture")
    bundle_name = name or out.resolve().name
    if not bundle_name or not bundle_name.replace("-", "").replace("_", "").isalnum():
        raise UsageError(f"bundle name {bundle_name!r} must be letters, digits, - and _ (give --name)")
    rec = record_session(url, port, host, password_env, watch_sqlite, watch_jsonl, settle_ms)
    if not rec.batches:
        raise UsageError("nothing was recorded: no input reached the proxy")
    compiled = compile_bundle(rec, out, bundle_name, dsn_env=dsn_env)
    for w in compiled.warnings:
        _log(f"warning: {w}")
    if fixture is not None:
        fx = compile_recording(rec, fixture, bundle_name, FONTS_DIR / "DejaVuSans.ttf", tool=f"openadapt-flow {__version__}")
        for w in fx.warnings:
            _log(f"warning (fixture): {w}")
    ids = [s["id"] for s in compiled.steps]
    if as_json:
        emit_json({"bundle": str(out), "steps": ids, "params": compiled.params,
                   "fixture": str(fixture) if fixture else None, "warnings": compiled.warnings})
        return
    typer.echo(f"wrote {out}: {len(ids)} steps ({', '.join(ids)}), "
               f"params {', '.join(compiled.params) or 'none'}" + (f"; fixture {fixture}" if fixture else ""))
    if compiled.params:
        typer.echo("replay it: flow replay " + str(out) + " --url " + url + " "
                   + " ".join(f"--param {k}=…" for k in compiled.params))
