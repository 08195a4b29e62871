"""`flow approve --secret-env VAR | --secret-file PATH` (issue 34, finding 5): the operator's credential is read
without ever echoing it; a file must be this uid's own, 0600 or stricter, bounded."""

from __future__ import annotations

import os

import pytest

from openadapt_flow.cli.credential import MAX_SECRET, read_secret
from openadapt_flow.errors import UsageError

pytestmark = pytest.mark.timeout(30)
SECRET = "s3cr3t-Credential_value"


def _file(tmp_path, text: str = SECRET + "\n", mode: int = 0o600):
    path = tmp_path / "cred"
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_a_credential_is_read_from_a_variable_or_a_0600_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ALICE_CRED", SECRET + "\n")
    assert read_secret("ALICE_CRED", None) == SECRET
    assert read_secret(None, _file(tmp_path)) == SECRET
    assert read_secret(None, None) is None


@pytest.mark.parametrize(
    "case",
    [
        "unset",
        "both",
        "group-readable",
        "world-writable",
        "symlink",
        "directory",
        "too long",
        "two lines",
        "control character",
    ],
)
def test_a_bad_credential_source_is_one_line_naming_it_never_its_content(tmp_path, monkeypatch, case):
    monkeypatch.delenv("NO_SUCH_CRED", raising=False)
    monkeypatch.setenv("ALICE_CRED", SECRET)
    env, path = None, None
    if case == "unset":
        env = "NO_SUCH_CRED"
    elif case == "both":
        env, path = "ALICE_CRED", _file(tmp_path)
    elif case in ("group-readable", "world-writable"):
        path = _file(tmp_path, mode=0o640 if case == "group-readable" else 0o602)
    elif case == "symlink":
        path = tmp_path / "link"
        path.symlink_to(_file(tmp_path))
    elif case == "directory":
        path = tmp_path
    elif case == "too long":
        path = _file(tmp_path, SECRET * (MAX_SECRET // len(SECRET) + 2))
    elif case == "two lines":
        path = _file(tmp_path, SECRET + "\n" + SECRET + "\n")
    else:
        path = _file(tmp_path, SECRET + "\x1b[2J")
    with pytest.raises(UsageError) as e:
        read_secret(env, path)
    message = str(e.value)
    assert "\n" not in message and SECRET not in message
    assert (env or str(path)) in message
