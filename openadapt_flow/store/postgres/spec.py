"""How a PostgreSQL store and its runs are named (spec §18), importable without the driver: every `flow` command
resolves `--store` and run references through here, and only a PostgreSQL store pays for importing psycopg.

A store spec is `postgresql://USER@HOST[:PORT]/DB[?options=…]` and never carries a password: it is pinned with the
run's config in every manifest (and a command line is visible to every user of the machine), so a spec with one is
refused with a one-line hint, and libpq's own PGPASSWORD / PGPASSFILE (~/.pgpass) supply it. A run of the store is
referred to as `pg:NAME`.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from openadapt_flow.errors import UsageError

SCHEMES = ("postgresql://", "postgres://")
PREFIX = "pg:"


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
        raise UsageError(
            f"--store {redact(spec)}: a password in the store URL would be recorded with every run's config; "
            f"give it in PGPASSWORD or a PGPASSFILE / ~/.pgpass entry instead"
        )
