"""Issue 24 for the exponential-race family: every claim's principal reading is quoted from the
paper, each scope guard admits an in-scope instance and rejects an out-of-scope one, the identity
part is proved (and a wrong identity is rejected by the same proof), and the named choices change
what they say they change (band, moderate k, window, margin)."""
from __future__ import annotations

import numpy as np
import pytest

from spectheory.sims.claims import ersd as E
from spectheory.sims.registry import load_all
from spectheory.sims.shrink import recompute
from spectheory import trees as T
from spectheory.exact import ersd as ex
from spectheory.pairs import pair_from_tables

FAMILY = ("ersd.lossless", "ersd.lemma3_1", "ersd.batch_crossover", "opt_tree.greedy", "tunstall.thm4_1",
          "tunstall.lemma4_2", "entropy.kl_lower", "entropy.upper", "zero_order.underestimates",
          "opt_tree.log_growth")
#: the principal reading of each claim (decided from the paper's text; docs/ersd.md quotes it)
PRINCIPAL = {"ersd.lossless": ("ersd", "gsd"), "ersd.lemma3_1": ("formula", "lower", "upper"),
             "ersd.batch_crossover": ("batch-k1", "batch-moderate", "batch-large", "sequence"),
             "opt_tree.greedy": ("optimal",), "tunstall.thm4_1": ("main",), "tunstall.lemma4_2": ("main",),
             "entropy.kl_lower": ("distinct",), "entropy.upper": ("ersd-index", "grs"),
             "zero_order.underestimates": ("regimes",), "opt_tree.log_growth": ("lower", "upper")}


def test_every_claim_has_a_quoted_principal_reading():
    reg = load_all()
    for cid in FAMILY:
        c = reg[cid]
        pr = c.principal
        assert pr.parts == PRINCIPAL[cid], cid
        assert pr.quote.strip() and any(s in pr.quote for s in ("§", "Lemma", "Thm")), cid
        assert "'" in pr.quote and pr.why.strip(), cid
        for r in c.readings:
            if r.role == "alternative":
                assert r.kind and r.why.strip(), (cid, r.id)


def test_lemma42_literal_reading_drops_the_cap():
    """The alternative 'any-n' grades the minimum over every n ≥ 1, which is never larger than the
    capped minimum (a superset of n), so it is the stricter of the two."""
    c = load_all()["tunstall.lemma4_2"]
    assert c.reading_of("any-n").kind == "literal" and c.reading_of("main").role == "principal"
    assert E.literal_lemma42(E.bound_lemma42) is E.bound_lemma42_any_n
    assert E.literal_lemma42(E.bound_lemma42_no_extra_alphabet) is E.bound_lemma42_no_extra_alphabet
    for case, a, V in E._zero_order_cases():
        for k in (1, 4, 16):
            capped, _, tree = E.tunstall_point(a, V, E.bound_lemma42, k)
            assert E.bound_lemma42_any_n(a, k, tree) <= capped + 1e-12, (case, k)


def test_substantive_failure_stays_in_the_principal_reading():
    """entropy.kl_lower: the transfer of eq. 6 to the SD index is the principal reading (it fails)."""
    c = load_all()["entropy.kl_lower"]
    assert c.reading_of("distinct").role == "principal"
    D, H = recompute("import spectheory.sims.claims.ersd, spectheory.pairs; spectheory.sims.claims.ersd.kl_lower_worst("
                     "spectheory.pairs.random_pair(V=2, order=0, concentration=1, seed=0), spectheory.sims.claims.ersd.KL_LOWER)")
    assert H < D - 0.05


def _o0(p, q):
    return pair_from_tables(np.array(p, float), np.array(q, float), order=0)


def _o1(p, q):
    return pair_from_tables(np.array(p, float), np.array(q, float), order=1)


