"""SPEC §11: limits and deny rules end the run BLOCKED with incident.json (exit 4) — before any input."""

from __future__ import annotations

import pytest

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.judge.policy import Budget, running_seconds
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.start.runref import open_ref
from tests.unit.runtime.test_durable import SAVE, App, env, go, start, store  # noqa: F401  (env, store are fixtures)
from tests.unit.runtime.test_engine import home

pytestmark = pytest.mark.timeout(60)


def policy_cfg(tmp_path, durable=True, store="filesystem", **policy):
    where = {"store": "memory:"} if store == "memory" else {}
    return DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "policy": policy,
            "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01, "durable": durable, **where},
        }
    )


def incident(run):
    return open_ref(run).read_incident()


def test_max_steps_blocks_with_an_incident(tmp_path, env, store):
    app = App(env)
    out = start(tmp_path, app, store=store, config=policy_cfg(tmp_path, store=store, max_steps=1))
    assert (out.state, out.exit_code) == ("BLOCKED", 4)
    inc = incident(out.run_dir)
    assert (inc["rule"], inc["observed"], inc["limit"], inc["step"]) == ("max_steps", 1, 1, "finish")
    assert open_ref(out.run_dir).state()["state"] == "BLOCKED"
    assert go(out.run_dir, app).exit_code == 4  # terminal: resume does nothing


def test_deny_rule_on_typed_text_blocks_before_input(tmp_path, env, store):
    app = App(env)
    steps = [{"id": "note", "action": "type", "text": "DROP TABLE {vendor}"}]
    out = start(
        tmp_path,
        app,
        steps=steps,
        store=store,
        config=policy_cfg(
            tmp_path,
            store=store,
            deny=[{"action": "type", "text_matches": "(?i)drop table", "reason": "no SQL in forms"}],
        ),
    )
    assert out.state == "BLOCKED" and incident(out.run_dir)["rule"] == "deny[0]"
    assert app.events == []


def test_require_effect_for_consequential(tmp_path, env, store):
    app = App(env)
    steps = [dict(SAVE, effect=None)]
    steps[0].pop("effect")
    out = start(
        tmp_path,
        app,
        steps=steps,
        store=store,
        config=policy_cfg(tmp_path, store=store, require_effect_for_consequential=True),
    )
    assert out.state == "BLOCKED" and incident(out.run_dir)["rule"] == "require_effect_for_consequential"
    assert app.events == []


def test_retry_budget_counts_dispatches_across_resumes(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store, config=policy_cfg(tmp_path, store=store, max_retries_per_step=0))
    assert out.state == "PAUSED"
    app.refute = False
    app.show(home())
    approve(out.run_dir, "continue", "alice")
    res = go(out.run_dir, app)
    assert res.state == "BLOCKED"
    inc = incident(out.run_dir)
    assert (inc["rule"], inc["observed"], inc["limit"]) == ("max_retries_per_step", 1, 0)
    assert sum(1 for e in app.events if e[0] == "click") == 1  # the retry never happened


def rec(t, ts, **data):
    return {"type": t, "ts": f"2026-11-29T10:00:{ts:06.3f}Z", "step": data.pop("step", None), "data": data}


def test_running_time_spans_resumes_and_excludes_paused_and_dead_time():
    records = [
        rec("run_started", 0),
        rec("step_started", 5),
        rec("paused", 10),  # 10 s
        rec("run_resumed", 30),
        rec("step_started", 33),  # died here: counts to its last record (3 s)
        rec("interrupted", 50, finalized=True),
        rec("run_resumed", 55),
        rec("run_finished", 57),  # 2 s
    ]
    assert running_seconds(records) == pytest.approx(15.0)


def test_model_budget_is_summed_from_the_journal():
    b = Budget(
        [rec("resolved", 1, model_calls=1), rec("llm_call", 2, model_calls=1), rec("resolved", 3, model_calls=0)]
    )
    assert b.model_calls == 2
