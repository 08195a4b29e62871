"""`flow queue …` (the hosted decision queue) and `flow relay` (the runner's outbound side): spec §21."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import typer
import uvicorn

from openadapt_flow.auth.edge import Hosts
from openadapt_flow.cli.common import JSON_HELP, STORE_HELP, emit_json, emit_json_line, handle_errors, root_store
from openadapt_flow.cli.console import ALLOW_HOST_HELP, parse_bind
from openadapt_flow.errors import UsageError
from openadapt_flow.phone.context import load_public, public_text
from openadapt_flow.phone.queue.app import create_app
from openadapt_flow.phone.queue.db import QueueDB
from openadapt_flow.phone.queue.keys import signing_key, vapid_key, vapid_public
from openadapt_flow.phone.relay import POLL_WAIT_S, Relay, serve

queue_app = typer.Typer(
    help="The hosted decision queue of the phone lane: it sees closed contexts only (ids and the "
    "step's intent as written, never frames, OCR text or param values).",
    no_args_is_help=True,
)
DB_HELP = "the queue's SQLite database (made if missing; its keys live beside it as DB.ed25519.pem and DB.vapid.pem)"
DEFAULT_DB = Path("queue.sqlite3")


def _db(path: Path) -> QueueDB:
    if path.exists() and not path.is_file():
        raise UsageError(f"--db {path}: not a file")
    if not path.parent.is_dir():
        raise UsageError(f"--db {path}: folder {path.parent} not found")
    return QueueDB(path)


def _say(as_json: bool, obj: dict[str, Any], line: str) -> None:
    if as_json:
        emit_json(obj)
    else:
        typer.echo(line)


@queue_app.command("serve")
@handle_errors
def serve_cmd(
    bind: str = typer.Option("127.0.0.1:8443", "--bind", help="HOST:PORT to listen on"),
    tls_cert: Path = typer.Option(..., "--tls-cert", help="PEM certificate for HTTPS (the queue serves HTTPS only)"),
    tls_key: Path = typer.Option(..., "--tls-key", help="PEM private key for --tls-cert"),
    db: Path = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    contact: str = typer.Option(
        "mailto:flow-queue@localhost",
        "--contact",
        help="the VAPID `sub` claim push services may write to (mailto: or https: URL)",
    ),
    allow_host: list[str] = typer.Option([], "--allow-host", help=ALLOW_HOST_HELP),
    as_json: bool = typer.Option(False, "--json", help="print where it listens and its public key as one JSON line"),
) -> None:
    """Serve the decision queue: the phone page, Web Push to enrolled phones, the relay API (HTTPS)."""
    host, port = parse_bind(bind)
    Hosts.parse([host, *allow_host])  # a bad --allow-host is one line before anything starts
    for f in (tls_cert, tls_key):
        if not f.is_file():
            raise UsageError(f"{f}: not a file")
    if not contact.startswith(("mailto:", "https://")):
        raise UsageError(f"--contact {contact!r}: expected mailto:ADDRESS or an https:// URL")
    queue = _db(db)
    key, vapid = signing_key(db, create=True), vapid_key(db, create=True)
    app = create_app(queue, key, vapid, contact=contact, secure=True, allowed_hosts=[host, *allow_host])
    url = f"https://{host}:{port}/"
    if as_json:
        emit_json_line({"url": url, "key": public_text(key), "vapid": vapid_public(vapid)})
    else:
        typer.echo(f"flow queue on {url}; decisions signed by {public_text(key)}; Ctrl-C stops it")
    uvicorn.run(app, host=host, port=port, log_level="warning", ssl_certfile=str(tls_cert), ssl_keyfile=str(tls_key))


@queue_app.command("key")
@handle_errors
def key_cmd(
    db: Path = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Print the queue's public Ed25519 key: give it to `flow relay --queue-key`."""
    key = signing_key(db, create=False)
    _say(as_json, {"key": public_text(key)}, public_text(key))


