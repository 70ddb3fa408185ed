"""The shrinker's multi-draft extensions: K and extra axes searched in order, details merged,
edge-case pair factories; the sd call form (three positional arguments) is unchanged."""
from __future__ import annotations

from spectheory.sims.shrink import smallest_counterexample
from spectheory.pairs import pair_from_tables


def test_sd_call_form_unchanged():
    seen = []

    def fails(pair, g, K):
        seen.append((pair.V, g, K))
        return pair.V == 3 and g == 2, 1.0, 2.0
    got = smallest_counterexample(fails, seeds=range(2))
    assert (got["V"], got["gamma"], got["K"], got["seed"]) == (3, 2, 1, 0)
    assert got["claimed"] == 1.0 and got["measured"] == 2.0 and "random_pair" in got["source"]


def test_k_and_extra_axes_and_details():
    def fails(pair, g, K, mode):
        return K == 3 and mode == "b", 0.5, 0.25, {"sequence": [1, 0]}
    got = smallest_counterexample(fails, V_values=(2,), orders=(0,), gammas=(1,), K_values=(1, 2, 3),
                                  extra={"mode": ("a", "b")}, seeds=range(2))
    assert got["K"] == 3 and got["mode"] == "b" and got["sequence"] == [1, 0]


def test_pair_factory():
    def factory(V, order, conc, seed):
        pair = pair_from_tables([1.0] + [0.0] * (V - 1), [1.0] + [0.0] * (V - 1))
        return type(pair)(pair.target, pair.draft, "eq", {"construction": f"q = p = δ0, V={V}"})
    got = smallest_counterexample(lambda pair, g, K: (True, 0, 0), orders=(0,), pair_factory=factory)
    assert got["source"] == "q = p = δ0, V=2"
