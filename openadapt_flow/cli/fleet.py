"""The fleet's commands (spec §19): `flow submit` and `flow worker` — the store form (`--targets`) is a fleet worker
on procrastinate; without `--targets` it is the run-root worker of cli/durable.py."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from openadapt_flow.bundle.config import load_config
from openadapt_flow.bundle.items import ItemsError, read_items
from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.cli import durable
from openadapt_flow.cli.batch import bad_items
from openadapt_flow.cli.common import STORE_HELP, emit_json, handle_errors
from openadapt_flow.cli.replay import parse_params
from openadapt_flow.errors import UsageError
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import load_targets
from openadapt_flow.store import check_spec, is_postgres, redact

# The fleet's queue and desks (psycopg, procrastinate: the `fleet` extra) are imported where a fleet command runs:
# `flow worker` on a runs root is in this module and needs neither.


def parse_duration(text: str, flag: str) -> float:
    """Seconds from `90`, `90s`, `5m` or `1h` (more than 0)."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    value = text.strip().lower()
    scale = units.get(value[-1:], None) if value else None
    try:
        seconds = float(value[:-1] if scale else value) * (scale or 1.0)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"{flag} {text[:40]!r}: expected a duration such as 300s, 5m or 1h")
    return seconds


def postgres_store_spec(store: str) -> str:
    if not is_postgres(store):
        raise UsageError(f"--store {redact(store)!r}: the fleet needs the PostgreSQL store (postgresql://…)")
    check_spec(store)
    return store


@handle_errors
def submit_cmd(
    bundle: Path = typer.Argument(..., help="bundle folder (containing flow.yaml)"),
    store: str = typer.Option(..., "--store", help="the fleet's PostgreSQL store, postgresql://…"),
    param: list[str] = typer.Option([], "--param", "-p", help="NAME=VALUE (repeatable)"),
    target: Optional[str] = typer.Option(None, "--target", help="run on a target with this name or label"),
    items: Optional[Path] = typer.Option(
        None,
        "--items",
        help="queue one run per work item of this file (CSV with a "
        "header row, or JSON lines; as `flow batch --items`); not with --param",
    ),
    key: Optional[str] = typer.Option(
        None,
        "--key",
        help="with --items: the column that names each item (default: "
        "a hash of its values); a key already queued or done is not queued again",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Submit a durable run to the fleet: the run is created PENDING in the store (`flow status`/`wait` see it) and
    queued; a fleet worker with a free desktop starts it. With --items, one run per work item, each key once."""
    from openadapt_flow.runtime import submit

    if items is not None:
        _submit_items(bundle, store, items, key, target, param, as_json)
        return
    if key is not None:
        raise UsageError("--key names the key column of --items")
    values, _ = parse_params(param, None)
    ref = submit(postgres_store_spec(store), bundle, values, target)
    if as_json:
        emit_json({"run_id": ref})
    else:
        typer.echo(ref)


def _submit_items(
    bundle: Path, store: str, items: Path, key: str | None, target: str | None, param: list[str], as_json: bool
) -> None:
    """One line per item: the run it queued, or the run that holds its key already."""
    from openadapt_flow.runtime import submit_items

    if param:
        raise UsageError("--items gives every run's params; --param is not accepted with it")
    try:
        work = read_items(items, load_bundle(bundle).model, key)
    except ItemsError as e:
        bad_items(e, as_json)
    done = submit_items(postgres_store_spec(store), bundle, work, target)
    if as_json:
        emit_json([{"item": s.item, "key": s.key, "run_id": s.run, "queued": s.queued, "state": s.state} for s in done])
        return
    for s in done:
        typer.echo(
            f"line {s.item} {s.key}: "
            + (f"queued {s.run}" if s.queued else f"not queued: its key is {s.run} ({s.state}) already")
        )


@handle_errors
def worker_cmd(
    root: Path = typer.Argument(Path("runs"), help="runs root (the run-root worker; not with --targets)"),
    once: bool = typer.Option(False, "--once", help="one scan, then exit (run-root worker)"),
    poll: float = typer.Option(0.5, "--poll", help="seconds between scans (run-root worker)"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    targets: Optional[Path] = typer.Option(
        None, "--targets", help="targets.yaml: with a postgresql:// --store, be a fleet worker"
    ),
    concurrency: int = typer.Option(0, "--concurrency", min=0, help="fleet: runs at once (default: one per target)"),
    config: Optional[Path] = typer.Option(None, "--config", help="fleet: deployment config for the runs it starts"),
    name: Optional[str] = typer.Option(None, "--name", help="fleet: this worker's name in the queue"),
    db_retry_for: str = typer.Option(
        "300s",
        "--db-retry-for",
        help="fleet: how long to wait for the store to come back "
        "after losing it (a restart) before giving up with exit 75, e.g. 300s, 10m",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Resume runs whose wait is satisfied (timer due, answer/signal delivered, approval recorded); with --targets and a
    postgresql:// --store, a fleet worker: it starts submitted runs and resumes due ones on the desktops of targets.yaml,
    one run per desktop at a time, and reconciles the runs of dead workers.

    One line per run it resumes (run, state, message); with --json, JSON Lines on stdout, one
    {"event": "resumed", "run_dir", "state", "message"} per run (with --once: one JSON list of them)."""
    if targets is None:
        durable.worker_cmd(root=root, once=once, poll=poll, store=store, as_json=as_json)
        return
    if store is None:
        raise UsageError("--targets needs --store postgresql://… (the fleet's store)")
    from openadapt_flow.runtime import Desks, Fleet, fleet_store
    from openadapt_flow.runtime import store_opened as opened

    spec = postgres_store_spec(store)
    retry_for = parse_duration(db_retry_for, "--db-retry-for")
    doc = load_targets(targets)
    say = lambda line: typer.echo(line, err=True)  # noqa: E731
    # a store `flow store migrate` has not brought to this code's schemas is refused (exit 6); one that does not
    # answer yet (restarting) is waited for, as one lost later is (runtime/fleet/ride.py)
    if opened(spec, lambda: fleet_store(spec), retry_for, say) is None:
        return
    desks = Desks(spec, doc)
    desks.say = say  # a dirty desktop passed over or reset, a store lost: the worker's log
    fleet = Fleet(spec, desks, load_config(config), write_reports)
    typer.echo(f"fleet worker on {redact(spec)}: {len(doc.targets)} desktop(s)", err=True)
    fleet.serve(concurrency or len(doc.targets), name, retry_for)
