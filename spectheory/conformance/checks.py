"""The statistical checks of a verifier's runs (:class:`~spectheory.conformance.driver.Trace`)
against the exact theory of standard speculative sampling (Leviathan et al. 2023, Alg. 1 and
Thm 3.5; claim ``sd.lossless``, ``sd.acceptance``, ``sd.expected_tokens``).

Two groups, two verdicts. **lossless** (``group="lossless"``): what any lossless verifier must
satisfy whatever its rule — the law of the first N tokens of a run (p^N) and the law of every
token of each call's block, completed from p, by position and state. **standard**
(``group="standard"``): what standard speculative sampling (Alg. 1) does besides being lossless —
the block law of one iteration, the bonus law, acceptance β(s), E[τ] and tokens per call. A
lossless verifier with another rule holds the first group and fails the second.

Each check turns one trace into :class:`~spectheory.judge.Evidence` through :mod:`spectheory.judge.stats`
(the statistical method of docs/statistical_method.md). Reading a call's output: ``L`` tokens
were emitted, ``τ = L − 1`` drafted tokens were accepted (positions 0..τ−1) and the last token
is the correction (τ < γ) or the bonus (τ = γ). The references are exact: the target's law of
the first N tokens (``MarkovSource.sequence_probs``), the enumerated law of one iteration's
block (``spectheory.exact.sd.block_distribution``), β(s) = Σ min(p, q) and the chain dynamic
program for E[τ | start state] (``spectheory.closed_forms.sd.expected_tokens_chain``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from scipy import stats as sps

from ..judge import stats
from ..judge.evidence import Evidence

from ..closed_forms import sd as cf
from ..exact import sd as exact_sd
from ..markov import MarkovPair, next_state
from .runs import Trace

#: Deviations that matter (the tolerance each test must be powered for): Cohen's "small"
#: effect size w for laws, an absolute shift of every β(s), and tokens for E[τ].
TOL_W = 0.1
TOL_ACCEPT = 0.02
TOL_TAU = 0.1


def label(trace: Trace, **kw) -> str:
    return (trace.title or f"{trace.instance} γ={trace.gamma}") + "".join(f" {k}={v}" for k, v in kw.items())


def first_n(V: int) -> int:
    """N so that the V**N sequences stay ≤ 81 cells (N ≤ 4)."""
    n = 1
    while n < 4 and V ** (n + 1) <= 81:
        n += 1
    return n


def first_tokens(trace: Trace, pair: MarkovPair, alpha: float) -> Evidence:
    """Law of the first N emitted tokens of a run against p^N (chi-square on V^N cells). A run
    with a token of probability 0 is left out: :func:`impossible_tokens` fails it with certainty,
    with the kind of its trigger (a statistic would blur the two)."""
    N = trace.run_tokens.shape[1]
    idx = trace.run_tokens @ (pair.V ** np.arange(N - 1, -1, -1))
    probs = pair.target.sequence_probs(N)
    possible = probs[idx] > 0
    counts = np.bincount(idx[possible], minlength=pair.V ** N)
    left = int((~possible).sum())
    return stats.chisquare_gof(label(trace, N=N), counts, probs, alpha=alpha, tolerance_w=TOL_W,
                               note=f"{int(possible.sum())} independent runs from state 0, first {N} emitted tokens "
                                    "vs p^N" + (f"; {left} run(s) with a token of probability 0 left out (see "
                                                "impossible_tokens)" if left else ""))


def from_state_0(trace: Trace, pair: MarkovPair) -> tuple[np.ndarray, str]:
    """The calls that start in state 0 and are one iteration of the rule given the past: the
    first call of each run; on an i.i.d. instance (one state) every call — under Alg. 1 each is
    a fresh iteration from state 0, so the blocks are i.i.d. and every call counts."""
    if pair.n_states == 1:
        return np.ones(trace.n_calls, dtype=bool), f"every call ({trace.n_calls}; one state: each starts in state 0)"
    return trace.first, f"first call of {int(trace.first.sum())} runs"


def block_law(trace: Trace, pair: MarkovPair, alpha: float) -> Evidence:
    """Law of the block emitted by one call from state 0 (:func:`from_state_0`) against the exact
    enumeration of one iteration; a block outside its support is an immediate fail."""
    law = exact_sd.block_distribution(pair, trace.gamma, start_state=0)
    blocks = list(law)
    index = {b: i for i, b in enumerate(blocks)}
    counts = np.zeros(len(blocks) + 1)
    sel, which = from_state_0(trace, pair)
    for row, L in zip(trace.emitted[sel], trace.length[sel]):
        counts[index.get(tuple(int(t) for t in row[:L]), len(blocks))] += 1
    probs = np.array([law[b] for b in blocks] + [0.0])
    return stats.chisquare_gof(label(trace), counts, probs, alpha=alpha, tolerance_w=TOL_W,
                               note=f"{which}; {len(blocks)} possible blocks (exact enumeration), one cell for any "
                                    "other block")


def bonus_by_state(trace: Trace, pair: MarkovPair, alpha: float) -> Evidence:
    """Bonus token (a call that accepted all γ drafts) against p(·|s) in the state s it is
    drawn in, all states in one chi-square (cells (s, x), expected n_s·p(x|s))."""
    full = trace.length == trace.gamma + 1
    n = int(full.sum())
    if n == 0:
        return stats.info("mc", label(trace), None, None, n=0, test="bonus law by state",
                          note="no call accepted all γ drafts: no bonus token to test here")
    states = trace.states_along()[full, trace.gamma]
    toks = trace.emitted[full, trace.gamma]
    S, V = pair.n_states, pair.V
    counts = np.bincount(states * V + toks, minlength=S * V).astype(np.float64)
    n_s = counts.reshape(S, V).sum(axis=1)
    probs = (n_s[:, None] * pair.target.table).ravel() / n
    return stats.chisquare_gof(label(trace), counts, probs, alpha=alpha, tolerance_w=TOL_W,
                               note=f"{n} bonus tokens over {int((n_s > 0).sum())} states; df counted "
                                    "over the pooled cells (conservative for a stratified sample)")


def complete_blocks(trace: Trace, pair: MarkovPair, rng: np.random.Generator) -> np.ndarray:
    """(C, γ+1) blocks: each call's emitted tokens, then tokens drawn from p (inverse CDF, never
    a zero-mass token) along the state they reach, up to γ + 1. For a lossless verifier the
    completed block of a call started in state s has law p^{γ+1}(· | s) given everything
    before it (the definition of a valid verification: Leviathan et al. 2023, Thm 3.5)."""
    C, g1 = trace.n_calls, trace.gamma + 1
    V, S = pair.V, pair.n_states
    table = pair.target.table
    cdf = np.cumsum(table, axis=1)
    last = np.array([int(np.flatnonzero(r)[-1]) for r in table])
    out = np.empty((C, g1), dtype=np.int64)
    s = trace.start.copy()
    for i in range(g1):
        live = i < trace.length
        u = rng.random(C) * cdf[s, -1]
        drawn = np.minimum((cdf[s] <= u[:, None]).sum(axis=1), last[s])
        out[:, i] = np.where(live, trace.emitted[:, i], drawn)
        s = next_state(s, out[:, i], V, S)
    return out


def stratified_chisquare(instance: str, strata_counts, strata_probs, *, alpha: float, tolerance_w: float,
                         test: str, note: str = "", skip_impossible: bool = False) -> Evidence:
    """Chi-square over strata (cells pooled to ≥ 5 expected within each stratum): statistic
    Σ_strata Σ_cells (N − n p)²/(n p) on Σ_strata (cells − 1) degrees of freedom, the Markov-chain
    goodness-of-fit test of Anderson & Goodman (1957) when the strata are the states a token is
    drawn in (valid with random stratum sizes: each token is a fresh draw given the past). A draw
    in a zero-probability cell fails at once. ``measured`` = the draw-weighted empirical TV;
    ``detectable`` = Cohen's w (the root of the draw-weighted mean of the strata's w²)."""
    stat, df, n_tot, tv, impossible, multi = 0.0, 0, 0, 0.0, 0, 0
    for counts, probs in zip(strata_counts, strata_probs):
        counts = np.asarray(counts, dtype=np.float64)
        probs = np.asarray(probs, dtype=np.float64)
        if skip_impossible:
            impossible += int(counts[probs <= 0].sum())
            counts = np.where(probs > 0, counts, 0.0)
        n = int(counts.sum())
        if n == 0:
            continue
        n_tot += n
        tv += 0.5 * np.abs(counts - n * probs).sum()
        support = probs > 0
        if not skip_impossible:
            impossible += int(counts[~support].sum())
        multi += int(support.sum() > 1)
        c, p = stats.merge_cells(counts[support], probs[support], n)
        if len(c) < 2 or (p * n).min() < stats.MIN_EXPECTED:
            continue
        stat += float(((c - n * p) ** 2 / (n * p)).sum())
        df += len(c) - 1
    measured = tv / n_tot if n_tot else 0.0
    w_det = stats.chi2_detectable_w(df, n_tot, alpha) if df > 0 else np.inf
    if skip_impossible and impossible:
        note = f"{note}; {impossible} draw(s) of probability 0 left out (see impossible_tokens)"
        impossible = 0
    base = dict(n=n_tot, alpha=alpha, power=stats.POWER, detectable=w_det, tolerance=tolerance_w, note=note)
    if impossible:
        return Evidence("mc", instance, 0.0, measured, p_value=0.0, outcome="fail",
                        test=f"{test}: {impossible} draws in zero-probability cells", **base)
    if df == 0 and not multi and n_tot:
        # every stratum has one possible outcome: an exact check (a draw outside failed above);
        # detectable = the mass outside the support that n_tot draws reveal with probability 0.9
        base["detectable"] = 1.0 - (1.0 - stats.POWER) ** (1.0 / n_tot)
        return Evidence("mc", instance, 0.0, measured, p_value=1.0, outcome="pass",
                        test=f"{test}: single-outcome law in every stratum, exact check (every draw must land in "
                             "its one cell)", **base)
    if df == 0:
        return Evidence("mc", instance, 0.0, measured, p_value=1.0, outcome="underpowered",
                        test=f"{test}: no stratum with two cells of ≥ {stats.MIN_EXPECTED:g} expected draws", **base)
    p_value = float(sps.chi2.sf(stat, df))
    outcome = "fail" if p_value < alpha else ("pass" if w_det <= tolerance_w else "underpowered")
    return Evidence("mc", instance, 0.0, measured, p_value=p_value, outcome=outcome,
                    test=f"{test}: stratified chi-square, stat {stat:.1f} on {df} df (cells pooled to "
                         f"≥{stats.MIN_EXPECTED:g} expected within each stratum); measured = draw-weighted TV; "
                         "detectable = Cohen's w", **base)


def token_law_by_state(trace: Trace, pair: MarkovPair, alpha: float) -> Evidence:
    """Every token of every call's completed block (:func:`complete_blocks`) against p(·|s) in
    the state s it is drawn in, stratified by (position in the block, state): the emitted
    corrections and bonus tokens, and the draws that complete short blocks, position by
    position. Necessary for any lossless verifier, whatever its rule."""
    rng = np.random.default_rng(trace.completion_seed)
    blocks = complete_blocks(trace, pair, rng)
    V, S = pair.V, pair.n_states
    table = pair.target.table
    counts, probs = [], []
    s = trace.start.copy()
    for i in range(trace.gamma + 1):
        cells = np.bincount(s * V + blocks[:, i], minlength=S * V).reshape(S, V)
        for st in range(S):
            if cells[st].sum():
                counts.append(cells[st])
                probs.append(table[st])
        s = next_state(s, blocks[:, i], V, S)
    return stratified_chisquare(label(trace), counts, probs, alpha=alpha, tolerance_w=TOL_W, skip_impossible=True,
                                test="law of every token of each call's block completed from p, by (position, "
                                     "state)",
                                note=f"{trace.n_calls} calls × {trace.gamma + 1} positions; short blocks completed "
                                     "with fresh draws from p (seeded), so the law is p(·|s) for any lossless "
                                     "verifier")


#: the mass on zero-probability tokens (per emitted token) the impossible-token check must see with
#: probability 0.9 to pass: 1e-3 needs 2,302 emitted tokens
TOL_IMPOSSIBLE = 1e-3


def impossible_tokens(trace: Trace, pair: MarkovPair, alpha: float = 0.0) -> Evidence:
    """Every emitted token against the support of the target's row in the state it is emitted in:
    a token of probability exactly 0 given the call's inputs is a law failure with certainty (no
    level, no seed can make a lossless sampler emit one). Power: with n emitted tokens and none
    impossible, a sampler putting mass ε on zero-probability tokens per token is seen with
    probability 0.9 for ε ≥ 1 − 0.1^{1/n} (the instances with large vocabularies and sparse
    support make a clamp-like bug's ε grow with V); the check passes when that ε is within
    :data:`TOL_IMPOSSIBLE`. Where the target has no zero, nothing can be seen (info)."""
    table = pair.target.table
    n = int(trace.length.sum())
    if not (table <= 0).any():
        return stats.info("mc", label(trace), 0.0, 0.0, n=n, test="impossible tokens",
                          note="every token has p > 0 in every state of this instance: nothing to test")
    st = trace.states_along()
    live = trace.emitted >= 0
    bad = live & (table[np.maximum(st, 0), np.maximum(trace.emitted, 0)] <= 0)
    k = int(bad.sum())
    det = 1.0 - (1.0 - stats.POWER) ** (1.0 / n) if n else np.inf
    base = dict(n=n, alpha=None, power=stats.POWER, detectable=det, tolerance=TOL_IMPOSSIBLE,
                test="impossible tokens: every emitted token against the support of p(·|s) in its state; exact "
                     "(one is a failure with certainty); detectable = the mass on zero-probability tokens seen with "
                     "probability 0.9")
    if k:
        rows = np.flatnonzero(bad.any(axis=1))
        c0 = int(rows[0])
        call = int(trace.call_id[c0]) if trace.call_id is not None and len(trace.call_id) else c0 + 1
        i0 = int(np.flatnonzero(bad[c0])[0])
        return Evidence("mc", label(trace), 0.0, float(k), p_value=None, outcome="fail", **base,
                        note=f"{k} of {n} emitted tokens have probability 0 given their inputs; the first: call {call}, "
                             f"position {i0}, token {int(trace.emitted[c0, i0])} in state {int(st[c0, i0])}, "
                             f"emitted {trace.emitted[c0, :trace.length[c0]].tolist()}")
    return Evidence("mc", label(trace), 0.0, 0.0, p_value=None, outcome="pass" if det <= TOL_IMPOSSIBLE else "underpowered",
                    **base, note=f"{n} emitted tokens, none of probability 0")


def acceptance_by_state(trace: Trace, pair: MarkovPair, alpha: float) -> Evidence:
    """Acceptance of each verification attempt against β(s) = Σ min(p(·|s), q(·|s))."""
    g, S = trace.gamma, pair.n_states
    states = trace.states_along()
    tau = trace.length - 1
    attempts = np.zeros(S)
    accepts = np.zeros(S)
    for i in range(g):
        tried = tau >= i
        np.add.at(attempts, states[tried, i], 1)
        np.add.at(accepts, states[tau > i, i], 1)
    return stats.per_state_binomial(label(trace), attempts, accepts, pair.acceptance_by_state(),
                                    alpha=alpha, tolerance=TOL_ACCEPT,
                                    note=f"{int(attempts.sum())} attempts in {trace.n_calls} calls; "
                                         "τ = emitted − 1")


def expected_tau(trace: Trace, pair: MarkovPair, alpha: float) -> Evidence:
    """Mean accepted drafts per call against the chain DP E[τ | start state] (closed_forms.sd):
    the differences τ − E[τ | s] are martingale differences, so their mean has a CLT with the
    sample standard error even on a dependent stream of calls."""
    e = cf.expected_tokens_chain(pair, trace.gamma) - 1.0
    tau = (trace.length - 1).astype(np.float64)
    claimed = e[trace.start]
    d = tau - claimed
    n = d.size
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    return stats.z_test_mean(label(trace), float(claimed.mean()), mean=float(tau.mean()), se=se, n=n,
                             alpha=alpha, tolerance=TOL_TAU, what="accepted drafts per call",
                             note="claimed = mean over calls of the chain DP E[τ | start state]")


def tokens_per_call(trace: Trace, pair: MarkovPair, alpha: float) -> list[Evidence]:
    """Structure of every call (1 ≤ L ≤ γ+1; the emitted prefix is the drafted prefix; a
    correction never repeats the draft token it replaces, so an all-accepted draft is
    followed by its bonus: γ+1 tokens), then the law of L on first calls against the exact
    P(τ = L − 1) (``spectheory.exact.sd.tau_distribution``)."""
    g = trace.gamma
    ev = []
    if trace.draft is not None:
        L = trace.length
        bad_prefix = np.array([not np.array_equal(e[:l - 1], d[:l - 1]) for e, d, l in
                               zip(trace.emitted, trace.draft, L)])
        short = L <= g
        repeat = short & (trace.emitted[np.arange(trace.n_calls), np.maximum(L - 1, 0)]
                          == trace.draft[np.arange(trace.n_calls), np.minimum(L - 1, g - 1)])
        viol = int((bad_prefix | repeat).sum())
        ev.append(Evidence(
            "mc", label(trace), 0.0, float(viol), n=trace.n_calls,
            test="structure of every call: emitted = accepted draft prefix + one correction/bonus "
                 "token, and a correction never equals the rejected draft token (so γ accepts "
                 "give γ+1 tokens); claimed/measured = violating calls",
            outcome="fail" if viol else "pass",
            note=(f"{int(bad_prefix.sum())} calls emitted something other than the draft prefix; "
                  f"{int(repeat.sum())} calls ended on the rejected draft token itself "
                  "(as if γ accepts emitted no bonus)") if viol else ""))
    law = exact_sd.tau_distribution(pair, g, start_state=0)
    sel, which = from_state_0(trace, pair)
    counts = np.bincount(trace.length[sel] - 1, minlength=g + 1)
    ev.append(stats.chisquare_gof(label(trace, law="L"), counts, law, alpha=alpha, tolerance_w=TOL_W,
                                  note=f"emitted tokens per call, {which}, vs exact P(τ = L − 1)"))
    return ev


@dataclass(frozen=True)
class Check:
    id: str
    statement: str
    reference: str
    run: Callable
    #: how many Monte Carlo tests one trace gives this check (Bonferroni split)
    mc_tests: int
    #: negative controls that must fail this check (names in references.CONTROLS)
    controls: tuple
    #: applies to decoding steps too (no drafts seen)
    for_steps: bool = True
    #: "lossless" (any lossless verifier must hold it) or "standard" (Alg. 1 besides losslessness)
    group: str = "standard"


def _one(f):
    return lambda t, pair, a: [f(t, pair, a)]


#: name of the lossless verifier with another rule (spectheory.conformance.references)
NONSTANDARD = "lossless:accept=p(x)"

IMPOSSIBLE_ID = "conformance.impossible_tokens"
#: the negative control of the impossible-token check (spectheory.conformance.references)
CLAMP = "residual-clamped-1e-5"

CHECKS = (
    Check(IMPOSSIBLE_ID, "No emitted token has probability 0 under the target given the call's inputs (lossless; "
          "one such token is a proof).", "Leviathan et al. 2023, Thm 3.5 (the output law is the target's)",
          _one(impossible_tokens), 0, (CLAMP,), group="lossless"),
    Check("conformance.first_tokens", "The first N emitted tokens are distributed as p^N (lossless).",
          "Leviathan et al. 2023, Thm 3.5; claim sd.lossless", _one(first_tokens), 1,
          ("residual=norm(p)", "accept=min(1,q/p)", "bonus-from-row-γ−1"), group="lossless"),
    Check("conformance.token_law_by_state", "Every token of a call's block (correction, bonus, or a draw "
          "from p completing a short block) has law p(·|s) in the state s it is drawn in, at every "
          "position (lossless).", "Leviathan et al. 2023, Thm 3.5 (a valid verification, call by call)",
          _one(token_law_by_state), 1, ("residual=norm(p)", "accept=min(1,q/p)", "bonus-from-row-γ−1"),
          group="lossless"),
    Check("conformance.block_law", "The block emitted by one call has the exact law of one iteration "
          "(enumerated from the rule).", "Leviathan et al. 2023, Alg. 1", _one(block_law), 1,
          ("residual=norm(p)", "accept=min(1,q/p)", "no-bonus", "bonus-from-row-γ−1", NONSTANDARD)),
    Check("conformance.bonus_by_state", "After γ accepts, the bonus token is drawn from p(·|s) in the "
          "state s reached by the accepted drafts.", "Leviathan et al. 2023, Alg. 1 (last line)",
          _one(bonus_by_state), 1, ("bonus-from-row-γ−1",)),
    Check("conformance.acceptance_by_state", "Each drafted token is accepted with probability "
          "β(s) = Σ min(p(·|s), q(·|s)) in its state s.", "Leviathan et al. 2023, Def. 3.1; claim sd.acceptance",
          _one(acceptance_by_state), 1, ("accept=min(1,q/p)", NONSTANDARD)),
    Check("conformance.expected_tau", "Mean accepted drafts per call equals the chain DP "
          "E[τ | start state] = Σ_{k=1}^{γ} (A^k 1)[s].", "Leviathan et al. 2023, Eq. 1; claim sd.expected_tokens",
          _one(expected_tau), 1, ("accept=min(1,q/p)", "no-bonus", NONSTANDARD)),
    Check("conformance.tokens_per_call", "Every call emits the accepted draft prefix plus one "
          "correction or bonus token (γ+1 after all accepts), with the exact law of the count.",
          "Leviathan et al. 2023, Alg. 1", tokens_per_call, 1, ("no-bonus", "accept=min(1,q/p)", NONSTANDARD)),
)
GROUPS = ("lossless", "standard")
