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
# ECSV (error-correcting speculative decoding by branch voting): symbolic derivations.
#
# Jupytext "percent" notebook: open it in Jupyter with jupytext installed, or run it as a
# plain script (`python notebooks/ecsv_derivations.py`). Every derivation ends in an assert
# that sympy proves, followed by numeric cross-checks against spectheory.

# %% [markdown]
# # ECSV — derivations
#
# Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous
# manuscript under revision, 2026. Notation: `p` target (verifier), `q` draft, `B`
# branches of depth `k`, `ε_b` the error rate of branch b, `V` the vocabulary size.
#
# Claims covered: `ecsv.map`, `ecsv.majority`, `ecsv.prefix_length`, `ecsv.budget`.
# Two models are kept apart: the paper's **channel model** (branch b reports the true
# symbol y with probability 1 − ε_b, else a token uniform over the other V − 1, branches
# independent given y) and the **drafting model** (branches are samples from q, independent
# of the verifier's sample y ~ p).

# %%
import itertools

import numpy as np
import sympy as sp

from spectheory.closed_forms import ecsv as cf
from spectheory.exact import ecsv as ex
from spectheory.pairs import perturbed_pair, random_pair
from spectheory.rules import ecsv as R

eps, V = sp.symbols("epsilon V", positive=True)

# %% [markdown]
# ## (a) `ecsv.map`: MAP decoding is the weighted vote — with a uniform prior
#
# Under the channel model the likelihood of the observations given y is
# `Π_b [(1 − ε_b) if t̂_b = y else ε_b/(V − 1)]`. Its log is
# `Σ_b 1[t̂_b = y] (log(1 − ε_b) − log(ε_b/(V−1))) + Σ_b log(ε_b/(V − 1))`; the second sum
# does not depend on y. So the log-posterior is
# `log π(y) + Σ_b 1[t̂_b = y] w_b + const`, `w_b = log((1 − ε_b)(V − 1)/ε_b)`.
# MAP equals the weighted vote exactly when `log π(y)` is constant: **a uniform prior over
# the V tokens** (the paper does not state a prior; this is the one its formula needs).

# %%
per_branch = sp.log(1 - eps) - sp.log(eps / (V - 1))
w = sp.log((1 - eps) * (V - 1) / eps)
assert sp.simplify(sp.expand_log(per_branch - w, force=True)) == 0
# the weight is positive iff the branch beats a uniform guess: 1 − ε > 1/V ⟺ ε < (V−1)/V
crit = sp.solve(sp.Eq(w, 0), eps)
assert len(crit) == 1 and sp.simplify(crit[0] - (V - 1) / V) == 0
print("w_b = log((1−ε)(V−1)/ε); w_b = 0 at ε =", crit[0])

n_settings = 0
rng = np.random.default_rng(0)
for Vn in (2, 3, 5):
    for B in (1, 2, 3):
        for _ in range(20):
            e = rng.uniform(0.02, 0.98, B)
            assert cf.map_vote_mismatch(e, Vn)["n_mismatch"] == 0
            n_settings += 1
r = cf.map_vote_mismatch([0.3], 2, prior=[0.8, 0.2])
print(f"(a) MAP = weighted vote on {n_settings} random settings (brute-force posterior);"
      f" non-uniform prior (0.8, 0.2), V = 2, B = 1, ε = 0.3: {r['n_mismatch']} of 2 observations differ"
      f" (observation {r['worst'][0]}: MAP {r['worst'][1]}, vote {r['worst'][2]})")
assert r["n_mismatch"] == 1

# %% [markdown]
# ## (b) `ecsv.majority`, sentence 1
#
# *"If more than half of the total reliability weight favors the true token at j, the fused
# token matches V with probability greater than any single branch."*
#
# **Reading 1a (deterministic, hard fusion).** If `s_y = Σ_{b: t̂_b = y} w_b > W/2` with
# `W = Σ_b w_b`, every other token has score `≤ W − s_y < W/2 < s_y`: the hard vote outputs y.
# It holds always; with the soft vote (λ > 0) it fails (counterexample below).

