"""The check shapes (sims/shapes.py), the shared least-slack search (sims/slack.py) and the
shrinker's documented search order and one-line calls (sims/shrink.py)."""
import numpy as np
import pytest

from spectheory.sims import shapes, slack
from spectheory.sims.shrink import AXES, call_line, expr_of, imports_for, recompute, smallest_counterexample
from spectheory.divergences import entropy, kl_divergence, total_variation
from spectheory.rules.sd import BROKEN_NO_BONUS


# --- shrinker: the search order, pinned ------------------------------------------------------

def test_search_order_is_V_order_gamma_K_extra_seed():
    """Every candidate is visited in the documented order (V outermost, then order, γ, K, the
    extra axes, the seed innermost), and the first failing one is returned."""
    seen = []

    def fails(pair, gamma, K, mode):
        seen.append((pair.V, pair.target.order, gamma, K, mode, int(pair.params["seed"])))
        return False, 0.0, 0.0

    assert smallest_counterexample(fails, V_values=(2, 3), orders=(0, 1), gammas=(1, 2), K_values=(1, 2),
                                   extra={"mode": ("x", "y")}, seeds=range(2),
                                   pair_factory=_factory) is None
    expected = [(V, o, g, K, m, s) for V in (2, 3) for o in (0, 1) for g in (1, 2) for K in (1, 2)
                for m in ("x", "y") for s in range(2)]
    assert seen == expected
    assert AXES == ("V", "order", "gamma", "K", "seed")


def _factory(V, order, concentration, seed):
    from spectheory.pairs import random_pair
    pair = random_pair(V, order, concentration, seed=seed)
    pair.params["seed"] = seed
    pair.params["construction"] = f"random_pair({V}, {order}, seed={seed})"
    return pair


def test_smallest_means_smaller_V_before_smaller_order_gamma_or_seed():
    """Failures at (V=3, order 0, γ=1, seed 0) and (V=2, order 1, γ=3, seed 7): V decides first."""
    def fails(pair, gamma, K):
        hit = (pair.V, pair.target.order, gamma) in ((3, 0, 1), (2, 1, 3)) and \
            pair.params.get("seed") in (0, 7)
        return hit, 1.0, 2.0
    got = smallest_counterexample(fails, V_values=(2, 3), orders=(0, 1), gammas=(1, 2, 3), seeds=(7, 0),
                                  pair_factory=_factory)
    assert (got["V"], got["order"], got["gamma"], got["seed"]) == (2, 1, 3, 7)


def test_only_the_settings_that_apply_and_a_call():
    def fails(pair, gamma, K):
        return True, 1.0, 2.0
    got = smallest_counterexample(fails, gammas=(1,), applies=("V", "order", "seed"),
                                  call=lambda source, **s: f"f({source}, {s})")
    assert set(got) == {"V", "order", "seed", "source", "claimed", "measured", "call"}
    assert got["call"] == f"f({got['source']}, {{}})"
    with pytest.raises(ValueError, match="do not apply"):
        smallest_counterexample(fails, gammas=(1, 2), applies=("V", "order", "seed"))


def test_call_lines_recompute():
    line = call_line(entropy, [0.5, 0.5], base=2.0)
    assert line == "import spectheory.divergences; spectheory.divergences.entropy([0.5, 0.5], base=2.0)"
    assert recompute(line) == pytest.approx(1.0)
    assert expr_of(BROKEN_NO_BONUS) == "spectheory.rules.sd.BROKEN_NO_BONUS"
    assert imports_for("spectheory.pairs.random_pair(V=2) + numpy.pi") == ["spectheory.pairs", "numpy"]
    with pytest.raises(ValueError):
        recompute("x = 1")


# --- shapes -----------------------------------------------------------------------------------

def test_sweep_grades_every_point_and_shows_the_worst():
    pts = shapes.grid(g=(1, 2, 3), c=(0.0, 1.0))
    assert pts[:2] == [{"g": 1, "c": 0.0}, {"g": 1, "c": 1.0}] and len(pts) == 6
    ev = shapes.sweep("inst", pts, lambda g, c: (g + c, g + c + (1e-3 if (g, c) == (2, 1.0) else 0.0)),
                      what="toy", note=lambda p, c, m, d: f"at {p}")
    assert ev.outcome == "fail" and (ev.claimed, ev.measured) == (3.0, 3.001) and ev.note == "at {'g': 2, 'c': 1.0}"
    assert [p["outcome"] for p in ev.points] == ["pass"] * 3 + ["fail"] + ["pass"] * 2
    tight = shapes.sweep("inst", shapes.grid(x=(1, 2, 3)), lambda x: (1.0, 1.0 + (x - 2) ** 2), grade="bound",
                         side="ge", what="toy bound")
    assert tight.outcome == "pass" and tight.measured == 1.0  # the point of least slack is shown
    dist = shapes.sweep(lambda p: shapes.label("inst", x=p["x"]), shapes.grid(x=(1, 2)), lambda x: (0.0, 1e-13 * x),
                        grade="distance")
    assert dist.outcome == "pass" and dist.measured == 2e-13 and dist.claimed == 0.0 and dist.instance == "inst x=2"


