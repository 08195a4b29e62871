"""The Makefile's set-up, as a newcomer meets it: `make demo` installs only what the demo needs, `make test`
everything, and each install step is one line — its output in a log, named with its tail when the step fails."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]


def packages(name: str) -> list[str]:
    m = re.search(rf"^{name}\s*:?=\s*(.+)$", (REPO / "Makefile").read_text(), re.M)
    assert m, f"Makefile has no {name} line"
    return m.group(1).split()


def make(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    assert shutil.which("make"), "make is not installed"
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )


def test_the_demo_installs_a_subset_of_the_tests_packages_and_none_of_the_suites_servers():
    demo, full = packages("DEMO_PKGS"), packages("APT_PKGS")
    assert set(demo) <= set(full)
    assert "tesseract-ocr" in demo
    assert not {
        "xrdp",
        "freerdp2-x11",
        "postgresql",
        "sqlitebrowser",
        "galculator",
        "mousepad",
        "xvfb",
        "tigervnc-standalone-server",
        "chromium",
    } & set(demo)
    assert {"chromium", "chromium-driver"} <= set(full)  # report screenshots and the console's browser tests


def test_make_demo_plans_only_the_demo_packages_and_no_dev_extras(tmp_path):
    # -n prints what would run and runs nothing; a fresh VENV makes every install step due
    r = make(tmp_path, "-n", "demo", f"VENV={tmp_path}/venv")
    assert r.returncode == 0, r.stderr
    assert "for p in python3-venv tesseract-ocr; do" in r.stdout
    assert "xrdp" not in r.stdout and "[dev]" not in r.stdout and "pip install -e ." in r.stdout
    r = make(tmp_path, "-n", "test", f"VENV={tmp_path}/venv")
    assert "xrdp" in r.stdout and "chromium-driver" in r.stdout
    assert "pip install -e '.[dev,console,phone,postgres,fleet]'" in r.stdout  # the suite drives every extra
    assert (
        r.stdout.count("-m pytest") == 2 and "IMAGING" not in r.stdout
    )  # crash tests, then the rest: one image engine


def test_a_step_is_one_line_and_its_output_goes_to_the_log(tmp_path):
    log = tmp_path / "setup.log"
    r = make(
        tmp_path,
        "--eval",
        "probe: ; @$(STEP) 'probing' sh -c 'echo lots of noise; echo more noise'",
        "probe",
        f"LOG={log}",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "probing ... ok\n"
    assert "lots of noise" in log.read_text()


def test_a_failed_step_names_the_log_and_shows_its_tail(tmp_path):
    log = tmp_path / "setup.log"
    r = make(
        tmp_path,
        "--eval",
        "probe: ; @$(STEP) 'probing' sh -c 'echo E: unable to locate package; exit 100'",
        "probe",
        f"LOG={log}",
    )
    assert r.returncode != 0
    assert r.stdout.startswith("probing ... failed (exit 100)\n")
    assert f"last lines of {log}" in r.stdout and "| E: unable to locate package" in r.stdout


def test_make_demo_record_adds_only_xvnc_and_tk_to_the_demos_packages(tmp_path):
    record = packages("RECORD_PKGS")
    assert record == ["$(DEMO_PKGS)", "tigervnc-standalone-server", "python3-tk"]
    assert set(record[1:]) <= set(packages("APT_PKGS"))  # make test installs what the tutorial needs too
    r = make(tmp_path, "-n", "demo-record", f"VENV={tmp_path}/venv")
    assert r.returncode == 0, r.stderr
    assert "for p in python3-venv tesseract-ocr tigervnc-standalone-server python3-tk; do" in r.stdout
    assert "xrdp" not in r.stdout and "[dev]" not in r.stdout
    assert r.stdout.rstrip().endswith(f"{tmp_path}/venv/bin/flow demo --record")
