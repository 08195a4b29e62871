"""`flow desk list|clean`: the fleet's dirty desktops (spec §22; docs/fleet.md, "Clean and dirty desktops")."""

from __future__ import annotations

import typer

from openadapt_flow.cli.common import emit_json, handle_errors
from openadapt_flow.cli.fleet import postgres_store_spec
from openadapt_flow.errors import UsageError

desk_app = typer.Typer(
    help="The fleet's desktops a run left dirty, and an operator's word that one is clean again.", no_args_is_help=True
)
STORE = "the fleet's PostgreSQL store, postgresql://…"


@desk_app.command("list")
@handle_errors
def list_cmd(
    store: str = typer.Option(..., "--store", help=STORE),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The dirty desktops: the run that left each so and how it ended. No new run is started on one until its
    bundle's reset brought it back (or `flow desk clean`)."""
    from openadapt_flow.runtime import dirty_desks

    rows = dirty_desks(postgres_store_spec(store))
    if as_json:
        emit_json(
            [
                {"desk": d.name, "run": d.run, "reason": d.reason, "since": d.since.isoformat() if d.since else None}
                for d in rows
            ]
        )
        return
    if not rows:
        typer.echo("no dirty desktop")
    for d in rows:
        typer.echo(f"{d.name}\tdirty since {d.since:%Y-%m-%d %H:%M:%S}\t{d.reason}")


@desk_app.command("clean")
@handle_errors
def clean_cmd(
    name: str = typer.Argument(..., help="the desktop's name in targets.yaml"),
    store: str = typer.Option(..., "--store", help=STORE),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Mark a desktop clean: you have brought its app back to the start state by hand (a bundle with no reset:). The
    next run's own start check still judges it before any input."""
    from openadapt_flow.runtime import mark_desk_clean

    was = mark_desk_clean(postgres_store_spec(store), name)
    if was is None:
        raise UsageError(f"desktop {name!r} is not dirty (`flow desk list` names the dirty ones)")
    if as_json:
        emit_json({"desk": name, "cleaned": True, "was": was.reason})
        return
    typer.echo(f"{name}: marked clean (was dirty: {was.reason})")
