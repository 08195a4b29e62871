import pytest

from openadapt_flow.bundle.models import Bundle
from openadapt_flow.bundle.params import BoundParams, Interpolator, bind_params
from openadapt_flow.errors import ParamError

pytestmark = pytest.mark.timeout(30)


def bundle(params):
    return Bundle.model_validate(
        {
            "schema": "openadapt-flow/bundle@1",
            "name": "t",
            "screen": {"width": 10, "height": 10},
            "params": params,
            "steps": [{"id": "w", "action": "wait", "seconds": 0}],
        }
    )


def test_types_are_coerced_and_checked():
    b = bundle({"n": {"type": "number"}, "i": {"type": "integer"}, "f": {"type": "boolean"}, "s": {"type": "string"}})
    p = bind_params(b, {"n": "12.50", "i": "7", "f": "yes", "s": 5})
    assert p.values == {"n": 12.5, "i": 7, "f": True, "s": "5"}
    with pytest.raises(ParamError, match=r"param n: 'abc' is not a valid number"):
        bind_params(b, {"n": "abc"})
    with pytest.raises(ParamError, match="not a valid integer"):
        bind_params(b, {"i": "7.5"})


def test_required_unknown_and_defaults():
    b = bundle({"a": {"required": True}, "d": {"default": "x"}})
    with pytest.raises(ParamError, match="param 'a' is required"):
        bind_params(b, {})
    with pytest.raises(ParamError, match="not declared"):
        bind_params(b, {"a": "1", "zz": "2"})
    assert bind_params(b, {"a": "1"}).values == {"a": "1", "d": "x"}


def test_secrets_only_from_env_and_never_public():
    b = bundle({"pw": {"secret": True, "required": True}})
    with pytest.raises(ParamError, match="FLOW_SECRET_PW"):
        bind_params(b, {}, env={})
    with pytest.raises(ParamError, match="cannot be given by --param"):
        bind_params(b, {"pw": "hunter2"}, env={"FLOW_SECRET_PW": "x"}, from_flag=frozenset({"pw"}))
    p = bind_params(b, {}, env={"FLOW_SECRET_PW": "hunter2"})
    assert "hunter2" not in repr(p) and "hunter2" not in str(p.public())
    assert p.public() == {"pw": {"secret_env": "FLOW_SECRET_PW"}}
    interp = Interpolator(p)
    assert interp("x{secret:pw}y", allow_secret=True) == "xhunter2y"
    with pytest.raises(ParamError):
        interp("{secret:pw}")


def test_interpolation_escapes_run_id_and_step_refs():
    interp = Interpolator(
        BoundParams({"v": "ACME", "n": 1250.0}), run_id="run-1", step_results={"ask": {"answer": "post"}}
    )
    assert interp("{v} {{literal}} {n} {run_id} {steps.ask.answer}") == "ACME {literal} 1250 run-1 post"
    with pytest.raises(ParamError, match="has no value yet"):
        interp("{steps.other.answer}")
