"""A step's record shapes are defined once (records/stepdoc.py): the record models derived from them, or whose
`to_json()` gives them, say the same keys in the same order; the screen facts a step keeps are the bytes the
postcondition model's dump gave before they were typed."""

import json
from types import SimpleNamespace
from typing import get_type_hints

import pytest

from openadapt_flow.bundle.models import Postcondition, Step
from openadapt_flow.records import stepdoc
from openadapt_flow.records.models import DATA_MODELS, EffectVerdict, Reading
from openadapt_flow.runtime.act.step import screen_facts

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("doc", "model"),
    [
        (stepdoc.VerifiedData, DATA_MODELS["step_verified"]),
        (stepdoc.SkippedData, DATA_MODELS["step_skipped"]),
        (stepdoc.ReadingDoc, Reading),
        (stepdoc.EffectDoc, EffectVerdict),
    ],
)
def test_the_record_models_have_the_typed_keys_in_their_order(doc, model):
    assert list(get_type_hints(doc)) == list(model.model_fields)


def test_to_json_gives_the_typed_shapes():
    seen = Reading(True, 3)
    failed = Reading(False, error="down")
    assert seen.to_json() == {"ok": True, "value": 3} and list(failed.to_json()) == ["ok", "value", "error"]
    verdict = EffectVerdict(verdict="CONFIRMED", baseline=seen, observed=Reading(True, 4), reads=2, waited_s=0.12345)
    assert list(verdict.to_json()) == [k for k in get_type_hints(stepdoc.EffectDoc) if k != "changes"]
    whole = EffectVerdict(verdict="ABSENT", baseline=seen, observed=seen, reads=1, waited_s=0.1, changes=[])
    assert list(whole.to_json()) == list(get_type_hints(stepdoc.EffectDoc))  # a whole-change verdict lists its rows
    assert DATA_MODELS["effect_verified"].model_validate(verdict.to_json()).model_dump()["waited_s"] == 0.123


def _old_facts(ctx, step):  # how screen_facts built them before they were typed
    return [
        {
            k: (ctx.interp(v) if k in ("text_present", "text_absent") else v)
            for k, v in ctx.checks.anchored(pc, None).model_dump(exclude_none=True, mode="json").items()
        }
        for pc in step.expect
        if pc.region_changed is None
    ]


def test_screen_facts_keep_the_bytes_they_had():
    expect = [
        Postcondition(text_present="Saved {x}", region=(1, 2, 3, 4), relative_to="target"),
        Postcondition(text_absent="Error"),
        Postcondition(template_present="ok.png", region=(5, 6, 7, 8)),
        Postcondition(region_changed=(0, 0, 9, 9), changed_min=0.5),
    ]
    step = Step.model_construct(id="s", action="click", expect=expect)
    ctx = SimpleNamespace(
        interp=lambda s: s.replace("{x}", "42"), checks=SimpleNamespace(anchored=lambda pc, anchor: pc)
    )
    facts = screen_facts(ctx, step)
    assert json.dumps(facts) == json.dumps(_old_facts(ctx, step))
    assert len(facts) == 3 and facts[0]["text_present"] == "Saved 42"
