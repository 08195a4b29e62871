"""`--baseline DIR`: the template part measured again by another checkout of the project, in its own venv, within
the same bench run, and its medians printed beside ours (issue 32: OpenCV against the numpy engine it replaced).

The baseline runs its own `python -m openadapt_flow.bench` with every part but `template` skipped, the same sizes and
repetitions, right after ours; its machine line says which engine did its image work."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from openadapt_flow.bench.frames import CASES

TIMEOUT_S = 1800


def baseline_template(
    checkout: Path, parts: tuple[str, ...], sizes: list[tuple[int, int]], reps: int, work: Path
) -> dict[str, Any]:
    """The baseline checkout's template rows and machine line. RuntimeError when it cannot be run."""
    python = checkout / ".venv" / "bin" / "python"
    if not python.exists():
        raise RuntimeError(
            f"--baseline {checkout}: no venv at {python} (make one there: python3 -m venv .venv && "
            ".venv/bin/pip install -e '.[console,phone,postgres,fleet]')"
        )
    out = work / "baseline.json"
    skip = ",".join(p for p in parts if p != "template")
    cmd = [
        str(python),
        "-m",
        "openadapt_flow.bench",
        "--skip",
        skip,
        "--reps",
        str(reps),
        "--out",
        str(out),
        "--sizes",
        ",".join(f"{w}x{h}" for w, h in sizes),
        "--work",
        str(work / "baseline-work"),
    ]
    done = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0 or not out.exists():
        raise RuntimeError(
            f"the baseline's bench exited {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}"
        )
    found = json.loads(out.read_text())
    machine = found.get("machine", {})
    engine = machine.get("imaging") or (f"opencv {machine['opencv']}" if machine.get("opencv") else "unknown")
    return {"checkout": str(checkout), "engine": engine, "template": found.get("template", [])}


def lines(ours: list[dict[str, Any]], base: dict[str, Any], engine: str) -> list[str]:
    """A table of template medians (ms): ours beside the baseline's, with the ratio, per size, area and case."""
    theirs = {(r["size"], r["area"], r["case"]): r for r in base.get("template", [])}
    out = [
        f"template rung medians, this checkout ({engine}) beside {base['checkout']} ({base['engine']}), one run:",
        "",
        "| frame | area | case | ours median ms (hits) | baseline median ms (hits) | baseline / ours |",
        "|---|---|---|---|---|---|",
    ]
    order = {c: i for i, c in enumerate(CASES)}
    for r in sorted(ours, key=lambda r: (r["size"], r["area"], order.get(r["case"], 99))):
        b = theirs.get((r["size"], r["area"], r["case"]))
        shown = f"{b['median_ms']:.2f} ({b['hits']}/{b['targets']})" if b else "–"
        ratio = f"{b['median_ms'] / r['median_ms']:.1f}x" if b and r["median_ms"] > 0 else "–"
        out.append(
            f"| {r['size']} | {r['area']} | {r['case']} | {r['median_ms']:.2f} ({r['hits']}/{r['targets']}) | {shown} | {ratio} |"
        )
    return out
