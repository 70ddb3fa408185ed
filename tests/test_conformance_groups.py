"""Two verdicts (issue 18 item 1): *lossless* — what any lossless verifier must satisfy — and
*matches standard speculative sampling*. A lossless verifier that is not Alg. 1 (accept the
draft x with probability p(x), else a draw from p without x) is first shown lossless by exact
enumeration, then gets lossless: holds, standard: fails. The sequential design's error rate is
checked against naive peeking."""
import json

import numpy as np
import pytest

from spectheory import instances as inst
from spectheory import conformance as sc
from spectheory.conformance import sequential
from spectheory.markov import next_state


# --- exact enumeration of one call, completed from p ----------------------------------------------

def completed_law(pair, gamma, state, accept, correction, bonus=True):
    """Law over V^{γ+1} of one call's block completed with draws from p, for a rule given by
    its acceptance probability accept(p_row, q_row, x) and correction law correction(p_row,
    q_row, x) (drafts from q along the chain)."""
    V, S = pair.V, pair.n_states
    P, Q = pair.target.table, pair.draft.table
    out = np.zeros(V ** (gamma + 1))

    def complete(prefix, s, w):
        if len(prefix) == gamma + 1:
            idx = 0
            for t in prefix:
                idx = idx * V + t
            out[idx] += w
            return
        for y in np.flatnonzero(P[s]):
            complete(prefix + (int(y),), int(next_state(s, y, V, S)), w * P[s, y])

    def go(i, s, w, prefix):
        if i == gamma:
            if bonus:
                for y in np.flatnonzero(P[s]):
                    complete(prefix + (int(y),), int(next_state(s, y, V, S)), w * P[s, y])
            else:
                complete(prefix, s, w)
            return
        for x in np.flatnonzero(Q[s]):
            wq = w * Q[s, x]
            a = accept(P[s], Q[s], x)
            if a > 0:
                go(i + 1, int(next_state(s, x, V, S)), wq * a, prefix + (int(x),))
            if a < 1:
                c = correction(P[s], Q[s], x)
                for y in np.flatnonzero(c):
                    complete(prefix + (int(y),), int(next_state(s, y, V, S)), wq * (1 - a) * c[y])

    go(0, state, 1.0, ())
    return out


def _alg1_accept(p, q, x):
    return min(1.0, p[x] / q[x])


def _alg1_residual(p, q, x):
    r = np.maximum(p - q, 0.0)
    return r / r.sum() if r.sum() > 0 else p


def _accept_p(p, q, x):
    return p[x]


def _p_without_x(p, q, x):
    r = p.copy()
    r[x] = 0.0
    return r / r.sum() if r.sum() > 0 else p


@pytest.mark.parametrize("name", ["markov1-V3-mix0.4", "markov1-V4-topk2", "iid-V4-strong", "iid-V3-equal"])
@pytest.mark.parametrize("gamma", [1, 2, 3])
def test_accept_with_probability_p_is_lossless_by_exact_enumeration(name, gamma):
    """The issue's rule (treat the draft as deterministic: accept x w.p. p(x), else resample
    from p without x) gives every call's completed block the law p^{γ+1}, like Alg. 1, from
    every start state; a broken rule (correction from p) does not (control of the enumeration)."""
    pair = inst.get(name)
    for s in range(pair.n_states):
        target = pair.target.sequence_probs(gamma + 1, start_state=s)
        assert np.abs(completed_law(pair, gamma, s, _accept_p, _p_without_x) - target).max() < 1e-12
        assert np.abs(completed_law(pair, gamma, s, _alg1_accept, _alg1_residual) - target).max() < 1e-12
        assert np.abs(completed_law(pair, gamma, s, _alg1_accept, _alg1_residual, bonus=False) - target).max() < 1e-12
    broken = completed_law(pair, gamma, 0, _alg1_accept, lambda p, q, x: p)
    if name != "iid-V3-equal":  # p = q: rejection never happens
        assert np.abs(broken - pair.target.sequence_probs(gamma + 1)).max() > 1e-3


def test_its_acceptance_differs_from_alg1():
    """Not Alg. 1: per state it accepts with probability Σ q(x)p(x), not β = Σ min(p, q)."""
    pair = inst.get("markov1-V3-mix0.4")
    P, Q = pair.target.table, pair.draft.table
    assert np.abs((P * Q).sum(1) - pair.acceptance_by_state()).min() > 0.05


SETTINGS = dict(instances=("markov1-V3-mix0.4", "iid-V4-strong", "iid-V3-disjoint", "iid-V1"), gammas=(2,),
                n=10_000)


@pytest.fixture(scope="module")
def nonstandard_report():
    return sc.check_block_verifier(sc.accept_p_verifier, controls=False, **SETTINGS)


def test_lossless_nonstandard_sampler_gets_lossless_holds_standard_fails(nonstandard_report):
    r = nonstandard_report
    assert r["verdicts"]["lossless"]["verdict"] == "holds", r["verdicts"]
    assert r["verdicts"]["standard"]["verdict"] == "fails"
    verdicts = {c["id"].removeprefix("conformance."): c["verdict"] for c in r["claims"]}
    assert {k for k, v in verdicts.items() if v == "fails"} == {"block_law", "acceptance_by_state", "expected_tau",
                                                                 "tokens_per_call", "standard_probes"}, verdicts
    assert verdicts["bonus_by_state"] == "holds"  # its bonus is drawn from p(·|s) too
    groups = {c["id"]: c["group"] for c in r["claims"]}
    assert {k for k, g in groups.items() if g == "lossless"} == {
        "conformance.impossible_tokens", "conformance.first_tokens", "conformance.token_law_by_state",
        "conformance.support_probes"}


