"""`start:`, `reset:` and `reset_before_each` in flow.yaml (spec §22): what the loader accepts, and a one-line error
naming the field for what it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import BundleError
from tests.support.bundles import minimal_flow, write_bundle

pytestmark = pytest.mark.timeout(30)

HOME = [
    {
        "id": "home",
        "action": "click",
        "target": {"template": "templates/ok.png", "region": [100, 100, 60, 24]},
        "expect": [{"text_present": "Invoices"}],
    }
]


def load(tmp_path: Path, **over: Any):
    return load_bundle(write_bundle(tmp_path / "b", minimal_flow(**over)))


def refused(tmp_path: Path, **over: Any) -> str:
    with pytest.raises(BundleError) as e:
        load(tmp_path, **over)
    msg = str(e.value)
    assert "\n" not in msg and "flow.yaml:" in msg, msg
    assert e.value.exit_code == 2
    return msg


def test_start_facts_of_every_one_frame_kind_and_both_reset_forms_load(tmp_path):
    start = [
        {"text_present": "Invoices", "region": [10, 10, 80, 20]},
        {"text_absent": "Vendor", "region": [10, 40, 60, 20]},
        {"text_absent": "{vendor}"},
        {"blank": [100, 60, 120, 24]},
        {"template_present": "templates/ok.png", "region": [100, 100, 60, 24]},
    ]
    by_command = load(
        tmp_path,
        start=start,
        reset={"command": ["app", "--fresh"], "wait_for": {"text_present": "Invoices"}, "timeout_s": 20},
        reset_before_each=True,
    ).model
    assert [pc.kind for pc in by_command.start] == [
        "text_present",
        "text_absent",
        "text_absent",
        "blank",
        "template_present",
    ]
    assert (
        by_command.reset is not None and by_command.reset.command == ["app", "--fresh"] and by_command.reset_before_each
    )
    by_steps = load(tmp_path, reset={"steps": HOME}).model
    assert by_steps.reset is not None and [s.id for s in by_steps.reset.steps or []] == ["home"]
    assert not by_steps.reset_before_each and by_steps.reset.timeout_s == 60


@pytest.mark.parametrize(
    "over,names",
    [
        ({"start": [{"region_changed": [0, 0, 10, 10]}]}, ["start.0", "region_changed needs a screen before it"]),
        ({"start": [{"text_present": "A", "region": [0, 0, 9, 9], "relative_to": "target"}]}, ["start.0", "no target"]),
        (
            {"start": [{"text_present": "A", "region": [300, 230, 40, 20]}]},
            ["start fact region", "lies outside the screen"],
        ),
        ({"start": [{"blank": [0, 0, 10, 10], "region": [0, 0, 10, 10]}]}, ["start.0", "not blank"]),
        ({"start": [{"text_absent": "{patient}"}]}, ["start fact", "{patient} names no declared param"]),
        (
            {"start": [{"template_present": "templates/gone.png", "region": [0, 0, 10, 10]}]},
            ["templates/gone.png", "file not found"],
        ),
        ({"start": [{"text_present": "A", "colour": "red"}]}, ["unknown key 'colour'", "start.0"]),
        ({"reset": {"command": ["app"]}}, ["reset", "needs wait_for"]),
        (
            {"reset": {"command": ["app"], "wait_for": {"text_present": "A"}, "steps": HOME}},
            ["reset", "exactly one of command"],
        ),
        ({"reset": {}}, ["reset", "exactly one of command"]),
        ({"reset": {"command": []}}, ["reset.command"]),
        ({"reset": {"steps": HOME, "wait_for": {"text_present": "A"}}}, ["reset", "wait_for goes with command"]),
        (
            {"reset": {"command": ["app"], "wait_for": {"region_changed": [0, 0, 5, 5]}}},
            ["reset.wait_for", "region_changed"],
        ),
        ({"reset": {"steps": [{"id": "ask", "action": "ask_user", "question": "ok?"}]}}, ["reset", "GUI actions only"]),
        (
            {"reset": {"steps": [{**HOME[0], "expect": [{"text_present": "{vendor}"}]}]}},
            ["reset step 'home'", "takes no params"],
        ),
        ({"reset": {"steps": [HOME[0], HOME[0]]}}, ["duplicate reset step id 'home'"]),
        (
            {"reset": {"steps": [{**HOME[0], "target": {"text": "OK", "region": [300, 230, 40, 20]}}]}},
            ["lies outside the screen"],
        ),
        (
            {"reset": {"command": ["app"], "wait_for": {"text_present": "{vendor}"}}},
            ["reset wait_for", "takes no params"],
        ),
        ({"reset": {"command": ["app"], "wait_for": {"text_present": "A"}, "timeout_s": 0}}, ["reset.timeout_s"]),
        ({"reset_before_each": True}, ["reset_before_each: needs a reset"]),
    ],
)
def test_a_bad_start_or_reset_is_one_line_naming_the_field(tmp_path, over, names):
    msg = refused(tmp_path, **over)
    for name in names:
        assert name in msg, msg