def test_scope_guards_admit_and_reject():
    reg = load_all()
    full = _o0([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    # opt_tree.log_growth: order 0, q covers p, p ≠ q
    g = reg["opt_tree.log_growth"].scope
    assert g.why_out(E.scan_pair(0.1)) is None and g.why_out(full) is None
    assert "never accepted" in g.why_out(_o0([0.5, 0.5, 0.0], [1.0, 0.0, 0.0]))
    assert "p = q" in g.why_out(_o0([0.5, 0.3, 0.2], [0.5, 0.3, 0.2]))
    assert "order 1" in g.why_out(E.get("o1-V4-mix0.4"))
    # ersd.batch_crossover's regime parts: GSD ahead at k = 1
    g = reg["ersd.batch_crossover"].scope
    assert g.why_out(E.band_pair(0.1, 41)) is None
    assert "V = 2" in g.why_out(_o0([0.7, 0.3], [0.4, 0.6]))
    # zero_order.underestimates: order ≥ 1 with context-dependent conditionals
    g = reg["zero_order.underestimates"].scope
    assert g.why_out(E.get("o1-V4-regimes")) is None
    assert "order 0" in g.why_out(full)
    assert "disguise" in g.why_out(_o1([[0.6, 0.4], [0.6, 0.4]], [[0.3, 0.7], [0.3, 0.7]]))
    # tunstall.*: a 0th-order law
    for cid in ("tunstall.thm4_1", "tunstall.lemma4_2"):
        g = reg[cid].scope
        assert g.why_out(full) is None and "order 1" in g.why_out(E.get("o1-V4-mix0.4"))
    # entropy.*: some state with D_KL finite
    for cid in ("entropy.kl_lower", "entropy.upper"):
        g = reg[cid].scope
        assert g.why_out(full) is None
        assert "D_KL = ∞" in g.why_out(_o0([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]))


def test_identity_part_is_proved_and_a_wrong_identity_is_rejected():
    part = load_all()["ersd.lemma3_1"].part("formula")
    assert part.identity and part.proof is not None
    ok, detail = part.proof()
    assert ok and "→ 0" in detail
    ok, detail = E.prove_race_formula(lambda S: 1 / S)  # the rival's term left out of the denominator
    assert not ok and "→ 0:" not in detail.split("(three rivals);")[1]


def test_batch_band_choices():
    """On the scan's first pair the gap flips sign between k = 1 and 2: the integer reading fails
    the moderate part at band 0.5 (ERSD leads at k = 2 by 105% of GSD's k = 1 lead), the lines
    through the points cross (interpolated: holds), and at band 1.5 the moderate part holds while
    'ERSD ahead by more than the band' fails: one band cannot make both hold there."""
    gaps = E.band_gaps(E.METHODS, 0.1, 41)
    assert gaps[0] > 0 > gaps[1]
    assert E.band_slack(E.METHODS, "batch-moderate", 0.1, 41) == pytest.approx(-0.00539, abs=5e-5)
    assert E.band_slack(E.METHODS, "batch-moderate", 0.1, 41, moderate_k="interpolated") == pytest.approx(
        0.5 * gaps[0])
    assert E.band_slack(E.METHODS, "batch-moderate", 0.1, 41, band=1.5) > 0
    assert E.band_slack(E.METHODS, "batch-large", 0.1, 41, band=1.5) < 0
    with pytest.raises(ValueError):
        E.band_regimes(gaps, 0.5, "real")


def test_log_growth_window_reads_the_asymptote():
    """The concentrated index law of the scan's mix-0.1 pair: over k = 64..4096 slope·H = 0.757
    (a trough of the log-periodic term), over 2^6..2^20 0.969 (GSD) and 0.995 (ERSD); single
    doublings swing from 0.43 to 1.56."""
    pair = E.scan_pair(0.1)
    g, e = (ex.stationary_index_law(pair, r) for r in E.METHODS)
    wg, we = (E.window_fit(a, E.LOG_GROWTH, pair.V) for a in (g, e))
    assert wg["slope_h"] == pytest.approx(0.9689, abs=5e-4) and we["slope_h"] == pytest.approx(0.9952, abs=5e-4)
    assert wg["local_min"] == pytest.approx(0.43, abs=0.01) and wg["local_max"] == pytest.approx(1.56, abs=0.01)
    assert E.short_window_slack(0.1, E.LOG_GROWTH, "lower") == pytest.approx(0.7565 - 0.85, abs=5e-4)
    assert E.log_slope_slack(0.1, E.LOG_GROWTH, "lower") == pytest.approx(0.9689 - 0.85, abs=5e-4)
    # the control's curve plateaus: it fails the principal reading too
    assert E.log_slope_slack(0.1, E.LOG_SEQUENCE, "lower") < -0.5


def test_optimal_curve_is_alg3s_value():
    for a in (np.array([0.6, 0.25, 0.1, 0.05]), np.array([0.9787, 0.015, 0.004, 0.002, 0.0003]),
              np.array([0.5, 0.3, 0.0, 0.1, 0.1])):
        n = a.size - 1
        ks = [1, 2, 3, 7, 64, 300]
        f = T.zero_order(a)
        want = [T.expected_generated(f, T.optimal_tree(f, k, n)) for k in ks]
        assert np.allclose(T.optimal_curve(a, ks, n), want, atol=1e-11, rtol=0)
    assert np.allclose(T.optimal_curve(np.array([1.0, 0.0]), [1, 5], 1), [2.0, 6.0])
    with pytest.raises(ValueError):
        T.optimal_curve(np.array([0.5, 0.5]), [0], 1)


def test_zero_order_margin_is_read_by_the_check():
    base = E.regime_slack(E.ZO_SOURCES, 0.7, 0.6)
    assert base == pytest.approx(E.regime_slack(E.ZO_SOURCES, 0.7, 0.6, margin=0.0) - 0.01, abs=1e-3)
    assert E.regime_slack(E.ZO_SOURCES, 0.7, 0.6, margin=0.02) < 0 < base  # +1.1%: between 1% and 2%
    # the regime instances carry the paper's mechanism: acceptance positively correlated along the text
    for rule in E.METHODS:
        assert E.acceptance_covariance(E.get("o1-V4-regimes"), rule) > 0
        assert E.acceptance_covariance(E.regime_pair(0.7, 0.6), rule) > 0
