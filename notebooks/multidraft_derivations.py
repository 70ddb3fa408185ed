# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---
# Multi-draft block verification (SpecTr-GBV, Lin et al. 2026): symbolic derivations behind
# Remark 5.2 (docs/multidraft.md).
#
# Jupytext "percent" notebook: open it in Jupyter with jupytext installed, or run it as a plain
# script (`python notebooks/multidraft_derivations.py`). Every derivation ends in an `assert`
# that sympy proves (a difference simplifies to 0), then a numeric cross-check against the
# spectheory implementation.

# %% [markdown]
# # Remark 5.2 — derivations
#
# Notation (docs/multidraft.md): `p` target, `q` draft (the paper swaps the letters). Per block
# `x^i`, `m = min(1, q(x^i)/p(x^i))` and Lemma 5.1's term `A(x^i) = p(x^i)[1 − (1 − m)^K]`;
# `Bound(K) = Σ_{i=1}^{γ} Σ_{x^i} A(x^i)`. Writing `q = t·p` (t ≥ 0) for a block with `p > 0`:
# `m = t` when `t ≤ 1` and `m = 1` when `t ≥ 1`; a block with `p = 0` adds 0.

# %%
import numpy as np
import sympy as sp

from spectheory.sims.claims import multidraft as md
from spectheory import instances as inst
from spectheory.closed_forms import multidraft as cf
from spectheory.pairs import random_pair

p = sp.Symbol("p", positive=True)
t = sp.Symbol("t", nonnegative=True)
m = sp.Symbol("m", nonnegative=True)
K = sp.Symbol("K", integer=True, positive=True)

# %% [markdown]
# ## (a) Consistency bullet: Bound(1) = Σ min(p, q) — an identity of the model
#
# `p[1 − (1 − m)^1] = p·m`, which is `t·p = q = min(p, q)` for `t ≤ 1` and `p = min(p, q)` for
# `t ≥ 1`. The registry's proof (`spectr_gbv.remark5_2` part `k1`,
# `spectheory.sims.claims.multidraft.bound_k1_identity`) is this derivation; a wrong exponent is rejected.

# %%
term = lambda mm, e=1: p * (1 - (1 - mm) ** e)  # noqa: E731
assert sp.simplify(term(t) - t * p) == 0          # t ≤ 1: min(p, q) = q = t·p
assert sp.simplify(term(sp.Integer(1)) - p) == 0  # t ≥ 1: min(p, q) = p
assert sp.simplify(term(t, 2) - t * p) != 0       # the bound at exponent 2 is not Σ min
holds, detail = md.bound_k1_identity()
assert holds and not md.bound_k1_identity(2)[0]
print("Bound(1) = Σ min(p, q):", detail)
for name in md.EXACT:
    for g in (1, 2, 3):
        tree = md.tree0(inst.get(name), g)
        assert abs(cf.lemma51_bound(tree, 1) - cf.gbv_optimum(tree)) < 1e-12

# %% [markdown]
# ## (b) Monotonicity bullet: the step K → K + 1, and where it is a tie
#
# `A_{K+1} − A_K = p[(1 − m)^K − (1 − m)^{K+1}] = p·m·(1 − m)^K ≥ 0`. So Bound never decreases, and
# `Bound(K + 1) = Bound(K)` exactly when every block has `m ∈ {0, 1}` (q = 0 or q ≥ p): the draft
# is the target (q = p: Bound(K) = γ for every K, saturated), a top-k or disjoint draft (misses
# part of p's support), or V = 1. A draft that covers p's support (q > 0 wherever p > 0) and is
# not p has, at each depth where it differs, a block with q < p (both sum to 1), hence
# `0 < m < 1` there: the increase is strict. That is the claim's scope and its tie.

# %%
step = p * (1 - (1 - m) ** (K + 1)) - p * (1 - (1 - m) ** K)
assert sp.simplify(step - p * m * (1 - m) ** K) == 0
print("Bound(K+1) − Bound(K) = Σ p·m·(1 − m)^K")
for s in range(20):
    tree = md.tree0(random_pair(2 + s % 3, s % 2, 1.0, seed=s), 1 + s % 2)
    ms = [np.minimum(1.0, tree.Q[i] / tree.P[i]) for i in range(1, tree.gamma + 1)]  # full support: p > 0
    gaps = np.diff([cf.lemma51_bound(tree, k) for k in range(1, 9)])
    direct = [sum(float((tree.P[i] * ms[i - 1] * (1 - ms[i - 1]) ** k).sum()) for i in range(1, tree.gamma + 1))
              for k in range(1, 8)]
    # the closed form's steps are the formula's (to rounding); the formula's are > 0 (in floating point a
    # step below 1e-16 of a bound near 1 can round to 0: the symbolic statement is the proof)
    assert np.allclose(gaps, direct, atol=1e-12) and min(direct) > 0
tree = md.tree0(inst.get("iid-V3-equal"), 2)  # q = p: a tie at saturation
assert all(abs(cf.lemma51_bound(tree, k) - 2.0) < 1e-12 for k in range(1, 9))

# %% [markdown]
# ## (c) Convergence bullet: the limit is Σ_i Σ_{q(x^i) > 0} p(x^i)
#
# For `0 < m ≤ 1`, `(1 − m)^K → 0`, so `A_K → p`; for `m = 0` (q = 0) `A_K = 0`. The limit is
# γ = L (each depth's p sums to 1) exactly when the draft covers p's support — the remark's
# tacit assumption (its scope). q = (1, 0) against a p with p(1) > 0 converges to p(0) < 1.

# %%
assert sp.limit((1 - sp.Rational(1, 3)) ** K, K, sp.oo) == 0
assert sp.limit(p * (1 - (1 - sp.Rational(1, 3)) ** K), K, sp.oo) == p
tree = md.tree0(md.edge_pair(2, 0, 1.0, 1), 1)  # q = (1, 0): outside the scope
assert abs(cf.lemma51_bound(tree, 10 ** 9) - tree.P[1][0]) < 1e-9 and tree.P[1][0] < 1
print("lim_K Bound(K) = Σ_i Σ_(q>0) p(x^i): γ iff the draft covers p's support")
print("all derivations proved")