# %%
s_y, W = sp.symbols("s_y W", positive=True)
# other token's score ≤ W − s_y; show (W − s_y) − s_y < 0 whenever s_y > W/2
d_ = sp.Symbol("d", positive=True)
assert sp.simplify(((W - s_y) - s_y).subs(s_y, W / 2 + d_) + 2 * d_) == 0
c = cf.soft_majority_counterexample()
print(f"(b) soft vote λ = {c['lam']}: weight share {c['share_on_truth']:.3f} on y = {c['truth']}, "
      f"scores {np.round(c['scores'], 3)}, fused {c['fused']}")
assert c["fused"] != c["truth"]

# %% [markdown]
# **Reading 1b (probabilistic, channel model).** `P(weighted vote = y) > max_b (1 − ε_b)`.
# MAP is the Bayes decision, so `≥` holds; `>` fails: with B = 2 the vote follows the
# heavier branch when they disagree, so its accuracy is exactly the better branch's.

# %%
e1, e2 = sp.symbols("epsilon_1 epsilon_2", positive=True)
# w1 ≥ w2 (ε1 ≤ ε2): agree → that token; disagree → branch 1.
# correct iff branch 1 is correct: both right, or branch 1 right and branch 2 wrong
p_correct_B2 = (1 - e1) * (1 - e2) + (1 - e1) * e2
assert sp.simplify(p_correct_B2 - (1 - e1)) == 0
for eps_ in ([0.1, 0.3], [0.2, 0.2]):
    for Vn in (2, 10):
        assert abs(cf.vote_accuracy(eps_, Vn) - (1 - min(eps_))) < 1e-12
print("(b) B = 2: P(MAP vote = y) = 1 − min ε exactly (no strict gain)")

# %% [markdown]
# ## (c) `ecsv.majority`, sentence 2
#
# *"With even weakly informative, diverse branches (ε_{b,j} < 0.5 on average),
# reliability-weighted votes strictly improve correctness probabilities."*
#
# For B = 3 i.i.d. binary branches the majority is right iff at least two are:
# `P = (1−ε)^3 + 3(1−ε)^2 ε`, and `P − (1 − ε) = ε(1 − ε)(1 − 2ε)`: positive for ε < 1/2,
# vanishing as ε → 1/2. For V > 2 the informativeness threshold is `(V−1)/V`, not 1/2.

# %%
P3 = (1 - eps) ** 3 + 3 * (1 - eps) ** 2 * eps
gain = sp.factor(P3 - (1 - eps))
assert sp.simplify(gain - eps * (1 - eps) * (1 - 2 * eps)) == 0
print("(c) B = 3, V = 2: P(majority right) − (1 − ε) =", gain)
for e_ in (0.3, 0.45, 0.49):
    assert abs(cf.vote_accuracy([e_] * 3, 2) - float(P3.subs(eps, e_))) < 1e-12
print(f"    ε = 0.5, V = 10: vote accuracy {cf.vote_accuracy([0.5] * 3, 10):.4f} > 0.5 (still informative)")
het = cf.vote_accuracy([0.01, 0.4, 0.4], 2, "uniform")
print(f"    heterogeneous ε = (0.01, 0.4, 0.4), V = 2: unweighted majority {het:.4f} < best branch 0.99;"
      f" MAP-weighted {cf.vote_accuracy([0.01, 0.4, 0.4], 2):.4f}")
co = cf.coalescing_counterexample()
print(f"    correlated (errors coalesce in pairs, each ε = 0.3): vote {co['vote_accuracy']:.4f} "
      f"< single branch {co['branch_accuracy'][0]:.4f}")
assert co["vote_accuracy"] < co["branch_accuracy"].min()

# %% [markdown]
# **The drafting model.** Branches are drafted from q without seeing the verifier's sample, so
# `P(t̂_b = y) = Σ_t q(t)p(t)` and the fused token matches with probability `p(t*)`; as B
# grows the plurality tends to q's mode, which beats one branch only if it is (near) p's mode.

# %%
p_ = np.array([0.6, 0.4])
for q_ in (np.array([0.7, 0.3]), np.array([0.4, 0.6])):
    row = [cf.vote_match_iid(p_, q_, B) for B in (1, 3, 5, 9)]
    print(f"    p = {p_}, q = {q_}: P(vote = y) for B = 1, 3, 5, 9:", np.round(row, 4))
assert cf.vote_match_iid(p_, np.array([0.4, 0.6]), 3) < cf.single_branch_match(p_, np.array([0.4, 0.6]))

