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
# Standard speculative sampling: symbolic derivations behind the claims (docs/claims.md).
#
# Jupytext "percent" notebook: open it in Jupyter with jupytext installed
# (`jupytext --to notebook notebooks/sd_derivations.py`, or open the .py directly
# with the jupytext contents manager), or run it as a plain script:
#
#     python notebooks/sd_derivations.py
#
# Every derivation ends in an `assert` that sympy proves (a difference simplifies to 0),
# followed where useful by a numeric cross-check against the spectheory implementation.

# %% [markdown]
# # Standard speculative sampling — derivations
#
# Notation (docs/claims.md): `p` target, `q` draft, `γ` draft length, `α` acceptance
# rate, `c` draft/target cost ratio, `τ` number of accepted draft tokens in one iteration.
#
# Claims covered: `sd.expected_tokens`, `sd.walltime`, `sd.acceptance`, and the exact
# chain dynamic program that `sd.expected_tokens` refers to on Markov sources.

# %%
import numpy as np
import sympy as sp

from spectheory import divergences
from spectheory.closed_forms import sd as cf
from spectheory.exact import sd as ex
from spectheory.pairs import perturbed_pair, random_pair

alpha = sp.Symbol("alpha", positive=True)
gamma = sp.Symbol("gamma", integer=True, nonnegative=True)
k = sp.Symbol("k", integer=True, nonnegative=True)
c = sp.Symbol("c", positive=True)

CLOSED = (1 - alpha ** (gamma + 1)) / (1 - alpha)

# %% [markdown]
# ## (a) `sd.expected_tokens`
#
# With a constant per-position acceptance α, the draft tokens are accepted independently
# until the first rejection, so `P(τ ≥ k) = α^k` for `k = 0..γ`. One iteration emits
# `τ + 1` tokens (the accepted ones plus the correction/bonus token), hence
#
# `E[tokens] = 1 + E[τ] = 1 + Σ_{k=1}^{γ} P(τ ≥ k) = Σ_{k=0}^{γ} α^k`.

# %%
tail = alpha ** k                                  # P(τ ≥ k)
e_tokens = 1 + sp.summation(tail, (k, 1, gamma))   # 1 + Σ_{k≥1} P(τ ≥ k)
e_sum = sp.summation(tail, (k, 0, gamma))          # Σ_{k=0}^{γ} α^k
print("Σ_{k=0}^{γ} α^k =", e_sum)

# sympy returns Piecewise((γ+1, α = 1), (closed form, otherwise)); check both branches
assert isinstance(e_sum, sp.Piecewise)
(at_one, cond_one), (generic, _) = e_sum.args
assert cond_one == sp.Eq(alpha, 1)
assert sp.simplify(generic - CLOSED) == 0
assert sp.simplify(at_one - (gamma + 1)) == 0
# the "1 + Σ_{k≥1}" form agrees with the Σ_{k≥0} form for α ≠ 1
e_tokens_generic = sp.piecewise_fold(e_tokens).args[-1][0]
assert sp.simplify(e_tokens_generic - CLOSED) == 0
# the closed form is continuous at α = 1: its limit is γ + 1
lim = sp.limit(CLOSED, alpha, 1)
print("lim_{α→1} (1 − α^{γ+1})/(1 − α) =", lim)
assert sp.simplify(lim - (gamma + 1)) == 0

# numeric: the library closed form against the sum, including α = 1
for g in (1, 2, 4, 8):
    for a in (0.0, 0.3, 0.8, 0.999, 1.0):
        assert abs(cf.expected_tokens(a, g) - sum(a ** j for j in range(g + 1))) < 1e-12
print("(a) sd.expected_tokens: proved; library closed form matches Σ α^k")

# %% [markdown]
# ## (b) `sd.walltime`
#
# One iteration costs γ draft calls (cost c each) and one target call (cost 1), i.e.
# `γc + 1` target-call units, and emits `E[tokens]` tokens. Autoregressive decoding emits
# one token per unit, so the walltime improvement is `E[tokens] / (γc + 1)`.

# %%
improvement = generic / (gamma * c + 1)
claimed = (1 - alpha ** (gamma + 1)) / ((1 - alpha) * (gamma * c + 1))
assert sp.simplify(improvement - claimed) == 0
for g in (1, 3, 7):
    for a in (0.2, 0.8):
        for cc in (0.01, 0.2):
            want = float(claimed.subs({alpha: a, gamma: g, c: cc}))
            assert abs(cf.walltime_improvement(a, g, cc) - want) < 1e-12
print("(b) sd.walltime: proved; library walltime_improvement matches")

# %% [markdown]
# ## (c) `sd.acceptance`
#
# `min(a, b) = (a + b − |a − b|)/2` for real a, b — proved by cases (b = a + d or
# a = b + d with d ≥ 0). Substituting it term by term,
# `Σ_x min(p(x), q(x)) = (Σp + Σq)/2 − ½Σ|p − q| = 1 − TV(p, q)`,
# proved below for symbolic length-3 vectors with `p3 = 1 − p1 − p2`, `q3 = 1 − q1 − q2`.

# %%
a_, b_ = sp.symbols("a b", real=True)
d_ = sp.Symbol("d", nonnegative=True)
min_identity = sp.Min(a_, b_) - (a_ + b_ - sp.Abs(a_ - b_)) / 2
assert sp.simplify(min_identity.subs(b_, a_ + d_)) == 0   # case a ≤ b
assert sp.simplify(min_identity.subs(a_, b_ + d_)) == 0   # case b ≤ a

