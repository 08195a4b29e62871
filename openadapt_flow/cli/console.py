"""`flow console`: the local web console for operators (spec §20)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
import uvicorn

from openadapt_flow.auth.edge import Hosts
from openadapt_flow.cli.common import STORE_HELP, emit_json_line, handle_errors
from openadapt_flow.console.app import create_app
from openadapt_flow.errors import UsageError
from openadapt_flow.store import open_store

ALLOW_HOST_HELP = (
    "a name (NAME or NAME:PORT) clients reach it by, besides the bound address and localhost "
    "(repeatable); a request under any other Host is refused (421), against DNS rebinding"
)


def parse_bind(bind: str) -> tuple[str, int]:
    host, sep, port = bind.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--bind {bind!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host.strip("[]"), int(port)


@handle_errors
def console_cmd(
    root: Path = typer.Option(Path("runs"), "--root", help="runs root (the filesystem store)"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    bind: str = typer.Option("127.0.0.1:8765", "--bind", help="HOST:PORT to listen on (loopback by default)"),
    tls_cert: Optional[Path] = typer.Option(
        None, "--tls-cert", help="PEM certificate: serve HTTPS (cookies then Secure)"
    ),
    tls_key: Optional[Path] = typer.Option(None, "--tls-key", help="PEM private key for --tls-cert"),
    allow_host: list[str] = typer.Option([], "--allow-host", help=ALLOW_HOST_HELP),
    as_json: bool = typer.Option(False, "--json", help="print where it listens as one JSON line"),
) -> None:
    """Serve the operator console: runs by state, paused runs' halt frames, decisions (operators log in)."""
    host, port = parse_bind(bind)
    Hosts.parse([host, *allow_host])  # a bad --allow-host is one line before anything starts
    if (tls_cert is None) != (tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    for f in (tls_cert, tls_key):
        if f is not None and not f.is_file():
            raise UsageError(f"{f}: not a file")
    runs = open_store(store, str(root))
    app = create_app(runs, secure=tls_cert is not None, allowed_hosts=[host, *allow_host])
    if not runs.operators().all():
        typer.echo("no operators yet: enrol one with `flow operator add NAME` (nobody can log in until then)", err=True)
    scheme = "https" if tls_cert else "http"
    url = f"{scheme}://{host}:{port}/"
    where = store_where(runs, store, root)
    if as_json:
        emit_json_line({"url": url, "store": where})
    else:
        typer.echo(f"flow console on {url}, runs in {where}; Ctrl-C stops it")
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        ssl_certfile=str(tls_cert) if tls_cert else None,
        ssl_keyfile=str(tls_key) if tls_key else None,
    )


def store_where(runs: object, store: str | None, root: Path) -> str:
    """Where the console's runs are, as a person names it: the runs folder's path, or the store's address (a
    PostgreSQL one without any password), never a Python repr."""
    where = getattr(runs, "where", None)  # the PostgreSQL store's redacted address
    if isinstance(where, str) and where:
        return where
    folder = getattr(runs, "root", None)  # the filesystem store's runs folder
    if isinstance(folder, Path):
        return str(folder.resolve())
    return store or str(root)
