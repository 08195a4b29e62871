"""The batch part's pieces that need no desktop: the items, the recorded inputs the blind script sends, and how the
target is judged (structure only: nothing here is about how fast anything is)."""

from __future__ import annotations

from openadapt_flow.bench import batch


def test_items_are_distinct_and_the_blind_script_sends_the_bundles_recorded_inputs() -> None:
    work = batch.items(12)
    assert len({(i["vendor"], i["amount"]) for i in work}) == 12
    inputs = batch.recorded_inputs()
    assert [a for a, _, _ in inputs] == ["click", "type", "type", "click", "click"]
    assert inputs[0][1] == (130, 112) and inputs[1][2] == "{vendor}"  # region (40, 90) + point (90, 22)


def test_the_target_needs_the_ratio_and_every_item_exact() -> None:
    def res(ratio: float, exact: int) -> dict[str, object]:
        return {
            "batch": {
                "items": 50,
                "ratio": ratio,
                "blind": {"wall_s": 20.0},
                "verified": {"wall_s": 20.0 * ratio, "exact": exact, "rows": exact},
            }
        }

    assert batch.goals(res(1.2, 50))[0]["met"] is True
    assert batch.goals(res(1.2, 49))[0]["met"] is False  # fast but one item wrong: not met
    assert batch.goals(res(1.5, 50))[0]["met"] is False
    assert batch.goals({})[0]["met"] is None
