"""`flow --help` and `flow --version` start fast: they import no command module (no vision, no OpenCV, no store, no pydantic),
and the root help they print is the full app's, word for word (issue 25, item 7)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from openadapt_flow.cli.app import build_app

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import sys
sys.argv = ["flow", *sys.argv[1:]]
from openadapt_flow.cli.app import main
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in ("cv2", "numpy", "pydantic", "openadapt_flow.store.base", "openadapt_flow.vision",
                           "openadapt_flow.runtime.resume")
               if m in sys.modules)
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
"""


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )


def test_root_help_and_version_import_no_command_module() -> None:
    for args in (["--help"], ["--version"], []):
        done = _probe(*args)
        assert done.stderr.strip().splitlines()[-1] == "HEAVY:", (args, done.stderr)


def test_root_help_is_the_full_apps_help() -> None:
    full = CliRunner().invoke(build_app(), ["--help"], prog_name="flow", terminal_width=80).output
    lazy = CliRunner().invoke(build_app(summaries=True), ["--help"], prog_name="flow", terminal_width=80).output
    assert lazy == full
    assert "approve" in lazy and "Teach patches." in lazy


def test_a_named_command_still_gets_its_real_help() -> None:
    done = _probe("replay", "--help")
    assert "--param" in done.stdout


WITHOUT = """
import sys
MISSING = set(sys.argv[1].split(","))

class NotInstalled:  # as if these packages were not installed: importing one raises what Python raises then
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in MISSING:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled)
sys.argv = ["flow", *sys.argv[2:]]
from openadapt_flow.cli.app import main
main()
"""


def _without(missing: str, *args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, missing, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(cwd)},
    )


def test_a_command_whose_extra_is_not_installed_names_the_extra(tmp_path):
    (tmp_path / "runs").mkdir()
    done = _without("uvicorn,starlette", "console", "runs", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "error: this command needs the optional package 'uvicorn', which is not installed: "
        "install openadapt-flow with its [console] extra, from its repository: "
        "pip install '/path/to/openadapt-flow[console]'"
    )


def test_the_run_root_worker_needs_no_fleet_extra(tmp_path):
    (tmp_path / "runs").mkdir()
    done = _without(
        "psycopg,procrastinate,starlette,uvicorn,argon2,pywebpush", "worker", "runs", "--once", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "worker: scanned 0 run(s) in runs" in done.stdout
