"""The original openadapt-flow engine, side by side: its own venv, driven through `orig_driver.py`.

It has our top-level package name, so it lives in a separate venv
(`bench/.venv-orig`, made on first use with `pip install openadapt-flow==2.4.0`)
and reads the same frames from disk. If it cannot be installed the bench says
so and goes on without it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from openadapt_flow.bench.frames import TARGETS, Case, inside, save_cases
from openadapt_flow.bench.stats import Cell
from openadapt_flow.bundle.models import Step
from openadapt_flow.ladder.ladder import Ladder

ORIG_REQUIREMENT = "openadapt-flow==2.4.0"
DRIVER = Path(__file__).with_name("orig_driver.py")
PROBE = "import importlib.metadata as m, openadapt_flow.vision; print(m.version('openadapt-flow'))"


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def ensure_venv(venv: Path, log: list[str]) -> tuple[Path, str] | None:
    """The venv's python and the original's version, installing it first if needed; None (with a note) if impossible."""
    py = venv / "bin" / "python"
    # -I: isolated, so neither the current folder nor the user's site can put our same-named package first.
    probe = (
        subprocess.run([str(py), "-I", "-c", PROBE], capture_output=True, text=True, env=_clean_env())
        if py.exists()
        else None
    )
    if probe is None or probe.returncode != 0:
        print(f"  installing {ORIG_REQUIREMENT} into {venv} (once; takes a minute or two) ...", flush=True)
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True, timeout=300
            )
            subprocess.run(
                [str(py), "-m", "pip", "install", "-q", ORIG_REQUIREMENT],
                check=True,
                capture_output=True,
                text=True,
                timeout=900,
                env=_clean_env(),
            )
        except (subprocess.SubprocessError, OSError) as e:
            err = getattr(e, "stderr", "") or str(e)
            log.append(f"original engine skipped: could not install {ORIG_REQUIREMENT}: {str(err).strip()[-300:]}")
            return None
        probe = subprocess.run([str(py), "-I", "-c", PROBE], capture_output=True, text=True, env=_clean_env())
        if probe.returncode != 0:
            log.append(f"original engine skipped: installed but does not import: {probe.stderr.strip()[-300:]}")
            return None
    return py, probe.stdout.strip()


def _job(
    cases: list[Case], steps: list[Step], needles: dict[str, Path], lad: Ladder, folder: Path, reps: int, ocr_reps: int
) -> dict:
    index = {(e["case"], e["screen"]): e["path"] for e in save_cases(cases, folder)}
    job: dict[str, list] = {"template": [], "ocr": []}
    for case in cases:
        for step in steps:
            t = step.target
            assert t is not None and t.region is not None
            frame = index[(case.name, TARGETS[step.id][0])]
            window = lad.window(t, *case.size)
            key = [case.name, step.id]
            job["template"].append(
                {
                    "key": key,
                    "frame": frame,
                    "template": str(needles[step.id]),
                    "region": list(t.region),
                    "click": list(t.recorded_point() or (0, 0)),
                    "window": list(window or (0, 0, *case.size)),
                    "reps": reps,
                }
            )
            job["ocr"].append(
                {
                    "key": key,
                    "frame": frame,
                    "text": t.text,
                    "text_offset": t.text_offset,
                    "window": list(window or (0, 0, *case.size)),
                    "reps": ocr_reps,
                }
            )
    return job


def bench_orig(
    py: Path,
    cases: list[Case],
    steps: list[Step],
    needles: dict[str, Path],
    lad: Ladder,
    folder: Path,
    reps: int,
    ocr_reps: int,
    version: str,
) -> list[dict]:
    """Rows for the original's template matcher (local, full) and OCR, scored like ours.

    A template row's figures are as called (PNG bytes in); its `matcher_only` holds the same resolves, interleaved,
    on arrays decoded once outside the timer."""
    job = _job(cases, steps, needles, lad, folder, reps, ocr_reps)
    job_path, out_path = folder / "orig-job.json", folder / "orig-out.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run(
        [str(py), "-I", str(DRIVER), str(job_path), str(out_path)],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=folder,
        env=_clean_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the original engine's driver failed: {proc.stderr.strip()[-800:]}")
    out = json.loads(out_path.read_text())
    truth = {(c.name, s.id): c.truth[s.id] for c in cases for s in steps}
    size = f"{cases[0].size[0]}x{cases[0].size[1]}"
    engine = f"openadapt-flow {version}"
    rows = []
    for area in ("local", "full"):
        for case in cases:
            cell, matcher = Cell(), Cell()
            for item in out["template"]:
                if item["key"][0] == case.name:
                    box = truth[tuple(item["key"])]
                    cell.ms += item[area]["ms"]
                    matcher.ms += item[area]["matcher_ms"]
                    p, mp = item[area]["point"], item[area]["matcher_point"]
                    cell.score(inside(tuple(p), box) if p else None)
                    matcher.score(inside(tuple(mp), box) if mp else None)
            rows.append(
                {
                    "engine": engine,
                    "variant": "template",
                    "size": size,
                    "case": case.name,
                    "area": area,
                    **cell.to_json(),
                    "matcher_only": matcher.to_json(),
                }
            )
    for case in cases:
        cell = Cell()
        for item in out["ocr"]:
            if item["key"][0] == case.name:
                cell.ms += item["ms"]
                p = item["point"]
                cell.score(inside(tuple(p), truth[tuple(item["key"])]) if p else None)
        rows.append(
            {"engine": engine, "variant": "ocr", "size": size, "case": case.name, "area": "local", **cell.to_json()}
        )
    return rows
