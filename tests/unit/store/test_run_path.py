"""Where a new run directory may go (store/fs/runpath.py): bad input is exit 2, a parent that may not be written 5."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from openadapt_flow.errors import RunDirError
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.fs.runpath import check_run_path, creation_error

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    "name, why",
    [
        ("a\x00b", "control character (NUL"),
        ("a\nb", "newline"),
        ("x" * 4100, "longer than the 4095"),
        ("y" * 256, "longer than the 255"),
        ("file/run", "is not a directory"),
    ],
)
def test_a_path_that_cannot_hold_a_run_is_bad_input(tmp_path, name, why):
    (tmp_path / "file").write_text("")
    with pytest.raises(RunDirError, match=why.replace("(", r"\(")) as err:
        check_run_path(tmp_path / name)
    assert len(str(err.value)) < 600


@pytest.mark.parametrize("path", ["/proc/run", "/proc/self/run", "/sys/run"])
def test_a_pseudo_filesystem_is_refused(path):
    with pytest.raises(RunDirError, match="pseudo filesystem"):
        check_run_path(Path(path))


def test_a_fresh_place_on_disk_passes(tmp_path):
    check_run_path(tmp_path / "runs" / "deep" / "run")


def test_creation_errors_are_mapped():
    assert isinstance(creation_error(Path("r"), PermissionError(errno.EPERM, "Operation not permitted")), StorageFault)
    assert creation_error(Path("r"), OSError(errno.EROFS, "Read-only file system")).exit_code == 5
    too_long = creation_error(Path("r"), OSError(errno.ENAMETOOLONG, "File name too long"))
    assert isinstance(too_long, RunDirError) and too_long.exit_code == 2
