"""Every external program the code, the tests or the scripts run must come from a Debian package the Makefile installs.

A fresh machine has only what `make setup` puts there: a tool a developer installed by hand (xrandr once failed
`make test` that way) passes here only if its package is in the Makefile's APT_PKGS, a direct dependency of one, or a
base package every Debian system has (priority required/important).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
SOURCES = [REPO / "openadapt_flow", REPO / "tests", REPO / "scripts"]
SPAWNERS = {"run", "Popen", "check_output", "check_call", "call"}
# Programs that come from the project's own venv (pip), not from Debian.
FROM_PIP = {"openadapt", "flow", "vncdo"}


def apt_packages() -> set[str]:
    text = (REPO / "Makefile").read_text()
    m = re.search(r"^APT_PKGS\s*:?=\s*(.+)$", text, re.M)
    assert m, "Makefile has no APT_PKGS line"
    return set(m.group(1).split())


def _program(node: ast.expr) -> str | None:
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        node = node.elts[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[A-Za-z0-9_.+-]+", node.value):
        return node.value
    return None


def programs_used() -> dict[str, str]:
    """program -> first place (file:line) that runs or looks it up."""
    found: dict[str, str] = {}
    for root in SOURCES:
        for path in root.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names: list[str | None] = []
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                    owner = node.func.value
                    owner_name = owner.id if isinstance(owner, ast.Name) else None
                    if (
                        owner_name == "subprocess"
                        and node.func.attr in SPAWNERS
                        or owner_name == "shutil"
                        and node.func.attr == "which"
                    ):
                        names.append(_program(node.args[0]))
                elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "NEEDS" for t in node.targets
                ):
                    if isinstance(node.value, (ast.Tuple, ast.List)):
                        names.extend(_program(e) for e in node.value.elts)
                for name in names:
                    if name and name not in FROM_PIP:
                        found.setdefault(name, f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def package_of(program: str) -> str | None:
    exe = shutil.which(program, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
    if exe is None:
        return None
    real = os.path.realpath(exe)
    for candidate in dict.fromkeys([real, exe, real.replace("/usr/", "/", 1), exe.replace("/usr/", "/", 1)]):
        r = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True, timeout=20)
        if r.returncode == 0:
            return r.stdout.split(":", 1)[0].strip()
    return "(not from a Debian package)"


def _query(pkg: str, fmt: str) -> str:
    r = subprocess.run(["dpkg-query", "-W", f"-f={fmt}", pkg], capture_output=True, text=True, timeout=20)
    return r.stdout if r.returncode == 0 else ""


def allowed_packages(listed: set[str]) -> set[str]:
    """The listed packages and their direct dependencies (a metapackage such as postgresql names its server)."""
    out = set(listed)
    for pkg in listed:
        for alt in _query(pkg, "${Depends}").split(","):
            name = alt.split("|")[0].strip().split(" ")[0].split(":")[0]
            if name:
                out.add(name)
    return out


def test_every_program_used_comes_from_a_package_the_makefile_installs():
    listed = apt_packages()
    allowed = allowed_packages(listed)
    problems = []
    for program, where in sorted(programs_used().items()):
        pkg = package_of(program)
        if pkg is None:
            problems.append(f"{program} (used at {where}) is not installed: add its Debian package to APT_PKGS")
        elif pkg in allowed:
            continue
        elif _query(pkg, "${Priority}") in ("required", "important") or _query(pkg, "${Essential}") == "yes":
            continue
        else:
            problems.append(
                f"{program} (used at {where}) comes from {pkg}, which the Makefile's APT_PKGS does not install"
            )
    assert not problems, "\n".join(problems)


def test_the_scan_sees_the_programs_the_suite_is_known_to_run():
    used = programs_used()
    # the scan must keep finding what it exists for; if one of these moves, update the scan, not this list
    assert {"Xvnc", "xdotool", "xrandr", "tesseract", "openssl"} <= set(used), sorted(used)


def _declared_distributions() -> set[str]:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"]) + [
        r for extra in project.get("optional-dependencies", {}).values() for r in extra
    ]
    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def test_every_third_party_import_is_a_declared_dependency():
    import importlib.metadata
    import sys

    owners = importlib.metadata.packages_distributions()
    declared = _declared_distributions()
    # what a declared distribution pulls in for itself counts too (psycopg[binary] brings psycopg_binary)
    for dist in list(declared):
        try:
            for req in importlib.metadata.requires(dist) or []:
                declared.add(re.split(r"[\[<>=!~ ;(]", req, maxsplit=1)[0].lower().replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            pass
    problems = []
    for root in SOURCES:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                mods = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
                )
                for mod in mods:
                    top = mod.split(".")[0]
                    if (
                        top in sys.stdlib_module_names
                        or top in ("openadapt_flow", "tests", "openadapt_flow_orig")
                        or top not in owners
                    ):
                        continue
                    dists = {d.lower().replace("_", "-") for d in owners[top]}
                    if not dists & declared:
                        problems.append(
                            f"{path.relative_to(REPO)}:{node.lineno} imports {top} ({', '.join(sorted(dists))}), not in pyproject.toml"
                        )
    assert not problems, "\n".join(problems)
