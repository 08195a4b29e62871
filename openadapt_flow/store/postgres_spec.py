"""How a PostgreSQL store and its runs are named (spec §18), importable without the driver: every `flow` command
resolves `--store` and run references through here, and only a PostgreSQL store pays for importing psycopg.

A store spec is `postgresql://USER@HOST[:PORT]/DB[?options=…]` and never carries a password: it is pinned with the
run's config in every manifest (and a command line is visible to every user of the machine), so a spec with one is
refused with a one-line hint, and libpq's own PGPASSWORD / PGPASSFILE (~/.pgpass) supply it. A run of the store is
referred to as `pg:NAME`.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from openadapt_flow.errors import RefusedError, UsageError

SCHEMES = ("postgresql://", "postgres://")
PREFIX = "pg:"
# The file `flow export` writes into the run directory it makes: the stored run it copies (`pg:NAME --store SPEC`).
# Plain text, not JSON (no §7 run record): a marker that the directory is a copy to read.
EXPORT_MARK = "EXPORTED_FROM"


def is_postgres(spec: str) -> bool:
    return spec.startswith(SCHEMES)


def redact(spec: str) -> str:
    """The spec with a password (in the netloc or a `password=` parameter) removed: safe to show."""
    parts = urlsplit(spec)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def check_spec(spec: str) -> None:
    """Refuse a spec with a password in it (UsageError, exit 2), naming it without the password."""
    if spec != redact(spec):
        raise UsageError(f"--store {redact(spec)}: a password in the store URL would be recorded with every run's config; "
                         f"give it in PGPASSWORD or a PGPASSFILE / ~/.pgpass entry instead")


def refuse_exported(run_dir: Path) -> None:
    """An exported run directory is a copy of a run that lives on in its store: resuming or deciding on it would run
    its remaining steps in two places. Refused (exit 6), naming the store; reading it (status, report) is fine."""
    mark = run_dir / EXPORT_MARK
    if mark.is_file():
        origin = mark.read_text(encoding="utf-8", errors="replace").strip()
        raise RefusedError(f"{run_dir}: an export of {origin} (a copy to read); decide on and resume the run in its store "
                           f"({origin}), never in the copy; refusing")
