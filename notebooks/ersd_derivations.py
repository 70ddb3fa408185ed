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
# Exponential races, drafting trees and the Tunstall bound: derivations behind the ersd
# family's claims (Kobus & Gündüz). Most formulas are reconstructed from the paper's statements; each
# formula is derived here from what it rests on, with sympy proving every identity (`assert`)
# and a numeric cross-check against spectheory. Run as a script:
#
#     python notebooks/ersd_derivations.py

# %% [markdown]
# # ERSD and optimal drafting trees — derivations
#
# Notation: `p` target, `q` draft; `E_y ~ Exp(1)` i.i.d., one per token; the draft race's
# arrivals `E_y/q(y)`, the target race's `E_y/p(y)`; `X_p = argmin_y E_y/p(y)` (Maddison 2017:
# `X_p ~ p`). The acceptance index `I` is the position of the accepted alternative; a drafting
# tree's vertex `(i_1..i_d)` is accepted iff the first d indices are `i_1..i_d`.

# %%
import numpy as np
import sympy as sp

from spectheory import trees as T
from spectheory.closed_forms import ersd as cf
from spectheory.divergences import entropy, harmonic_mean_term, kl_divergence, overlap
from spectheory.exact import ersd as ex
from spectheory.pairs import random_pair
from spectheory.rules import ersd as R

e = sp.Symbol("e", positive=True)

# %% [markdown]
# ## (a) `ersd.lemma3_1`, exact value — rests on: independence of the `E_y` (race definition)
#
# Token x wins both races iff for every y ≠ x: `E_y/q(y) > E_x/q(x)` and `E_y/p(y) > E_x/p(x)`,
# i.e. `E_y > E_x·m_y` with `m_y = max(p(y)/p(x), q(y)/q(x))`. Given `E_x = e` these are
# independent with probability `exp(−e m_y)`, so
# `P(x wins both) = ∫ e^{−e} Π_y e^{−e m_y} de = 1/(1 + Σ_{y≠x} m_y) = 1/Σ_y m_y` (m_x = 1).
#
# This is an identity of the race, not a finding: the registry marks the part `formula` of
# `ersd.lemma3_1` `identity=True` with the same proof (`spectheory.sims.claims.ersd.prove_race_formula`, which
# also rejects a wrong closed form such as 1/S).

# %%
m = sp.symbols("m1:4", positive=True)  # three rivals' rates: the product of exponentials is one exponential
assert sp.simplify(sp.Mul(*[sp.exp(-e * mi) for mi in m]) - sp.exp(-e * sum(m))) == 0
S = sp.Symbol("S", positive=True)  # S = Σ_{y≠x} m_y
P_both = sp.integrate(sp.exp(-e) * sp.exp(-e * S), (e, 0, sp.oo))
assert sp.simplify(P_both - 1 / (1 + S)) == 0
assert sp.simplify(P_both - 1 / S) != 0  # a wrong closed form does not simplify away
print("P(x wins both races) =", P_both)

# numeric: the closed form against the library's race integral (which never uses it)
rng = np.random.default_rng(0)
for _ in range(20):
    V = int(rng.integers(2, 7))
    p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    closed = sum(1 / np.maximum(p / p[x], q / q[x]).sum() for x in range(V))
    assert abs(closed - ex.ersd_first_acceptance(p, q)) < 1e-12

# %% [markdown]
# ## (b) Poisson-matching bound ≤ exact ≤ 1 − TV — rests on: max(a, b) ≤ a + b; the coupling inequality
#
# `Σ_y m_y ≤ Σ_y p(y)/p(x) + Σ_y q(y)/q(x) = 1/p(x) + 1/q(x) = (p(x)+q(x))/(p(x)q(x))`, so each term
# `1/Σ_y m_y ≥ p(x)q(x)/(p(x)+q(x))` — the harmonic-mean term of Lemma 3.1 (Li & Anantharam 2021
# give the same bound through the Poisson matching lemma). Conversely `Σ_y m_y ≥ Σ_y p(y)/p(x) =
# 1/p(x)` and `≥ 1/q(x)`, so each term is ≤ min(p(x), q(x)): the exact value is ≤ Σ min = 1 − TV.