def test_the_report_answers_lossless_first(nonstandard_report, capsys):
    lines = sc.verdict_lines(nonstandard_report)
    assert lines[0].startswith("LOSSLESS: holds") and lines[1].startswith("matches standard speculative sampling")
    sc.print_report(nonstandard_report)
    out = capsys.readouterr().out
    assert out.lstrip().startswith("LOSSLESS: holds")
    assert out.index("LOSSLESS") < out.index("matches standard") < out.index("first_tokens")


def test_no_bonus_is_lossless_but_not_standard():
    """Emitting the drafts without the bonus token after γ accepts loses speed, not the law."""
    from spectheory.rules.sd import BROKEN_NO_BONUS
    r = sc.check_block_verifier(sc.rule_verifier(BROKEN_NO_BONUS), controls=False, **SETTINGS)
    assert r["verdicts"]["lossless"]["verdict"] == "holds"
    assert r["verdicts"]["standard"]["verdict"] == "fails"


def test_token_law_by_state_catches_a_wrong_bonus_row_and_a_wrong_residual():
    """The lossless group's per-(position, state) law fails the bonus drawn from the previous
    row and the correction drawn from p; the lossless verdict fails with it."""
    for rule in (sc.rule_verifier(bonus_row=-1), sc.CONTROLS[0][1]):
        r = sc.check_block_verifier(rule, instances=("markov1-V3-mix0.4",), gammas=(2,), n=3000, controls=False,
                                    probes=False)
        c = next(c for c in r["claims"] if c["id"] == "conformance.token_law_by_state")
        assert c["verdict"] == "fails" and r["verdicts"]["lossless"]["verdict"] == "fails"


def test_cli_strict_answers_lossless_and_strict_standard_both(tmp_path):
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    args = ["--n", "8000", "--gammas", "1", "--instances", "iid-V3-equal", "--no-progress", "--no-controls",
            "--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md")]
    ok = CliRunner().invoke(app, ["conformance", "spectheory.conformance:accept_p_verifier", "--strict", *args])
    assert ok.exit_code == 0, ok.output
    assert ok.output.lstrip().startswith("LOSSLESS: holds")
    md = (tmp_path / "r.md").read_text()
    assert md.splitlines()[2].startswith("- **LOSSLESS: holds")
    both = CliRunner().invoke(app, ["conformance", "spectheory.conformance:accept_p_verifier", "--strict-standard",
                                    *args])
    assert both.exit_code == 1, both.output
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["verdicts"]["standard"]["verdict"] == "fails"


# --- the sequential design ----------------------------------------------------------------------

def test_design_spends_alpha_once():
    for n in (50, 100, 800, 10_000, 123_457):
        d = sequential.design(n)
        assert sum(d.weights) == pytest.approx(1.0) and d.looks[-1] == n
        assert list(d.looks) == sorted(set(d.looks)) and d.looks[0] >= min(n, sequential.MIN_LOOK)
    assert sequential.design(10_000).looks == (625, 1250, 2500, 5000, 8000, 10_000)
    assert sequential.design(10_000).weights == (1 / 32, 1 / 32, 1 / 16, 1 / 8, 1 / 2, 1 / 4)


def _any_look_rejects(rng, design, probs, alpha, spend):
    from spectheory.judge import stats
    draws = rng.choice(len(probs), size=design.n, p=probs)
    for k, nk in enumerate(design.looks):
        counts = np.bincount(draws[:nk], minlength=len(probs))
        a = design.alpha(k, alpha) if spend else alpha
        if stats.chisquare_gof("t", counts, probs, alpha=a, tolerance_w=1.0).outcome == "fail":
            return True
    return False


def test_group_sequential_error_rate_is_at_most_alpha_and_naive_peeking_exceeds_it():
    """The looks' rejections of a correct law (multinomial null, 8 cells, α = 0.05, 1,500
    replications, MC standard error ≤ 0.006): with the design's spending the chance of a
    rejection at any look is ≤ α; spending α at every look (naive peeking, the negative
    control) exceeds it."""
    rng = np.random.default_rng(2026)
    probs = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02])
    d = sequential.design(1600)
    spent = np.mean([_any_look_rejects(rng, d, probs, 0.05, True) for _ in range(1500)])
    naive = np.mean([_any_look_rejects(rng, d, probs, 0.05, False) for _ in range(1500)])
    assert spent <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1500), spent
    assert naive > 0.05 + 3 * np.sqrt(0.05 * 0.95 / 1500), naive


def test_checks_stop_at_the_look_that_decides_them():
    """The swapped-ratio rule fails its relevant checks at the first look (n/16 runs); its bonus
    law is right, so that check runs until it has power, and the (instance, γ) stops there,
    before n; the iid-V1 edge case is decided at the first look (exact checks)."""
    r = sc.check_block_verifier(sc.CONTROLS[1][1], instances=("markov1-V3-mix0.4", "iid-V1"), gammas=(2,),
                                controls=False, probes=False)
    first = {c["id"]: c["evidence"][0] for c in r["claims"]}
    for cid in ("first_tokens", "token_law_by_state", "acceptance_by_state", "expected_tau"):
        e = first[f"conformance.{cid}"]
        assert e["outcome"] == "fail" and "look 1/6 after 625 runs" in e["note"], (cid, e["note"])
    assert first["conformance.bonus_by_state"]["outcome"] == "pass"
    markov, v1 = r["run"]["blocks"]
    assert 625 < markov["runs"] < 10_000 and v1["runs"] == 625
    assert r["verdicts"]["lossless"]["verdict"] == "fails"
