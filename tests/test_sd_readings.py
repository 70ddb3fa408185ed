"""The sd.* claims' readings and scopes (issue 24): each has one quoted principal reading; the
formulas stated under Leviathan et al.'s i.i.d. assumption (Eq. 1, Thm 3.8) are scoped to
constant-acceptance (order-0) pairs, and their shrinkers stay there; losslessness and the acceptance
rate speak about any pair."""
from __future__ import annotations

import pytest

from spectheory.sims.claims import sd
from spectheory.sims.registry import REGISTRY, Context, load_all
from spectheory import instances as inst
from spectheory.rules.sd import BROKEN_NO_BONUS

load_all()

SD = ("sd.lossless", "sd.acceptance", "sd.expected_tokens", "sd.walltime")


@pytest.mark.parametrize("cid", SD)
def test_quoted_principal_reading_and_scope(cid):
    c = REGISTRY[cid]
    assert c.principal.quote.startswith("Leviathan et al. §") and "'" in c.principal.quote
    assert c.principal.why and c.scope is not None and c.scope.statement
    assert all(r.role == "principal" or (r.kind and r.why) for r in c.readings)


def test_expected_tokens_readings_split_the_parts():
    c = REGISTRY["sd.expected_tokens"]
    assert c.principal.parts == ("iid",)
    assert {r.id: r.kind for r in c.readings if r.role != "principal"} == {"markov-dp": "another-instance",
                                                                           "formula-beyond-iid": "literal"}


@pytest.mark.parametrize("cid", ["sd.expected_tokens", "sd.walltime"])
def test_iid_formulas_are_scoped_to_constant_acceptance(cid):
    scope = REGISTRY[cid].scope
    assert scope.why_out(inst.get("iid-V4-random"), gamma=2) is None
    assert "order-0" in scope.why_out(inst.get("markov1-V3-mix0.4"), gamma=2)


@pytest.mark.parametrize("cid", ["sd.lossless", "sd.acceptance"])
def test_any_pair_is_in_scope(cid):
    scope = REGISTRY[cid].scope
    for name in ("iid-V3-disjoint", "iid-V1", "markov1-V4-topk2", "iid-V3-equal"):
        assert scope.why_out(inst.get(name)) is None


def test_shrinker_stays_in_scope():
    """A shrinker given an order-1 grid finds nothing: every candidate is outside the scope."""
    shrink = sd.shrinker(sd.expected_tokens_iid, orders=(1,), part="iid", scope=sd._constant_acceptance,
                         V_values=(2,), gammas=(1,), seeds=range(2))
    ctx = Context(seed=0, quick=True, claim_id="sd.expected_tokens", subject_name="subject",
                  parts=REGISTRY["sd.expected_tokens"].parts)
    assert shrink(ctx, BROKEN_NO_BONUS) is None
    found = REGISTRY["sd.expected_tokens"].shrink(ctx, BROKEN_NO_BONUS)  # order 0: the control is caught
    assert found is not None and found["order"] == 0
