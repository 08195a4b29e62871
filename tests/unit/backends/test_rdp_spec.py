"""rdp specs: URLs, flags and config build them; the manifest round-trips them; none holds a secret."""

from __future__ import annotations

import json

import pytest

from openadapt_flow.backends.spec import BackendSpec, parse_url
from openadapt_flow.bundle.config import BackendConfig
from openadapt_flow.errors import UsageError
from openadapt_flow.runtime.start.backend_select import select_backend

pytestmark = pytest.mark.timeout(30)

FP = ":".join(["a1"] * 32)


def test_rdp_urls_and_default_port() -> None:
    spec = parse_url("rdp://WinBox")
    assert (spec.kind, spec.host, spec.port, spec.effective_port, spec.url) == (
        "rdp",
        "winbox",
        None,
        3389,
        "rdp://winbox:3389",
    )
    assert parse_url("rdp://[::1]:3390").url == "rdp://[::1]:3390"
    with pytest.raises(UsageError) as err:
        parse_url("rdp://admin:s3cret@winbox")
    assert "s3cret" not in str(err.value)


def test_rdp_fields_are_validated_and_the_fingerprint_normalised() -> None:
    spec = BackendSpec(kind="rdp", host="h", username="alice", cert_fingerprint="SHA256:" + FP.upper().replace(":", ""))
    assert spec.cert_fingerprint == FP
    with pytest.raises(UsageError, match="either ignore_certificate or cert_fingerprint"):
        BackendSpec(kind="rdp", host="h", ignore_certificate=True, cert_fingerprint=FP)
    with pytest.raises(UsageError, match="cert_fingerprint"):
        BackendSpec(kind="rdp", host="h", cert_fingerprint="12:34")
    with pytest.raises(UsageError, match="username"):
        BackendSpec(kind="rdp", host="h", username="alice\nbob")
    with pytest.raises(UsageError, match="width"):
        BackendSpec(kind="rdp", host="h", width=10)


def test_manifest_round_trip_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_RDP_PW", "hunter2-secret")
    spec = BackendSpec(
        kind="rdp",
        host="winbox",
        port=3390,
        username="alice",
        domain="CORP",
        password_env="LEDGER_RDP_PW",
        cert_fingerprint=FP,
        width=1280,
        height=800,
    )
    data = json.loads(json.dumps(spec.to_json()))
    assert "hunter2-secret" not in json.dumps(data)
    assert data["password_env"] == "LEDGER_RDP_PW" and data["username"] == "alice"
    assert BackendSpec.from_json(data) == spec  # `flow resume` rebuilds the backend from this
    assert BackendSpec.from_json(
        BackendSpec(kind="rdp", host="w", ignore_certificate=True).to_json()
    ).ignore_certificate


def test_config_and_flags_build_the_rdp_spec() -> None:
    cfg = BackendConfig(
        kind="rdp",
        host="winbox",
        username="alice",
        domain="CORP",
        password_env="PW",
        cert_fingerprint=FP,
        width=1280,
        height=800,
    )
    spec = select_backend(cfg)
    assert spec is not None
    assert (spec.kind, spec.host, spec.username, spec.domain, spec.password_env) == (
        "rdp",
        "winbox",
        "alice",
        "CORP",
        "PW",
    )
    assert (spec.cert_fingerprint, spec.width, spec.height, spec.ignore_certificate) == (FP, 1280, 800, False)
    # --url / --rdp-host override the address field by field and keep the account and certificate policy
    spec = select_backend(cfg, url="rdp://127.0.0.1:3391")
    assert spec is not None and (spec.host, spec.port, spec.username, spec.cert_fingerprint) == (
        "127.0.0.1",
        3391,
        "alice",
        FP,
    )
    spec = select_backend(cfg, rdp_host="otherbox:3392")
    assert spec is not None and (spec.host, spec.port, spec.username) == ("otherbox", 3392, "alice")
    spec = select_backend(BackendConfig(kind="rdp", host="h", ignore_certificate=True))
    assert spec is not None and spec.ignore_certificate
    # another kind on the command line drops the rdp-only fields
    spec = select_backend(cfg, url="vnc://127.0.0.1:5901")
    assert spec is not None and spec.kind == "vnc" and spec.username is None and spec.cert_fingerprint is None
