"""`python -m openadapt_flow.bench` (`make bench`): measured speed beside what users would pick instead.

Prints one table and the spec §17 verdicts, and writes bench/results.json.
A benchmark, not a test: nothing here fails on a slow number. Every process
it starts (Xvnc, the demo app, replays, the fixture server, the original
engine's driver) is stopped by its own pid before it returns.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import PIL

from openadapt_flow.bench import (
    baseline,
    batch,
    console_cost,
    drift,
    drift_corpus,
    drift_report,
    engine_cost,
    fleet,
    frames,
    ops_report,
    orig,
    replay50,
    report,
    resolve,
    weight,
)
from openadapt_flow.cli.progress import waiting
from openadapt_flow.version import __version__
from openadapt_flow.vision.engines import engine_versions
from openadapt_flow.vision.ocr import OcrEngine

SCHEMA = "openadapt-flow/bench@1"
PARTS = (
    "template",
    "ocr",
    "pyscreeze",
    "orig",
    "engine",
    "resume",
    "replay",
    "batch",
    "drift",
    "fleet",
    "console",
    "weight",
)
# Parts that capture and resolve the demo app's frames per screen size ("orig" joins them when one of them runs;
# with them all skipped it runs on the drift corpus only).
DEMO_PARTS = ("template", "ocr", "pyscreeze")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m openadapt_flow.bench", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--reps", type=int, default=10, help="resolves per (case, target) for the template rung and pyscreeze"
    )
    ap.add_argument("--ocr-reps", type=int, default=3, help="resolves per (case, target) for the OCR rung")
    ap.add_argument("--orig-reps", type=int, default=3, help="resolves per (case, target) for the original's matcher")
    ap.add_argument(
        "--orig-ocr-reps", type=int, default=1, help="resolves per (case, target) for the original's OCR (~0.5 s each)"
    )
    ap.add_argument(
        "--engine-runs", type=int, default=3, help="in-process demo replays for the overhead (first is warm-up)"
    )
    ap.add_argument("--sizes", default="1024x768,1920x1080", help="screen sizes, comma-separated WxH")
    ap.add_argument(
        "--ocr-backend",
        choices=("auto", "library", "cli"),
        default="auto",
        help="Tesseract in-process (library) or the command (cli), for the OCR rung and the in-process overhead runs",
    )
    ap.add_argument("--ocr-upscale", type=float, default=None, help="OCR upscale factor (default: the engine's)")
    ap.add_argument("--fleet-runs", type=int, default=24, help="fleet: runs queued per worker count for the throughput")
    ap.add_argument("--fleet-workers", default="1,2,4", help="fleet: worker process counts, comma-separated")
    ap.add_argument("--fleet-drain", type=int, default=1000, help="fleet: short runs queued and drained (0: none)")
    ap.add_argument(
        "--console-iterations", type=int, default=200, help="console: timed loads of the 200-step paused run's page"
    )
    ap.add_argument(
        "--console-clicks", type=int, default=5, help="console: decisions timed to their run_resumed (0: none)"
    )
    ap.add_argument(
        "--console-poll", type=float, default=0.05, help="console: the `flow worker RUNS --poll` while clicks are timed"
    )
    ap.add_argument("--batch-items", type=int, default=batch.ITEMS, help="batch: work items entered by each side")
    ap.add_argument("--skip", default="", help=f"parts to leave out, comma-separated: {','.join(PARTS)}")
    ap.add_argument("--out", type=Path, default=Path("bench/results.json"))
    ap.add_argument(
        "--orig-venv",
        type=Path,
        default=Path("bench/.venv-orig"),
        help="venv for the original engine (made on first use)",
    )
    ap.add_argument("--drift-corpus", type=Path, default=drift_corpus.CORPUS_DIR, help="the drift corpus's folder")
    ap.add_argument("--work", type=Path, default=Path("bench/.work"), help="scratch folder, removed at the end")
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout of this project (with its own .venv): its template part is run after ours, "
        "with the same sizes and reps, and its medians printed beside ours",
    )
    args = ap.parse_args(argv)
    args.skip = {p.strip() for p in args.skip.split(",") if p.strip()}
    unknown = args.skip - set(PARTS)
    if unknown:
        ap.error(f"unknown part(s) in --skip: {', '.join(sorted(unknown))}")
    try:
        args.fleet_workers = tuple(int(v) for v in args.fleet_workers.split(",") if v.strip())
    except ValueError:
        ap.error(f"--fleet-workers {args.fleet_workers!r}: expected counts like 1,2,4")
    args.sizes = [tuple(int(v) for v in s.lower().split("x")) for s in args.sizes.split(",") if s.strip()]
    return args


def machine(ocr: OcrEngine | None) -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        **engine_versions(),
        "numpy": np.__version__,
        "pillow": PIL.__version__,
        "openadapt_flow": __version__,
        "ocr_backend": ocr.backend if ocr else None,
        "load_avg_at_start": [round(v, 2) for v in os.getloadavg()],
    }


def step(label: str) -> float:
    print(f"- {label} ...", flush=True)
    return time.perf_counter()


def run(args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    notes: list[str] = []
    ocr = _ocr_engine(args)() if not {"ocr", "drift"} <= args.skip else None
    results: dict[str, Any] = {
        "schema": SCHEMA,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(ocr),
        "settings": {
            k: v
            for k, v in vars(args).items()
            if k in ("reps", "ocr_reps", "orig_reps", "orig_ocr_reps", "engine_runs", "ocr_backend", "ocr_upscale")
        },
        "sizes": [],
        "template": [],
        "ocr": [],
        "compare": [],
        "engine": {},
        "replay50": [],
        "orig_version": None,
        "notes": notes,
    }
    results["settings"]["skip"] = sorted(args.skip)
    steps = resolve.bundle_steps()
    orig_py = None
    if "orig" not in args.skip:
        step("original engine's venv")
        found = orig.ensure_venv(args.orig_venv.resolve(), notes)
        if found:
            orig_py, version = found
            results["orig_version"] = f"openadapt-flow {version}"
        else:
            print(f"  {notes[-1]}")
    for width, height in args.sizes if not set(DEMO_PARTS) <= args.skip else []:
        size = f"{width}x{height}"
        t0 = step(f"{size}: capturing the demo app (normal, shifted, dark) over VNC")
        cases = frames.capture_cases(width, height)
        results["sizes"].append(size)
        templates = resolve.recorded_templates(cases[0], steps)
        print(f"  {time.perf_counter() - t0:.1f} s; template rung ...", flush=True)
        needles_dir = work / "needles"
        if not {"template", "pyscreeze"} <= args.skip:
            if "pyscreeze" not in args.skip:
                print("  pyscreeze (as called and matcher only), interleaved with it ...", flush=True)
            ours, theirs = resolve.bench_template(
                cases,
                steps,
                templates,
                args.reps,
                None if "pyscreeze" in args.skip else needles_dir,
                ours="template" not in args.skip,
            )
            results["template"] += ours
            results["compare"] += theirs
        if ocr is not None and "ocr" not in args.skip:
            print("  OCR rung ...", flush=True)
            results["ocr"] += resolve.bench_ocr(cases, steps, templates, args.ocr_reps, ocr)
        if orig_py is not None:
            print("  original engine ...", flush=True)
            needles = resolve.write_needles(cases[0], steps, templates, needles_dir)
            try:
                results["compare"] += orig.bench_orig(
                    orig_py,
                    cases,
                    steps,
                    needles,
                    resolve.ladder(cases[0].size, templates, "local"),
                    work / "frames",
                    args.orig_reps,
                    args.orig_ocr_reps,
                    version,
                )
            except (RuntimeError, OSError, ValueError) as e:
                notes.append(f"original engine at {size} failed: {e}")
                print(f"  {notes[-1]}")
    if args.baseline is not None and "template" not in args.skip:
        step(f"template rung again, by the baseline checkout {args.baseline}")
        results["baseline"] = _guard(
            lambda: baseline.baseline_template(args.baseline.resolve(), PARTS, args.sizes, args.reps, work),
            notes,
            backend="baseline",
        )
    if "drift" not in args.skip:
        step(f"drift corpus ({args.drift_corpus})")
        results["drift"] = _guard(lambda: _drift(args, ocr, orig_py, results["orig_version"], work), notes)
    if "engine" not in args.skip:
        step("engine overhead (demo bundle, in-process, loopback VNC)")
        results["engine"]["overhead"] = _guard(
            lambda: engine_cost.engine_overhead(work, args.engine_runs, _ocr_engine(args)), notes
        )
        step("journal append+fsync and checkpoint write")
        results["engine"]["journal"] = engine_cost.journal_and_checkpoint(work, 50)
    if "resume" not in args.skip:
        step("resume to first action (`flow resume`)")
        results["engine"]["resume"] = _resume(work, notes)
    if "replay" not in args.skip:
        step("50-step replay over loopback VNC")
        results["replay50"].append(_guard(lambda: replay50.replay_vnc(work), notes, backend="vnc (demo app on Xvnc)"))
        step("50-step replay over the recorded fixture, in-process (fixture:PATH)")
        results["replay50"].append(
            _guard(lambda: replay50.replay_fixture_inprocess(work), notes, backend=report.FIXTURE_INPROCESS)
        )
        step("50-step replay over the recorded fixture served over RFB")
        results["replay50"].append(_guard(lambda: replay50.replay_fixture(work), notes, backend=report.FIXTURE_SERVED))
        step("50-step replay over the recorded fixture served over RFB, no wait for a typed field (field_ready_s: 0)")
        results["replay50"].append(
            _guard(
                lambda: replay50.replay_fixture(work, field_ready_s=0),
                notes,
                backend=f"{report.FIXTURE_SERVED}, field_ready_s=0",
            )
        )
    if "batch" not in args.skip:
        step(f"batch: {args.batch_items} items on the demo app over VNC, `flow batch` beside a blind script")
        results["batch"] = _guard(lambda: batch.batch_bench(work / "batch", args.batch_items), notes, backend="batch")
    _fleet_and_console(args, work, results, notes)
    if "weight" not in args.skip:
        step("weight: a demo venv built from this checkout (no extras), its size and `flow --help` in it")
        results["weight"] = _guard(lambda: weight.weight_bench(work), notes, backend="weight")
    results["targets"] = (
        report.targets(results) + ops_report.goals(results) + weight.goals(results) + batch.goals(results)
    )
    shutil.rmtree(work, ignore_errors=True)
    return results


def _fleet_and_console(args: argparse.Namespace, work: Path, results: dict[str, Any], notes: list[str]) -> None:
    def progress(line: str) -> None:
        print(f"  {line}", flush=True)

    if "fleet" not in args.skip:
        step(
            f"fleet: {','.join(map(str, args.fleet_workers))} workers x {args.fleet_runs} runs, then a "
            f"{args.fleet_drain}-run drain (PostgreSQL, 4 fixture desktops)"
        )
        with engine_cost.bench_env(work) as env:
            results["fleet"] = _guard(
                lambda: fleet.fleet_bench(
                    work / "fleet", env, args.fleet_runs, args.fleet_drain, args.fleet_workers, progress
                ),
                notes,
            )
    if "console" not in args.skip:
        step("console: a 200-step paused run's page, and a click to run_resumed")
        with engine_cost.bench_env(work) as env:
            results["console"] = _guard(
                lambda: console_cost.console_bench(
                    work / "console", env, args.console_iterations, args.console_clicks, args.console_poll
                ),
                notes,
            )


def _drift(
    args: argparse.Namespace, ocr: OcrEngine | None, orig_py: Path | None, orig_version: str | None, work: Path
) -> dict[str, Any]:
    apps = drift_corpus.load_corpus(args.drift_corpus)
    if not apps:
        raise ValueError(f"no drift corpus under {args.drift_corpus} (no */targets.json)")
    out: dict[str, Any] = {
        "corpus": str(args.drift_corpus),
        "digest": drift.frames_digest(apps),
        "apps": [f"{a.model.app} ({a.model.package}, {a.model.toolkit})" for a in apps],
        "orig_version": orig_version if orig_py is not None else None,
        "rows": [],
    }
    for app in apps:
        print(f"  {app.model.app}: ours ...", flush=True)
        out["rows"] += drift.bench_ours(app, args.reps, ocr)
        print(f"  {app.model.app}: pyscreeze ...", flush=True)
        out["rows"] += drift.bench_pyscreeze(app, args.reps)
    if orig_py is not None:
        print("  original engine ...", flush=True)
        out["rows"] += drift.bench_orig(orig_py, apps, work / "drift", args.orig_reps, args.orig_ocr_reps)
    out["verdicts"] = drift_report.verdicts(out)
    return out


def _ocr_engine(args: argparse.Namespace) -> Any:
    """A factory for the OCR engine the options ask for (the engine's defaults unless told otherwise)."""
    kwargs: dict[str, Any] = {"backend": args.ocr_backend}
    if args.ocr_upscale is not None:
        kwargs["upscale"] = args.ocr_upscale
    return lambda: OcrEngine(**kwargs)


def _resume(work: Path, notes: list[str]) -> dict[str, Any]:
    from openadapt_flow.cli.app import app

    names = {getattr(c, "name", None) or getattr(c.callback, "__name__", "") for c in app.registered_commands}
    if "resume" not in names:
        return {"note": "n/a (not built yet)"}
    return _guard(lambda: engine_cost.resume_to_first_action(work), notes)


def _guard(fn: Any, notes: list[str], **extra: Any) -> dict[str, Any]:
    try:
        return fn()
    except (RuntimeError, OSError, TimeoutError, ValueError) as e:
        notes.append(f"{extra.get('backend', 'measurement')} failed: {e}")
        print(f"  {notes[-1]}", flush=True)
        return {**extra, "error": str(e)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    with waiting("make bench: measuring", lines=sys.stdout):  # a spinner on a TTY; every part's line prints above it
        results = run(args)
    results["elapsed_s"] = round(time.perf_counter() - t0, 1)
    results["machine"]["load_avg_at_end"] = [round(v, 2) for v in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    m = results["machine"]
    print(
        f"\nopenadapt-flow {m['openadapt_flow']} on {m['cpus']} CPUs, Python {m['python']}, OpenCV {m['opencv']}, Tesseract {m['tesseract']} (numpy {m['numpy']}, Pillow {m['pillow']}), "
        f"Tesseract via {m['ocr_backend']}, load average {m['load_avg_at_start'][0]:.1f} → {m['load_avg_at_end'][0]:.1f}; "
        f"ms per resolve; hits = clicks landing in the right widget "
        f"(wrong = a confident click elsewhere); theirs: matcher only / as called "
        f"(same frames as arrays in memory / as the API takes them), (×N) = their matcher-only median / ours\n"
    )
    print(report.table(results))
    print()
    for t in results["targets"]:
        met = "n/a" if t["met"] is None else ("met" if t["met"] else "MISSED")
        print(f"{'' if t['name'].startswith('issue') else '§17 '}{t['name']}: {t['target']} — {t['shown']} — {met}")
    if results.get("drift") and "rows" in results["drift"]:
        print("\ndrift corpus (right/wrong/halted, median / p95 ms per resolve):\n")
        print(drift_report.table(results["drift"]))
        print()
        for v in results["drift"]["verdicts"]:
            met = "n/a" if v["met"] is None else ("met" if v["met"] else "MISSED")
            print(f"issue 12 {v['name']}: {v['shown']} — {met}")
    if results.get("baseline", {}).get("template"):
        print()
        print("\n".join(baseline.lines(results["template"], results["baseline"], f"opencv {m['opencv']}")))
    for part, lines in (
        ("fleet", ops_report.fleet_lines),
        ("console", ops_report.console_lines),
        ("weight", weight.lines),
        ("batch", batch.lines),
    ):
        if results.get(part):
            print()
            print("\n".join(lines(results[part])))
    for n in results["notes"]:
        print(f"note: {n}")
    print(f"\nwrote {args.out} in {results['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
