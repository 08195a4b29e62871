"""`flow batch`: one run per work item of an items file, in order, each item exactly once (runtime/batch/)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig, load_config
from openadapt_flow.bundle.items import Item, ItemsError, read_items
from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.cli.common import emit_json_line, handle_errors, report_error
from openadapt_flow.cli.progress import LIVE_MODULE, PlainLines, is_terminal
from openadapt_flow.errors import UsageError
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import (
    BatchEvents,
    BatchRequest,
    ItemResult,
    ItemStatus,
    batch_exit_code,
    counts,
    csv_beside,
    reset_app,
    run_batch,
    select_backend,
    summary_line,
    write_results,
)

ITEMS_HELP = (
    "the work items: a CSV file with a header row, or JSON lines (one object per line), at most 64 MiB; "
    "each item one set of the bundle's params, its columns named as the params"
)
KEY_HELP = (
    "the column whose value names each item (exactly once: an item whose key is done is never sent again); "
    "default: a hash of the item's values"
)
OUT_HELP = "the results, JSON lines with a CSV beside it (default: results.jsonl in the batch's runs folder)"
RUNS_HELP = "where each item's run goes, as NNN-KEY (default: <runs root>/batch-<items file's name>)"


class ResetRuns:
    """The batch's reset: the bundle's `reset:` (runtime.reset_app), its steps' runs in the batch's folder as
    reset-N; None when the start state then holds, else why not."""

    def __init__(self, loaded: LoadedBundle, spec: BackendSpec | None, config: DeployConfig, folder: Path) -> None:
        self.loaded, self.spec, self.config, self.folder = loaded, spec, config, folder
        self.done = 0

    def __call__(self) -> str | None:
        self.done += 1
        got = reset_app(
            self.loaded, self.spec, self.config, reporter=write_reports, run_dir=self.folder / f"reset-{self.done}"
        )
        return None if got.ok else got.reason


class ItemLines(BatchEvents):
    """One line per item (key, status, reason) on stderr, above a progress bar on a TTY; after each item the results
    files are rewritten, so a killed batch leaves the items it finished. With --json, each line is a JSON event."""

    def __init__(self, out: Path, total: int, as_json: bool) -> None:
        self.out, self.as_json = out, as_json
        self.results: list[ItemResult] = []
        self.bar: Any = None
        if not as_json and is_terminal(sys.stderr) and total:
            self.bar = importlib.import_module(LIVE_MODULE).ItemsBar(sys.stderr, total)
        self.plain = PlainLines(sys.stderr)

    def item_started(self, index: int, total: int, item: Item) -> None:
        if self.bar is not None:
            self.bar.started(f"[{index + 1}/{total}] {item.key}")

    def item_finished(self, index: int, total: int, result: ItemResult) -> None:
        self.results.append(result)
        write_results(self.out, self.results, sync=False)  # made durable once, at the end (close)
        if self.as_json:
            emit_json_line({"event": "item", **result.record()})
            return
        text = f"[{index + 1}/{total}] line {result.item} {result.key}: {result.status}" + (
            f" — {result.reason}" if result.reason else ""
        )
        if self.bar is not None:
            self.bar.line(text, "green" if result.status in (ItemStatus.DONE, ItemStatus.SKIPPED_DONE) else "red")
        else:
            self.plain.line(text)

    def report_failed(self, run: str, why: str) -> None:
        if self.as_json:
            emit_json_line({"event": "report", "run": run, "error": why})
        else:
            self.plain.line(f"{run}: {why}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.results:
            write_results(self.out, self.results)


@handle_errors
def batch_cmd(
    bundle: Path = typer.Argument(..., help="bundle folder (containing flow.yaml)"),
    items: Path = typer.Option(..., "--items", help=ITEMS_HELP),
    out: Optional[Path] = typer.Option(None, "--out", help=OUT_HELP),
    key: Optional[str] = typer.Option(None, "--key", help=KEY_HELP),
    runs_dir: Optional[Path] = typer.Option(None, "--runs", "--runs-dir", help=RUNS_HELP),
    backend: Optional[str] = typer.Option(None, "--backend", help="vnc | screen | fixture | rdp"),
    url: Optional[str] = typer.Option(None, "--url", help="vnc://host[:port], fixture:PATH, rdp://host[:port]"),
    rdp_host: Optional[str] = typer.Option(None, "--rdp-host", help="RDP server host"),
    config: Optional[Path] = typer.Option(None, "--config", help="deployment config (deploy.yaml)"),
    durable: bool = typer.Option(False, "--durable", help="run each item with the durable runtime (a halt pauses)"),
    allow_model: bool = typer.Option(False, "--allow-model", help="allow the model rung (one call per step)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run a bundle once per work item of an items file, in order, on one live app; each item exactly once.

    Example: flow batch bundles/post-invoice --items invoices.csv --key invoice_no --url vnc://10.0.0.5:5901

    Each item's status: done, halted, paused, failed_after_effect, uncertain (its write may have landed), not_run,
    skipped_done (done by an earlier batch). Run it again after a halt or a kill: done items are skipped, items whose
    write may have landed are never sent again, the rest are sent. A halted item stops the batch (the app may be off
    its start state); the items after it are not_run. docs/batch.md has the whole story.

    Exit codes: 0 every item done; 1 any item halted, failed_after_effect, uncertain or not_run; 3 any paused and
    none failed; 2 bad input (the items file, the bundle, a flag: nothing sent); 6 another batch runs this bundle."""
    cfg = load_config(config)
    loaded = load_bundle(bundle)
    model = loaded.model
    try:
        work = read_items(items, model, key)
    except ItemsError as e:
        bad_items(e, as_json)
    folder = runs_dir or Path(cfg.runtime.runs_root) / f"batch-{_slug(items.stem)}"
    results_file = out or folder / "results.jsonl"
    if results_file.suffix.lower() == ".csv":
        raise UsageError(
            f"--out {results_file}: name the JSON lines file (results.jsonl); the CSV is written beside it"
        )
    spec = select_backend(cfg.backend, backend=backend, url=url, rdp_host=rdp_host)
    lines = ItemLines(results_file, len(work), as_json)
    reset = ResetRuns(loaded, spec, cfg, folder) if model.reset is not None else None
    req = BatchRequest(
        bundle=bundle,
        items=work,
        items_file=items,
        runs_dir=folder,
        backend=spec,
        config=cfg,
        durable=durable,
        allow_model=allow_model,
        reporter=write_reports,
        reset=reset,
        reset_before_each=model.reset_before_each,
    )
    try:
        results = run_batch(req, lines)
    finally:
        lines.close()
    code = batch_exit_code(results)
    if as_json:
        emit_json_line(
            {
                "event": "summary",
                "counts": counts(results),
                "results": str(results_file),
                "csv": str(csv_beside(results_file)),
                "exit_code": code,
            }
        )
    else:
        typer.echo(f"batch: {summary_line(results)} — results: {results_file} (and {csv_beside(results_file).name})")
    raise typer.Exit(code)


def bad_items(e: ItemsError, as_json: bool) -> NoReturn:
    """Every problem of the items file on its own line (file:line: what), then exit 2; nothing was sent."""
    if as_json:  # one error object on stdout, naming every problem
        report_error("; ".join(e.problems), 2, type(e).__name__, as_json)
    for problem in e.problems[:-1]:
        typer.echo(f"error: {problem}", err=True)
    report_error(e.problems[-1], 2, type(e).__name__, as_json)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "items"
