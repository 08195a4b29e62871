"""Run the `flow` CLI as a subprocess, as users and scripts do."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def flow_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["FLOW_KEY_FILE"] = str(tmp_path / "install.key")
    env["FLOW_STATE_DIR"] = (
        f"{tmp_path}-flow-state"  # the run ledger: outside run dirs and the test's own folder (SPEC §8)
    )
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("FLOW_DEBUG", None)
    env.update(extra)
    return env


def run_flow(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120, input: str | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openadapt_flow", *args],
        cwd=cwd,
        env=env or flow_env(cwd),
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )


def load_script(name: str):
    """A script of scripts/ imported as a module (they are run as files, not installed)."""
    import importlib.util

    path = REPO / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record_via_proxy(args: list[str], cwd: Path, demonstrate, timeout: float = 120) -> subprocess.CompletedProcess:
    """`flow record ARGS` as a subprocess: `demonstrate(port)` drives the proxy's printed port like a viewer, then
    Ctrl+C ends the recording. Returns the finished process (stdout, stderr as text); it never outlives this call."""
    cmd = [sys.executable, "-m", "openadapt_flow", "record", *args]
    proc = subprocess.Popen(cmd, cwd=cwd, env=flow_env(cwd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the proxy is listening once this is printed
        port = re.search(r"connect your VNC viewer to [\w.:]+:(\d+)", line)
        assert port, line + (proc.stderr.read() if proc.stderr else "")
        demonstrate(int(port.group(1)))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