@queue_app.command("relay-token")
@handle_errors
def relay_token_cmd(
    db: Path = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Make a token a relay authenticates with (shown once; the queue keeps only its SHA-256)."""
    token = _db(db).add_relay_token()
    _say(as_json, {"token": token}, f"{token}\n(shown once; give it to the relay in the variable named by --token-env)")


queue_operator_app = typer.Typer(
    help="The queue's own operators (argon2id hashes in its database).", no_args_is_help=True
)
queue_app.add_typer(queue_operator_app, name="operator")


@queue_operator_app.command("add")
@handle_errors
def queue_operator_add_cmd(
    name: str = typer.Argument(..., help="the operator's login name on the phone page"),
    db: Path = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Enrol a phone operator; prints a generated credential once."""
    credential = _db(db).add_operator(name)
    _say(
        as_json,
        {"operator": name, "credential": credential},
        f"queue operator {name}: credential {credential}\n(shown once; only its hash is stored)",
    )


@queue_operator_app.command("list")
@handle_errors
def queue_operator_list_cmd(
    db: Path = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """The queue's operators (never their credentials), with how many phones each has enrolled."""
    rows = _db(db).operators()
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        when = (
            datetime.fromtimestamp(r["created_at"], timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        )
        typer.echo(f"{r['name']}\t{'disabled' if r['disabled'] else 'active'}\t{r['devices']} phone(s)\t{when}")


@queue_operator_app.command("disable")
@handle_errors
def queue_operator_disable_cmd(
    name: str = typer.Argument(..., help="the queue operator to disable"),
    db: Path = typer.Option(DEFAULT_DB, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Disable a phone operator: their logins and sessions are refused from now on, and their phones get no pushes."""
    _db(db).disable_operator(name)
    _say(as_json, {"operator": name, "disabled": True}, f"queue operator {name}: disabled")


@handle_errors
def relay_cmd(
    queue: str = typer.Option(..., "--queue", help="the queue's https:// URL"),
    queue_key: str = typer.Option(..., "--queue-key", help="the queue's public key as `flow queue key` prints it"),
    token_env: str = typer.Option(
        "FLOW_RELAY_TOKEN",
        "--token-env",
        help="the environment variable holding the relay token (`flow queue relay-token`)",
    ),
    ca_file: Optional[Path] = typer.Option(
        None, "--ca-file", help="PEM CA bundle to verify the queue by (default: the system's)"
    ),
    root: Path = typer.Option(Path("runs"), "--root", help="runs root (the filesystem store) whose pauses are relayed"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    once: bool = typer.Option(False, "--once", help="one round: publish, apply the decisions waiting, exit"),
    poll_s: float = typer.Option(POLL_WAIT_S, "--poll-s", help="how long each long-poll for decisions waits (seconds)"),
    as_json: bool = typer.Option(
        False, "--json", help="print each event (published, recorded, refused) as a JSON line"
    ),
) -> None:
    """Relay paused runs to the phone queue and record its signed decisions (outbound HTTPS only, no open port)."""
    if not queue.startswith("https://"):
        raise UsageError(f"--queue {queue!r}: expected an https:// URL (the relay speaks HTTPS only)")
    if ca_file is not None and not ca_file.is_file():
        raise UsageError(f"--ca-file {ca_file}: not a file")
    if not 0 < poll_s <= 55:
        raise UsageError(f"--poll-s {poll_s:g}: expected more than 0 and at most 55 seconds")
    token = os.environ.get(token_env, "")
    if not token:
        raise UsageError(
            f"--token-env {token_env}: the variable is not set (make a token with `flow queue relay-token`)"
        )
    relay = Relay(queue, load_public(queue_key), token, root_store(root, store), ca_file)
    if as_json:
        relay.log = lambda line: emit_json_line({"event": line})
    relay.check_key()  # a queue with another key: refused (6) before anything is published
    relay.log(f"relay: {queue} proved key {queue_key}; relaying {relay.store!r}")
    serve(relay, once=once, wait=poll_s)
