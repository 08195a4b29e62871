"""Which journal records are fsync'd, durable and not (spec §5): `action_dispatched` always, before the input; a
durable run's `step_verified` too (resume continues from it); a non-durable run's `step_verified` rides on the next
fsync (the next `action_dispatched` or the stop), since nothing is sent in between and it is never resumed."""

from __future__ import annotations

import pytest

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store.fs.journal import Journal
from tests.unit.runtime.test_engine import POST, done, home, key_env, make_bundle  # noqa: F401 - key_env is a fixture

pytestmark = pytest.mark.timeout(90)


def _syncs(tmp_path, monkeypatch, durable: bool) -> list[tuple[str, bool]]:
    seen: list[tuple[str, bool]] = []
    real = Journal._persist

    def spy(self, rec, line, sync):
        seen.append((rec["type"], sync))
        return real(self, rec, line, sync)

    monkeypatch.setattr(Journal, "_persist", spy)
    again = {
        "id": "confirm",
        "intent": "Confirm",
        "action": "key",
        "keys": ["enter"],
        "expect": [{"text_present": "Posted"}],
    }
    root = make_bundle(tmp_path / f"b{durable}", [POST, again])
    app = FakeBackend(home(), lambda fake, ev: fake.set_frame(done()) if ev[0] == "click" else None)
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01}}
    )
    out = replay(
        ReplayRequest(
            bundle=root,
            params={"vendor": "ACME"},
            backend=BackendSpec(kind="fake"),
            config=cfg,
            run_dir=tmp_path / f"run{durable}",
            durable=durable,
        ),
        backend_factory=lambda s: app,
    )
    assert out.state == "COMPLETED", out.message
    return seen


def test_a_durable_runs_verified_steps_are_fsynced_each(tmp_path, monkeypatch):
    seen = _syncs(tmp_path, monkeypatch, durable=True)
    assert [s for t, s in seen if t == "step_verified"] == [True, True]
    assert all(s for t, s in seen if t == "action_dispatched")


def test_a_non_durable_runs_verified_step_is_made_durable_by_the_next_fsync_before_any_input(tmp_path, monkeypatch):
    seen = _syncs(tmp_path, monkeypatch, durable=False)
    assert [s for t, s in seen if t == "step_verified"] == [False, False]
    for i, (t, _) in enumerate(seen):
        if t == "step_verified":  # the next fsync'd record comes before any later input (or is the stop)
            t_next = next(t2 for t2, s2 in seen[i + 1 :] if s2)
            assert t_next in ("action_dispatched", "run_finished")
            assert "action_sent" not in [t2 for t2, _ in seen[i + 1 : seen.index((t_next, True), i + 1)]]
