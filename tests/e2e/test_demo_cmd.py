import json

import pytest

from tests.support.cli import run_flow

pytestmark = pytest.mark.timeout(120)


def test_flow_demo_runs_the_whole_loop_and_opens_only_its_run_dir(tmp_path):
    r = run_flow(["demo", "--json"], tmp_path)
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert out["state"] == "COMPLETED"
    assert [row[1:] for row in out["rows"]] == [["ACME Corp", 1250.5]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["install.key", "runs"]  # the key is FLOW_KEY_FILE, set by the test
    assert (tmp_path / out["run_dir"] / "report.html").is_file()
