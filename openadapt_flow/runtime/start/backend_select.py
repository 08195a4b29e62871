"""Pick the backend from the config's `backend:` section and the CLI flags (flags win, field by field)."""

from __future__ import annotations

from dataclasses import dataclass

from openadapt_flow.backends.spec import BackendSpec, parse_url
from openadapt_flow.bundle.config import BackendConfig
from openadapt_flow.errors import UsageError

_RDP_ONLY = ("username", "domain", "ignore_certificate", "cert_fingerprint", "width", "height")
_KIND_FREE = ("connect_timeout_s", "io_timeout_s", "freshness_limit_s")  # bounds that hold whatever the backend kind


@dataclass(frozen=True)
class BackendFlags:
    """The backend flags of one command (`--backend`, `--url`, `--rdp-host`); each None when not given."""

    backend: str | None = None
    url: str | None = None
    rdp_host: str | None = None

    def __bool__(self) -> bool:
        return bool(self.backend or self.url or self.rdp_host)


def select_backend(
    cfg: BackendConfig, *, backend: str | None = None, url: str | None = None, rdp_host: str | None = None
) -> BackendSpec | None:
    """The backend spec a run uses (None when nothing names one). UsageError (exit 2) when contradictory."""
    if url and rdp_host:
        raise UsageError("give either --url or --rdp-host, not both")
    fields: dict[str, object] = {}
    if cfg.url:
        fields.update(_spec_fields(parse_url(cfg.url)))
    if cfg.kind:
        if fields and fields["kind"] != cfg.kind:
            raise UsageError(f"config backend: kind {cfg.kind!r} contradicts url {cfg.url!r}")
        fields["kind"] = cfg.kind
    for name in ("host", "port", "password_env", "display", "monitor", "connect_timeout_s", *_RDP_ONLY):
        val = getattr(cfg, name)
        if val is not None and val is not False:
            fields[name] = val
    return _finish(_apply_flags(fields, BackendFlags(backend, url, rdp_host)))


def merge_backend(base: BackendSpec | None, flags: BackendFlags) -> BackendSpec | None:
    """Flags over a recorded spec (a run's manifest), field by field: `--url` to another port keeps the password's
    env name, the RDP account and the certificate pin; a flag naming another kind starts that kind afresh."""
    if flags.url and flags.rdp_host:
        raise UsageError("give either --url or --rdp-host, not both")
    return _finish(_apply_flags(_spec_fields(base) if base is not None else {}, flags))


def _apply_flags(fields: dict[str, object], flags: BackendFlags) -> dict[str, object]:
    url, rdp_host, backend = flags.url, flags.rdp_host, flags.backend
    if url:
        flag = _spec_fields(parse_url(url))
        if flag["kind"] != fields.get("kind"):
            fields = {k: v for k, v in fields.items() if k in _KIND_FREE}
        fields.update(flag)
    if rdp_host:
        host, _, port = rdp_host.partition(":")
        if fields.get("kind") != "rdp":
            fields = {k: v for k, v in fields.items() if k in _KIND_FREE}
        fields.update(kind="rdp", host=host)
        if port:
            if not port.isdigit():
                raise UsageError(f"--rdp-host {rdp_host!r}: port must be a number")
            fields["port"] = int(port)
    if backend:
        if url and fields.get("kind") != backend:
            raise UsageError(f"--backend {backend} contradicts --url {url}")
        if backend != fields.get("kind"):
            fields = {k: v for k, v in fields.items() if k in (*_KIND_FREE, "display", "monitor")}
        fields["kind"] = backend
    return fields


def _finish(fields: dict[str, object]) -> BackendSpec | None:
    if "kind" not in fields:
        return None
    if fields["kind"] != "screen":
        fields.pop("display", None)
        fields.pop("monitor", None)
    if fields["kind"] != "rdp":
        for name in _RDP_ONLY:
            fields.pop(name, None)
    if fields["kind"] != "fixture":
        fields.pop("path", None)
    return BackendSpec.from_json(fields)  # its keys are BackendSpec's (kind among them)


def _spec_fields(spec: BackendSpec) -> dict[str, object]:
    defaults = BackendSpec.__dataclass_fields__
    return {k: v for k, v in spec.to_json().items() if v != defaults[k].default or k == "kind"}