def test_mc_shapes_count_their_tests():
    from spectheory.sims.registry import Context
    ctx = Context(claim_id="toy", subject_name="subject")
    rng = np.random.default_rng(0)
    e = shapes.mc_mean(ctx, "x", 0.0, rng.normal(0.0, 1.0, 1000), tolerance=1.0, part="a")
    assert ctx.mc_tests_run == 1 and e.part == "a" and e.alpha == ctx.alpha_test and e.outcome == "pass"


# --- the least-slack search on toy bounds of known least slack -----------------------------------

def test_exhaustive_finds_the_known_least_slack():
    rec = slack.exhaustive(lambda a, b: (a - 2) ** 2 + (b + 1) ** 2 + 0.5, {"a": range(-3, 4), "b": range(-3, 4)})
    assert rec.value == 0.5 and rec.instance == {"a": 2, "b": -1} and rec.evaluations == 49
    assert rec.search == "exhaustive over 49 points"


def entropy_gap(pair):
    """log2 V − H(p) + 1/4 ≥ 1/4, with equality exactly at the uniform target row (toy bound)."""
    p = pair.target.table[0]
    return float(np.log2(p.size) - entropy(p, 2.0) + 0.25)


def pinsker_gap(pair):
    """KL(p‖q) − 2 TV(p, q)² ≥ 0 (Pinsker, nats), least slack 0 at p = q."""
    p, q = pair.target.table[0], pair.draft.table[0]
    return float(kl_divergence(p, q) - 2.0 * total_variation(p, q) ** 2)


def test_pair_search_finds_known_least_slacks_within_budget():
    rec = slack.search_pairs(entropy_gap, slack.PairSpace(V=3), budget=1500, restarts=3, seed=0)
    assert rec.value == pytest.approx(0.25, abs=1e-6) and rec.evaluations <= 1500
    assert rec.instance["kind"] == "pair_from_tables" and np.allclose(rec.instance["p"], 1 / 3, atol=1e-3)
    assert recompute(rec.call) == rec.value  # the one-line call rebuilds the instance exactly
    rec2 = slack.search_pairs(pinsker_gap, slack.PairSpace(V=3), budget=3000, restarts=4, seed=1)
    assert -1e-12 <= rec2.value < 1e-5 and rec2.evaluations <= 3000  # 0 up to rounding
    again = slack.search_pairs(pinsker_gap, slack.PairSpace(V=3), budget=3000, restarts=4, seed=1)
    assert again.value == rec2.value and again.call == rec2.call  # seeded


def overlap_plus_distance(pair, t):
    """Σ min(p, q) + |t − 1/4|: least slack 0 (disjoint tables, t = 1/4), approached from above."""
    return float(np.minimum(pair.target.table, pair.draft.table).sum()) + abs(t - 0.25)


def test_pair_search_also_searches_continuous_params():
    """``params`` adds continuous settings (mapped onto their open interval) to the tables: the
    search finds both the near-disjoint tables and t ≈ 1/4, and the call passes t back."""
    rec = slack.search_pairs(overlap_plus_distance, slack.PairSpace(V=2), budget=1200, restarts=3, seed=0,
                             params={"t": (0.0, 1.0)})
    assert 0 <= rec.value < 1e-3 and abs(rec.instance["t"] - 0.25) < 1e-3 and rec.evaluations <= 1200
    assert "t=" in rec.call and recompute(rec.call) == rec.value and "t ∈ (0, 1)" in rec.search
    with pytest.raises(ValueError, match="lo < hi"):
        slack.search_pairs(overlap_plus_distance, slack.PairSpace(V=2), params={"t": (1.0, 0.0)})
    # without params the starting points (and so the records) are the ones of before
    plain = slack.search_pairs(entropy_gap, slack.PairSpace(V=3), budget=300, restarts=2, seed=0)
    assert plain.call == slack.search_pairs(entropy_gap, slack.PairSpace(V=3), budget=300, restarts=2, seed=0,
                                            params={}).call


def test_pair_search_markov_tables_and_budget():
    space = slack.PairSpace(V=2, order=1)
    assert space.dim == 8
    p, q = space.tables(np.zeros(8))
    assert p.shape == (2, 2) and np.allclose(p, 0.5)
    rec = slack.search_pairs(lambda pair: float(pair.target.table.max()), space, budget=50, restarts=5, seed=0)
    assert rec.evaluations == 50 and "50 of 50 evaluations" in rec.search  # stopped by the budget
    assert 0.5 <= rec.value <= 1.0  # the largest entry of a row is ≥ 1/2 (10 evaluations per restart)
    # L-BFGS-B's finite-difference gradients (dim + 1 evaluations each) overshoot its own maxfun:
    # the budget check in the objective stops it after exactly the budget
    short = slack.search_pairs(lambda pair: float(pair.target.table.max()), space, budget=20, restarts=1, seed=0,
                               method="L-BFGS-B")
    assert short.evaluations == 20 and "20 of 20 evaluations" in short.search