# %% [markdown]
# ## (d) `ecsv.prefix_length`
#
# `E[τ] = Σ_{j≥1} P(τ ≥ j)` and `P(τ ≥ j) = Π_{i≤j} a_i` with `a_i = P(match i | matches
# 1..i−1)` (chain rule): **exact for every source**. With `a_i` read as the *marginal* match
# probability at i, the product is `P(τ ≥ j)` only when the matches are independent.
# Raising every a_i by a factor `1 + δ` (staying ≤ 1) raises the sum by at least that factor:
# `Σ_j Π a_i((1+δ)^j − (1+δ)) ≥ 0`.

# %%
a1, a2, a3, dl = sp.symbols("a1 a2 a3 delta", positive=True)
A = [a1, a2, a3]
E = sum(sp.prod(A[:j]) for j in range(1, 4))
E_scaled = sum(sp.prod([(1 + dl) * a for a in A[:j]]) for j in range(1, 4))
diff = sp.expand(E_scaled - (1 + dl) * E)
# every coefficient of the difference (a polynomial in δ with positive a's) is ≥ 0
poly = sp.Poly(diff, dl)
assert all(sp.simplify(cf_) .is_nonnegative for cf_ in poly.coeffs()), poly
for ai in A:
    assert sp.simplify(sp.diff(E, ai)).is_nonnegative
print("(d) E((1+δ)a) − (1+δ)E(a) =", sp.factor(diff))

markov = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)
iid = random_pair(3, 0, seed=5)
print(f"{'source':>22} {'method':>22} {'E[τ]':>8} {'Σ Π a(cond)':>12} {'Σ Π a(marg)':>12} {'gap':>8}")
for pair in (iid, markov):
    for m in (R.ECSV_LITE, R.ECSV_BRANCHWISE, R.SD_1):
        law = ex.step_law(R.Setup(pair, m, 3, 3), 0)
        cond = float(cf.prefix_length(np.nan_to_num(law.match_conditional())))
        marg = float(cf.prefix_length(law.match_marginal))
        assert abs(cond - law.accepted) < 1e-12
        print(f"{pair.name:>22} {m.name:>22} {law.accepted:8.5f} {cond:12.5f} {marg:12.5f} {marg - law.accepted:+8.5f}")
dep = cf.dependent_monotonicity_counterexample()
print(f"    dependent positions: marginals {dep['marginals_A']} → {dep['marginals_B']} (all higher) "
      f"yet E[τ] {dep['prefix_A']:.2f} → {dep['prefix_B']:.2f}")

# %% [markdown]
# ## (e) `ecsv.budget`: verifier positions per output token
#
# SD-1 at depth k scores k + 1 positions per step in one forward (parallel accounting), or
# τ + 1 if verification stops at the first mismatch (sequential accounting, the paper's step
# 5). The equal-budget rule spends `R_used` spot checks and verifies depth `d = k − R_used`:
# `R_used + d + 1 = k + 1` per step. Per output token:
# parallel `(k + 1)/E[τ + 1]` — at most SD-1's iff ECSV's E[τ] is at least SD-1's;
# sequential `1 + R_used/E[τ + 1]` against SD-1's exactly 1 — every spot check is an excess.

# %%
k_, R_, t_ = sp.symbols("k R tau_bar", positive=True)  # tau_bar = E[τ + 1]
seq = (R_ + t_) / t_
assert sp.simplify(seq - 1 - R_ / t_) == 0
par_E, par_1 = (k_ + 1) / t_, (k_ + 1) / sp.Symbol("tau_1", positive=True)
assert sp.simplify(par_E / par_1 - sp.Symbol("tau_1", positive=True) / t_) == 0
for Rn, kn in itertools.product((0, 1, 2, 3, 4), (2, 4, 8)):
    r_used, d = cf.budget_plan(Rn, kn)
    assert r_used + d + 1 == kn + 1 and r_used <= d
print(f"{'method':>22} {'E[τ]':>7} {'per step':>9} {'VTPO par':>9} {'VTPO seq':>9}")
for m in (R.SD_1, R.ECSV_LITE, R.ecsv_spot(1), R.ecsv_spot(2), R.SD_MULTI, R.ORACLE_TOP1, R.FORGET_SPOT):
    lr = ex.long_run(R.Setup(markov, m, 2, 4))
    print(f"{m.name:>22} {lr['accepted_length']:7.4f} {lr['cost_parallel_per_step']:9.3f} "
          f"{lr['vtpo_parallel']:9.4f} {lr['vtpo_sequential']:9.4f}")
