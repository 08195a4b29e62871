"""`flow resume` backend overrides merge field by field onto the run's recorded backend (or `--config`'s): a new
address never drops the password's env name, the RDP account or the certificate pin (SPEC §3, §9)."""

from __future__ import annotations

import pytest

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import BackendConfig
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.backend_select import BackendFlags, merge_backend
from openadapt_flow.runtime.start.launch import ReplayRequest
from tests.unit.runtime.test_durable import AFTER, SAVE, App, cfg, env  # noqa: F401  (env: keys, ledger, cwd)
from tests.unit.runtime.test_engine import make_bundle

pytestmark = pytest.mark.timeout(120)
PIN = "ab" * 32
RDP = BackendSpec(
    kind="rdp",
    host="desk-1",
    port=3389,
    password_env="DESK_PW",
    username="bot",
    domain="corp",
    cert_fingerprint=PIN,
    width=1280,
    height=800,
)


def _paused_run(tmp_path, app, spec: BackendSpec):
    make_bundle(tmp_path / "b", [SAVE, AFTER])
    req = ReplayRequest(
        bundle=tmp_path / "b", params={"vendor": "ACME"}, backend=spec, config=cfg(tmp_path), run_dir=tmp_path / "run"
    )
    out = replay(req, backend_factory=lambda s: app.connect())
    assert out.state == "PAUSED"
    approve(out.run_dir, "continue", "ops")
    return out.run_dir


def _resumed_with(run_dir, app, **kw) -> BackendSpec:
    seen: list[BackendSpec] = []

    def factory(spec: BackendSpec):
        seen.append(spec)
        return app.connect()

    resume(run_dir, backend_factory=factory, **kw)
    return seen[0]


def test_resume_with_a_new_rdp_host_keeps_the_account_password_env_and_pin(tmp_path, env):
    app = App(env, refute=True)
    run_dir = _paused_run(tmp_path, app, RDP)
    app.refute = False
    spec = _resumed_with(run_dir, app, backend_flags=BackendFlags(rdp_host="desk-2:3390"))
    assert (spec.kind, spec.host, spec.port) == ("rdp", "desk-2", 3390)
    assert (spec.password_env, spec.username, spec.domain, spec.cert_fingerprint, spec.width) == (
        "DESK_PW",
        "bot",
        "corp",
        RDP.cert_fingerprint,
        1280,
    )


def test_resume_with_config_merges_the_flags_onto_its_backend_section(tmp_path, env):
    app = App(env, refute=True)
    run_dir = _paused_run(tmp_path, app, RDP)
    app.refute = False
    config = BackendConfig(kind="rdp", host="desk-9", password_env="OTHER_PW", username="svc", ignore_certificate=True)
    spec = _resumed_with(run_dir, app, backend_flags=BackendFlags(url="rdp://desk-3"), backend_config=config)
    assert (spec.host, spec.password_env, spec.username, spec.ignore_certificate, spec.cert_fingerprint) == (
        "desk-3",
        "OTHER_PW",
        "svc",
        True,
        None,
    )


@pytest.mark.parametrize(
    "recorded,flags,kept",
    [
        (
            BackendSpec(kind="vnc", host="a", port=5901, password_env="VNC_PW"),
            BackendFlags(url="vnc://b:5902"),
            {"host": "b", "port": 5902, "password_env": "VNC_PW"},
        ),
        (
            RDP,
            BackendFlags(url="rdp://desk-4"),
            {"host": "desk-4", "username": "bot", "cert_fingerprint": RDP.cert_fingerprint},
        ),
        (
            RDP,
            BackendFlags(url="vnc://v:5900"),
            {"kind": "vnc", "host": "v", "password_env": None, "username": None},
        ),  # another kind: afresh
        (
            BackendSpec(kind="vnc", host="a", connect_timeout_s=42.0),
            BackendFlags(backend="screen"),
            {"kind": "screen", "connect_timeout_s": 42.0},
        ),
    ],
)
def test_flags_override_a_recorded_backend_field_by_field(recorded, flags, kept):
    spec = merge_backend(recorded, flags)
    assert spec is not None
    assert {k: getattr(spec, k) for k in kept} == kept


def test_resume_takes_a_config_and_an_upgrade_bundle(tmp_path):
    from tests.support.cli import run_flow

    out = run_flow(["resume", "--help"], tmp_path)
    assert out.returncode == 0 and "--config" in out.stdout and "--upgrade-bundle" in out.stdout
    bad = tmp_path / "deploy.yaml"
    bad.write_text("schema: openadapt-flow/config@1\nbackend: {kind: vnc, colour: red}\n")
    (tmp_path / "run").mkdir()
    r = run_flow(["resume", str(tmp_path / "run"), "--config", str(bad)], tmp_path)
    assert r.returncode == 2 and "colour" in r.stderr and "Traceback" not in r.stderr
