"""The docs a newcomer reads point at files that exist, inside the repo, and install this project, not the
different `openadapt-flow` on the public package index."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(30)

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "fixtures" / "README.md",
    REPO / "runs" / "README.md",
]


def test_every_relative_link_resolves_inside_the_repo():
    problems = []
    for doc in DOCS:
        for m in re.finditer(r"\]\(([^)\s]+)\)", doc.read_text()):
            target = m.group(1).split("#", 1)[0]
            if not target or re.match(r"[a-z]+:", target):
                continue
            path = (doc.parent / target).resolve()
            if not path.is_relative_to(REPO):
                problems.append(f"{doc.relative_to(REPO)}: {target} lies outside the repo")
            elif not path.exists():
                problems.append(f"{doc.relative_to(REPO)}: {target} does not exist")
    assert not problems, "\n".join(problems)


def test_no_doc_installs_the_other_openadapt_flow_from_the_index():
    # `openadapt-flow==2.4.0` (the bench's comparison engine, in a venv of its own) names the other one on purpose
    bare = re.compile(r"pip install (-U |--upgrade )?openadapt-flow(\s|$|\[)", re.M)
    offenders = [
        str(p.relative_to(REPO)) for p in [*DOCS, REPO / "docs" / "ci-example.yml"] if bare.search(p.read_text())
    ]
    assert not offenders, offenders


OUTPUTS = {"bench/results.json"}  # written by `make bench`, not kept in the repo


def test_every_repo_path_a_doc_cites_exists():
    """A path in backticks (`openadapt_flow/…/x.py`, `tests/…`, `docs/…`) names a file of this repo; a glob names at
    least one; `<placeholders>` and the files a command writes are not paths of the repo."""
    problems = []
    for doc in DOCS:
        for m in re.finditer(r"`([^`\s]+)`", doc.read_text()):
            path = re.split(r"[:#(]", m.group(1).rstrip(".,;"))[0]
            if not re.match(r"(openadapt_flow|tests|docs|scripts|fixtures|bench)/", path) or "<" in path:
                continue
            if not re.search(r"\.(py|md|ya?ml|json|csv|png|txt)$|/$", path) or path in OUTPUTS:
                continue
            if not (any(REPO.glob(path)) if "*" in path else (REPO / path).exists()):
                problems.append(f"{doc.relative_to(REPO)}: `{path}` is not in the repo")
    assert not problems, "\n".join(problems)


def test_the_readme_layout_names_every_top_level_package_and_module():
    block = REPO.joinpath("README.md").read_text().split("## Layout", 1)[1].split("```")[1]
    pkg = REPO / "openadapt_flow"
    names = [p.name + "/" for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    names += [p.name for p in pkg.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    runtime = [p.name + "/" for p in (pkg / "runtime").iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    missing = [n for n in names + runtime if not re.search(rf"(^|\s){re.escape(n)}(\s|$)", block, re.M)]
    assert not missing, f"README's layout block does not name: {', '.join(sorted(missing))}"