p1, p2, q1, q2 = sp.symbols("p1 p2 q1 q2", real=True)
P = [p1, p2, 1 - p1 - p2]
Q = [q1, q2, 1 - q1 - q2]
sum_min = sum(sp.Min(pi, qi) for pi, qi in zip(P, Q))
sum_min_rewritten = sum_min.replace(sp.Min, lambda x, y: (x + y - sp.Abs(x - y)) / 2)
TV = sp.Rational(1, 2) * sum(sp.Abs(pi - qi) for pi, qi in zip(P, Q))
assert sp.simplify(sum_min_rewritten - (1 - TV)) == 0

# numeric cross-check with spectheory.divergences on random Dirichlet vectors
rng = np.random.default_rng(2023)
for V in (2, 3, 5, 50, 1000):
    pp = rng.dirichlet(np.ones(V), size=200)
    qq = rng.dirichlet(np.full(V, 0.3), size=200)
    err = np.max(np.abs(divergences.overlap(pp, qq) - (1 - divergences.total_variation(pp, qq))))
    assert err < 1e-12, (V, err)
    assert np.allclose(cf.acceptance(pp, qq), divergences.overlap(pp, qq), atol=0, rtol=0)
print("(c) sd.acceptance: proved; Σmin(p,q) = 1 − TV(p,q) numerically to 1e-12")

# %% [markdown]
# ## (d) The distribution of τ
#
# `P(τ = k) = (1 − α) α^k` for `k < γ` (k accepts, then a rejection) and `P(τ = γ) = α^γ`.
# It sums to 1 and its tails are `P(τ ≥ k) = α^k`, the input of (a).

# %%
total = sp.summation((1 - alpha) * alpha ** k, (k, 0, gamma - 1)) + alpha ** gamma
assert sp.simplify(total - 1) == 0
j = sp.Symbol("j", integer=True, nonnegative=True)
tail_from_pmf = sp.summation((1 - alpha) * alpha ** j, (j, k, gamma - 1)) + alpha ** gamma
assert sp.simplify(tail_from_pmf - alpha ** k) == 0
# E[τ] + 1 from the pmf equals the closed form of (a)
e_from_pmf = 1 + sp.summation(k * (1 - alpha) * alpha ** k, (k, 0, gamma - 1)) + gamma * alpha ** gamma
e_from_pmf = sp.piecewise_fold(e_from_pmf)
e_from_pmf = e_from_pmf.args[-1][0] if isinstance(e_from_pmf, sp.Piecewise) else e_from_pmf
assert sp.simplify(e_from_pmf - CLOSED) == 0


def tau_pmf(a: float, g: int) -> np.ndarray:
    return np.array([(1 - a) * a ** i for i in range(g)] + [a ** g])


# numeric: exact enumeration on order-0 pairs (one state, so β is a constant α)
for seed in (0, 1, 7):
    pair = random_pair(4, 0, seed=seed)
    a_num = float(cf.acceptance(pair.target.table[0], pair.draft.table[0]))
    for g in (1, 2, 3, 4):
        got = ex.tau_distribution(pair, g)
        err = np.max(np.abs(got - tau_pmf(a_num, g)))
        assert err < 1e-12, (seed, g, err)
        assert abs(ex.expected_tokens(pair, g) - cf.expected_tokens(a_num, g)) < 1e-12
print("(d) τ ~ truncated geometric: proved; matches exact.sd.tau_distribution to 1e-12")

# %% [markdown]
# ## (e) The chain dynamic program
#
# On a Markov source β(s) varies with the state s, so the constant-α formula is only an
# approximation. `closed_forms.sd.expected_tokens_chain` computes `Σ_{k=0}^{γ} (A^k 1)[s]`
# with `A[s,s'] = Σ_{x→s'} min(p(x|s), q(x|s))`; it must equal the exact enumeration of
# one iteration from every start state. The long-run tokens per target call
# (`long_run_block_efficiency`, stationary over iteration start states) is then compared
# with the constant-α formula evaluated at the stationary acceptance α = E_π[β].

# %%
pair = perturbed_pair(3, 1, how="mix", strength=0.4, seed=12)
print("pair:", pair.describe())
print("β(s) per state:", np.round(pair.acceptance_by_state(), 6))
alpha_stat = cf.stationary_acceptance(pair)
print(f"stationary acceptance α = E_π[β] = {alpha_stat:.6f}")
print(f"{'γ':>2} {'max|DP − enum|':>15} {'long-run BE':>12} {'const-α BE':>11} {'rel. gap':>9}")
for g in (1, 2, 3, 4):
    dp = cf.expected_tokens_chain(pair, g)
    enum = np.array([ex.expected_tokens(pair, g, start_state=s) for s in range(pair.n_states)])
    gap_dp = float(np.max(np.abs(dp - enum)))
    assert gap_dp < 1e-12, (g, gap_dp)
    be = cf.long_run_block_efficiency(pair, g)
    approx = float(cf.expected_tokens(alpha_stat, g))
    print(f"{g:>2} {gap_dp:>15.2e} {be:>12.6f} {approx:>11.6f} {(approx - be) / be:>+9.2%}")
print("(e) chain DP equals exact enumeration; table shows the constant-α formula's error")

# %%
print("all derivations proved")
