"""`flow operator add|list|disable|reset`: authenticated operators, kept in the store (spec §20)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from openadapt_flow.cli.common import STORE_HELP, emit_json, handle_errors
from openadapt_flow.runtime import add_operator, disable_operator, list_operators, reset_operator
from openadapt_flow.store import RunStore, open_store

operator_app = typer.Typer(
    help="Operators who decide on paused runs from the console, the phone or `flow approve --secret-env` (credentials hashed in the store).",
    no_args_is_help=True,
)
ROOT_HELP = "runs root whose store keeps the operators"


def _shown_once(name: str, credential: str, as_json: bool) -> None:
    if as_json:
        emit_json({"operator": name, "credential": credential})
    else:
        typer.echo(
            f"operator {name}: credential {credential}\n(shown once; only its hash is stored — "
            f"`flow operator reset {name}` issues a new one)"
        )


@operator_app.command("add")
@handle_errors
def add_cmd(
    name: str = typer.Argument(..., help="the operator's login name"),
    role: str = typer.Option("approver", "--role", help="approver | admin"),
    root: Path = typer.Option(Path("runs"), "--root", help=ROOT_HELP),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Enrol an operator; prints a generated credential once."""
    _shown_once(name, add_operator(_store(root, store), name, role), as_json)


@operator_app.command("list")
@handle_errors
def list_cmd(
    root: Path = typer.Option(Path("runs"), "--root", help=ROOT_HELP),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The operators (never their credentials)."""
    rows = list_operators(_store(root, store))
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        typer.echo(f"{r['name']}\t{r['role']}\t{'disabled' if r.get('disabled') else 'active'}\t{r.get('changed_at')}")


@operator_app.command("disable")
@handle_errors
def disable_cmd(
    name: str = typer.Argument(..., help="the operator to disable"),
    root: Path = typer.Option(Path("runs"), "--root", help=ROOT_HELP),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Disable an operator: their logins and decisions are refused from now on (sessions too)."""
    disable_operator(_store(root, store), name)
    if as_json:
        emit_json({"operator": name, "disabled": True})
    else:
        typer.echo(f"operator {name}: disabled")


@operator_app.command("reset")
@handle_errors
def reset_cmd(
    name: str = typer.Argument(..., help="the operator whose credential is replaced"),
    root: Path = typer.Option(Path("runs"), "--root", help=ROOT_HELP),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Issue a new credential (the old one stops working; a disabled operator is enabled again)."""
    _shown_once(name, reset_operator(_store(root, store), name), as_json)


def _store(root: Path, store: Optional[str]) -> RunStore:
    """--store's, else the runs root (created on first use: operators may be enrolled before the first run)."""
    return open_store(store, str(root))
