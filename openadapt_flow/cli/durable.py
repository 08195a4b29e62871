"""Durable-run commands: approve, resume, reconcile, answer, signal, wait, worker, patch apply."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from openadapt_flow.bundle.config import load_config
from openadapt_flow.cli.common import (
    RUN_HELP,
    STORE_HELP,
    emit_json,
    emit_json_line,
    fail,
    handle_errors,
    open_run_arg,
    root_store,
)
from openadapt_flow.cli.credential import read_secret
from openadapt_flow.cli.exits import EXIT_TIMEOUT
from openadapt_flow.cli.nextsteps import echo_next, next_commands
from openadapt_flow.cli.progress import step_progress, waiting
from openadapt_flow.cli.replay import parse_params
from openadapt_flow.errors import FlowError, UsageError
from openadapt_flow.records.rundoc import WorkerRow
from openadapt_flow.records.states import DecisionKind, RunState
from openadapt_flow.report.meanings import DECISIONS, after_decision
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import (
    Audit,
    BackendFlags,
    DecisionOptions,
    Worker,
    apply_patches,
    approve,
    deliver,
    effective_state,
    os_user,
    reconcile_root,
    resume_plan,
    resume_run,
    stop_on_signals,
    wait,
)
from openadapt_flow.store import (
    MEMORY_PREFIX,
    FilesystemStore,
    RunHandle,
    RunStore,
    open_store,
    redact,
    runs_root,
    store_of_ref,
)

CLI_CHANNEL = "cli"  # spec §20: a decision typed on the runner host: the authenticated operator, else the OS user


def cli_store(run: Path, store: str | None) -> RunStore:
    """The store whose operator book a CLI decision is authenticated and audited in, as the console's are: --store's,
    else the runs root holding the run directory (or this process's memory store)."""
    if store is not None:
        return open_store(store)
    if str(run).startswith(MEMORY_PREFIX):
        return store_of_ref(str(run))
    return FilesystemStore(runs_root(Path(run)))


def cli_audit(run: Path, store: str | None) -> Audit:
    return cli_store(run, store).operators().audit


@handle_errors
def approve_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    decision: Optional[str] = typer.Option(
        None, "--decision", help="required, no default: " + " | ".join(DECISIONS) + " (what each does: above)"
    ),
    operator: str = typer.Option(
        ..., "--operator", help="who decides (recorded with the OS user of the process's real uid)"
    ),
    secret_env: Optional[str] = typer.Option(
        None,
        "--secret-env",
        help="VAR: the environment variable holding --operator's "
        "credential (`flow operator add`); the vote is then the authenticated operator's",
    ),
    secret_file: Optional[Path] = typer.Option(
        None, "--secret-file", help="a file (0600, yours) holding --operator's credential"
    ),
    note: Optional[str] = typer.Option(None, "--note", help="free text recorded with the decision"),
    effect: Optional[str] = typer.Option(None, "--effect", help="with reconcile: landed | absent"),
    point: Optional[str] = typer.Option(None, "--point", help="with teach: X,Y on the halt frame"),
    template: Optional[Path] = typer.Option(None, "--template", help="with teach: a PNG crop of the target"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Record a signed decision on the run's pending escalation (--decision is required: there is no default); or,
    on a non-durable run that stopped with a write uncertain, the reconcile that answers it.

    Then says what happens next (a worker picks the run up, or `flow resume`) and where the report is."""
    if decision is None:
        raise UsageError(
            "--decision is required (no default): continue, skip, reject, teach, escalate or reconcile; "
            "`flow approve --help` says what each does"
        )
    xy = None
    if point is not None:
        try:
            px, py = (int(v) for v in point.split(","))
        except ValueError:
            raise UsageError(f"--point {point!r}: expected X,Y in halt-frame pixels") from None
        xy = (px, py)
    secret = read_secret(secret_env, secret_file)
    run = open_run_arg(run_dir, store)
    book = cli_store(run_dir, store)
    if secret is not None:  # the voter is the enrolled operator who proved their credential, as on the console
        from openadapt_flow.runtime import authenticate  # argon2 (the console extra): only when a credential is given

        operator = authenticate(book, operator, secret, channel=CLI_CHANNEL)["name"]
    out = approve(
        run,
        decision,
        operator,
        note=note,
        effect=effect,
        channel=CLI_CHANNEL,
        options=DecisionOptions(
            point=xy,
            template=template,
            reporter=write_reports,
            audit=book.operators().audit,
            authenticated=secret is not None,
        ),
    )
    if as_json:
        emit_json({**out, "next": after_decision(run.ref, out), "report": run.describe("report_html")})
        return
    if out.get("noop"):  # the run went on already, as the decision it repeats said
        typer.echo(f"already recorded: {decision}")
        return
    how = "authenticated" if out.get("authenticated") else f"OS user {out['os_user']}"
    votes = f", {out['votes']} of {out['quorum']} votes" if out.get("quorum", 1) > 1 else ""
    typer.echo(f"recorded: {decision} by {out['operator']} ({how}{votes}) for {out['pause_id']}")
    typer.echo(f"next: {after_decision(run.ref, out)}")
    typer.echo(f"report: {run.describe('report_html')}")


# what each decision does, one paragraph each under the command's own words (report/meanings.py: the console's buttons
# and the report say the same)
approve_cmd.__doc__ = (approve_cmd.__doc__ or "") + "".join(f"\n\n{name}: {what}." for name, what in DECISIONS.items())


@handle_errors
def resume_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    require_approval: bool = typer.Option(
        False, "--require-approval", help="refuse unless a valid, unused approval exists"
    ),
    backend: Optional[str] = typer.Option(
        None, "--backend", help="vnc | screen | fixture | rdp (default: the run's own)"
    ),
    url: Optional[str] = typer.Option(
        None, "--url", help="vnc://host[:port], fixture:PATH, rdp://host[:port] (default: the run's own)"
    ),
    rdp_host: Optional[str] = typer.Option(None, "--rdp-host", help="RDP server host (default: the run's own)"),
    param: list[str] = typer.Option([], "--param", "-p", help="must equal the run's bound value"),
    config: Optional[Path] = typer.Option(None, "--config", help="deployment config: only its backend section is used"),
    upgrade_bundle: Optional[Path] = typer.Option(
        None, "--upgrade-bundle", help="adopt a new version of the run's bundle"
    ),
    bundle: Optional[Path] = typer.Option(
        None,
        "--bundle",
        help="the run's original bundle (its recorded digest): used "
        "when the run's snapshot cannot be read, e.g. after a power loss",
    ),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="print what resume would do (its plan) and write nothing: "
        "no lease, no journal record, no file or row changed",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Continue a paused or interrupted durable run from its last verified checkpoint.

    Backend flags override the run's recorded backend (or --config's) field by field. A run whose bundle snapshot
    cannot be read resumes with --bundle PATH when PATH holds the bundle the run recorded (same digest).
    --dry-run prints the plan (exit 0), or the plan and then why resume would refuse (that refusal's exit code)."""
    cfg = load_config(config).backend if config is not None else None
    values, _ = parse_params(param, None)
    if dry_run:
        _dry_run(
            open_run_arg(run_dir, store),
            as_json,
            backend_flags=BackendFlags(backend, url, rdp_host),
            backend_config=cfg,
            require_approval=require_approval,
            params=values,
            upgrade_bundle=upgrade_bundle,
            bundle=bundle,
        )
        return
    with step_progress(not as_json) as progress:
        out = resume_run(
            open_run_arg(run_dir, store),
            backend_flags=BackendFlags(backend, url, rdp_host),
            backend_config=cfg,
            require_approval=require_approval,
            params=values,
            progress=progress,
            reporter=write_reports,
            upgrade_bundle=upgrade_bundle,
            bundle=bundle,
            notice=lambda line: typer.echo(line, err=True),
        )
    commands = next_commands(open_run_arg(run_dir, store)) if out.exit_code != 0 else []
    summary = {
        "state": out.state,
        "exit_code": out.exit_code,
        "run_dir": str(out.run_dir),
        "category": out.category,
        "message": out.message or None,
        "next_commands": commands,
    }
    if as_json:
        emit_json(summary)
    else:
        typer.echo(f"{out.state}: run dir {out.run_dir}" + (f" — {out.message}" if out.message else ""))
        echo_next(commands)
    raise typer.Exit(out.exit_code)


def _dry_run(run: RunHandle, as_json: bool, **fields: Any) -> None:
    """`flow resume --dry-run`: the plan, one line each (or a JSON object); a plan that ends refused exits with that
    refusal's code, its line last."""
    plan = resume_plan(run, **fields)
    if not as_json:
        for line in plan.describe():
            typer.echo(line)
        if plan.refusal is not None:
            raise plan.refusal
        return
    emit_json(
        {
            "state": str(plan.state) if plan.state else None,
            "plan": plan.describe(),
            "refused": str(plan.refusal) if plan.refusal is not None else None,
        }
    )
    if plan.refusal is not None:
        raise typer.Exit(plan.refusal.exit_code)


@handle_errors
def reconcile_cmd(
    root: Path = typer.Argument(Path("runs"), help="runs root"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Finalise runs whose owner died as INTERRUPTED (never touches a live run)."""
    rows = reconcile_root(root_store(root, store))
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        if r["action"] != "none":
            typer.echo(
                f"{r['run_dir']}\t{r['action']}\t{r.get('state') or ''}\t{r.get('transaction_outcome') or r.get('error') or r.get('reason', '')}"
            )


@handle_errors
def answer_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    value: str = typer.Argument(..., help="the answer (checked against the step's choices or type)"),
    operator: Optional[str] = typer.Option(None, "--operator", help="who answers (default: the OS user)"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Answer a run that is PAUSED(awaiting_user); `flow resume` (or `flow worker`) continues it."""
    out = deliver(
        open_run_arg(run_dir, store),
        DecisionKind.ANSWER,
        operator or os_user(),
        value=value,
        channel=CLI_CHANNEL,
        options=DecisionOptions(audit=cli_audit(run_dir, store)),
    )
    emit_json(out) if as_json else typer.echo(
        "already recorded" if out.get("noop") else f"recorded answer for {out['pause_id']}"
    )


@handle_errors
def signal_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    name: str = typer.Argument(..., help="the signal's name"),
    data: Optional[str] = typer.Option(None, "--data", help="JSON payload"),
    operator: Optional[str] = typer.Option(None, "--operator", help="who signals (default: the OS user)"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Signal a run that is PAUSED(awaiting_signal)."""
    payload = None
    if data is not None:
        try:
            payload = json.loads(data)
        except ValueError as e:
            raise UsageError(f"--data is not valid JSON ({e})") from None
    out = deliver(
        open_run_arg(run_dir, store),
        DecisionKind.SIGNAL,
        operator or os_user(),
        name=name,
        data=payload,
        channel=CLI_CHANNEL,
        options=DecisionOptions(audit=cli_audit(run_dir, store)),
    )
    emit_json(out) if as_json else typer.echo(
        "already recorded" if out.get("noop") else f"recorded signal {name} for {out['pause_id']}"
    )


@handle_errors
def wait_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="give up after S seconds (exit 124)"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Block until the run is paused or terminal; exit with that state's code."""
    run = open_run_arg(run_dir, store)
    try:
        with waiting(f"waiting for {run.ref} to pause or end", enabled=not as_json):
            res = wait(run, timeout=timeout, poll_s=0.2)
    except TimeoutError as e:
        fail(f"timed out: {e}", EXIT_TIMEOUT)
    if as_json:
        emit_json(
            {
                "state": res.state,
                "paused_reason": res.paused_reason,
                "transaction_outcome": res.transaction_outcome,
                "message": res.message,
            }
        )
    else:
        typer.echo(res.state + (f"({res.paused_reason})" if res.paused_reason else ""))
    raise typer.Exit(res.exit_code)


@handle_errors
def worker_cmd(
    root: Path = typer.Argument(Path("runs"), help="runs root"),
    once: bool = typer.Option(False, "--once", help="one scan, then exit (for cron/CI)"),
    poll: float = typer.Option(0.5, "--poll", help="seconds between scans"),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Resume runs whose wait is satisfied (timer due, answer/signal delivered, approval recorded).

    One line per run it resumes (run, state, message); with --json, JSON Lines on stdout, one
    {"event": "resumed", "run_dir", "state", "message"} per run (with --once: one JSON list of them)."""
    runs = root_store(root, store)
    if as_json:
        _worker_json(Worker(runs, reporter=write_reports, log=lambda line: None), once, poll)
    elif once:
        scanned = _states(runs)
        rows = Worker(runs, reporter=write_reports, log=typer.echo).run_once()
        typer.echo(worker_summary(redact(store) if store else str(root), scanned, rows))
    else:
        with waiting(f"worker: watching {store or root} every {poll:g}s (Ctrl+C stops)", lines=sys.stdout) as display:
            Worker(runs, reporter=write_reports, log=display.line).serve(poll)


def _states(runs: RunStore) -> dict[str, int]:
    """How many runs the store holds in each state (a run whose state cannot be read counts as UNREADABLE)."""
    counts: dict[str, int] = {}
    for run in runs.list_runs():
        try:
            state = str(effective_state(run).get("state") or RunState.PENDING)
        except FlowError:
            state = "UNREADABLE"
        counts[state] = counts.get(state, 0) + 1
    return counts


def worker_summary(where: str, scanned: dict[str, int], rows: list[WorkerRow]) -> str:
    """`flow worker --once`'s last line: what it scanned, and what it did."""
    total = sum(scanned.values())
    seen = ", ".join(f"{n} {state}" for state, n in sorted(scanned.items())) or "none"
    if rows:
        did = f"resumed {len(rows)}: " + ", ".join(f"{r['run_dir']} -> {r['state']}" for r in rows)
    else:
        did = "resumed none (no run is due: a paused run waits for its decision, answer, signal or timer)"
    return f"worker: scanned {total} run(s) in {where} ({seen}); {did}"


def _worker_json(worker: Worker, once: bool, poll: float) -> None:
    if once:
        emit_json([{"event": "resumed", **row} for row in worker.run_once()])
        return
    with stop_on_signals(worker.stop):
        while not worker.stop.is_set():
            for row in worker.run_once():
                emit_json_line({"event": "resumed", **row})
            worker.stop.wait(poll)


patch_app = typer.Typer(help="Teach patches.", no_args_is_help=True)


@patch_app.command("apply")
@handle_errors
def patch_apply_cmd(
    run_dir: Path = typer.Argument(..., help=RUN_HELP),
    bundle: Path = typer.Argument(
        ..., help="the bundle folder to patch (its flow.yaml must be the one each patch was made from)"
    ),
    store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Apply a run's teach patches to a bundle folder (checked against the flow.yaml each was made from)."""
    applied = apply_patches(open_run_arg(run_dir, store), bundle)
    if as_json:
        emit_json({"bundle": str(bundle), "applied": applied})
        return
    typer.echo(f"applied {len(applied)} patch(es) to {bundle}: {', '.join(applied) or 'none new'}")