print("(e) sequential accounting: SD-1 = 1 exactly, so any R_used ≥ 1 is over the baseline")

# %% [markdown]
# ## (f) The identity parts of the registry, proved (issue 24)
#
# Parts that cannot fail in the model are marked `identity=True` in `sims/claims/ecsv.py`; their
# verdict is the symbolic proof below (the numerical checks stay, as implementation tests). Each
# proof also rejects a wrong identity beside it.
#
# * `ecsv.map` · uniform-prior: `log P(t̂ | y) − Σ_b w_b 1[t̂_b = y]` is free of y (derivation (a));
#   the binary weights `log((1−ε)/ε)` are not.
# * `ecsv.majority` · s1-share: `s_y = W/2 + d ⇒ (W − s_y) − s_y = −2d < 0` (derivation (b));
#   a third of the weight is not enough.
# * `ecsv.prefix_length` · chain-rule and independent: `E[τ] = Σ_j Π_{i≤j} a_i` over a general
#   joint law of three match indicators with conditional `a_j`, and over a product law with
#   marginal `a_j` (derivation (d)); the off-by-one formula is not.
# * `ecsv.budget` · per-step: `R_used + d + 1 = k + 1` with `R_used = min(R, ⌊k/2⌋)`,
#   `d = k − R_used` (derivation (e)); an allowance of k is not.

# %%
from spectheory.sims.claims import ecsv as claims_ecsv

for name, (ok, detail) in {"map uniform-prior": claims_ecsv._proof_map_uniform(),
                           "majority s1-share": claims_ecsv._proof_share(),
                           "prefix chain-rule": claims_ecsv._proof_chain_rule(),
                           "prefix independent": claims_ecsv._proof_independent(),
                           "budget per-step": claims_ecsv._proof_per_step()}.items():
    assert ok, (name, detail)
    print(f"(f) {name}: {detail}")
assert not claims_ecsv.map_vote_identity(lambda e_, f_, u_: sp.log(f_ / e_))[0]
assert not claims_ecsv.share_margin(sp.Rational(1, 3))[0]
assert not claims_ecsv.prefix_identity(3, formula=lambda a: 1 + sum(sp.prod(a[:j]) for j in range(1, len(a))))[0]
assert not claims_ecsv.budget_identity(lambda k: k)[0]
print("(f) wrong identities rejected: binary MAP weights, a third of the weight, the off-by-one prefix, allowance k")

# %% [markdown]
# ## (g) The drafting model inside sentence 2's premise
#
# `Σ_t p(t) q(t) ≤ max_t q(t)` (and `≤ max_t p(t)`), so a context where one draft misses the
# verifier's sample with probability `ε = 1 − Σ p·q < ½` has `max q > ½`; and if p's mass on q's
# mode a were ≤ ½, `Σ p·q ≤ p_a q_a + (1 − p_a)(1 − q_a) ≤ ½` (increasing in p_a when q_a > ½):
# so p and q share a token of mass > ½. The plurality of B drafts concentrates on it. Outside the
# premise (ε ≥ ½: every context of the V = 8 harness sources) the plurality can lose; averaged over
# contexts, ε̄ < ½ does not protect it (the 'averaged' reading beside the headline).

# %%
q_a, p_a = sp.symbols("q_a p_a", positive=True)
bound = p_a * q_a + (1 - p_a) * (1 - q_a)
assert sp.simplify(sp.diff(bound, p_a) - (2 * q_a - 1)) == 0           # increasing in p_a iff q_a > 1/2
assert sp.simplify(bound.subs(p_a, sp.Rational(1, 2)) - sp.Rational(1, 2)) == 0
avg_pair = claims_ecsv.averaged_drafting_source()
print(f"(g) averaged pair: mean ε {claims_ecsv.drafting_eps(avg_pair):.3f}, context 0 ε "
      f"{claims_ecsv.drafting_eps(avg_pair, 0):.3f}; one draft vs plurality of 3 (stationary averages):",
      np.round(claims_ecsv.averaged_drafting(claims_ecsv.FUSION, avg_pair, 3), 4))

# %%
print("all derivations proved")
