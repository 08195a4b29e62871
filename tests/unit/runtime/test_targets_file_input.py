"""targets.yaml (`flow worker --targets`) is read as every user file is: bounded, its errors never echo it."""

from __future__ import annotations

import pytest

from openadapt_flow.errors import ConfigError
from openadapt_flow.runtime.fleet.targets import load_targets

pytestmark = pytest.mark.timeout(30)


def test_a_targets_file_error_names_the_line_not_the_text(tmp_path):
    f = tmp_path / "targets.yaml"
    f.write_text("schema: openadapt-flow/targets@1\ntargets: *SECRET-q7Zx\n")  # its first line was the message before
    with pytest.raises(ConfigError) as err:
        load_targets(f)
    assert str(err.value).startswith(f"{f}:2: invalid YAML") and "SECRET" not in str(err.value)


def test_a_targets_file_read_is_bounded(tmp_path):
    big = tmp_path / "targets.yaml"
    with open(big, "wb") as f:
        f.truncate(2 * 1024 * 1024)  # 2 MiB of NULs (a regular file: a regression reads it, not a machine's memory)
    with pytest.raises(ConfigError, match="larger than its 1024 KiB limit"):
        load_targets(big)
