"""`flow record`: a demonstration, driven through a recording proxy, compiled to a bundle (and a fixture);
`flow compile`: a kept recording compiled again."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from openadapt_flow.cli.common import VIEWER_PORT_HELP, emit_json, emit_json_line, handle_errors
from openadapt_flow.cli.fixture import check_new_folder, make_watch, record_session, viewer_port_of
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.compile import compile_recording
from openadapt_flow.fixture.model import FONTS_DIR
from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.fixture.recording_io import load_recording, save_recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.version import __version__

PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PARAM_HELP = (
    "NAME=VALUE: VALUE, an example you type in the demonstration, varies: every occurrence of it in typed "
    "text becomes {NAME} (also inside a longer line); other typed text stays literal. A VALUE never typed but "
    "shown as a step's result (the total your values give) is checked as {NAME}. Repeatable"
)


def _log(message: str) -> None:
    print(f"record: {message}", file=sys.stderr, flush=True)


@handle_errors
def record_cmd(
    url: str = typer.Option(..., "--url", help="the live VNC server the demonstration runs on: vnc://host[:port]"),
    out: Path = typer.Option(..., "--out", help="new bundle folder to write"),
    fixture: Optional[Path] = typer.Option(
        None, "--fixture", help="also write the recording as a fixture folder (for CI)"
    ),
    recording: Optional[Path] = typer.Option(
        None, "--recording", help="also keep the raw recording here (flow compile compiles it again)"
    ),
    viewer_port: int = typer.Option(0, "--viewer-port", help=VIEWER_PORT_HELP, min=0, max=65535),
    port: Optional[int] = typer.Option(
        None, "--port", hidden=True, min=0, max=65535, help="the old name of --viewer-port"
    ),
    host: Optional[str] = typer.Option(None, "--host", help="address the viewer connects to (default 127.0.0.1)"),
    password_env: Optional[str] = typer.Option(
        None, "--password-env", help="env var holding the live server's VNC password"
    ),
    watch_sqlite: Optional[Path] = typer.Option(
        None, "--watch-sqlite", help="the app's SQLite file: rows a step adds make it consequential, with an effect"
    ),
    watch_jsonl: Optional[Path] = typer.Option(
        None, "--watch-jsonl", help="the app's JSON-lines file: lines a step adds make it consequential"
    ),
    watch_file: Optional[Path] = typer.Option(
        None,
        "--watch-file",
        help="a text file the app saves: a step that changes it is consequential, with a file effect",
    ),
    dsn_env: Optional[str] = typer.Option(
        None, "--dsn-env", help="variable the bundle's SQL effects read the DSN from (default NAME_DSN)"
    ),
    settle_ms: int = typer.Option(
        300, "--settle-ms", help="quiet time that counts as a settled screen", min=20, max=10000
    ),
    name: Optional[str] = typer.Option(None, "--name", help="bundle name (default: the folder name)"),
    param: list[str] = typer.Option([], "--param", help=PARAM_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Record a demonstration through a proxy (point a VNC viewer or a script at it, do the task, then Ctrl+C)
    and compile it to a bundle: one step per input, typed values as params, facts, effects.

    With --json, JSON Lines on stdout: {"event": "listening", "url", "port"} once the proxy listens, then
    {"event": "compiled", "bundle", "steps", "params", "fixture", "warnings"}."""
    bundle_name = _check_outputs(out, fixture, recording, name)
    examples = parse_examples(param)
    rec = record_session(
        url,
        viewer_port_of(viewer_port, port),
        host,
        password_env,
        make_watch(watch_sqlite, watch_jsonl, watch_file),
        settle_ms,
        _log,
        as_json=as_json,
    )
    if not rec.batches:
        raise UsageError("nothing was recorded: no input reached the proxy")
    if recording is not None:
        save_recording(rec, recording)  # first: the raw inputs survive whatever the compiler makes of them
    _compile(rec, out, bundle_name, dsn_env, fixture, as_json, examples, event="compiled")


