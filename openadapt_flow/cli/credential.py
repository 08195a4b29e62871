"""`flow approve --secret-env VAR | --secret-file PATH`: the operator's enrolled credential, read without echoing it.

The CLI's voter is then the authenticated operator (spec §20), checked against the same store's operator book as the
console's login; without a credential the vote is the OS user's (its real uid), which counts for a quorum of 1 only.
A secret file is the operator's own: a regular file owned by this uid that no one else may read or write (0600 or
stricter), read up to MAX_SECRET bytes. An error names the variable or the file, never its content.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from openadapt_flow.errors import UsageError

MAX_SECRET = 1024  # bytes: a credential is 24 characters; anything longer is not one


def read_secret(secret_env: str | None, secret_file: Path | None) -> str | None:
    """The credential named by --secret-env or --secret-file (at most one), or None when neither is given."""
    if secret_env is not None and secret_file is not None:
        raise UsageError(f"--secret-env {secret_env} and --secret-file {secret_file}: give one of them, not both")
    if secret_env is not None:
        value = os.environ.get(secret_env)
        if not value:
            raise UsageError(f"--secret-env {secret_env}: the environment variable is unset or empty")
        return _checked(value, f"--secret-env {secret_env}")
    if secret_file is not None:
        return _checked(_read_file(secret_file), f"--secret-file {secret_file}")
    return None


def _read_file(path: Path) -> str:
    where = f"--secret-file {path}"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise UsageError(f"{where}: cannot open ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{where}: not a regular file")
        if sys.platform != "win32":
            if st.st_uid != os.getuid():
                raise UsageError(f"{where}: owned by uid {st.st_uid}, not by this user (uid {os.getuid()})")
            if st.st_mode & 0o077:
                raise UsageError(
                    f"{where}: mode {stat.S_IMODE(st.st_mode):04o} lets others read or write it; `chmod 600 {path}`"
                )
        data = os.read(fd, MAX_SECRET + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SECRET:
        raise UsageError(f"{where}: longer than {MAX_SECRET} bytes; not a credential")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not UTF-8 text") from None


def _checked(value: str, where: str) -> str:
    secret = value.strip()
    if not secret or "\n" in secret or len(secret) > MAX_SECRET or not secret.isprintable():
        raise UsageError(f"{where}: not a credential (one line of printable text, up to {MAX_SECRET} bytes)")
    return secret
