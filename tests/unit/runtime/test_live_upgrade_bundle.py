"""`flow resume --upgrade-bundle PATH` (SPEC §2): a new bundle version is adopted only when every step the run already
did (up to the last checkpoint, and any dispatched one) is unchanged; the upgrade is journaled and snapshot in the
run; anything else is refused (exit 6) and leaves the run as it was."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import resume
from openadapt_flow.runtime.start.runref import open_ref
from tests.unit.runtime.test_durable import AFTER, SAVE, App, env, home, rows, start, store  # noqa: F401 (env, store: fixtures)
from tests.unit.runtime.test_engine import make_bundle

pytestmark = pytest.mark.timeout(120)


def _version(tmp_path, name, steps):
    return make_bundle(tmp_path / name, steps)


def records(run):
    return open_ref(run).read_records()


def _paused(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(
        tmp_path, app, store=store
    )  # the post step was dispatched and its write refuted: PAUSED, nothing checkpointed
    assert out.state == "PAUSED"
    app.refute = False
    app.show(home())
    approve(out.run_dir, "continue", "alice")
    return app, out.run_dir


def test_a_version_that_changes_only_steps_not_yet_done_is_adopted_and_journaled(tmp_path, env, store):
    app, run_dir = _paused(tmp_path, env, store)
    later = dict(AFTER, keys=["enter"])
    v2 = _version(tmp_path, "v2", [SAVE, later])
    res = resume(run_dir, backend_factory=lambda spec: app.connect(), upgrade_bundle=v2)
    assert res.state == "COMPLETED", res.message
    assert rows(env) == 1
    keys = [e for e in app.events if e[0] == "press"]
    assert keys and all("escape" not in json.dumps(e) for e in keys) and any("enter" in json.dumps(e) for e in keys)
    up = [r for r in records(run_dir) if r["type"] == "bundle_upgraded"]
    assert len(up) == 1 and up[0]["data"]["bundle_dir"] == "upgrades/1"
    assert yaml.safe_load(open_ref(run_dir).get_artifact("upgrades/1/flow.yaml"))["steps"][1]["keys"] == ["enter"]


@pytest.mark.parametrize("change", ["intent", "template", "renamed"])
def test_a_version_that_changes_a_step_already_done_is_refused(tmp_path, env, store, change):
    app, run_dir = _paused(tmp_path, env, store)
    post = copy.deepcopy(SAVE)
    if change == "intent":
        post["intent"] = "Post it twice"
    elif change == "renamed":
        post["id"] = "post-invoice"
    v2 = _version(tmp_path, "v2", [post, AFTER])
    if change == "template":
        (v2 / "templates/post.png").write_bytes((v2 / "templates/post.png").read_bytes() + b"\0")
    before = records(run_dir)
    with pytest.raises(RefusedError, match="unchanged"):
        resume(run_dir, backend_factory=lambda spec: app.connect(), upgrade_bundle=v2)
    assert RefusedError.exit_code == 6
    assert records(run_dir) == before and open_ref(run_dir).list_artifacts("upgrades") == []
    assert rows(env) == 0
    res = resume(run_dir, backend_factory=lambda spec: app.connect())  # the run keeps its bundle and goes on
    assert res.state == "COMPLETED" and rows(env) == 1
