"""A 50-step replay (10 invoices x the demo's 5 steps) as a user runs it: `flow replay` in its own process.

Wall time is the process's, from start to exit; peak RSS is its VmHWM, read
from /proc while it runs (the rusage of a waited child is no good here: Linux
carries the parent's high-water mark across fork+exec into it). It runs against the
demo app over loopback VNC and, where the recorded fixture of the demo app
exists, against it played in-process (`--url fixture:PATH`) and served over
RFB by `flow fixture serve`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from openadapt_flow.backends.fixture import SOR_ENV
from openadapt_flow.bench.engine_cost import bench_env
from openadapt_flow.bench.frames import BUNDLE_DIR, demo_on_xvnc
from openadapt_flow.bench.report import FIXTURE_INPROCESS, FIXTURE_SERVED
from openadapt_flow.procs import stop_process

INVOICES = 10
# Names end in letters: typed-text readback misreads a last digit next to the caret ("ACME 8|" as "ACME g|").
VENDORS = ("ACME", "Globex", "Initech", "Umbrella", "Cyberdyne", "Stark", "Wayne", "Wonka", "Tyrell", "Soylent")
FIXTURE_DIR = BUNDLE_DIR.parent / "fixtures" / "normal"
_SERVING = re.compile(r"on vnc://127\.0\.0\.1:(\d+)")


def make_bundle(out: Path, invoices: int = INVOICES) -> tuple[Path, list[str]]:
    """The demo bundle repeated per invoice, each with its own vendor/amount params; returns it and its --param flags."""
    flow = yaml.safe_load((BUNDLE_DIR / "flow.yaml").read_text())
    steps, params, flags = [], {}, []
    for n in range(1, invoices + 1):
        vendor, amount = f"vendor_{n}", f"amount_{n}"
        params[vendor] = {"type": "string", "required": True}
        params[amount] = {"type": "number", "required": True}
        flags += ["--param", f"{vendor}={VENDORS[(n - 1) % len(VENDORS)]} Corp", "--param", f"{amount}={100 + n}.25"]
        for step in flow["steps"]:
            text = yaml.safe_dump(step, sort_keys=False)
            text = text.replace("{vendor}", "{" + vendor + "}").replace("{amount}", "{" + amount + "}")
            text = text.replace(":vendor", ":" + vendor).replace(":amount", ":" + amount)
            s = yaml.safe_load(text)
            s["id"] = f"{s['id']}-{n}"
            steps.append(s)
    flow.update(name=f"demo-invoice-x{invoices}", params=params, steps=steps)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(BUNDLE_DIR / "templates", out / "templates")
    (out / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return out, flags


def _replay(
    bundle: Path,
    flags: list[str],
    url: str,
    run_dir: Path,
    env: dict[str, str],
    timeout: float,
    config: Path | None = None,
) -> dict[str, Any]:
    args = [
        sys.executable,
        "-m",
        "openadapt_flow",
        "replay",
        str(bundle),
        "--url",
        url,
        "--run-dir",
        str(run_dir),
        "--json",
        *flags,
    ]
    if config is not None:
        args += ["--config", str(config)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    peak_kb = 0
    try:
        while proc.poll() is None:
            peak_kb = max(peak_kb, _hwm_kb(proc.pid))
            if time.monotonic() > deadline:
                raise TimeoutError(f"the 50-step replay took longer than {timeout}s")
            time.sleep(0.02)
    finally:
        stop_process(proc)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    state = _state(run_dir)
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "exit_code": proc.returncode,
        "state": state,
        "steps_verified": _verified(run_dir),
        "stderr_tail": err.strip()[-300:] if proc.returncode else "",
    }


def _hwm_kb(pid: int) -> int:
    """The process's peak resident set so far (VmHWM, kB); 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _state(run_dir: Path) -> str | None:
    try:
        return str(yaml.safe_load((run_dir / "state.json").read_text())["state"])
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return None


def _verified(run_dir: Path) -> int:
    try:
        return (run_dir / "journal.jsonl").read_text().count('"type":"step_verified"')
    except OSError:
        return 0


def replay_vnc(work: Path, timeout: float = 300) -> dict[str, Any]:
    """50 steps against the demo app on a private Xvnc, over loopback VNC."""
    bundle, flags = make_bundle(work / "bundle-x10")
    with demo_on_xvnc(1024, 768, "normal") as desk, bench_env(work) as env:
        env["DEMO_DB_DSN"] = f"sqlite:///{desk.db}"
        return {
            "backend": "vnc (demo app on Xvnc)",
            **_replay(bundle, flags, desk.url, work / "run-x10-vnc", env, timeout),
        }


def replay_fixture(work: Path, timeout: float = 300, field_ready_s: float | None = None) -> dict[str, Any]:
    """50 steps against `flow fixture serve` of the demo app's recorded fixture, over loopback RFB.

    `field_ready_s` replays with that wait between a type step's click and its keys instead of the default 0.5 s
    (the demo app is Tk, which acts on a click at once: this shows what the wait costs).
    """
    if not (FIXTURE_DIR / "fixture.yaml").is_file():
        return {
            "backend": FIXTURE_SERVED,
            "skipped": "no recorded fixture of the demo app (openadapt_flow/demo/fixtures/normal)",
        }
    bundle, flags = make_bundle(work / "bundle-x10")
    tag = "default" if field_ready_s is None else f"field-ready-{field_ready_s:g}"
    db = work / f"fixture-invoices-{tag}.db"
    serve = [
        sys.executable,
        "-m",
        "openadapt_flow",
        "fixture",
        "serve",
        str(FIXTURE_DIR),
        "--port",
        "0",
        "--db",
        str(db),
    ]
    with bench_env(work) as env:
        server = subprocess.Popen(serve, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = server.stdout.readline() if server.stdout else ""
            m = _SERVING.search(line)
            if m is None:
                return {"backend": FIXTURE_SERVED, "skipped": f"fixture server did not start: {line.strip()[:200]!r}"}
            env["DEMO_DB_DSN"] = f"sqlite:///{db}"
            url = f"vnc://127.0.0.1:{m.group(1)}"
            config, label = None, FIXTURE_SERVED
            if field_ready_s is not None:
                config = work / f"{tag}.yaml"
                config.write_text(f"schema: openadapt-flow/config@1\nruntime: {{field_ready_s: {field_ready_s}}}\n")
                label += f", field_ready_s={field_ready_s:g}"
            return {
                "backend": label,
                **_replay(bundle, flags, url, work / f"run-x10-fixture-{tag}", env, timeout, config),
            }
        finally:
            stop_process(server)


def replay_fixture_inprocess(work: Path, timeout: float = 300) -> dict[str, Any]:
    """50 steps against the demo app's recorded fixture played in the replay's own process (`--url fixture:PATH`):
    no socket, and a screen that changes only on input, so settling never waits."""
    if not (FIXTURE_DIR / "fixture.yaml").is_file():
        return {
            "backend": FIXTURE_INPROCESS,
            "skipped": "no recorded fixture of the demo app (openadapt_flow/demo/fixtures/normal)",
        }
    bundle, flags = make_bundle(work / "bundle-x10")
    db = work / "fixture-inprocess-invoices.db"
    with bench_env(work) as env:
        env[SOR_ENV] = str(db)
        env["DEMO_DB_DSN"] = f"sqlite:///{db}"
        return {
            "backend": FIXTURE_INPROCESS,
            **_replay(
                bundle, flags, f"fixture:{FIXTURE_DIR.resolve()}", work / "run-x10-fixture-inprocess", env, timeout
            ),
        }
