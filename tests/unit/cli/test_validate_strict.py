"""`flow validate` puts the warnings a person must act on first, and `--strict` fails on them (issue 37, item 2):
a bundle the recorder flagged (a consequential step with no effect, a step verified only weakly) is not a plain `ok`."""

from __future__ import annotations

import json

import pytest

from tests.support.bundles import minimal_flow, write_bundle
from tests.support.cli import run_flow

pytestmark = pytest.mark.timeout(120)


def flagged(tmp_path):
    flow = minimal_flow()
    target = flow["steps"][0]["target"]
    flow["steps"] = [
        {
            "id": "save",
            "action": "click",
            "target": target,
            "consequential": True,
            "expect": [{"text_present": "Saved"}],
        },
        {"id": "back", "action": "click", "target": target},  # nothing declared: weakly verified
    ]
    write_bundle(tmp_path / "bundle", flow)


def test_warnings_come_first_and_the_ok_line_counts_them(tmp_path):
    flagged(tmp_path)
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("warning: step 'save' is consequential but declares no effect"), r.stderr
    assert any("step 'back' (click) declares nothing to verify it" in line for line in lines), r.stderr
    assert r.stdout.startswith("ok: t") and "(2 warning(s) above; --strict fails on them)" in r.stdout, r.stdout


def test_strict_refuses_a_bundle_with_warnings_in_one_line_after_them(tmp_path):
    flagged(tmp_path)
    r = run_flow(["validate", "bundle", "--strict"], tmp_path)
    assert r.returncode == 2 and not r.stdout, (r.stdout, r.stderr)
    *warnings, last = r.stderr.strip().splitlines()
    assert len(warnings) == 2 and all(w.startswith("warning: ") for w in warnings)
    assert last == "error: bundle: 2 warning(s) above, refused under --strict" and "Traceback" not in r.stderr
    r = run_flow(["validate", "bundle", "--strict", "--json"], tmp_path)
    info = json.loads(r.stdout)
    assert r.returncode == 2 and info["ok"] is False and len(info["warnings"]) == 2


def test_strict_passes_a_bundle_with_nothing_to_warn_about(tmp_path):
    flow = minimal_flow()
    flow["steps"][0]["expect"] = [{"text_present": "Done"}]
    write_bundle(tmp_path / "bundle", flow)
    r = run_flow(["validate", "bundle", "--strict"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ok: t") and "warning" not in r.stdout + r.stderr, (
        r.stdout,
        r.stderr,
    )
