"""Number params and answers are finite numbers, read exactly; duplicates of a --param are refused."""

from __future__ import annotations

import math

import pytest

from openadapt_flow.bundle.models import Bundle
from openadapt_flow.bundle.params import bind_params, parse_number
from openadapt_flow.cli.replay import parse_params
from openadapt_flow.errors import ParamError, UsageError
from openadapt_flow.runtime.workflow.api import bind_args

pytestmark = pytest.mark.timeout(30)

NON_FINITE = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1e999",
    "-1e999",
    float("nan"),
    float("inf"),
    10**400,
    "1" + "0" * 400,
]


def amount_bundle() -> Bundle:
    return Bundle.model_validate(
        {
            "schema": "openadapt-flow/bundle@1",
            "name": "t",
            "screen": {"width": 10, "height": 10},
            "params": {"amount": {"type": "number", "required": True}},
            "steps": [{"id": "ask", "action": "ask_user", "question": "?"}],
        }
    )


@pytest.mark.parametrize("raw", NON_FINITE, ids=lambda r: repr(r)[:12])
def test_a_non_finite_number_param_is_refused(raw):
    with pytest.raises(ParamError, match="param amount: .* is not a valid number"):
        bind_params(amount_bundle(), {"amount": raw})


@pytest.mark.parametrize("raw", ["1_000", "0x10", "", "  ", "12,50", True, None, [1]], ids=repr)
def test_text_that_is_not_plain_decimal_is_not_a_number(raw):
    with pytest.raises(ParamError, match="is not a valid number"):
        bind_params(amount_bundle(), {"amount": raw})


@pytest.mark.parametrize(
    "raw, value",
    [
        ("12", 12),
        ("12.50", 12.5),
        (" 3 ", 3),
        ("2e3", 2000),
        (12.0, 12),
        ("-0.5", -0.5),
        (".5", 0.5),
        ("12345678901234567890", 12345678901234567890),
    ],
)
def test_finite_numbers_bind_as_before_and_long_integers_exactly(raw, value):
    got = bind_params(amount_bundle(), {"amount": raw}).values["amount"]
    assert got == value and type(got) is type(value)


def test_the_refusal_names_why_and_stays_one_short_line():
    with pytest.raises(ParamError) as e:
        bind_params(amount_bundle(), {"amount": "inf"})
    assert "must be finite" in str(e.value)
    with pytest.raises(ParamError) as e:
        bind_params(amount_bundle(), {"amount": "9" * 100_000})
    assert len(str(e.value)) < 200 and "\n" not in str(e.value)


def test_parse_number_never_returns_a_non_finite_value():
    for raw in NON_FINITE:
        with pytest.raises(ValueError):
            parse_number(raw)
    assert math.isfinite(parse_number("1.7976931348623157e308"))


def test_a_duplicate_param_flag_is_refused():
    with pytest.raises(ParamError, match="--param amount is given more than once"):
        parse_params(["amount=1", "vendor=x", "amount=2"], None)
    # the same flag overriding a params file's value is an override, not a duplicate
    assert parse_params(["amount=1"], None)[0] == {"amount": "1"}


def test_a_float_workflow_arg_is_finite():
    def wf(ctx, amount: float):  # noqa: ARG001
        return amount

    assert bind_args(wf, {"amount": "12.5"}, from_text=True) == {"amount": 12.5}
    with pytest.raises(UsageError, match="is not a valid float"):
        bind_args(wf, {"amount": "nan"}, from_text=True)
