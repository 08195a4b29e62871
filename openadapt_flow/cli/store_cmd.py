"""`flow store migrate`, `flow store gc` and `flow export`: the PostgreSQL run store's schema, its unreferenced blobs,
and a stored run as a run directory."""

from __future__ import annotations

from pathlib import Path

import typer

from openadapt_flow.cli.common import RUN_HELP, emit_json, handle_errors, open_run_arg
from openadapt_flow.errors import UsageError
from openadapt_flow.store import GC_MIN_AGE_S, PostgresRun, export_run, gc_blobs, is_postgres, postgres_store, redact
from openadapt_flow.store import pg_code_version as code_version
from openadapt_flow.store import pg_connect as connect
from openadapt_flow.store import pg_migrate as migrate

PG_HELP = (
    "the PostgreSQL store, postgresql://USER@HOST[:PORT]/DB (the password from PGPASSWORD or ~/.pgpass; one "
    "given in the URL is never recorded or shown)"
)

store_app = typer.Typer(
    name="store",
    help="The PostgreSQL run store: its schema migrations and blob collection.",
    no_args_is_help=True,
    add_completion=False,
)


def _postgres(spec: str) -> str:
    if not is_postgres(spec):
        raise UsageError(f"--store {redact(spec)!r}: expected postgresql://… (only the PostgreSQL store has a schema)")
    return spec


@store_app.command("migrate")
@handle_errors
def migrate_cmd(
    store: str = typer.Option(..., "--store", help=PG_HELP),
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
) -> None:
    """Apply the numbered schema migrations the store lacks (idempotent; a store newer than this code is refused)."""
    where = redact(_postgres(store))
    with connect(store) as conn:
        applied = migrate(conn, where)
    names = [f"{m.version:04d}_{m.name}" for m in applied]
    if as_json:
        emit_json({"store": where, "schema_version": code_version(), "applied": names})
    elif names:
        typer.echo(f"{where}: schema version {code_version()} (applied {', '.join(names)})")
    else:
        typer.echo(f"{where}: schema version {code_version()}, up to date")


@store_app.command("gc")
@handle_errors
def gc_cmd(
    store: str = typer.Option(..., "--store", help=PG_HELP),
    min_age: float = typer.Option(
        GC_MIN_AGE_S,
        "--min-age",
        min=0,
        help="seconds a blob must have gone unwritten and unreferenced (a write in flight always touches its blob)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
) -> None:
    """Delete the artifact blobs no run references (replaced or removed artifacts, discarded runs); only those."""
    where = redact(_postgres(store))
    blobs, size = gc_blobs(postgres_store(store), min_age)
    if as_json:
        emit_json({"store": where, "deleted_blobs": blobs, "deleted_bytes": size})
    else:
        typer.echo(f"{where}: deleted {blobs} unreferenced blob(s), {size} bytes")


@handle_errors
def export_cmd(
    run: str = typer.Argument(..., help=RUN_HELP),
    store: str = typer.Option(..., "--store", help=PG_HELP),
    to: Path = typer.Option(..., "--to", help="the new run directory to write (must not exist or be empty)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
) -> None:
    """Write a stored run as a run directory with a filesystem run's files (verifiable journal, byte-identical report)."""
    handle = open_run_arg(run, _postgres(store))
    if not isinstance(handle, PostgresRun):
        raise UsageError(f"{run}: not a run of the PostgreSQL store {redact(store)}")
    files = export_run(handle, to)
    if as_json:
        emit_json({"run": handle.ref, "run_id": handle.run_id(), "to": str(to), "files": len(files)})
    else:
        typer.echo(f"exported {handle.ref} to {to} ({len(files)} files)")
