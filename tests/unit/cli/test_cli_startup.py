"""`flow --help` and `flow --version` start fast: they import no command module (no vision, no OpenCV, no store),
and the root help they print is the full app's, word for word (issue 25, item 7)."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from openadapt_flow.cli.app import build_app

PROBE = """
import sys
sys.argv = ["flow", *sys.argv[1:]]
from openadapt_flow.cli.app import main
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in ("cv2", "numpy", "openadapt_flow.store.base", "openadapt_flow.vision", "openadapt_flow.runtime.resume")
               if m in sys.modules)
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
"""


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60,
                          env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "PYTHONPATH": sys.path[0] or "."})


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