# %%
px, qx = sp.symbols("p_x q_x", positive=True)
assert sp.simplify(1 / (1 / px + 1 / qx) - px * qx / (px + qx)) == 0
# the harmonic term is itself ≤ min(p, q): pq/(p+q) ≤ p ⇔ q ≤ p + q
assert sp.simplify(px - px * qx / (px + qx) - px ** 2 / (px + qx)) == 0
for _ in range(50):
    V = int(rng.integers(2, 8))
    p, q = rng.dirichlet(np.ones(V) * 0.5), rng.dirichlet(np.ones(V) * 0.5)
    h, x_, o = harmonic_mean_term(p, q), cf.ersd_first_acceptance(p, q), overlap(p, q)
    assert h <= x_ + 1e-12 <= o + 2e-12

# %% [markdown]
# ## (c) `ersd.lossless` — rests on: the emitted token at every context is X_p (or a residual draw)
#
# ERSD emits the target race's winner at every context whatever was drafted, and races at
# different contexts are independent, so the generated text is autoregressive sampling from p
# with the Gumbel-max trick. GSD: with alternatives drawn sequentially without replacement,
# `P(emit y) = Σ_x q_i(x) min(1, r_i(x)/q_i(x))[x=y] + P(reject)·r_{i+1}(y) = min(q_i, r_i)(y) +
# (r_i − q_i)₊(y) = r_i(y)`, and `r_{i+1}` does not depend on which x was rejected, so induction on
# the number of alternatives gives `r_1 = p`. The symbolic step for one alternative:

# %%
r_, q_ = sp.symbols("r q", nonnegative=True)
emit = sp.Min(q_, r_) + sp.Max(r_ - q_, 0)
for rv, qv in ((sp.Rational(1, 3), sp.Rational(1, 5)), (sp.Rational(1, 7), sp.Rational(2, 3))):
    assert emit.subs({r_: rv, q_: qv}) == rv
pair = random_pair(3, 1, seed=4)
for rule in (R.GSD, R.ERSD):
    d = ex.first_tokens_distribution(pair, rule, T.Tree(((1,), (2,), (1, 1))), 3)
    assert np.abs(d - pair.target.sequence_probs(3)).max() < 1e-13

# %% [markdown]
# ## (d) Expected generated tokens of a tree (the paper's Eq. 4) and Alg. 3 — rests on: linearity; f decreases along paths
#
# An iteration emits one token per visited context: `1 + #accepted vertices`, hence
# `E = 1 + Σ_v f(v)`. If f never increases from a vertex to its child, any k vertices with the
# largest f (ties broken towards shorter paths) contain every ancestor of each of them, so the
# priority-queue greedy (Alg. 3) picks a valid tree maximising Σ f. Under a 0th-order model
# `f(i_1..i_d) = Π a(i_j)`, a product of numbers ≤ 1, which decreases along paths.

# %%
a1, a2 = sp.symbols("a1 a2", positive=True)
f_chain = [a1, a1 * a1, a1 ** 3]
assert all(sp.simplify(f_chain[j + 1] / f_chain[j] - a1) == 0 for j in range(2))
a = np.array([0.5, 0.3, 0.2])
f = T.zero_order(a)
for k in range(1, 6):
    assert abs(T.tree_value(f, T.optimal_tree(f, k, 2)) - T.exhaustive_optimal(f, k, 2)[1]) < 1e-14

# %% [markdown]
# ## (e) `tunstall.thm4_1` — rests on: entropy of a complete parse tree (Tunstall 1968; App. C eqs. 25–26)
#
# Complete the drafting tree into a Tunstall parse tree: its internal nodes are the root and the
# k vertices (each context reads one index), each with all |A| children, so it has
# `(k+1)(|A|−1)+1` leaves. For an i.i.d. index source the leaf distribution has entropy
# `E[L]·H(a)` (chain rule along the path; E[L] = expected internal nodes visited =
# E[generated]), and any distribution on N leaves has entropy ≤ log N. Hence
# `E[generated] ≤ log((k+1)(|A|−1)+1)/H(a)`. Symbolic check of `H(leaves) = E[L]·H(a)` for a
# binary source and a tree whose root and its child "1" are internal:

