"""An outcome nothing checks (issue 35, finding 4): a calculator recorded with `--param operand=12` (typed
"{operand}*34", Enter) whose last step's only check is a tooltip going away would replay another operand to exit 0
having verified nothing about the result. `flow validate` refuses such a bundle (exit 2, one line naming the step
and the ways to verify it) unless --allow-unverified; a check that depends on the param (an `expect` with the
param, a declared effect) makes it valid."""

from __future__ import annotations

import json

import pytest

from tests.support.bundles import minimal_flow, write_bundle
from tests.support.cli import run_flow

pytestmark = pytest.mark.timeout(120)


def calculator(tmp_path, enter_expect: list[dict], effect: dict | None = None) -> None:
    flow = minimal_flow(params={"operand": {"type": "string", "required": True, "example": "12"}})
    target = flow["steps"][0]["target"]
    enter = {"id": "enter", "action": "key", "keys": ["enter"], "expect": enter_expect}
    if effect is not None:
        enter |= {"consequential": True, "effect": effect}
    flow["steps"] = [
        {"id": "display", "action": "click", "target": target, "expect": [{"text_present": "Calculator"}]},
        {
            "id": "type",
            "action": "type",
            "text": "{operand}*34",
            "append": True,
            "expect": [{"text_present": "{operand}*34"}],
        },
        enter,
    ]
    write_bundle(tmp_path / "bundle", flow)


TOOLTIP_GONE = [{"text_absent": "Equals"}]


def test_an_outcome_only_a_tooltip_checks_is_refused_in_one_line(tmp_path):
    calculator(tmp_path, TOOLTIP_GONE)
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 2 and not r.stdout, (r.returncode, r.stdout, r.stderr)
    (line,) = r.stderr.strip().splitlines()
    assert "step 'enter' is the bundle's outcome" in line and "nothing that depends on its params verifies it" in line
    assert "{param}" in line and "effect:" in line and "--allow-unverified" in line, line
    assert "Traceback" not in r.stderr
    r = run_flow(["validate", "bundle", "--json"], tmp_path)
    assert r.returncode == 2 and "step 'enter'" in json.loads(r.stdout)["error"], r.stdout


def test_allow_unverified_accepts_it_with_the_warning(tmp_path):
    calculator(tmp_path, TOOLTIP_GONE)
    r = run_flow(["validate", "bundle", "--allow-unverified"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ok: t"), (r.stdout, r.stderr)
    assert "warning: step 'enter' is the bundle's outcome" in r.stderr and "(accepted: --allow-unverified)" in r.stderr
    assert run_flow(["validate", "bundle", "--allow-unverified", "--strict"], tmp_path).returncode == 2


@pytest.mark.parametrize(
    "expect,effect",
    [
        ([{"text_present": "{operand}", "region": [0, 0, 200, 40]}], None),  # the operand read back on the display
        (TOOLTIP_GONE, {"kind": "file", "path": "/tmp/calc.log", "contains": "{operand}"}),  # a declared effect
    ],
)
def test_a_check_that_depends_on_the_param_makes_it_valid(tmp_path, expect, effect):
    calculator(tmp_path, expect, effect)
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "outcome" not in r.stderr, r.stderr


def test_a_bundle_that_types_no_param_has_nothing_to_vary(tmp_path):
    calculator(tmp_path, TOOLTIP_GONE)
    flow = (tmp_path / "bundle" / "flow.yaml").read_text().replace("'{operand}*34'", "'12*34'")
    (tmp_path / "bundle" / "flow.yaml").write_text(flow)
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 0, r.stderr
