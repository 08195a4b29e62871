"""YamlDoc: one parse gives the data and the line of every key (errors name the line)."""

from pathlib import Path

import pytest

from openadapt_flow.bundle.yamlsrc import YamlDoc
from openadapt_flow.errors import BundleError

pytestmark = pytest.mark.timeout(30)

TEXT = """\
name: demo
steps:
  - id: first
    action: click
  - id: second
    action: type
    text: "hello"
"""


def test_data_and_lines_come_from_the_same_parse() -> None:
    doc = YamlDoc(Path("flow.yaml"), TEXT, BundleError)
    assert doc.data == {
        "name": "demo",
        "steps": [{"id": "first", "action": "click"}, {"id": "second", "action": "type", "text": "hello"}],
    }
    assert doc.line_of(("steps", 1, "text")) == 7
    assert doc.line_of(("steps", 0, "missing")) == 3  # an absent key: the line of the nearest node above it


def test_a_duplicate_key_is_refused_with_its_line() -> None:
    with pytest.raises(BundleError, match=r"^flow.yaml:5: invalid YAML: duplicate key 'action'"):
        YamlDoc(Path("flow.yaml"), "steps:\n  - id: a\n    action: click\n    x: 1\n    action: type\n", BundleError)


def test_an_empty_document_is_no_data() -> None:
    doc = YamlDoc(Path("flow.yaml"), "", BundleError)
    assert doc.data is None and doc.node is None
