"""What a newcomer pays before the first run (issue 25, item 7; targets from issue 32): the install size of a demo venv (the package from
this checkout with no extras, as `make demo` installs it; pip may fetch from the package index) and the wall time of
`flow --help` and `flow --version` in it."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEMO_VENV_MB = 450.0  # issue 32's targets: OpenCV is in the core install (docs/decisions.md)
HELP_S = 0.3
INSTALL_TIMEOUT_S = 1200


def _tree_bytes(root: Path) -> int:
    """Bytes of the files under `root` (symlinks not followed: a venv's python is a link to the system's)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total


def build_demo_venv(work: Path, repo: Path = REPO) -> tuple[Path, float]:
    """A fresh venv with the package from `repo` installed as the demo installs it (no extras); its path and the
    seconds the install took. RuntimeError with pip's last lines if it fails."""
    venv = work / "demo-venv"
    shutil.rmtree(venv, ignore_errors=True)
    t0 = time.perf_counter()
    for cmd in (
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(repo)],
    ):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:4])} failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return venv, time.perf_counter() - t0


def venv_size(venv: Path) -> dict[str, Any]:
    """The venv's size in MB, and its ten largest installed folders (packages and their bundled libraries)."""
    site = next(venv.glob("lib/python*/site-packages"))
    parts = sorted(((p.name, _tree_bytes(p)) for p in site.iterdir() if p.is_dir()), key=lambda kv: -kv[1])
    return {
        "mb": round(_tree_bytes(venv) / 1e6, 1),
        "largest": [{"name": n, "mb": round(b / 1e6, 1)} for n, b in parts[:10]],
    }


def start_up(flow: Path, reps: int = 5) -> dict[str, Any]:
    """Median wall seconds of `flow --help` and `flow --version` (`reps` each, after one warm-up)."""
    out: dict[str, Any] = {}
    for args in (["--help"], ["--version"]):
        times = []
        for i in range(reps + 1):
            t0 = time.perf_counter()
            done = subprocess.run(
                [str(flow), *args], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"}
            )
            if done.returncode != 0:
                raise RuntimeError(f"{flow} {args[0]} exited {done.returncode}: {done.stderr.strip()[-200:]}")
            if i:
                times.append(time.perf_counter() - t0)
        out[args[0].lstrip("-")] = round(statistics.median(times), 3)
    return out


def weight_bench(work: Path) -> dict[str, Any]:
    """The demo venv's size and the start-up times measured in it."""
    venv, install_s = build_demo_venv(work)
    try:
        return {
            "demo_venv": venv_size(venv),
            "install_s": round(install_s, 1),
            "start_up_s": start_up(venv / "bin" / "flow"),
        }
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The two weight targets (issue 32), as the bench's other targets are printed."""
    w = results.get("weight") or {}
    size = (w.get("demo_venv") or {}).get("mb")
    help_s = (w.get("start_up_s") or {}).get("help")
    return [
        {
            "name": "demo venv install size",
            "target": f"<= {DEMO_VENV_MB:g} MB",
            "shown": "n/a" if size is None else f"{size:.0f} MB",
            "met": None if size is None else size <= DEMO_VENV_MB,
        },
        {
            "name": "`flow --help` wall time",
            "target": f"<= {HELP_S:g} s",
            "shown": "n/a" if help_s is None else f"{help_s:.2f} s (--version {w['start_up_s']['version']:.2f} s)",
            "met": None if help_s is None else help_s <= HELP_S,
        },
    ]


def lines(w: dict[str, Any]) -> list[str]:
    """The weight part's own lines: the largest folders of the demo venv."""
    if "demo_venv" not in w:
        return [f"weight: {w.get('error', 'not measured')}"]
    big = ", ".join(f"{p['name']} {p['mb']:.0f}" for p in w["demo_venv"]["largest"])
    return [f"demo venv: {w['demo_venv']['mb']:.0f} MB (installed in {w['install_s']:.0f} s); largest, MB: {big}"]
