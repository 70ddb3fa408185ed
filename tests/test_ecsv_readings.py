"""The ecsv.* readings as data (issue 24): one principal reading per claim, quoted from the paper;
every scope guard with an instance inside and one outside; the ties; every symbolic proof, and a
wrong identity each proof rejects. Fast: no runner."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from spectheory.sims.claims import ecsv as C
from spectheory.sims.registry import load_all

PRINCIPAL = {"ecsv.map": ("printed", ("printed",)),
             "ecsv.majority": ("majority-bound", ("s1-share", "s1-prob", "s2-independent", "drafting")),
             "ecsv.prefix_length": ("per-position", ("independent", "monotone", "monotone-dependent",
                                                     "markov-marginal")),
             "ecsv.budget": ("per-output-token", ("per-step", "per-token-parallel", "per-token-sequential",
                                                  "every-method")),
             "ecsv.falsification": ("standard-final-check", ("rule1-rs", "rule2-rs", "rule3-rs"))}


@pytest.fixture(scope="module")
def claims():
    reg = load_all()
    return {cid: reg[cid] for cid in PRINCIPAL}


def test_principal_readings_are_quoted(claims):
    for cid, (rid, parts) in PRINCIPAL.items():
        c = claims[cid]
        assert c.principal.id == rid and c.principal.parts == parts, cid
        assert c.principal.quote.count("'") >= 2 and c.principal.why, cid
        assert c.scope is not None and c.scope.statement, cid
        for r in c.readings:
            assert r.why, (cid, r.id)
            if r.role != "principal":
                assert r.kind, (cid, r.id)
    assert claims["ecsv.majority"].reading_of("s2-correlated").kind == "disclaimed"
    assert "Correlated errors" in claims["ecsv.majority"].reading_of("s2-correlated").why
    assert claims["ecsv.falsification"].reading_of("rule1").id == "matching"
    assert "not an exact sample" in claims["ecsv.falsification"].principal.quote


def test_choices_are_named(claims):
    vm = claims["ecsv.falsification"].choice("vote_margin")
    assert vm.invented and vm.default in vm.values
    lam = claims["ecsv.majority"].choice("soft_lambda")
    assert not lam.invented and lam.default in lam.values and min(lam.values) > 0


# --- scope guards: an instance inside, one outside ----------------------------------------------------

def test_map_scope():
    g = C._map_scope
    assert g(None, V=2, eps=[0.1, 0.2], prior=[0.7, 0.3]) is None
    assert "one branch" in g(None, V=2, eps=[0.3], prior=[0.8, 0.2])
    assert "full support" in g(None, V=2, eps=[0.1, 0.2], prior=[1.0, 0.0])
    assert "outside (0, 1)" in g(None, V=2, eps=[0.0, 0.2])


def test_majority_scope_channel_and_drafting():
    g = C.MAJORITY_SCOPE.why_out
    assert g(None, eps=[0.1, 0.3]) is None
    assert "≥ ½" in g(None, eps=[0.4, 0.7])
    assert "one branch" in g(None, eps=[0.2])
    medium = C.harness_sources()["medium"]
    assert "≥ ½" in g(medium, state=3, B=3)                  # ε = 0.80: the vote loses there
    aligned = C.drafting_sources()["aligned V8"]
    assert g(aligned, state=0, B=3) is None                  # ε = 0.11
    assert "one branch" in g(aligned, state=0, B=1)
    avg = C.averaged_drafting_source()
    assert g(avg, state=None, B=3) is None                   # ε averaged over contexts: 0.445
    assert g(avg, state=0, B=3) is not None                  # context 0 alone: the drafter's mode is wrong


def test_falsification_and_budget_scope():
    assert C._falsification_scope(B=2) is None and "one branch" in C._falsification_scope(B=1)
    assert C._budget_scope(B=4) is None and "one branch" in C._budget_scope(B=1)


def test_drafting_inside_the_premise_never_loses():
    """Inside ε < ½ a draft's pair shares a token of mass > ½ (Σ p·q ≤ max q, and ≤ max p), and the
    plurality of B drafts matches the verifier's sample at least as often as one draft: 600 seeded
    random in-scope rows, B = 2..5 (ties only at point masses)."""
    rng = np.random.default_rng(24)
    n = 0
    while n < 600:
        V = int(rng.integers(2, 6))
        p, q = rng.dirichlet(np.full(V, 0.3)), rng.dirichlet(np.full(V, 0.3))
        if 1 - float(p @ q) >= 0.5:
            continue
        n += 1
        assert p.max() > 0.5 and q.max() > 0.5 and p.argmax() == q.argmax()
        for B in (2, 3, 5):
            assert C.cf.vote_match_iid(p, q, B) >= float(p @ q) - 1e-12


def test_averaged_reading_counterexample():
    """Averaged over contexts the drafts miss with probability 0.445 < ½, yet the vote matches less
    often than one draft: the loss in context 0 (the drafter's mode is not the target's) outweighs
    the gain elsewhere."""
    pair = C.averaged_drafting_source()
    assert C.drafting_eps(pair) < 0.5 and C.drafting_eps(pair, 0) > 0.5
    for B in (3, 5):
        single, vote = C.averaged_drafting(C.FUSION, pair, B)
        assert vote < single - 0.01
    # the minority control loses inside the premise (an aligned context), where the plurality wins
    aligned = C.drafting_sources()["aligned V8"]
    assert C.drafting_slack(aligned, 3, 0, C.MINORITY) < 0 < C.drafting_slack(aligned, 3, 0)


# --- ties ---------------------------------------------------------------------------------------------

def test_s1_prob_ties_are_told_apart():
    judge = C._strict_tie("the vote follows the better branch")
    best, acc = C.prob_vs_best(C.FUSION, 2, (0.1, 0.3))
    tie = judge("B = 2", best, acc, "")
    assert tie.outcome == "fail" and tie.tie and "fails by equality (tie)" in tie.note
    best3, acc3 = C.prob_vs_best(C.FUSION, 2, (0.3, 0.3, 0.3))
    assert judge("B = 3", best3, acc3, "").outcome == "pass"
    worse = judge("a strict loss", 0.9, 0.8, "")
    assert worse.outcome == "fail" and not worse.tie


def test_soft_vote_fails_for_every_lambda():
    """The soft vote overturns a weighted majority at every λ > 0 the choice allows (the instance is
    built for the λ in force); the hard vote (λ = 0 weights, same votes) never does."""
    for lam in (0.1, 0.5, 1.0, 0.01):
        claimed, slip, d = C.soft_vote_slip(C.FUSION, lam)
        assert slip == 1.0 and d["share"] > 0.5, lam
    c = C.soft_vote_instance(0.1)
    s = C.cf.position_scores(c["tokens"], c["weights"])
    assert int(np.argmax(s)) == c["truth"]


# --- identities: each proof holds, and rejects a wrong identity -----------------------------------------

def test_proofs_hold(claims):
    for cid, c in claims.items():
        for p in c.parts:
            if p.identity:
                ok, detail = p.proof()
                assert ok, (cid, p.id, detail)
    ids = {(cid, p.id) for cid, c in claims.items() for p in c.parts if p.identity}
    assert ids == {("ecsv.map", "uniform-prior"), ("ecsv.majority", "s1-share"), ("ecsv.prefix_length", "chain-rule"),
                   ("ecsv.prefix_length", "independent"), ("ecsv.budget", "per-step")}


def test_proofs_reject_wrong_identities():
    assert not C.map_vote_identity(lambda e, f, u: sp.log(f / e))[0]        # binary weights, no (V − 1)
    assert not C.map_vote_identity(lambda e, f, u: sp.Integer(1))[0]        # uniform weights
    assert not C.share_margin(sp.Rational(1, 3))[0]                         # a third of the weight
    off_by_one = lambda a: 1 + sum(sp.prod(a[:j]) for j in range(1, len(a)))  # noqa: E731
    assert not C.prefix_identity(3, formula=off_by_one)[0]
    assert not C.prefix_identity(3, independent=True, formula=lambda a: sum(a))[0]
    assert not C.budget_identity(lambda k: k)[0]                             # the bonus row forgotten


def test_method_call_rebuilds_tuned_variants():
    from dataclasses import replace

    import dataclasses  # noqa: F401  (the call's namespace)
    import spectheory.rules.ecsv  # noqa: F401
    from spectheory.rules import ecsv as R
    for m in (R.ECSV_LITE, replace(R.ECSV_LITE, gamma=0.0), replace(R.ecsv_spot(2), gamma=4.0, alpha=(0.0, 1.0, 0.0, 4.0)),
              replace(R.ECSV_SOFT, gamma=-8.0, lam=0.0, ties="none")):
        assert eval(C.method_call(m)) == m  # noqa: S307
