"""Reading a file a user names: bounded, and its errors never echo it (issue 34); params refused at bind time."""

from __future__ import annotations

import pytest
import yaml

from openadapt_flow.bundle.models import Bundle
from openadapt_flow.bundle.params import MAX_PARAM_CHARS, bind_params, read_params_file
from openadapt_flow.bundle.userfile import name_of, read_user_text, yaml_problem
from openadapt_flow.errors import ParamError, UsageError

pytestmark = pytest.mark.timeout(30)
LEAK = "SECRET-q7Zx"


def test_a_read_stops_at_its_limit_and_names_it(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a" * 2049)
    with pytest.raises(UsageError, match=r"big.yaml: the params file is larger than its 2 KiB limit"):
        read_user_text(big, 2048, UsageError, "params file")
    big.write_bytes(b"a" * 2048)
    assert len(read_user_text(big, 2048, UsageError)) == 2048  # the limit itself is allowed


@pytest.mark.parametrize(
    "data, expect",
    [
        (b"a: 1\nb: \x00" + LEAK.encode(), r"x.yaml:2: a NUL byte \(at byte 8\)"),
        (b"a: 1\n\xff" + LEAK.encode(), r"x.yaml:2: not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_text_is_named_by_line_not_shown(tmp_path, data, expect):
    (tmp_path / "x.yaml").write_bytes(data)
    with pytest.raises(UsageError, match=expect) as err:
        read_user_text(tmp_path / "x.yaml", 1024, UsageError)
    assert LEAK not in str(err.value)


@pytest.mark.parametrize("text", [f"a: *{LEAK}", f"a: !!python/name:{LEAK} x", f"a: [1, 2\n{LEAK}: 3"])
def test_a_yaml_problem_keeps_its_line_and_drops_the_files_text(text):
    with pytest.raises(yaml.YAMLError) as err:
        yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    line, problem = yaml_problem(err.value)
    assert line is not None and "column" in problem and LEAK not in problem


def test_the_expected_syntax_stays_in_a_yaml_problem():
    with pytest.raises(yaml.YAMLError) as err:
        yaml.load("a: [1, 2\nb: 3", Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert "',' or ']'" in yaml_problem(err.value)[1]


def test_only_a_name_is_named():
    assert name_of("vendor") == "'vendor'"
    assert LEAK not in name_of(LEAK) and "$6$" not in name_of("root:$6$abc:1")


def test_a_params_file_key_that_is_no_name_is_not_echoed(tmp_path):
    f = tmp_path / "shadow"
    f.write_text(f"vendor: ACME\nroot:$6${LEAK}:20228:0:99999:7:::\n")
    with pytest.raises(ParamError) as err:
        read_params_file(f)
    assert str(err.value).startswith(f"{f}:2: a key is not a param name") and LEAK not in str(err.value)


def _bundle() -> Bundle:
    return Bundle.model_validate(
        {
            "schema": "openadapt-flow/bundle@1",
            "name": "b",
            "screen": {"width": 10, "height": 10},
            "params": {"vendor": {"type": "string"}, "pw": {"type": "string", "secret": True}},
            "steps": [{"id": "s", "action": "tool", "call": "json:dumps"}],
        }
    )


@pytest.mark.parametrize(
    "value, what",
    [
        ("AC\x00ME", "NUL at position 3"),
        ("\x1b[2J", "ESC at position 1"),
        ("a\x7f", "DEL"),
        ("a\x85", "U+0085"),
        ("a\udcff", "undecodable bytes"),
        ("A" * (MAX_PARAM_CHARS + 1), f"more than the {MAX_PARAM_CHARS}"),
    ],
)
def test_a_value_no_field_can_take_is_refused_at_bind_time(value, what):
    with pytest.raises(ParamError, match="param vendor") as err:
        bind_params(_bundle(), {"vendor": value}, env={})
    assert what in str(err.value) and len(str(err.value)) < 200


def test_typed_control_keys_and_the_longest_value_bind():
    for ok in ("line one\nline two", "a\tb", "typo\bo", "A" * MAX_PARAM_CHARS, "Zürich ✓"):
        assert bind_params(_bundle(), {"vendor": ok}, env={}).values["vendor"] == ok


def test_a_secret_is_checked_the_same_and_never_shown():
    with pytest.raises(
        ParamError, match=r"param pw \(FLOW_SECRET_PW\): its value holds the control character ESC"
    ) as err:
        bind_params(_bundle(), {}, env={"FLOW_SECRET_PW": "hun\x1bter2"})
    assert "hun" not in str(err.value)


def test_a_nul_in_an_effect_path_is_refused_when_the_bundle_loads():
    """It loaded before, and a tool step declaring it completed as if its file had been read."""
    from pydantic import ValidationError

    from openadapt_flow.bundle.effect import Effect

    with pytest.raises(ValidationError, match=r"path holds a control character \(NUL at position 7\)"):
        Effect.model_validate({"kind": "file", "path": "/tmp/x\x00y", "expect": {"equals": 1}})