@handle_errors
def compile_cmd(
    recording: Path = typer.Argument(..., help="a recording folder (flow record --recording DIR)"),
    out: Path = typer.Option(..., "--out", help="new bundle folder to write"),
    fixture: Optional[Path] = typer.Option(None, "--fixture", help="also write the recording as a fixture folder"),
    dsn_env: Optional[str] = typer.Option(
        None, "--dsn-env", help="variable the bundle's SQL effects read the DSN from (default NAME_DSN)"
    ),
    name: Optional[str] = typer.Option(None, "--name", help="bundle name (default: the folder name)"),
    param: list[str] = typer.Option([], "--param", help=PARAM_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Compile a kept recording (flow record --recording DIR) to a bundle: again, with other options or a newer compiler."""
    bundle_name = _check_outputs(out, fixture, None, name)
    examples = parse_examples(param)
    _compile(load_recording(recording), out, bundle_name, dsn_env, fixture, as_json, examples)


def _check_outputs(out: Path, fixture: Path | None, recording: Path | None, name: str | None) -> str:
    """Every output folder new (or empty), and the bundle's name; before anything is recorded."""
    check_new_folder(out, "--out")
    for folder, flag in ((fixture, "--fixture"), (recording, "--recording")):
        if folder is not None:
            check_new_folder(folder, flag)
    bundle_name = name or out.resolve().name
    if not bundle_name or not bundle_name.replace("-", "").replace("_", "").isalnum():
        raise UsageError(f"bundle name {bundle_name!r} must be letters, digits, - and _ (give --name)")
    return bundle_name


def parse_examples(items: list[str]) -> dict[str, str]:
    """`--param NAME=VALUE` options as {NAME: VALUE}; a malformed one is a usage error naming it."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not PARAM_NAME.fullmatch(name):
            raise UsageError(
                f"--param {item!r}: expected NAME=VALUE with NAME letters, digits and _ (not first a digit)"
            )
        if not value:
            raise UsageError(f"--param {name}: the example value is empty (give the text you will type)")
        if name in out or value in out.values():
            raise UsageError(f"--param {item!r}: {'the name' if name in out else 'the value'} is given twice")
        out[name] = value
    return out


def _compile(
    rec: Recording,
    out: Path,
    name: str,
    dsn_env: str | None,
    fixture: Path | None,
    as_json: bool,
    examples: dict[str, str] | None = None,
    event: str | None = None,
) -> None:
    """Compile `rec` to a bundle (and a fixture) and print the result: under --json one document, or with `event`
    one JSON line (the last of a long-running command's JSON Lines)."""
    compiled = compile_bundle(rec, out, name, dsn_env=dsn_env, examples=examples)
    for w in compiled.warnings:
        _log(f"warning: {w}")
    if fixture is not None:
        if rec.sor_kind == "file":  # fixtures play SQLite and JSON-lines stores only
            _log("warning (fixture): a fixture does not write files; the watched file's changes are left out of it")
            rec = replace(rec, sor_kind=None, batches=[replace(b, writes=[]) for b in rec.batches])
        fx = compile_recording(rec, fixture, name, FONTS_DIR / "DejaVuSans.ttf", tool=f"openadapt-flow {__version__}")
        for w in fx.warnings:
            _log(f"warning (fixture): {w}")
    ids = [s["id"] for s in compiled.steps]
    if as_json:
        result = {
            "bundle": str(out),
            "steps": ids,
            "params": compiled.params,
            "fixture": str(fixture) if fixture else None,
            "warnings": compiled.warnings,
        }
        emit_json_line({"event": event, **result}) if event else emit_json(result)
        return
    typer.echo(
        f"wrote {out}: {len(ids)} steps ({', '.join(ids)}), "
        f"params {', '.join(compiled.params) or 'none'}" + (f"; fixture {fixture}" if fixture else "")
    )
    if compiled.params:
        typer.echo(
            f"replay it: flow replay {out} --url {rec.url} " + " ".join(f"--param {k}=…" for k in compiled.params)
        )
    if compiled.warnings:
        typer.echo(fix_line(out, len(compiled.warnings)))


def fix_line(out: Path, n: int) -> str:
    """The closing line after the recorder's warnings: what to do about them."""
    return (
        f"{n} warning(s) above, each naming a step: fix those steps in {out}/flow.yaml (docs/record.md, "
        f"'Read the warnings'), then `flow validate --strict {out}` lists what a replay still cannot check"
    )
