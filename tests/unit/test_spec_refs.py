"""docs/spec.md is the contract the code cites: every "§N" / "§N.M" in the package, the docs and the README names a
section of it, and no `flow … --help` makes a user look a section up — help says what it means."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from openadapt_flow.cli.app import build_app

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "docs" / "spec.md"
CITATION = re.compile(r"§(\d+(?:\.\d+)*)")
# another document's section, e.g. "RFC 6143 §7.4" (the line may break between the RFC and its section)
FOREIGN = re.compile(r"RFC[\s#]*\d+[\s#]*$")
BOX = re.compile(r"[│─┌┐└┘├┤┬┴┼╭╮╰╯]")


def spec_sections(text: str) -> set[str]:
    """The section numbers of spec.md: `## N. …` and `### N.M …` headings."""
    found = set(re.findall(r"^## (\d+)\. ", text, re.M))
    found |= set(re.findall(r"^### (\d+\.\d+) ", text, re.M))
    return found


def citations(text: str) -> Iterator[tuple[int, str]]:
    """(line, section) of each "§N" / "§N.M" citing the spec; another document's sections (RFCs) are not ours."""
    for m in CITATION.finditer(text):
        if FOREIGN.search(text[max(0, m.start() - 40) : m.start()]):
            continue
        yield text.count("\n", 0, m.start()) + 1, m.group(1)


def cited_files() -> list[Path]:
    return [
        *sorted((REPO / "openadapt_flow").rglob("*.py")),
        *sorted((REPO / "docs").rglob("*.md")),
        REPO / "README.md",
    ]


def test_every_section_citation_resolves_to_a_heading_of_docs_spec_md():
    sections = spec_sections(SPEC.read_text(encoding="utf-8"))
    assert {str(n) for n in range(22)} <= sections, "docs/spec.md must keep its sections 0–21"
    unresolved, resolved = [], 0
    for path in cited_files():
        for line, section in citations(path.read_text(encoding="utf-8")):
            if section in sections:
                resolved += 1
            else:
                unresolved.append(f"{path.relative_to(REPO)}:{line}: §{section}")
    assert not unresolved, "citations with no such section in docs/spec.md:\n" + "\n".join(unresolved)
    assert resolved > 100  # the citations are really being read


def test_citations_of_other_documents_and_of_missing_sections_are_told_apart():
    text = "as spec §8 says (RFC 6143\n§7.2.2), RFC 6143 §7.4, and §7.9\n"
    assert list(citations(text)) == [(1, "8"), (2, "7.9")]
    assert spec_sections("## 7. Run directory\n### 7.2 Files\n## 8. x\n") == {"7", "7.2", "8"}


def test_links_into_docs_spec_md_name_one_of_its_headings():
    slugs = {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#{1,3} (.+)$", SPEC.read_text(encoding="utf-8"), re.M)
    }
    broken = []
    for path in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]:
        for m in re.finditer(r"\]\((?:docs/)?spec\.md#([^)\s]+)\)", path.read_text(encoding="utf-8")):
            if m.group(1) not in slugs:
                broken.append(f"{path.relative_to(REPO)}: spec.md#{m.group(1)}")
    assert not broken, "links to no heading of docs/spec.md:\n" + "\n".join(broken)


def _command_paths(cmd: object, path: list[str]) -> Iterator[list[str]]:
    yield path
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        yield from _command_paths(sub, path + [name])


def test_no_help_text_sends_the_user_to_a_section_number():
    root = typer.main.get_command(build_app())
    paths = list(_command_paths(root, []))
    assert len(paths) > 40  # every command and group, `flow` itself included
    runner, offenders = CliRunner(), []
    for path in paths:
        result = runner.invoke(build_app(), [*path, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
        assert result.exit_code == 0, (path, result.output)
        text = " ".join(BOX.sub(" ", result.output).split())  # a citation wrapped across lines or box borders
        for m in re.finditer(r"(SPEC\s*)?§\S*", text):
            offenders.append(f"{' '.join(['flow', *path])} --help: …{text[max(0, m.start() - 60) : m.end() + 20]}…")
    assert not offenders, "help must say what it means, not cite the spec:\n" + "\n".join(offenders)