# %%
t = sp.Symbol("t", positive=True)  # a = (t, 1 − t)
leaves = [t * t, t * (1 - t), 1 - t]  # paths 11, 12, 2
H = lambda ps: -sum(pp * sp.log(pp) for pp in ps)  # noqa: E731
EL = 1 + t  # internal nodes visited: the root, then node "1" with probability t
assert sp.simplify(sp.expand_log(H(leaves) - EL * H([t, 1 - t]), force=True)) == 0
N_leaves = (1 + 1) * (2 - 1) + 1  # k = 1 drafted vertex, |A| = 2
assert N_leaves == len(leaves)
for k in (1, 4, 64):
    tree = T.optimal_tree(f, k, 3)
    assert T.expected_generated(f, tree) <= cf.tunstall_bound(a, k) + 1e-12

# %% [markdown]
# ## (f) `tunstall.lemma4_2` — rests on: Thm 4.1 applied to ã_n; the tree only reads indices ≤ M
#
# The optimal k-tree uses indices ≤ M only, so its vertex probabilities are the same under `a`
# and under `ã_n` (which equals a on 1..M). Thm 4.1 for ã_n (alphabet M + n) bounds the same
# E[generated] by `log((k+1)(M+n−1)+1)/H(ã_n)`, for every n; spreading r evenly maximises
# `H(ã_n)` among n extra cells, with `H(ã_n) = −Σ_{i≤M} a_i log a_i − r log(r/n)`.

# %%
r, n = sp.symbols("r n", positive=True)
H_extra = -n * (r / n) * sp.log(r / n)
assert sp.simplify(H_extra - (-r * sp.log(r / n))) == 0
tree = T.optimal_tree(f, 3, 3)
M = max(max(v) for v in tree.vertices)
at = cf.lemma42_tilde(a, M, 4)
assert abs(T.tree_value(f, tree) - T.tree_value(T.zero_order(at), tree)) < 1e-15
assert T.expected_generated(f, tree) <= cf.lemma42_min_bound(a, 3, M)[0] + 1e-12

# %% [markdown]
# ## (g) `entropy.kl_lower` read on the methods' index — a counterexample, symbolically
#
# Both methods index *distinct* tokens (draws without replacement; first arrivals), so
# `I ∈ {1..V}` and `H(I) ≤ log V`, while `D_KL(p‖q) → ∞` as q(x) → 0 on a token p favours.
# V = 2, p = (1/2, 1/2), q = (1 − ε, ε): D = ½ log(1/(2(1−ε))) + ½ log(1/(2ε)) exceeds log 2 for
# small ε. Channel simulation's lower bound is for an index into an i.i.d. list (with repeats),
# whose entropy is not capped by log V.

# %%
eps = sp.Symbol("epsilon", positive=True)
D = sp.Rational(1, 2) * sp.log(1 / (2 * (1 - eps))) + sp.Rational(1, 2) * sp.log(1 / (2 * eps))
assert sp.limit(D, eps, 0, "+") == sp.oo
p2, q2 = np.array([0.5, 0.5]), np.array([0.99, 0.01])
for rule in (R.GSD, R.ERSD):
    assert entropy(ex.index_law(p2, q2, rule).sum(1), 2) <= 1 + 1e-12 < kl_divergence(p2, q2, 2)

# %% [markdown]
# ## (h) `zero_order.underestimates` — rests on: nothing beyond the definitions (a finding, not a theorem)
#
# On an order-0 source the index sequence is i.i.d., so `f(v) = Π a(i_j)` exactly and the 0th-order
# model is exact. On a Markov source `P(I_1 = i, I_2 = j) = Σ_s π(s) Σ_x P(I=i, X=x | s) P(I=j | s')`,
# which can be larger or smaller than `a(i)a(j)`: the sign depends on whether accepted tokens lead
# to contexts of higher or lower acceptance. The check measures it.

# %%
pair0 = random_pair(3, 0, seed=8)
a0 = ex.stationary_index_law(pair0, R.ERSD)
tree = T.sequence_tree(4)
assert abs(ex.expected_generated(pair0, R.ERSD, tree, 0) - cf.zero_order_expected(a0, tree)) < 1e-13

print("all derivations proved")
