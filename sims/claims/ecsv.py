"""Claims ``ecsv.*``: error-correcting speculative decoding by branch voting ("Error-Correcting
Speculative Decoding via Branch Voting" (ECSV), anonymous manuscript under revision, 2026).

Notation: ``p`` target (the verifier), ``q`` draft (the drafter), ``B`` branches of depth ``k``.
Two models are kept apart (docs/ecsv.md): the paper's *channel model* (branch b reports the
true symbol with probability 1 − ε_b, else a uniform other token) where ``ecsv.map`` and the
majority sentences live, and the *drafting model* (branches are drafts from q, the verifier
samples from p independently), where speculative decoding lives.

Each check takes the subject under test; the negative controls are broken versions of it that
run through exactly the same comparisons. Monte Carlo evidence uses the Numba kernels of
:mod:`spectheory.montecarlo.ecsv` (or, for the channel model, draws from the exact joint law);
every statistical comparison states its test, n, α (the report's per-test level, split further
where one evidence item makes several comparisons) and power.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from scipy import stats as _st

from spectheory.closed_forms import ecsv as cf
from spectheory.exact import ecsv as ex
from spectheory.judge import stats
from spectheory.judge.evidence import Evidence
from spectheory.montecarlo import ecsv as mc
from spectheory.pairs import perturbed_pair
from spectheory.rules import ecsv as R

from ..registry import Choice, Control, Part, Reading, Scope, register
from ..shapes import grid, label, least_slack, mc_bound, mc_law, mc_mean, sweep
from ..slack import PairSpace, exhaustive, search_pairs

PAPER = "ecsv2026"


# --- shared instances ------------------------------------------------------------------------------

def small_source(eps: float, seed: int = 11):
    """A V = 3, order-1 source for exact enumeration: a peaked Dirichlet(0.3) target, the draft
    mixed with noise of weight ε."""
    return perturbed_pair(3, 1, concentration=0.3, how="mix", strength=eps, seed=seed,
                          name=f"mix{eps:g}-V3-o1-c0.3-s{seed}")


#: small sources of the exact harness (alignment levels as in the Monte Carlo harness)
SMALL = {"aligned": (0.1, 11), "medium": (0.4, 11), "weak": (0.7, 11)}


@lru_cache(maxsize=None)
def small_sources() -> dict:
    return {name: small_source(eps, seed) for name, (eps, seed) in SMALL.items()}


@lru_cache(maxsize=None)
def harness_sources() -> dict:
    return mc.default_sources()


@lru_cache(maxsize=None)
def held_out_sources() -> dict:
    return mc.default_sources(seed=999)


def _z_level(alpha: float, n_comparisons: int) -> float:
    return float(_st.norm.isf(alpha / max(1, n_comparisons)))


@lru_cache(maxsize=8192)
def _step_law(pair, method: R.Method, B: int, k: int, state: int = 0, drafter: R.Drafter = R.CLEAN):
    """Cached exact step law (pairs, methods and drafters are immutable; the runner runs a family's
    subject and controls in one process, so they share it)."""
    return ex.step_law(R.Setup(pair, method, B, k, drafter), state)


@lru_cache(maxsize=8192)
def _long_run(pair, method: R.Method, B: int, k: int, drafter: R.Drafter = R.CLEAN) -> dict:
    return ex.long_run(R.Setup(pair, method, B, k, drafter))


# =================================================================================================
# ecsv.map
# =================================================================================================

@dataclass(frozen=True)
class Weighting:
    """A rule for the voting weights from the branches' error rates: ``weights(ε, V)``."""

    name: str
    kind: str  # "map": log((1−ε)(V−1)/ε); "binary": log((1−ε)/ε); "uniform": 1

    def weights(self, eps, V: int) -> np.ndarray:
        if self.kind == "map":
            return cf.map_weights(eps, V)
        if self.kind == "binary":
            return cf.binary_weights(eps)
        return np.ones(np.size(eps))


MAP_WEIGHTS = Weighting("log((1−ε)(V−1)/ε)", "map")
BINARY_WEIGHTS = Weighting("log((1−ε)/ε)", "binary")
UNIFORM_WEIGHTS = Weighting("uniform", "uniform")


def _map_grid() -> list[dict]:
    rng = np.random.default_rng(2026)
    pts = []
    for V in (2, 3, 5):
        for B in (1, 2, 3, 4):
            if V ** (B + 1) > 4000:
                continue
            for _ in range(4):
                pts.append({"V": V, "eps": tuple(np.round(rng.uniform(0.02, 0.9, B), 3).tolist())})
    pts += [{"V": 6, "eps": (0.3, 0.6, 0.6, 0.6)}, {"V": 5, "eps": (0.1, 0.3, 0.45)}, {"V": 4, "eps": (0.2, 0.45, 0.45)}]
    for p in pts:
        p["eps"] = list(p["eps"])
    return pts


#: a non-uniform prior per V for the printed (prior-free) reading
def _prior(V: int) -> tuple:
    return (0.6,) + (0.4 / (V - 1),) * (V - 1)


def map_mismatch(weighting: Weighting, V: int, eps, prior=None):
    """(0, the number of observation tuples where the weighted vote's argmax set differs from
    the brute-force posterior's) under the channel model with ``prior`` (None: uniform)."""
    r = cf.map_vote_mismatch(eps, V, prior=prior, weights=weighting.weights(eps, V))
    return 0.0, float(r["n_mismatch"]), r


#: Monte Carlo instance: V = 6, four branches of heterogeneous reliability
MAP_MC = {"V": 6, "eps": (0.3, 0.6, 0.6, 0.6)}


def _channel_draws(law: np.ndarray, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    V = law.shape[0]
    B = law.ndim - 1
    idx = rng.choice(law.size, size=n, p=law.ravel() / law.sum())
    digits = np.array(np.unravel_index(idx, law.shape)).T
    return digits[:, 0], digits[:, 1:].reshape(n, B) if B else np.zeros((n, 0), dtype=int)


def vote_correct(weights, V: int, y, obs) -> np.ndarray:
    """Per draw, P(the weighted vote equals y) with ties broken uniformly at random (the
    conditional expectation of the 0/1 outcome: unbiased for the accuracy, less variance)."""
    w = np.asarray(weights, dtype=np.float64)
    scores = (w[None, :, None] * (obs[:, :, None] == np.arange(V))).sum(axis=1)
    m = scores.max(axis=1, keepdims=True)
    sets = scores >= m - cf.TIE_TOL * np.maximum(1.0, np.abs(m))
    return sets[np.arange(y.size), y] / sets.sum(axis=1)


def _map_scope(pair=None, V=None, eps=None, prior=None, **settings) -> str | None:
    """At least two branches (a vote to compare with MAP), error rates in (0, 1), a prior with full
    support."""
    if eps is not None:
        e = np.asarray(eps, dtype=float)
        if e.size < 2:
            return f"B = {e.size}: one branch, no vote"
        if not ((e > 0) & (e < 1)).all():
            return "an error rate outside (0, 1)"
    if prior is not None and not (np.asarray(prior, dtype=float) > 0).all():
        return "a prior without full support"
    return None


def check_map(ctx, weighting: Weighting):
    ev = []
    pts = [p for p in _map_grid() if ctx.out_of_scope(None, V=p["V"], eps=p["eps"]) is None]
    with ctx.part("uniform-prior"):
        ev.append(sweep(lambda pt: label("channel model", V=pt["V"], ε=pt["eps"]), pts,
                        lambda V, eps: map_mismatch(weighting, V, eps)[:2],
                        what="observation tuples where the vote's argmax set ≠ the posterior's (uniform prior)"))
    with ctx.part("printed"):
        ev.append(sweep(lambda pt: label("channel model", V=pt["V"], ε=pt["eps"], prior=_prior(pt["V"])),
                        [p for p in pts if p["V"] in (2, 3)],
                        lambda V, eps: map_mismatch(weighting, V, eps, _prior(V))[:2],
                        what="observation tuples where the vote's argmax set ≠ the posterior's (prior 0.6, rest equal)"))
    n = ctx.size(200_000, 40_000)
    V, eps = MAP_MC["V"], MAP_MC["eps"]
    for part, prior in (("uniform-prior", None), ("printed", _prior(V))):
        law = cf.channel_law(eps, V, prior)
        y, obs = _channel_draws(law, n, ctx.rng("map", part))
        ok = vote_correct(weighting.weights(eps, V), V, y, obs)
        bayes = cf.bayes_accuracy(eps, V, prior)
        ev.append(mc_mean(ctx, label("channel model draws", V=V, ε=eps, prior="uniform" if prior is None else prior),
                          bayes, ok, tolerance=0.02, what="accuracy of the weighted vote (claimed: MAP's exact accuracy)",
                          note=f"{n} draws (y, t̂) from the exact joint law; ties broken uniformly", part=part))
    return ev


def shrink_map(ctx, weighting: Weighting):
    """Smallest in-scope (V, B ≥ 2, ε, prior) where the printed reading fails strictly (the vote's
    token has a smaller posterior than MAP's, not a tie), on a grid in size order."""
    for V in (2, 3):
        for eps in ((0.1, 0.2), (0.1, 0.3), (0.2, 0.3), (0.1, 0.4), (0.2, 0.4), (0.3, 0.4)):
            for pr in ((0.6, 0.4), (0.7, 0.3), (0.8, 0.2)) if V == 2 else (_prior(V),):
                if ctx.out_of_scope(None, V=V, eps=eps, prior=pr):
                    continue
                _, measured, r = map_mismatch(weighting, V, eps, pr)
                if measured > 0 and r["max_gap"] > 1e-12:  # a strict loss, not a tie
                    return {"part": "printed", "V": V, "B": len(eps), "eps": list(eps), "prior": list(pr),
                            "observation": list(r["worst"][0]), "map": list(r["worst"][1]),
                            "vote": list(r["worst"][2]), "claimed": 0.0, "measured": measured,
                            "source": "the channel model of the paper (independent symmetric branch noise), y drawn "
                                      "from a non-uniform prior as the paper's coding view draws it from p_V",
                            "call": f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.map_mismatch(spectheory.sims.claims.ecsv."
                                    f"{_weighting_name(weighting)}, {V}, {list(eps)!r}, {list(pr)!r})[:2]"}
    return None


def map_vote_identity(weight=None) -> tuple[bool, str]:
    """Sympy: with a uniform prior, is log P(t̂ | y) − Σ_b weight(ε_b, V) 1[t̂_b = y] free of y (then
    MAP = the weighted vote)? ``weight(ε, f, u)`` with f = 1 − ε, u = V − 1; default the paper's
    log((1−ε)(V−1)/ε)."""
    return _map_identity(weight)


def _weighting_name(weighting: Weighting) -> str:
    return {MAP_WEIGHTS: "MAP_WEIGHTS", BINARY_WEIGHTS: "BINARY_WEIGHTS", UNIFORM_WEIGHTS: "UNIFORM_WEIGHTS"}[weighting]


def _proof_map_uniform() -> tuple[bool, str]:
    """Uniform prior: log P(t̂ | y) − Σ_b w_b 1[t̂_b = y] does not depend on y (so MAP = the vote)."""
    return _map_identity(None)


def _map_identity(weight) -> tuple[bool, str]:
    """For a symbolic number of branches B: the log-likelihood and the vote's score are sums over b of
    one term per branch, so the difference is free of every indicator 1[t̂_k = y] iff its derivative
    in I_k (a KroneckerDelta-weighted sum over b = 1..B) has a summand that simplifies to 0."""
    import sympy as sp
    B = sp.Symbol("B", integer=True, positive=True)            # any number of branches
    b, k = sp.symbols("b k", integer=True, positive=True)
    e = sp.IndexedBase("epsilon", positive=True)               # ε_b
    f = sp.IndexedBase("f", positive=True)                     # 1 − ε_b (positive: ε_b < 1)
    I = sp.IndexedBase("I")                                    # I_b = 1[t̂_b = y] ∈ {0, 1}
    u = sp.Symbol("u", positive=True)                          # V − 1 (positive: V ≥ 2)
    wf = weight or (lambda e_, f_, u_: sp.log(f_ * u_ / e_))
    loglik_minus_vote = sp.Sum(I[b] * sp.log(f[b]) + (1 - I[b]) * sp.log(e[b] / u) - I[b] * wf(e[b], f[b], u),
                               (b, 1, B))
    d = sp.diff(loglik_minus_vote, I[k])                       # Σ_b δ_bk (∂ of branch b's term)
    rest = sp.simplify(sp.expand_log(d.function, force=True))
    ok = rest == 0
    return ok, ("∂/∂1[t̂_k = y] of Σ_(b=1..B) {log[(1−ε_b) if t̂_b = y else ε_b/(V−1)] − 1[t̂_b = y] w_b} = "
                f"Σ_b δ_bk·({rest}) (f_b = 1 − ε_b, u = V − 1, B symbolic): "
                + ("zero for every k and every B, so with a uniform prior the log-posterior is the vote's score "
                   "plus a constant" if ok else "not zero: the vote is not MAP"))


register(
    id="ecsv.map", paper=PAPER, reference="Method, 'Coding-theoretic view'",
    statement="Under independent branch noise with known ε_{b,j} and a uniform error over the other V−1 tokens, "
              "MAP decoding of the true token equals the weighted vote with weights log((1−ε)(V−1)/ε).",
    interpretation="The channel model: y drawn from a prior; branch b reports y w.p. 1 − ε_b, else a token uniform "
                   "over the other V − 1; branches independent given y. Principal ('printed'): the paper's own view "
                   "draws y_j from p_V, a non-uniform prior, and its MAP formula has no prior term; MAP = the "
                   "weighted vote is checked with a non-uniform prior (0.6 on one token, the rest equal) and fails. "
                   "Beside it ('uniform-prior'): with a uniform prior the log-likelihood identity makes MAP = the "
                   "weighted vote exactly (an identity, proved). Exact: the argmax set of the brute-force posterior "
                   "against the vote's on every observation tuple (B ≥ 2). MC: draws from the joint law, the vote's "
                   "accuracy against MAP's exact accuracy.",
    parts=(Part("printed", "As printed, y drawn from the verifier's (non-uniform) distribution: MAP = the weighted "
                           "vote.", relation="="),
           Part("uniform-prior", "With a uniform prior on y, the MAP token set equals the weighted vote's argmax "
                                 "set with w_b = log((1−ε_b)(V−1)/ε_b), on every observation tuple.", relation="=",
                identity=True, proof=_proof_map_uniform,
                proved_for="general: any number of branches B (symbolic), any V ≥ 2 and ε_b ∈ (0, 1)")),
    readings=(
        Reading("printed", "MAP decoding of y_j, drawn from p_V as the coding view says, given independent symmetric "
                "branch noise, is the reliability-weighted vote with weights log((1−ε)(V−1)/ε).", ("printed",),
                role="principal",
                quote="Method, Coding-theoretic view: 'For position j, the unknown correct symbol y_j is drawn from "
                      "pV(. | x, t*,1:j-1).' ... 'Under independent branch noise with known ε_b,j, MAP decoding "
                      "reduces to a reliability-weighted majority: choose y_j maximizing sum_b log( (1−ε_b,j) if "
                      "t̂_b,j = y_j else ε_b,j/(V−1) ), where V is vocab size.'",
                why="MAP maximises the posterior, log p_V(y) plus the branches' log-likelihood; the paper draws y_j "
                    "from p_V (not uniform in general) and its maximand drops log p_V(y), so the statement as "
                    "printed is about that prior."),
        Reading("uniform-prior", "The same with a uniform prior on y (maximum likelihood).", ("uniform-prior",),
                kind="tacit-assumption",
                why="The identity the formula needs; the paper never states it, and its own view contradicts it.")),
    scope=Scope("Channel settings with at least two branches (a vote), error rates in (0, 1) and a prior with full "
                "support; the printed reading's mechanism (a prior term) needs a non-uniform prior.", guard=_map_scope),
    check=check_map, subject=MAP_WEIGHTS, mc_tests=2, shrink=shrink_map,
    controls=(Control("binary weights log((1−ε)/ε)", BINARY_WEIGHTS,
                      "negative control: the two-symbol weights, without the (V − 1) factor"),
              Control("uniform weights", UNIFORM_WEIGHTS,
                      "negative control: weights that ignore the branches' reliability")))


# =================================================================================================
# ecsv.majority
# =================================================================================================

@dataclass(frozen=True)
class Voter:
    """How fused tokens are chosen from scores: ``pick`` "max" (the fusion rule) or "min" (the
    least-supported voted token: a broken control); ``weights`` of the channel model ("map" or
    "uniform")."""

    name: str
    pick: str = "max"
    weights: str = "map"


FUSION = Voter("weighted vote (argmax of the fusion score)")
MINORITY = Voter("minority vote", pick="min")
UNWEIGHTED = Voter("unweighted vote", weights="uniform")


def _decide_sets(voter: Voter, scores: np.ndarray, voted: np.ndarray) -> np.ndarray:
    """Argmax (or argmin over voted tokens) sets of score rows."""
    if voter.pick == "max":
        m = scores.max(axis=-1, keepdims=True)
        return scores >= m - cf.TIE_TOL * np.maximum(1.0, np.abs(m))
    s = np.where(voted, scores, np.inf)
    m = s.min(axis=-1, keepdims=True)
    return voted & (s <= m + cf.TIE_TOL * np.maximum(1.0, np.abs(m)))


def voter_accuracy(voter: Voter, eps, V: int, law=None) -> float:
    """Accuracy of the voter under the channel law (default independent, uniform prior)."""
    law = cf.channel_law(eps, V) if law is None else law
    w = cf.map_weights(eps, V) if voter.weights == "map" else np.ones(len(eps))
    scores = cf.vote_scores(w, V)
    obs = cf._obs_index(V, len(eps))
    voted = (obs[:, :, None] == np.arange(V)).any(axis=1)
    return cf.accuracy(law, _decide_sets(voter, scores, voted))


def share_violations(voter: Voter, B: int, V: int) -> tuple:
    """(0, number of configurations where more than half of the weight is on y but the voter's
    fused token is not y), over every token tuple of B branches and every weight vector on the
    grid {0.5, 1, 2}^B (hard vote)."""
    import itertools
    toks = np.array(list(itertools.product(range(V), repeat=B)), dtype=np.int64).reshape(-1, B)
    ws = np.array(list(itertools.product((0.5, 1.0, 2.0), repeat=B)))
    onehot = toks[:, None, :, None] == np.arange(V)                       # (T, 1, B, V)
    scores = (ws[None, :, :, None] * onehot).sum(axis=2)                  # (T, W, V)
    voted = np.broadcast_to(onehot.any(axis=2), scores.shape)
    fused = np.argmax(_decide_sets(voter, scores, voted), axis=-1)        # (T, W)
    major = scores > ws.sum(axis=1)[None, :, None] / 2                    # (T, W, V): y with > ½
    bad = major & (fused[..., None] != np.arange(V))
    return 0.0, float(bad.sum()), {"configurations": int(major.sum())}


#: channel-model settings for the probabilistic readings
PROB_GRID = [{"V": V, "eps": list(e)} for V in (2, 3) for e in ((0.1, 0.3), (0.2, 0.2), (0.05, 0.45), (0.1, 0.3, 0.3),
                                                          (0.01, 0.4, 0.4), (0.3, 0.3, 0.3), (0.2, 0.35, 0.45, 0.3))]
#: "weakly informative, diverse" independent binary branches with mean ε < 1/2 (B = 2: unequal ε)
S2_GRID = [{"eps": list(e)} for e in ((0.1, 0.3), (0.05, 0.45), (0.3, 0.3, 0.3), (0.45, 0.45, 0.45), (0.49, 0.49, 0.49),
                                 (0.1, 0.3, 0.3), (0.05, 0.7, 0.7), (0.2, 0.35, 0.45, 0.3), (0.4, 0.4, 0.4, 0.4, 0.4))]


def prob_vs_best(voter: Voter, V: int, eps):
    """(max_b P(t̂_b = y), P(vote = y)) under the independent channel model."""
    return 1.0 - min(eps), voter_accuracy(voter, eps, V)


def best_branch_slack(voter: Voter, V: int, eps) -> float:
    """P(vote = y) − max_b P(t̂_b = y) (≥ 0: the vote is at least as good as every branch)."""
    best, acc = prob_vs_best(voter, V, eps)
    return acc - best


def mean_branch_slack(voter: Voter, eps) -> float:
    """P(vote = y) − mean_b P(t̂_b = y), independent binary branches."""
    mean, acc = s2_vs_mean(voter, eps)
    return acc - mean


def s2_vs_mean(voter: Voter, eps):
    """(mean_b P(t̂_b = y), P(vote = y)), independent binary branches (V = 2)."""
    return 1.0 - float(np.mean(eps)), voter_accuracy(voter, eps, 2)


def correlated_vs_branch(voter: Voter):
    """(a single branch's accuracy, the vote's), coalescing errors (closed_forms.ecsv.coalescing_counterexample)."""
    c = cf.coalescing_counterexample()
    return float(c["branch_accuracy"].max()), voter_accuracy(voter, (0.3, 0.3, 0.3), 2, law=c["law"])


def drafting_vs_branch(voter: Voter, pair, B: int, state: int):
    """(P(one draft = the verifier's sample), P(the fused token of B drafts = it)) in a state of a
    Markov pair — the drafting model: drafts never see the verifier's sample. The plurality
    (ties: larger q, then smaller id) by :func:`spectheory.closed_forms.ecsv.vote_match_iid`; the
    minority control (the least-voted drafted token; ties: smaller q, then larger id) by the same
    enumeration over vote counts."""
    p, q = pair.target.conditional(state), pair.draft.conditional(state)
    single = cf.single_branch_match(p, q)
    if voter.pick == "max":
        return single, cf.vote_match_iid(p, q, B)
    V = p.size
    c = cf.compositions(B, V)
    lp = cf._multinomial_logp(c, q)
    order = sorted(range(V), key=lambda t: (q[t], -t))
    pref = np.empty(V, dtype=np.int64)
    pref[order] = np.arange(V)
    key = np.where(c > 0, c * V + pref[None, :], np.iinfo(np.int64).max)
    win = np.argmin(key, axis=1)
    keep = np.isfinite(lp)
    return single, float((np.exp(lp[keep]) * p[win[keep]]).sum())


def _majority_scope(pair=None, eps=None, state=None, B=None, **settings) -> str | None:
    """Sentence 2's premise, 'weakly informative, diverse branches (ε_{b,j} < 0.5 on average)', and
    at least two branches. Channel settings: the branches' mean ε. Drafting model: ε = 1 − Σ p·q,
    the probability that one draft misses the verifier's sample, in the context ``state`` (at one
    position, averaged over the branches, which are i.i.d.), or with ``state=None`` averaged over
    the target's stationary law (the 'averaged over positions' reading)."""
    if B is not None and B < 2:
        return f"B = {B}: one branch, no vote"
    if eps is not None:
        e = np.asarray(eps, dtype=float)
        if e.size < 2:
            return f"B = {e.size}: one branch, no vote"
        if e.mean() >= 0.5:
            return f"mean ε = {e.mean():.3f} ≥ ½: not 'weakly informative (ε < 0.5 on average)'"
        return None
    if pair is not None:
        e = drafting_eps(pair, state)
        where = f"in state {state}" if state is not None else "averaged over the stationary law"
        if e >= 0.5:
            return (f"ε = 1 − Σ p·q = {e:.3f} ≥ ½ {where}: not 'weakly informative (ε < 0.5 on average)'")
    return None


MAJORITY_SCOPE = Scope("Independent branches, at least two, whose error rates are below ½ on average (the paper's "
                       "'weakly informative, diverse branches (ε_b,j < 0.5 on average)', ε_b,j the error of branch b "
                       "at position j, averaged over the branches at the position): channel settings by their mean "
                       "ε; in the drafting model a context (position) where one draft misses the verifier's sample "
                       "with probability ε = 1 − Σ p·q < ½ (the drafts are i.i.d., so every branch has that ε; the "
                       "other reading, ε averaged over the target's stationary law of contexts, is reported beside "
                       "it). Non-degeneracy: a point-mass draft makes every branch the same token, so a vote cannot "
                       "differ from one draft.", guard=_majority_scope, degenerate=("point-mass draft",))


def drafting_eps(pair, state=None) -> float:
    """ε = 1 − Σ_t p(t) q(t) in ``state``, or averaged over the target's stationary law (None)."""
    if state is not None:
        return 1.0 - cf.single_branch_match(pair.target.conditional(state), pair.draft.conditional(state))
    return float(pair.target.stationary() @ np.array([drafting_eps(pair, s) for s in range(pair.n_states)]))


def drafting_slack(pair, B: int, state: int = 0, voter: Voter = FUSION) -> float:
    """P(the fused token of B drafts = the verifier's sample) − P(one draft = it), in ``state``."""
    single, vote = drafting_vs_branch(voter, pair, B, state)
    return vote - single


def averaged_drafting(voter: Voter, pair, B: int):
    """(P(one draft = the verifier's sample), P(the fused token of B drafts = it)), both averaged
    over the target's stationary law of contexts."""
    pi = pair.target.stationary()
    rows = np.array([drafting_vs_branch(voter, pair, B, s) for s in range(pair.n_states)])
    return float(pi @ rows[:, 0]), float(pi @ rows[:, 1])


def averaged_drafting_source():
    """A V = 3, order-1 pair whose drafts miss the verifier's sample with probability 0.445 on
    average over contexts (< ½) while in context 0 the drafter's mode (token 2) is not the
    target's (token 1): the vote's loss there outweighs its gain in the aligned contexts."""
    from spectheory.pairs import pair_from_tables
    p = [[0.05, 0.85, 0.10], [0.98, 0.01, 0.01], [0.50, 0.10, 0.40]]
    q = [[0.05, 0.15, 0.80], [0.98, 0.01, 0.01], [0.95, 0.01, 0.04]]
    return pair_from_tables(p, q, order=1, name="averaged-eps-V3-o1")


@lru_cache(maxsize=None)
def drafting_sources() -> dict:
    """Markov pairs for the drafting part: the harness sources (every context has ε > ½: outside the
    sentence's premise), the V = 3 sources and an aligned V = 8 source (most contexts in scope)."""
    return {**harness_sources(), **{f"{n} V3": p for n, p in small_sources().items()},
            "aligned V8": perturbed_pair(8, 1, concentration=0.1, how="mix", strength=0.1, seed=11,
                                         name="mix0.1-V8-o1-c0.1-s11")}


def soft_vote_instance(lam: float) -> dict:
    """Three branches on (y, y, t) with weights (1, 1, w3), every drafter row (0.05, 0.9, 0.05): y = 0
    holds 2/(2 + w3) > ½ of the weight; w3 is halfway between the least weight at which the soft
    vote (λ > 0) overturns y, (2 − 1.7λ)/(1 + 0.85λ), and 2."""
    thr = (2.0 - 1.7 * lam) / (1.0 + 0.85 * lam)
    w3 = 1.0 if abs(lam - 0.5) < 1e-12 else (max(thr, 0.0) + 2.0) / 2.0
    return {"tokens": np.array([0, 0, 1]), "weights": np.array([1.0, 1.0, w3]),
            "q_rows": np.array([[0.05, 0.9, 0.05]] * 3), "lam": float(lam), "truth": 0}


def soft_vote_slip(voter: Voter, lam: float) -> tuple:
    """(0, 1 if the fused token ≠ y despite more than half of the weight on y, else 0) for the
    soft vote S(t) = Σ w 1[t̂ = t] + λ Σ w q_b(t) on :func:`soft_vote_instance`."""
    c = soft_vote_instance(lam)
    s = cf.position_scores(c["tokens"], c["weights"], c["q_rows"], c["lam"])
    fused = int(np.flatnonzero(_decide_sets(voter, s[None], np.ones((1, 3), dtype=bool))[0])[0])
    share = 2.0 / c["weights"].sum()
    return 0.0, float(fused != c["truth"]), {"scores": s, "share": share, "fused": fused}


def check_majority(ctx, voter: Voter):
    ev = []
    strict = dict(grade="bound", side="ge")
    with ctx.part("s1-share"):
        ev.append(sweep(lambda pt: label("fusion at one position, every token tuple, weights in {0.5,1,2}",
                                         B=pt["B"], V=pt["V"]),
                        grid(B=(1, 2, 3, 4), V=(2, 3)), lambda B, V: share_violations(voter, B, V),
                        what="configurations with > ½ of the weight on y where the fused token ≠ y"))
        n = ctx.size(100_000, 20_000)
        rng = ctx.rng("share")
        B, V = 5, 4
        toks = rng.integers(0, V, size=(n, B))
        w = rng.exponential(1.0, size=(n, B))
        y = rng.integers(0, V, size=n)
        onehot = toks[:, :, None] == np.arange(V)
        scores = (w[:, :, None] * onehot).sum(axis=1)
        sets = _decide_sets(voter, scores, onehot.any(axis=1))
        fused = np.argmax(sets, axis=1)
        major = np.take_along_axis(scores, y[:, None], 1)[:, 0] > w.sum(axis=1) / 2
        viol = (major & (fused != y)).astype(float)
        ev.append(mc_mean(ctx, label("random fusions", B=B, V=V, weights="Exp(1)"), 0.0, mean=float(viol.mean()),
                          se=float(max(viol.std(ddof=1), 1e-12) / np.sqrt(n)) if viol.any() else 0.0, n=n,
                          tolerance=1e-3, what="rate of majority-weight violations",
                          note=f"{n} random (tokens, weights, y); {int(major.sum())} with a weighted majority on y"))
    with ctx.part("s1-soft"):
        lam = float(ctx.choice("soft_lambda"))
        _, slip, d = soft_vote_slip(voter, lam)
        c = soft_vote_instance(lam)
        ev.append(stats.exact_equal(f"soft vote λ = {lam:g}, B = 3, weights {np.round(c['weights'], 3).tolist()}, "
                                    "votes (0, 0, 1), every q row (0.05, 0.9, 0.05)",
                                    0.0, slip, what="fused token ≠ y despite > ½ of the weight",
                                    note=f"weight share on y {d['share']:.3f}; scores {np.round(d['scores'], 3).tolist()}"))
    with ctx.part("s1-prob"):
        ev.append(sweep(lambda pt: label("independent channel", V=pt["V"], ε=pt["eps"]), PROB_GRID,
                        lambda V, eps: prob_vs_best(voter, V, eps), judge=_strict_tie(
                            "with B = 2, or one branch outweighing all the others, the MAP vote follows the most "
                            "reliable branch, so P(vote = y) = 1 − min ε exactly"), **strict,
                        what="P(vote = y) > max_b P(t̂_b = y)"))
    with ctx.part("s1-weak"):
        ev.append(sweep(lambda pt: label("independent channel", V=pt["V"], ε=pt["eps"]), PROB_GRID,
                        lambda V, eps: prob_vs_best(voter, V, eps), **strict,
                        what="P(vote = y) ≥ max_b P(t̂_b = y)"))
        ev.append(least_slack(ctx, "s1-weak", lambda: exhaustive(
            lambda V, e1, e2, e3: best_branch_slack(voter, V, (e1, e2, e3)),
            grid(V=(2, 3), e1=(0.05, 0.2, 0.45), e2=(0.05, 0.3, 0.49), e3=(0.1, 0.4)),
            call=lambda V, e1, e2, e3: f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.best_branch_slack("
                                       f"spectheory.sims.claims.ecsv.{_voter_name(voter)}, {V}, ({e1}, {e2}, {e3}))")))
    with ctx.part("s2-independent"):
        ev.append(sweep(lambda pt: label("independent binary branches, mean ε < ½", ε=pt["eps"]), S2_GRID,
                        lambda eps: s2_vs_mean(voter, eps), judge=_strict, **strict,
                        what="P(vote = y) > mean_b P(t̂_b = y)"))
        ev.append(least_slack(ctx, "s2-independent", lambda: exhaustive(
            lambda e: mean_branch_slack(voter, (e, e, e)), grid(e=(0.3, 0.4, 0.45, 0.49, 0.499)),
            call=lambda e: f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.mean_branch_slack(spectheory.sims.claims.ecsv."
                           f"{_voter_name(voter)}, ({e}, {e}, {e}))")))
        n = ctx.size(200_000, 40_000)
        eps = (0.3, 0.3, 0.3)
        y, obs = _channel_draws(cf.channel_law(eps, 2), n, ctx.rng("s2"))
        w = cf.map_weights(eps, 2) if voter.weights == "map" else np.ones(3)
        ok = vote_correct(w, 2, y, obs) if voter.pick == "max" else _minority_correct(w, 2, y, obs)
        ev.append(mc_bound(ctx, label("independent binary branches", ε=eps), 0.7, ok, side="ge", tolerance=0.02,
                           what="accuracy of the vote ≥ mean branch accuracy 0.7",
                           note=f"{n} draws; exact vote accuracy {voter_accuracy(voter, eps, 2):.4f}"))
    with ctx.part("s2-correlated"):
        c = cf.coalescing_counterexample()
        ev.append(sweep("coalescing errors: B = 3, each ε = 0.3, errors in pairs on a common wrong token",
                        [{}], lambda: correlated_vs_branch(voter), judge=_strict, **strict,
                        what="P(vote = y) > a single branch's P(t̂ = y)"))
        n = ctx.size(200_000, 40_000)
        y, obs = _channel_draws(c["law"], n, ctx.rng("coalesce"))
        ok = vote_correct(np.ones(3), 2, y, obs) if voter.pick == "max" else _minority_correct(np.ones(3), 2, y, obs)
        ev.append(mc_bound(ctx, "coalescing errors (draws)", 0.7, ok, side="ge", tolerance=0.02,
                           what="vote accuracy ≥ a single branch's 0.7", note=f"{n} draws from the exact joint law"))
    with ctx.part("drafting"):
        inside = []
        for name, pair in drafting_sources().items():
            outside = []
            for B in (3, 5):
                for state in range(pair.n_states):
                    if ctx.out_of_scope(pair, state=state, B=B) is None:
                        inside.append({"source": name, "B": B, "state": state})
                    else:
                        outside.append((B, state) + tuple(drafting_vs_branch(voter, pair, B, state)))
            if outside:  # one info line per source: the contexts outside the premise, and how the vote fares there
                B, state, single, vote = min(outside, key=lambda r: r[3] - r[2])
                eps = [drafting_eps(pair, st) for st in sorted({r[1] for r in outside})]
                ev.append(stats.info("exact", label(f"{name} source (V = {pair.V})", B=B, state=state), single, vote,
                                     test="P(plurality of B drafts = verifier's sample) vs P(one draft = it), the "
                                          "worst context outside the scope",
                                     note=f"outside the principal reading's premise (ε < ½ on average over the "
                                          f"branches at a position; the averaged-over-positions reading grades "
                                          f"them): {len(eps)} of "
                                          f"{pair.n_states} contexts have "
                                          f"ε = 1 − Σ p·q ≥ ½ ({min(eps):.3f}–{max(eps):.3f}); there the vote loses in "
                                          f"{sum(r[3] < r[2] for r in outside)} of {len(outside)} (context, B) "
                                          f"pairs, worst {vote:.4f} vs {single:.4f}"))
        srcs = drafting_sources()
        ev.append(sweep(lambda pt: label(f"{pt['source']} source (V = {srcs[pt['source']].V}) rows", B=pt["B"],
                                         state=pt["state"]), inside,
                        lambda source, B, state: drafting_vs_branch(voter, srcs[source], B, state), judge=_strict,
                        **strict, what="P(plurality of B drafts = verifier's sample) > P(one draft = it), contexts "
                                       "with ε < ½"))
        ev.append(least_slack(ctx, "drafting", lambda: search_pairs(
            drafting_slack, PairSpace(3, 0), budget=ctx.size(1500, 400), restarts=6, seed=7,
            settings={"B": 3, "state": 0, "voter": voter}, scope=MAJORITY_SCOPE),
            what="P(vote of 3 drafts = verifier's sample) − P(one draft = it), V = 3 pairs with ε < ½"))
    with ctx.part("drafting-averaged"):
        pts = []
        for name, pair in {"averaged-ε": averaged_drafting_source(), **{f"{n} V3": p for n, p in
                                                                       small_sources().items()}}.items():
            for B in (3, 5):
                why = ctx.out_of_scope(pair, state=None, B=B)
                if why is None:
                    pts.append({"source": name, "B": B, "pair": pair})
                elif B == 3:
                    ev.append(stats.info("exact", label(f"{name} source", B=B), *averaged_drafting(voter, pair, B),
                                         test="stationary averages: P(plurality = verifier's sample) vs one draft",
                                         note=f"outside the claim's scope: {why}"))
        by = {(p["source"], p["B"]): p["pair"] for p in pts}
        ev.append(sweep(lambda pt: label(f"{pt['source']} source, averaged over contexts (ε̄ = "
                                         f"{drafting_eps(by[(pt['source'], pt['B'])]):.3f})", B=pt["B"]),
                        [{"source": p["source"], "B": p["B"]} for p in pts],
                        lambda source, B: averaged_drafting(voter, by[(source, B)], B), judge=_strict, **strict,
                        what="stationary average of P(plurality of B drafts = verifier's sample) > one draft's, "
                             "average ε < ½"))
    return ev


def _strict(instance, claimed, measured, note):
    """Exact strict inequality ``measured > claimed`` (by more than 1e-12)."""
    ok = measured > claimed + 1e-12
    return Evidence("exact", instance, float(claimed), float(measured),
                    test="exact strict inequality measured > claimed (margin 1e-12)",
                    tolerance=1e-12, outcome="pass" if ok else "fail", note=note)


def _strict_tie(structure: str):
    """:func:`_strict` that marks a failure by equality only (|measured − claimed| ≤ 1e-12) as a tie,
    saying the tie's ``structure``."""
    def judge(instance, claimed, measured, note):
        ev = _strict(instance, claimed, measured, note)
        if ev.outcome == "fail" and abs(measured - claimed) <= 1e-12:
            ev.tie = True
            ev.note = ("fails by equality (tie): " + structure + (f"; {note}" if note else ""))
        return ev
    return judge


def _minority_correct(w, V, y, obs):
    scores = (np.asarray(w)[None, :, None] * (obs[:, :, None] == np.arange(V))).sum(axis=1)
    voted = (obs[:, :, None] == np.arange(V)).any(axis=1)
    sets = _decide_sets(MINORITY, scores, voted)
    return sets[np.arange(y.size), y] / sets.sum(axis=1)


def _voter_name(voter: Voter) -> str:
    return {FUSION: "FUSION", MINORITY: "MINORITY", UNWEIGHTED: "UNWEIGHTED"}.get(voter, "FUSION")


def shrink_majority(ctx, voter: Voter):
    """Counterexamples per failing part of the principal reading and beside it: the soft vote
    (λ in force) overturning a weighted majority; the smallest tie of 'P(fused = y) > every
    branch' (B = 2: the vote follows the better branch); the averaged-over-contexts drafting
    reading on its V = 3 pair."""
    out = []
    lam = float(ctx.choice("soft_lambda"))
    claimed, measured, d = soft_vote_slip(voter, lam)
    if measured != claimed:
        out.append({"part": "s1-soft", "B": 3, "V": 3, "lam": lam,
                    "weights": np.round(soft_vote_instance(lam)["weights"], 6).tolist(), "votes": [0, 0, 1],
                    "q_row": [0.05, 0.9, 0.05], "claimed": claimed, "measured": measured,
                    "source": f"weight share {d['share']:.3f} on y = 0; soft scores {np.round(d['scores'], 4).tolist()}",
                    "call": f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.soft_vote_slip(spectheory.sims.claims.ecsv."
                            f"{_voter_name(voter)}, {lam!r})[:2]"})
    for V in (2, 3):
        for eps in ((0.1, 0.3), (0.2, 0.2)):
            best, acc = prob_vs_best(voter, V, eps)
            if not acc > best + 1e-12:
                out.append({"part": "s1-prob", "V": V, "B": 2, "eps": list(eps), "claimed": best, "measured": acc,
                            "tie": abs(acc - best) <= 1e-12,
                            "source": "independent symmetric channel, uniform prior"
                                      + ("; fails by equality (tie): the vote follows the better branch"
                                         if abs(acc - best) <= 1e-12 else ""),
                            "call": f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.prob_vs_best(spectheory.sims.claims.ecsv."
                                    f"{_voter_name(voter)}, {V}, {tuple(eps)!r})"})
                break
        else:
            continue
        break
    pair = averaged_drafting_source()
    for B in (3, 5):
        single, vote = averaged_drafting(voter, pair, B)
        if not vote > single + 1e-12:
            out.append({"part": "drafting-averaged", "V": 3, "order": 1, "B": B, "claimed": single, "measured": vote,
                        "source": f"spectheory.sims.claims.ecsv.averaged_drafting_source(): mean ε {drafting_eps(pair):.3f} "
                                  "over the stationary law",
                        "call": f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.averaged_drafting(spectheory.sims.claims.ecsv."
                                f"{_voter_name(voter)}, spectheory.sims.claims.ecsv.averaged_drafting_source(), {B})"})
            break
    return out or None


def share_margin(threshold=None) -> tuple[bool, str]:
    """Sympy: if the true token holds s_y = threshold·W + d of the total weight W (d > 0), is every
    other token's score (at most W − s_y) below s_y for every W, d > 0? Default threshold ½."""
    import sympy as sp
    W, d = sp.symbols("W d", positive=True)
    thr = sp.Rational(1, 2) if threshold is None else sp.nsimplify(threshold)
    s_y = thr * W + d
    gap = sp.simplify((W - s_y) - s_y)
    ok = gap.is_negative is True
    return ok, (f"s_y = {thr}·W + d (W, d > 0): (W − s_y) − s_y = {gap}"
                + (" < 0, so every other token's score ≤ W − s_y is below s_y" if ok else ": not negative for every W, d"))


def _proof_share() -> tuple[bool, str]:
    """Sentence 1, deterministic: s_y > W/2 ⇒ every other token's score ≤ W − s_y < s_y."""
    return share_margin()


register(
    id="ecsv.majority", paper=PAPER, reference="'Why it should work', majority-decoding bound",
    statement="\"If more than half of the total reliability weight favors the true token, the fused token matches "
              "with probability greater than any single branch\"; \"with weakly informative, diverse branches "
              "(average ε < 0.5), reliability-weighted votes strictly improve correctness\".",
    interpretation="Sentence 1 read two ways for the reliability-weighted vote: (s1-share) deterministically — a "
                   "weight share > ½ on y makes the hard vote output y (an identity of the vote, proved); (s1-prob) "
                   "probabilistically under the independent channel model with MAP weights, P(vote = y) > every "
                   "branch's accuracy (its weak form s1-weak, ≥, beside it). "
                   "Sentence 2: (s2-independent) independent binary branches, mean ε < ½, unequal ε when B = 2 "
                   "('diverse'): P(vote = y) > the mean branch accuracy; (drafting) in speculative decoding's own "
                   "model, where drafts are independent of the verifier's sample, at each position (context) whose "
                   "branches miss the verifier's sample with probability ε = 1 − Σ p·q < ½ on average over the "
                   "branches (i.i.d. drafts: each has that ε): the B-draft plurality matches the verifier more often "
                   "than one draft, graded context by context (contexts with ε ≥ ½ reported as outside the premise; "
                   "with --logits, the real pair's captured rows at depth 1). Beside the headline: (s2-correlated) "
                   "branches whose errors coalesce, the case the paper's failure-modes section disclaims; "
                   "(drafting-averaged) the wider premise ε < ½ on average over positions too (the target's "
                   "stationary law), graded on the average over contexts; (s1-soft) sentence 1 for ECSV-soft's "
                   "score (λ > 0, a named choice), another vote than the weighted one the sentence names.",
    parts=(Part("s1-share", "If more than half of the total weight is on y, the hard weighted vote outputs y.",
                relation="=", modes=("exact", "mc"), identity=True, proof=_proof_share,
                proved_for="general: any total weight W and margin d > 0 (any number of branches, any V)"),
           Part("s1-soft", "The same for the soft vote S(t) = Σ w 1[t̂=t] + λ Σ w q_b(t), λ > 0.", relation="=",
                modes=("exact",)),
           Part("s1-prob", "Independent channel, MAP weights: P(vote = y) > max_b P(t̂_b = y).", relation=">",
                modes=("exact",)),
           Part("s1-weak", "Independent channel, MAP weights: P(vote = y) ≥ max_b P(t̂_b = y).", relation="≥",
                modes=("exact",)),
           Part("s2-independent", "Independent binary branches, mean ε < ½ (diverse): P(vote = y) > mean_b "
                                  "P(t̂_b = y).", relation=">", modes=("exact", "mc")),
           Part("s2-correlated", "Correlated branches (errors coalescing on a common wrong token), each ε < ½: "
                                 "P(vote = y) > a single branch's accuracy.", relation=">", modes=("exact", "mc")),
           Part("drafting", "Drafting model (drafts independent of the verifier's sample), at each position whose "
                            "branches have ε < ½ on average: the plurality of B drafts matches the verifier's sample "
                            "more often than one draft.",
                relation=">", modes=("exact", "logits")),
           Part("drafting-averaged", "Drafting model, ε < ½ on average over contexts (the target's stationary law): "
                                     "the plurality matches more often than one draft, on average over contexts.",
                relation=">", modes=("exact",))),
    readings=(
        Reading("majority-bound", "Both sentences as the paper's argument for ECSV's fusion: a weighted majority on "
                "the true token makes the fused token (hard or soft) correct, the vote beats every branch, and with "
                "independent branches whose error rates average below ½ — in the channel model and in speculative "
                "decoding's own drafting model, at each position whose branches err with probability below ½ on "
                "average — voting strictly raises the probability of matching the verifier.",
                ("s1-share", "s1-prob", "s2-independent", "drafting"), role="principal",
                quote="'Why it should work': 'Majority-decoding bound: If more than half of the total reliability "
                      "weight favors the true token at j, the fused token matches V with probability greater than "
                      "any single branch. With even weakly informative, diverse branches (ε_b,j < 0.5 on average), "
                      "reliability-weighted votes strictly improve correctness probabilities.'",
                why="the sentences speak of the reliability-weighted vote ('more than half of the total reliability "
                    "weight', 'reliability-weighted votes'): the fusion score Σ_b w_b,j 1[t̂_b,j = t]; ECSV-soft's "
                    "score adds λ·soft_vote, another vote, graded beside it; 'greater than' and 'strictly' are "
                    "strict; ε_b,j is the paper's "
                    "P(t̂_b,j ≠ y_j) with y_j drawn from p_V, which in speculative decoding is 1 − Σ p·q; the "
                    "sentence speaks of the branches at a position ('diverse branches', 'at j' in the sentence "
                    "before), so 'on average' averages ε_b,j over the branches b at a position j, and the gain is "
                    "the vote's at that position."),
        Reading("soft-vote", "Sentence 1 for ECSV-soft's fused token: the score S(t) = Σ w 1[t̂ = t] + λ Σ w q_b(t), "
                "λ > 0, follows a weighted majority on the true token.", ("s1-soft",), kind="another-rule",
                why="the fusion rule's λ·soft_vote term (ECSV-soft) makes another vote than the reliability-weighted "
                    "one the sentence names: its fused token can leave a weighted majority (reported beside the "
                    "headline, at every λ the choice allows)"),
        Reading("weak-inequality", "Sentence 1 with ≥ instead of 'greater than'.", ("s1-weak",), kind="weaker",
                why="MAP is the Bayes decision, so ≥ cannot fail; reported to separate the tie from a loss."),
        Reading("coalescing-errors", "Sentence 2 for branches whose errors coalesce on a common wrong token.",
                ("s2-correlated",), kind="disclaimed",
                why="Failure modes: 'Correlated errors: If branches coalesce on the same wrong token due to shared "
                    "drafter bias, voting will not help.' The paper disclaims this case."),
        Reading("averaged-over-positions", "Sentence 2 in speculative decoding's drafting model with ε < ½ only on "
                "average over the positions (the target's stationary law of contexts) too, the gain averaged the "
                "same way.", ("drafting-averaged",), kind="wider",
                why="'on average' stretched over both indices of ε_b,j: the sentence speaks of the branches at a "
                    "position, and this reading admits contexts where the drafter's mode is not the target's "
                    "(ε > ½), which is where the vote loses (notebook section (g)).")),
    scope=MAJORITY_SCOPE,
    choices=(Choice("soft_lambda", 0.5, (0.1, 0.5, 1.0), "ECSV-soft's λ > 0 (the paper gives none; 0.5 is the "
                    "harness default); s1-soft builds its instance for the λ in force"),),
    modes=("exact", "mc", "logits"),
    check=check_majority, subject=FUSION, mc_tests=3, shrink=shrink_majority,
    controls=(Control("minority vote", MINORITY, "negative control: the least-supported voted token is fused",
                      parts=("s1-share", "s1-soft", "s1-prob", "s1-weak", "s2-independent", "drafting",
                             "drafting-averaged")),
              Control("unweighted vote", UNWEIGHTED, "negative control: weights that ignore reliability (under "
                      "coalescing errors the minority vote is right, so this control covers that part)",
                      parts=("s1-prob", "s1-weak", "s2-correlated"))))


# =================================================================================================
# ecsv.prefix_length
# =================================================================================================

@dataclass(frozen=True)
class PrefixFormula:
    """E[accepted prefix] from per-position match probabilities a_1..a_k: ``"paper"`` Σ_j Π_{i≤j} a_i;
    ``"off-by-one"`` 1 + Σ_{j<k} Π_{i≤j} a_i (counts the correction/bonus token: a slip)."""

    name: str
    kind: str = "paper"

    def __call__(self, a) -> float:
        a = np.asarray(a, dtype=np.float64)
        if self.kind == "paper":
            return float(cf.prefix_length(a))
        return float(1.0 + cf.prefix_length(a[:-1])) if a.size > 1 else 1.0


PREFIX = PrefixFormula("Σ_j Π_{i≤j} a_i")
PREFIX_OFF = PrefixFormula("1 + Σ_{j<k} Π_{i≤j} a_i", "off-by-one")

PREFIX_METHODS = (R.SD_1, R.ECSV_LITE, R.ECSV_BRANCHWISE, R.ECSV_LITE_RS, R.SD_MULTI, R.ecsv_spot(1), R.VOTE_UNIF)
#: methods by name (sweep points carry names: they go into the report's JSON)
METHODS = {m.name: m for m in PREFIX_METHODS}


def chain_rule(pair, formula: PrefixFormula, method: R.Method, B: int, k: int, state: int = 0):
    """(formula at a_j = P(match j | matches before), the exact E[τ] of one step)."""
    law = _step_law(pair, method, B, k, state)
    return formula(np.nan_to_num(law.match_conditional())), law.accepted


def marginal_formula(pair, formula: PrefixFormula, method: R.Method, B: int, k: int, state: int = 0):
    """(formula at the marginal match probabilities a_j, the exact E[τ])."""
    law = _step_law(pair, method, B, k, state)
    return formula(law.match_marginal), law.accepted


def multiplicative_slack(a1: float, a2: float, a3: float, delta: float, formula: PrefixFormula = PREFIX) -> float:
    """formula((1+δ)a) − (1+δ) formula(a) (≥ 0: raising every a_i by (1+δ) raises the prefix by
    at least that factor); +inf where (1+δ)a leaves [0, 1]."""
    a = np.array([a1, a2, a3])
    if ((1 + delta) * a > 1).any():
        return float("inf")
    return formula((1 + delta) * a) - (1 + delta) * formula(a)


def check_prefix(ctx, formula: PrefixFormula):
    ev = []
    srcs = small_sources()
    with ctx.part("chain-rule"):
        for name, pair in srcs.items():
            ev.append(sweep(lambda pt, name=name: label(f"{name} source (V = 3)", method=pt["method"],
                                                        B=pt["B"], k=pt["k"]),
                            grid(method=list(METHODS), B=(2,), k=(2, 3) if not ctx.quick else (3,), state=(0, 1)),
                            lambda method, B, k, state, pair=pair: chain_rule(pair, formula, METHODS[method], B, k,
                                                                              state),
                            what="formula at the conditional a_j vs the exact E[τ]"))
        pair = srcs["medium"]
        setup = R.Setup(pair, R.ECSV_LITE, 2, 3)
        n = ctx.size(600_000, 150_000)
        res = _chain_stream(setup, n, int(ctx.seed))
        K, laws = _kernel_laws(setup.pair, 2, 3)
        occ = _occupation(K, res.per)
        claimed = float(occ @ np.array([formula(np.nan_to_num(lw.match_conditional())) for lw in laws]))
        e = res.estimates()["accepted_length"]
        ev.append(mc_mean(ctx, label("medium source (V = 3)", method="ECSV-lite", B=2, k=3), claimed,
                          mean=e.value, se=e.se, n=e.n, tolerance=0.03, what="accepted length per step",
                          note=f"{n} steps of the Numba kernel ({mc.N_STREAMS} chains); claimed: the formula at "
                               "each step-start state's conditional a_j, averaged over the chains' state occupation"))
    with ctx.part("independent"):
        iid = perturbed_pair(3, 0, concentration=0.3, how="mix", strength=0.4, seed=11, name="mix0.4-V3-o0")
        ev.append(sweep(lambda pt: label("order-0 source (V = 3)", method=pt["method"], B=pt["B"], k=pt["k"]),
                        grid(method=("SD-1", "ECSV-lite", "Vote-unif", "ECSV-lite [rs]"), B=(2, 3), k=(2,)),
                        lambda method, B, k: marginal_formula(iid, formula, METHODS[method], B, k),
                        what="formula at the marginal a_j vs the exact E[τ] (independent positions)"))
    with ctx.part("markov-marginal"):
        for name, pair in srcs.items():
            for m in (R.SD_1, R.ECSV_LITE, R.ECSV_BRANCHWISE):
                c, m_ = marginal_formula(pair, formula, m, 2, 3)
                ev.append(stats.info("exact", label(f"{name} source (V = 3)", method=m.name, B=2, k=3), c, m_,
                                     test="formula at the marginal a_j vs the exact E[τ] on a Markov source",
                                     note=f"off by {c - m_:+.4f} ({100 * (c - m_) / m_:+.1f}%); outside the "
                                          "independence the marginal reading needs: reported, not graded"))
    with ctx.part("monotone"):
        ev.append(least_slack(ctx, "monotone", lambda: exhaustive(
            lambda a1, a2, a3, delta: multiplicative_slack(a1, a2, a3, delta, formula),
            grid(a1=(0.2, 0.5, 0.8), a2=(0.0, 0.3, 0.9), a3=(0.0, 0.5, 0.9), delta=(0.05, 0.1, 0.2)),
            call=lambda a1, a2, a3, delta: f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.multiplicative_slack("
                                           f"{a1}, {a2}, {a3}, {delta}, spectheory.sims.claims.ecsv."
                                           f"{'PREFIX' if formula.kind == 'paper' else 'PREFIX_OFF'})"),
            what="formula((1+δ)a) − (1+δ)·formula(a)"))
    with ctx.part("monotone-dependent"):
        c = cf.dependent_monotonicity_counterexample()
        ev.append(stats.exact_bound("two laws of k = 2 dependent match indicators, marginals (0.5, 0.5) → (0.6, 0.6)",
                                    c["prefix_A"], c["prefix_B"], side="ge",
                                    what="E[accepted prefix] after raising every marginal a_i",
                                    note=f"formula at the marginals: {formula(c['marginals_A']):.3f} → "
                                         f"{formula(c['marginals_B']):.3f}; exact prefix {c['prefix_A']:.2f} → "
                                         f"{c['prefix_B']:.2f}"))
    return ev


@lru_cache(maxsize=None)
def _chain_stream(setup, n: int, seed: int):
    from spectheory.rng import derive_seed
    return mc.simulate(setup, n, seed=derive_seed(seed, "ecsv.prefix_length", "chain"))


@lru_cache(maxsize=None)
def _kernel_laws(pair, B: int, k: int):
    return ex.step_kernel(R.Setup(pair, R.ECSV_LITE, B, k))


def _occupation(K: np.ndarray, n: int, start: int = 0) -> np.ndarray:
    dist = np.zeros(K.shape[0])
    dist[start] = 1.0
    occ = np.zeros_like(dist)
    for t in range(n):
        occ += dist
        nxt = dist @ K
        if np.abs(nxt - dist).max() < 1e-15:
            occ += (n - t - 1) * nxt
            break
        dist = nxt
    return occ / occ.sum()


def shrink_prefix(ctx, formula: PrefixFormula):
    c = cf.dependent_monotonicity_counterexample()
    return {"part": "monotone-dependent", "k": 2, "marginals_A": c["marginals_A"].tolist(),
            "marginals_B": c["marginals_B"].tolist(), "claimed": c["prefix_A"], "measured": c["prefix_B"],
            "source": "joint laws of two match indicators: A = perfectly correlated, B = P(both) 0.2",
            "call": "import spectheory.closed_forms.ecsv; "
                    "(lambda c: (c['prefix_A'], c['prefix_B']))(spectheory.closed_forms.ecsv."
                    "dependent_monotonicity_counterexample())"}


def prefix_identity(k: int = 3, independent: bool = False, formula=None) -> tuple[bool, str]:
    """Sympy: over a general joint law of k match indicators (2^k symbolic cell probabilities), is
    E[τ] = E[Σ_j Π_{i≤j} M_i] equal to ``formula(a)`` with a_j = P(M_j = 1 | M_1..M_{j−1} = 1) (the
    chain rule), or, with ``independent``, over a product law with a_j the marginals? Default
    formula: Σ_j Π_{i≤j} a_i."""
    import itertools

    import sympy as sp
    formula = formula or (lambda a: sum(sp.prod(a[:j]) for j in range(1, len(a) + 1)))
    cells = list(itertools.product((0, 1), repeat=k))
    if independent:
        m = sp.symbols(f"a_1:{k + 1}", positive=True)
        pr = {c: sp.prod([m[i] if c[i] else 1 - m[i] for i in range(k)]) for c in cells}
    else:
        pr = {c: sp.Symbol("pi_" + "".join(map(str, c)), positive=True) for c in cells[1:]}
        pr[cells[0]] = 1 - sum(pr.values())  # a law: the cells sum to 1
    tau = lambda c: next((j for j in range(k) if not c[j]), k)  # noqa: E731 (length of the matched prefix)
    e_tau = sum(tau(c) * pr[c] for c in cells)
    head = [sum(pr[c] for c in cells if all(c[:j])) for j in range(k + 1)]  # P(M_1..M_j = 1), head[0] = 1
    a = [head[j + 1] / head[j] for j in range(k)]
    diff = sp.simplify(formula(a) - e_tau)
    what = ("independent positions, a_j the marginals" if independent
            else "any joint law, a_j = P(M_j | M_<j all 1)")
    return diff == 0, f"k = {k}, {what}: Σ_j Π_(i≤j) a_i − E[τ] simplifies to {diff}"


def prefix_identity_general(independent: bool = False, formula=None) -> tuple[bool, str]:
    """Sympy, for every number of positions k (induction on j): with h_j = P(M_1..M_j all 1) (h_0 = 1),
    E[τ] = Σ_{j=1..k} P(τ ≥ j) = Σ_j h_j (τ is the length of the matched prefix), so the formula
    holds iff Π_{i≤j} a_i = h_j for every j. Chain rule: a_j = h_j/h_{j−1}; base Π_{i≤1} a_i =
    h_1/h_0 = h_1, step h_{j−1}·a_j = h_j. Independent positions: h_j = Π_{i≤j} a_i by the product law
    (base h_1 = a_1, step h_j = h_{j−1}·a_j), the same recursion. The tail-sum step E[τ] = Σ_j P(τ ≥ j)
    is checked as Σ_{t=0..k} t·P(τ = t) with P(τ = t) = h_t − h_{t+1} (h_{k+1} = 0), by induction on k.
    ``formula(prev, a_j)``: the claimed recursion of the summand (default prev·a_j)."""
    import sympy as sp
    h_prev, h_j, a_j = sp.symbols("h_prev h_j a_j", positive=True)
    step = (formula or (lambda prev, a: prev * a))
    a = a_j if independent else h_j / h_prev
    target = h_prev * a_j if independent else h_j
    base = sp.simplify(step(sp.Integer(1), a.subs(h_prev, 1)) - target.subs(h_prev, 1))
    induction = sp.simplify(step(h_prev, a) - target)
    # tail sum, induction on k: S(k) = Σ_{t≤k} t (h_t − h_{t+1}) with h_{k+1} = 0, T(k) = Σ_{j≤k} h_j.
    # S(k+1) − S(k) = (k+1) h_{k+1} − k·h_{k+1} (the term t = k gains −k h_{k+1}, removed when h_{k+1}
    # was 0) = h_{k+1} = T(k+1) − T(k); and S(0) = T(0) = 0.
    k, hk1 = sp.symbols("k h_k1", positive=True)
    tail = sp.simplify(((k + 1) * hk1 - k * hk1) - hk1)
    ok = base == 0 and induction == 0 and tail == 0
    what = "independent positions, a_j the marginals" if independent else "any joint law, a_j = P(M_j | M_<j all 1)"
    return ok, (f"every k ({what}): base Π_(i≤1) a_i − h_1 → {base}; step h_(j−1)·a_j − h_j → {induction}; "
                f"tail sum S(k+1) − S(k) − (T(k+1) − T(k)) → {tail}: so E[τ] = Σ_j h_j = Σ_j Π_(i≤j) a_i")


def _proof_chain_rule() -> tuple[bool, str]:
    ok, detail = prefix_identity_general()
    ok3, detail3 = prefix_identity(3)  # and the brute-force check over every joint law of 3 positions
    return ok and ok3, f"{detail}; brute force over every joint law of k = 3 indicators: {detail3}"


def _proof_independent() -> tuple[bool, str]:
    ok, detail = prefix_identity_general(independent=True)
    ok3, detail3 = prefix_identity(3, independent=True)
    return ok and ok3, f"{detail}; brute force at k = 3: {detail3}"


register(
    id="ecsv.prefix_length", paper=PAPER, reference="'Why it should work', acceptance multiplier",
    statement="Expected accepted prefix = Σ_{j=1}^{k} Π_{i≤j} a_i for per-position match probabilities a_i: raising "
              "every a_i raises it multiplicatively.",
    interpretation="Principal ('per-position'): a_i is the probability that the fused token at position i matches "
                   "the verifier, the marginal the paper names. With independent positions Σ_j Π_{i≤j} a_i is E[τ] "
                   "(part 'independent': an identity, proved, checked on an order-0 source with positionwise "
                   "fusion); on Markov sources it is off (info, 'markov-marginal'). 'Multiplicatively': (1+δ)a "
                   "gives at least (1+δ) times the sum ('monotone', exhaustive least slack). The paper states no "
                   "independence across positions, and with dependent positions raising every marginal need not "
                   "raise E[τ] ('monotone-dependent'). Beside it ('conditional'): with a_j = P(match j | matches "
                   "before) the sum is E[τ] for every source (chain rule; an identity, proved; exact on every "
                   "method and the kernel's streams).",
    parts=(Part("independent", "With independent positions, E[τ] = Σ_j Π_{i≤j} a_j for the marginal a_j.",
                relation="=", modes=("exact",), identity=True, proof=_proof_independent,
                proved_for="general: every number of positions k (induction), and by brute force at k = 3"),
           Part("monotone", "Raising every a_i by a factor (1+δ) raises the sum by at least (1+δ).",
                relation="monotone", modes=("exact",)),
           Part("monotone-dependent", "Raising every per-position match probability (marginal a_i) raises E[τ], "
                                      "positions not assumed independent.", relation="monotone", modes=("exact",)),
           Part("markov-marginal", "The marginal reading on a Markov source.", relation="=", checkable=False,
                reason="outside the independence the marginal formula assumes: the gap is reported as info"),
           Part("chain-rule", "E[τ] = Σ_j Π_{i≤j} a_j with a_j = P(match j | matches 1..j−1).", relation="=",
                identity=True, proof=_proof_chain_rule,
                proved_for="general: every number of positions k (induction), and by brute force over every joint "
                           "law at k = 3")),
    readings=(
        Reading("per-position", "a_i is the per-position match probability P(fused token i matches V); raising "
                "every one of them raises the expected accepted prefix multiplicatively.",
                ("independent", "monotone", "monotone-dependent", "markov-marginal"), role="principal",
                quote="'Why it should work': 'Acceptance multiplier: Acceptance length is the length of the longest "
                      "prefix where fused tokens match V. Increasing per-position match probability "
                      "multiplicatively increases expected prefix length.'",
                why="'Per-position match probability' is the probability that the fused token at that position "
                    "matches, a marginal; the paper assumes nothing about positions being independent (its "
                    "independence assumption is about branches), so the monotonicity must hold for any dependence."),
        Reading("conditional", "a_j is the conditional match probability given that every earlier position "
                "matched (the chain rule).", ("chain-rule",), kind="another-definition",
                why="The reading under which the formula is exact for every source; it is not what 'per-position "
                    "match probability' names, and raising conditional probabilities is not what fusion does.")),
    scope=Scope("A fused draft of k ≥ 1 positions verified left to right, the accepted prefix ending at the first "
                "mismatch; the dependent counterexample has k = 2 positions whose matches are correlated (the "
                "mechanism: a prefix)."),
    check=check_prefix, subject=PREFIX, mc_tests=1, shrink=shrink_prefix,
    controls=(Control("off-by-one formula", PREFIX_OFF,
                      "negative control: 1 + Σ_{j<k} Π_{i≤j} a_i (the correction/bonus token counted)"),))


# =================================================================================================
# ecsv.budget
# =================================================================================================

@dataclass(frozen=True)
class BudgetRule:
    """How ECSV-spot spends the verifier: ``"rule"`` (R_used spot checks + a fused draft of depth
    k − R_used: SD-1's k + 1 positions per step) or ``"forget_spot"`` (the counter does not charge
    the spot checks: depth k)."""

    name: str
    budget: str = "rule"

    def method(self, m: R.Method) -> R.Method:
        return m if self.budget == "rule" else replace(m, budget="forget_spot", name=m.name + " (spot checks uncharged)")


BUDGET_RULE = BudgetRule("|S_pre| + |S_post| ≤ L = k + 1")
FORGET_RULE = BudgetRule("counter forgets the spot checks", "forget_spot")

BUDGET_METHODS = (R.ECSV_LITE, R.ecsv_spot(1), R.ecsv_spot(2), R.ecsv_spot(3), R.ecsv_spot(4), R.ECSV_SOFT)
_BM = {m.name: m for m in BUDGET_METHODS}


def per_step_cost(pair, rule: BudgetRule, method: str, B: int, k: int, state: int = 0):
    """(the allowance k + 1, E[verifier positions per step] in one forward), exact."""
    return float(k + 1), _step_law(pair, rule.method(_BM[method]), B, k, state).cost_parallel


def plan_slack(rule: BudgetRule, R_: int, k: int) -> float:
    """(k + 1) − (R_used + d + 1) under the rule (≥ 0: within the per-step allowance)."""
    m = rule.method(R.ecsv_spot(R_) if R_ else R.ECSV_LITE)
    r, d = m.plan(k)
    return float(k + 1 - (r + d + 1))


def per_token(pair, rule: BudgetRule, method: str, B: int, k: int, accounting: str = "parallel", margin: float = 0.01):
    """((1 + margin) · L_base, the method's verifier positions per output token), exact long run;
    L_base is SD-1's at the same depth k in the same accounting."""
    key = f"vtpo_{accounting}"
    base = _long_run(pair, R.SD_1, B, k)[key]
    return (1.0 + margin) * base, _long_run(pair, rule.method(_BM[method]), B, k)[key]


def check_budget(ctx, rule: BudgetRule):
    ev = []
    srcs = small_sources()
    with ctx.part("per-step"):
        for name in ("medium",):
            pair = srcs[name]
            ev.append(sweep(lambda pt, name=name: label(f"{name} source (V = 3)", method=pt["method"], B=2, k=pt["k"]),
                            grid(method=[m.name for m in BUDGET_METHODS], k=(2, 3, 4) if not ctx.quick else (2, 4)),
                            lambda method, k, pair=pair: per_step_cost(pair, rule, method, 2, k),
                            grade="bound", side="le", what="E[verifier positions per step] ≤ k + 1"))
        ev.append(least_slack(ctx, "per-step", lambda: exhaustive(
            lambda R_, k: plan_slack(rule, R_, k), grid(R_=(0, 1, 2, 3, 4), k=(1, 2, 3, 4, 6, 8)),
            call=lambda R_, k: f"import spectheory.sims.claims.ecsv; spectheory.sims.claims.ecsv.plan_slack(spectheory.sims.claims.ecsv."
                               f"{'BUDGET_RULE' if rule.budget == 'rule' else 'FORGET_RULE'}, {R_}, {k})"),
            what="allowance − spend per step"))
        pair = harness_sources()["medium"]
        for k in (4, 8):
            setup = R.Setup(pair, rule.method(R.ecsv_spot(2)), 4, k)
            res = mc.simulate(setup, ctx.size(40_000, 8_000), seed=ctx.rng("per-step", str(k)))
            e = res.estimates()["cost_parallel_per_step"]
            ledger = cf.budget_ledger(res.cost_parallel, setup.allowance)
            ev.append(mc_bound(ctx, label("medium source (V = 8)", method="ECSV-spot(R=2)", B=4, k=k), float(k + 1),
                               mean=e.value, se=e.se, n=e.n, side="le", tolerance=0.05,
                               what="verifier positions per step ≤ k + 1",
                               note=f"{e.n} steps; the bank Σ(allowance − spend) ends at {ledger[-1]:+.0f} "
                                    f"(min {ledger.min():+.0f})"))
    with ctx.part("per-token-parallel"):
        for name, pair in srcs.items():
            ev.append(sweep(lambda pt, name=name: label(f"{name} source (V = 3)", method=pt["method"], B=2, k=pt["k"]),
                            grid(method=["ECSV-lite", "ECSV-spot(R=1)", "ECSV-soft"], k=(2, 3) if not ctx.quick else (2,)),
                            lambda method, k, pair=pair: per_token(pair, rule, method, 2, k),
                            grade="bound", side="le",
                            what="verifier positions per output token ≤ 1.01 · SD-1's (one forward per step)"))
    with ctx.part("per-token-sequential"):
        pair = srcs["medium"]
        ev.append(sweep(lambda pt: label("medium source (V = 3)", method=pt["method"], B=2, k=pt["k"]),
                        grid(method=["ECSV-lite", "ECSV-spot(R=1)", "ECSV-spot(R=2)"], k=(2, 4) if not ctx.quick else (2,)),
                        lambda method, k: per_token(pair, rule, method, 2, k, "sequential"),
                        grade="bound", side="le",
                        what="verifier positions per output token ≤ 1.01 · SD-1's (= 1.01: up to the first mismatch)"))
    # Monte Carlo, harness source: ECSV-spot(R=2) against SD-1 per output token, both accountings
    pair = harness_sources()["medium"]
    n = ctx.size(40_000, 8_000)
    sd1 = mc.simulate(R.Setup(pair, R.SD_1, 4, 4), n, seed=_seed(ctx, "budget-sd1")).estimates()
    spot = mc.simulate(R.Setup(pair, rule.method(R.ecsv_spot(2)), 4, 4), n, seed=ctx.rng("budget-spot")).estimates()
    for part, key in (("per-token-parallel", "vtpo_parallel"), ("per-token-sequential", "vtpo_sequential")):
        a, b = spot[key], sd1[key]
        ev.append(mc_bound(ctx, label("medium source (V = 8)", method="ECSV-spot(R=2)", B=4, k=4, accounting=key[5:]),
                           0.0, mean=a.value - 1.01 * b.value, se=float(np.hypot(a.se, 1.01 * b.se)), n=a.n,
                           side="le", tolerance=0.05, what="VTPO(ECSV) − 1.01·VTPO(SD-1)",
                           note=f"VTPO ECSV-spot {a.value:.4f} ± {a.se:.4f}, SD-1 {b.value:.4f} ± {b.se:.4f}; "
                                f"accepted length {spot['accepted_length'].value:.3f} vs "
                                f"{sd1['accepted_length'].value:.3f}", part=part))
    with ctx.part("every-method"):
        for m in (R.PLAN if not ctx.quick else (R.SD_1, R.SD_MULTI, R.ORACLE_TOP1, R.ECSV_LITE, R.ecsv_spot(1))):
            lr = _long_run(srcs["medium"], rule.method(m) if m.R else m, 2, 2)
            ev.append(stats.info("exact", label("medium source (V = 3)", method=m.name, B=2, k=2),
                                 lr["vtpo_parallel"], lr["vtpo_sequential"],
                                 test="verifier positions per output token: claimed = one forward per step, "
                                      "measured = up to the first mismatch",
                                 note=f"per step {lr['cost_parallel_per_step']:.3f} (parallel), "
                                      f"{lr['cost_sequential_per_step']:.3f} (sequential); accepted length "
                                      f"{lr['accepted_length']:.3f}"))
    return ev


def _seed(ctx, *labels) -> np.random.SeedSequence:
    """A seed that depends on the run seed and the labels, not on the subject (shared baselines)."""
    from spectheory.rng import derive_seed
    return derive_seed(ctx.seed, ctx.claim_id, *labels)


def shrink_budget(ctx, rule: BudgetRule):
    """The smallest per-token failure: V = 2 random pairs, B = 2, k = 1..2, ECSV-lite."""
    from spectheory.pairs import random_pair
    for V in (2, 3):
        for k in (1, 2):
            for seed in range(10):
                pair = random_pair(V, 0, seed=seed)
                claimed, measured = per_token(pair, rule, "ECSV-lite", 2, k)
                if measured > claimed + 1e-12:
                    return {"part": "per-token-parallel", "V": V, "order": 0, "B": 2, "k": k, "seed": seed,
                            "method": "ECSV-lite", "source": f"spectheory.pairs.random_pair({V}, 0, seed={seed})",
                            "claimed": claimed, "measured": measured,
                            "call": f"import spectheory.sims.claims.ecsv, spectheory.pairs; spectheory.sims.claims.ecsv.per_token("
                                    f"spectheory.pairs.random_pair({V}, 0, seed={seed}), spectheory.sims.claims.ecsv."
                                    f"{'BUDGET_RULE' if rule.budget == 'rule' else 'FORGET_RULE'}, 'ECSV-lite', 2, {k})"}
    return None


def budget_identity(allowance=None) -> tuple[bool, str]:
    """Sympy: under the rule (R_used = min(R, ⌊k/2⌋) spot checks, a fused draft of depth
    d = k − R_used, one bonus row), is R_used + d + 1 = ``allowance`` (default k + 1, SD-1's positions
    per step) for every R, k?"""
    import sympy as sp
    R_, k = sp.symbols("R k", positive=True, integer=True)
    r_used = sp.Min(R_, sp.floor(k / 2))
    d = k - r_used
    allowance = k + 1 if allowance is None else allowance(k)
    diff = sp.simplify(r_used + d + 1 - allowance)
    return diff == 0, f"R_used + d + 1 − allowance = {diff} (R_used = Min(R, ⌊k/2⌋), d = k − R_used)"


def _proof_per_step() -> tuple[bool, str]:
    return budget_identity()


def _budget_scope(pair=None, B=None, **settings) -> str | None:
    if B is not None and B < 2:
        return f"B = {B}: one branch, nothing to fuse"
    return None


register(
    id="ecsv.budget", paper=PAPER, reference="Method, 'Budget control'; Experiments, 'Verifier budget matching'",
    statement="The budget rule keeps verifier calls per output token ≤ the SD-1 baseline L_base (±1%).",
    interpretation="The rule as implemented: SD-1 at depth k scores k + 1 positions per step; ECSV-spot spends "
                   "R_used = min(R, ⌊k/2⌋) spot checks and verifies a fused draft of depth k − R_used, so "
                   "|S_pre| + |S_post| = k + 1 (surplus banked). 'per-step': that allowance is kept (an identity of "
                   "the rule, proved; exact on every variant, least slack over (R, k); MC: the kernel's streams). "
                   "Per output token, in two accountings: one forward scores the draft ('per-token-parallel': "
                   "(k+1)/E[τ+1]) or scoring stops at the first mismatch ('per-token-sequential', the paper's step "
                   "5; SD-1's is exactly 1); the paper fixes neither, both are graded in the one reading, so a "
                   "failure is robust only if it fails in both. Verifier positions per output token of every method "
                   "are reported as info ('every-method').",
    parts=(Part("per-step", "Spot checks plus acceptance verification ≤ L = k + 1 verifier positions per step.",
                relation="≤", identity=True, proof=_proof_per_step,
                proved_for="general: every R and k (symbolic)",
                reconstructed="the paper gives the constraint |S_pre| + |S_post| ≤ L but not how many spot checks a "
                              "step spends: this project's rule R_used = min(R, ⌊k/2⌋), draft depth k − R_used, meets "
                              "the allowance by construction, so the part restates the implementation"),
           Part("per-token-parallel", "Verifier positions per output token ≤ 1.01 · L_base, one forward per step.",
                relation="≤"),
           Part("per-token-sequential", "Verifier positions per output token ≤ 1.01 · L_base, scoring up to the "
                                        "first mismatch.", relation="≤"),
           Part("every-method", "Verifier positions per output token of every method of the plan.", relation="=",
                checkable=False, reason="a measurement, reported for every method (no claim to grade)")),
    readings=(
        Reading("per-output-token", "The budget rule (|S_pre| + |S_post| ≤ L per step, surplus banked) keeps each "
                "method's average verifier tokens per output token within SD-1's L_base (±1%), in either "
                "accounting of a verification pass.",
                ("per-step", "per-token-parallel", "per-token-sequential", "every-method"), role="principal",
                quote="Method, Budget control: 'Constrain |S_pre| + |S_post| ≤ L. If fusion increases expected accept "
                      "length beyond L, we cap |S_post| at L − |S_pre| and bank the surplus (i.e., defer savings to "
                      "later steps), ensuring matched average verifier tokens per output token.' Experiments, "
                      "Verifier budget matching: 'average verifier tokens per output token ≤ L_base ± 1%.'",
                why="The paper states the rule's purpose per output token ('ensuring matched average verifier tokens "
                    "per output token') and the tolerance (± 1%); it fixes no accounting of a verification pass "
                    "(step 5 scores 'until a mismatch', one forward scores the whole draft in practice), so both "
                    "are graded."),),
    scope=Scope("Methods with B ≥ 2 branches at the same depth k as the SD-1 baseline, in steady state (long-run "
                "averages).", guard=_budget_scope),
    check=check_budget, subject=BUDGET_RULE, mc_tests=4, shrink=shrink_budget,
    controls=(Control("counter forgets spot checks", FORGET_RULE,
                      "negative control: spot checks not charged, the fused draft keeps depth k"),))


# =================================================================================================
# ecsv.falsification
# =================================================================================================

@dataclass(frozen=True)
class Plan:
    """The ECSV variants under test. ``reading``: how fused drafts are verified where the plan is
    graded ('lossless'); ``sabotage`` ``"minority"``: every variant fuses the least reliable
    branch's token (weights exp(−8·(agreement + log q(t̂))): the least agreeing, least probable
    draft wins; no tie-break by q̄ or the verifier)."""

    name: str
    reading: str = "match"
    sabotage: str = ""


AS_READ = Plan("ECSV as read: matching verification, α and γ tuned on held-out sources")
MINORITY_PLAN = Plan("anti-reliability fusion", sabotage="minority")
RS_PLAN = Plan("fused drafts verified by min(1, p/q̄) ('standard final check')", reading="rs")

BASELINES = (R.SD_1, R.SD_MULTI, R.VOTE_UNIF, R.ORACLE_TOP1)
LITE_VARIANTS = ("ECSV-lite", "ECSV-soft")


def _cfg(quick: bool) -> dict:
    """The harness grid (the paper's B, k ∈ {2, 4, 8}, clean and noisy drafters; quick: B ∈ {2, 8},
    k = 4, the clean drafter) and its sizes."""
    if quick:
        return dict(Bs=(2, 8), ks=(4, 8), drafters=(R.CLEAN,), n_steps=3_000, tv_runs=10_000,
                    variants=("ECSV-lite", "ECSV-spot(R=1)", "ECSV-spot(R=2)", "ECSV-soft"),
                    exact_Bs=(3,), exact_drafters=(R.CLEAN, R.NOISY), exact_low=("ECSV-lite",))
    return dict(Bs=(2, 4, 8), ks=(4, 8), drafters=(R.CLEAN, R.NOISY), n_steps=5_000,
                tv_runs=30_000, variants=tuple(m.name for m in R.PLAN if m.kind == "fusion" and m.weights != "uniform"),
                exact_Bs=(2, 3), exact_drafters=(R.CLEAN, R.NOISY),
                exact_low=("ECSV-lite", "ECSV-spot(R=1)", "ECSV-soft"))


#: the tuning grid and size, the same in both tiers (so both grade the same tuned algorithm)
TUNE = dict(gammas=(0.0, 1.0, 4.0), signal_alphas=((1.0, 1.0), (0.0, 1.0)), spot_alphas=(1.0, 4.0), n_steps=1_000)


@lru_cache(maxsize=None)
def tuned_variants(reading: str, quick: bool, seed: int) -> tuple:
    """The ECSV variants with α, γ tuned on the held-out sources (:func:`spectheory.montecarlo.ecsv.tune`,
    grid :data:`TUNE`) at B = k = 4 under ``reading``; the same in both tiers (quick grades a subset
    of the variants); cached per run."""
    base = tuple(m for m in R.PLAN if m.name in _cfg(quick)["variants"])
    methods, _ = mc.tune_plan(base, held_out_sources(), reading=reading, seed=seed, **TUNE)
    return methods


def plan_variants(plan: Plan, reading: str, quick: bool, seed: int) -> tuple:
    ms = tuned_variants(reading, quick, seed)
    if plan.sabotage == "minority":
        ms = tuple(replace(m, gamma=-8.0, alpha=(0.0, 1.0, 1.0, 0.0), lam=0.0, ties="none") for m in ms)
    return ms


@lru_cache(maxsize=None)
def _mc_row(source: str, drafter: R.Drafter, B: int, k: int, method: R.Method, reading: str, n_steps: int,
            seed: int) -> dict:
    from spectheory.rng import derive_seed
    m = method.regime("sampling")
    if m.kind == "fusion":
        m = m.with_verify(reading)
    setup = R.Setup(harness_sources()[source], m, B, k, drafter)
    ss = derive_seed(seed, "ecsv.falsification", source, drafter.name, str(B), str(k), m.name,
                     repr((m.gamma, m.alpha, m.R)))
    est = mc.simulate(setup, n_steps, seed=ss).estimates()
    return {"source": source, "drafter": drafter.name, "B": B, "k": k, "method": method.name, "verify": m.verify,
            "R_used": setup.R_used, "d": setup.d, **est}


#: the sabotaged plan (the anti-reliability control) runs its harness at this many times the steps: at
#: 5,000 steps its rule-2 comparisons on the medium source (ECSV 1.27 against the vote's 1.43, noisy
#: drafter, B = 2, k = 8) were left undetermined at the per-comparison level at seed 4 of 0–4, so the
#: control did not fail at every seed; a control must be decided (tests/test_seed_stability.py)
CONTROL_STEPS = 2


def harness_rows(plan: Plan, reading: str, quick: bool, seed: int, with_baselines=True) -> list[dict]:
    """Monte Carlo harness rows of the plan's variants and the baselines the rules compare with
    (SD-1, Vote-unif) on the V = 8 sources (SD-multi and Oracle-Top1 are in the sweep job and the
    figure). ``with_baselines``: True (SD-1 and Vote-unif), False (none) or a tuple of baseline
    methods. Spot variants whose budget plan coincides at this k (R_used = min(R, ⌊k/2⌋)) are
    simulated once and labelled with each name."""
    cfg = _cfg(quick)
    rows = []
    for src in harness_sources():
        for dr in cfg["drafters"]:
            for B in cfg["Bs"]:
                for k in cfg["ks"]:
                    base = ((R.SD_1, R.VOTE_UNIF) if with_baselines is True else tuple(with_baselines or ()))
                    ms = base + plan_variants(plan, reading, quick, seed)
                    for m in ms:
                        if m.kind == "sd1" and B != cfg["Bs"][0]:
                            continue
                        eff = m
                        if m.R:
                            r_used = m.plan(k)[0]
                            eff = replace(m, R=r_used, name=f"ECSV-spot(R={r_used})")
                        n_steps = cfg["n_steps"] * (CONTROL_STEPS if plan.sabotage else 1)
                        row = dict(_mc_row(src, dr, B, k, eff, reading, n_steps, seed))
                        row["method"] = m.name
                        rows.append(row)
    return rows


@lru_cache(maxsize=None)
def _exact_row(source: str, drafter: R.Drafter, B: int, k: int, method: R.Method, reading: str) -> dict:
    m = method.regime("sampling")
    if m.kind == "fusion":
        m = m.with_verify(reading)
    pair = small_sources()[source]
    lr = _long_run(pair, m, B, k, drafter)
    return {"source": source, "drafter": drafter.name, "B": B, "k": k, "method": method.name, "verify": m.verify, **lr}


def exact_rows(plan: Plan, reading: str, quick: bool, seed: int, Bs=None, ks=(2,), variants=None) -> list[dict]:
    cfg = _cfg(quick)
    rows = []
    vs = [m for m in plan_variants(plan, reading, quick, seed) if variants is None or m.name in variants]
    for src in small_sources():
        for dr in cfg["exact_drafters"]:
            for B in (Bs or cfg["exact_Bs"]):
                for k in ks:
                    for m in (R.SD_1, R.VOTE_UNIF) + tuple(vs):
                        if m.kind == "sd1" and B != (Bs or cfg["exact_Bs"])[0]:
                            continue
                        rows.append(_exact_row(src, dr, B, k, m, reading))
    return rows


def exact_decisions(rows: list[dict], variants, min_datasets: int = 2) -> list[dict]:
    """Rule 1 on exact rows: ECSV improves on SD-1 at a source when its accepted length is larger
    and its cross-entropy to p smaller (by more than 1e-9); not rejected when it improves on
    ``min_datasets`` sources."""
    out = []
    keys = sorted({(r["drafter"], r["B"], r["k"], r["method"]) for r in rows if r["method"] in variants})
    for dr, B, k, meth in keys:
        n = 0
        for src in sorted({r["source"] for r in rows}):
            e = next(r for r in rows if (r["source"], r["drafter"], r["B"], r["k"], r["method"]) == (src, dr, B, k, meth))
            s1 = next(r for r in rows if (r["source"], r["drafter"], r["k"], r["method"]) == (src, dr, k, "SD-1"))
            n += (e["accepted_length"] > s1["accepted_length"] + 1e-9) and (e["ce_per_token"] < s1["ce_per_token"] - 1e-9)
        out.append({"variant": meth, "drafter": dr, "B": B, "k": k, "n_improves": n, "reject": n < min_datasets})
    return out


def exact_vote_decisions(rows: list[dict], variants, margin: float = 0.01, min_datasets: int = 2) -> list[dict]:
    """Rule 2 on exact rows: ECSV beats Vote-unif at a source when its accepted length exceeds
    (1 + margin) times the vote's; 'revise' unless it does on ``min_datasets`` sources."""
    out = []
    keys = sorted({(r["drafter"], r["B"], r["k"], r["method"]) for r in rows if r["method"] in variants})
    for dr, B, k, meth in keys:
        n, ratios = 0, []
        for src in sorted({r["source"] for r in rows}):
            e = next(r for r in rows if (r["source"], r["drafter"], r["B"], r["k"], r["method"]) == (src, dr, B, k, meth))
            v = next(r for r in rows if (r["source"], r["drafter"], r["B"], r["k"], r["method"]) == (src, dr, B, k,
                                                                                                   "Vote-unif"))
            ratios.append(round(e["accepted_length"] / v["accepted_length"], 4))
            n += e["accepted_length"] > (1 + margin) * v["accepted_length"] + 1e-12
        out.append({"variant": meth, "drafter": dr, "B": B, "k": k, "n_beats": n, "revise": n < min_datasets,
                    "ratios": ratios})
    return out


def _exists(mode: str, instance: str, count: int, total: int, what: str, note: str = "", alpha=None,
            undetermined: int = 0) -> Evidence:
    """An 'exists' part: pass when some configuration passes; fail when every configuration is
    decided against; underpowered when none passes but some are undetermined (the tests could
    not decide)."""
    outcome = "pass" if count >= 1 else ("underpowered" if undetermined else "fail")
    return Evidence(mode, instance, 1.0, float(count), n=total, alpha=alpha,
                    test=f"exists: the number of configurations where {what} must be ≥ 1"
                         + ("" if mode == "exact" else "; each comparison a one-sided z-test at level α / (number of "
                                                       "comparisons), batch-means standard errors; a configuration "
                                                       "neither passing nor decided against is undetermined"),
                    outcome=outcome, note=(note + (f"; {undetermined} of {total} undetermined" if undetermined else "")))


def _mc_decisions(ctx, rows, variants):
    n_cmp = 3 * len(rows)
    return mc.falsification(rows, alpha=ctx.alpha_test / max(1, n_cmp), variants=tuple(variants),
                            margin=float(ctx.choice("vote_margin")))


def _best_note(dec) -> str:
    best = max(dec["configs"], key=lambda c: (c["n_improves"], c["n_accepted_up"]), default=None)
    if best is None:
        return ""
    src = ", ".join(f"{p['source']}: accepted {p['acc_ecsv']:.3f} vs SD-1 {p['acc_sd1']:.3f}, CE {p['ce_ecsv']:.4f} "
                    f"vs {p['ce_sd1']:.4f}" for p in best["sources"])
    return f"best configuration {best['variant']}, {best['drafter']}, B={best['B']}, k={best['k']}: {src}"


#: how fused drafts are verified in each reading of the plan, and the parts graded under it
_VERIFICATIONS = (("rs", "verification min(1, p/q̄) (the standard final check with the fused tokens)",
                   {"rule1": "rule1-rs", "rule2": "rule2-rs", "rule3": "rule3-rs"}),
                  ("match", "matching verification (the verifier's sample must equal the fused token)",
                   {"rule1": "rule1", "rule2": "rule2", "rule3": "rule3"}))


def check_falsification(ctx, plan: Plan):
    ev = []
    quick, seed = ctx.quick, ctx.seed
    cfg = _cfg(quick)
    names = cfg["variants"]
    margin = float(ctx.choice("vote_margin"))
    grid_txt = (f"3 sources (V = 8) × {len(cfg['drafters'])} drafter(s) × B ∈ {cfg['Bs']} × k ∈ {cfg['ks']}, "
                f"{cfg['n_steps']} steps per point")
    exact_txt = (f"3 sources (V = 3) × {', '.join(d.name for d in cfg['exact_drafters'])} drafter × B ∈ "
                 f"{cfg['exact_Bs']} × k = 2")
    rows = harness_rows(plan, "match", quick, seed)
    sd1_rows = [r for r in rows if r["method"] == "SD-1"]   # SD-1 is verified the same way in every reading
    decisions = {}
    for reading, how, part in _VERIFICATIONS:
        rws = rows if reading == "match" else sd1_rows + harness_rows(plan, reading, quick, seed,
                                                                      with_baselines=(R.VOTE_UNIF,))
        dec = decisions[reading] = _mc_decisions(ctx, rws, names)
        n_cfg = len(dec["configs"])
        with ctx.part(part["rule1"]):
            ev.append(ctx.mc(_exists("mc", f"harness, {how}: " + grid_txt, dec["rule1"]["n_survive"], n_cfg,
                                     "ECSV improves both accepted length and cross-entropy to p over SD-1 on ≥ 2 "
                                     "sources", _best_note(dec), ctx.alpha_test, dec["rule1"]["n_undetermined"])))
            dd = exact_decisions(exact_rows(plan, reading, quick, seed), names)
            ev.append(_exists("exact", f"exact harness ({reading}): " + exact_txt, sum(not d["reject"] for d in dd),
                              len(dd), "ECSV improves both accepted length and cross-entropy to p over SD-1 on ≥ 2 "
                                       "sources"))
        with ctx.part(part["rule2"]):
            beats = [c for c in dec["configs"] if c["rule2"] == "not-revise"]
            ev.append(ctx.mc(_exists("mc", f"harness, {how}: " + grid_txt, len(beats), n_cfg,
                                     f"an ECSV variant's accepted length beats Vote-unif's by > {100 * margin:g}% on "
                                     "≥ 2 sources",
                                     "configurations: " + ", ".join(f"{c['variant']} {c['drafter']} B={c['B']} "
                                                                    f"k={c['k']}" for c in beats[:6]),
                                     ctx.alpha_test, dec["rule2"]["n_undetermined"])))
        with ctx.part(part["rule3"]):
            low = [c for c in dec["configs"] if (c["B"], c["k"]) == (2, 4)]
            ev.append(ctx.mc(_exists("mc", f"harness at B = 2, k = 4, {how}",
                                     sum(c["rule1"] == "survives" for c in low), len(low),
                                     "the improvement of rule 1 persists", alpha=ctx.alpha_test,
                                     undetermined=sum(c["rule1"] == "undetermined" for c in low))))
            dl = exact_decisions(exact_rows(plan, reading, quick, seed, Bs=(2,), ks=(4,), variants=cfg["exact_low"]),
                                 names)
            ev.append(_exists("exact", f"exact harness ({reading}) at B = 2, k = 4 (V = 3)",
                              sum(not d["reject"] for d in dl), len(dl), "the improvement of rule 1 persists",
                              "improving sources per configuration: " + ", ".join(
                                  f"{d['variant']} {d['drafter']}: {d['n_improves']}" for d in dl)))
    # --- rule 2 for the variants without verifier calls, the principal reading's verification ------
    with ctx.part("rule2-lite"):
        lite = [c for c in decisions["rs"]["configs"] if c["variant"] in LITE_VARIANTS]
        ev.append(stats.info("mc", "harness, verification min(1, p/q̄), ECSV-lite and ECSV-soft vs Vote-unif", 1.0,
                             float(sum(c["rule2"] == "not-revise" for c in lite)),
                             test=f"configurations where ECSV-lite/soft beat Vote-unif by > {100 * margin:g}% on ≥ 2 "
                                  "sources (z-tests); graded exactly on the V = 3 sources",
                             note=f"{sum(c['rule2'] == 'revise' for c in lite)} decided 'revise', "
                                  f"{sum(c['rule2'] == 'undetermined' for c in lite)} undetermined of {len(lite)}; "
                                  "tuned γ: " + ", ".join(f"{m.name} γ={m.gamma:g}"
                                                          for m in plan_variants(plan, "rs", quick, seed))))
        dv = exact_vote_decisions(exact_rows(plan, "rs", quick, seed, variants=LITE_VARIANTS), LITE_VARIANTS,
                                  margin=margin)
        ev.append(_exists("exact", "exact harness (rs): " + exact_txt, sum(not d["revise"] for d in dv), len(dv),
                          f"ECSV-lite/soft's accepted length exceeds Vote-unif's by > {100 * margin:g}% on ≥ 2 "
                          "sources",
                          "; ".join(f"{d['variant']} {d['drafter']} B={d['B']}: ECSV/Vote {d['ratios']}"
                                    for d in dv[:4])))
    # --- fidelity: the output law of every method, measured --------------------------------------
    with ctx.part("lossless"):
        srcs = small_sources()
        ms = BASELINES + plan_variants(plan, plan.reading, quick, seed)
        for name in ("medium", "weak"):
            pair = srcs[name]
            pts = [m.name for m in ms]
            by = {m.name: m for m in ms}
            ev.append(sweep(lambda pt, name=name: label(f"{name} source (V = 3)", method=pt["method"], B=2, k=2),
                            grid(method=pts), lambda method, pair=pair: (0.0, _tv(pair, by[method], plan.reading)),
                            grade="distance", what=f"TV(first 3 emitted tokens, p³), fused drafts verified by "
                                                   f"{plan.reading}"))
        for m in plan_variants(AS_READ, "rs", quick, seed) + (R.VOTE_UNIF,):
            for name in ("aligned", "medium", "weak"):
                ev.append(stats.info("exact", label(f"{name} source (V = 3)", method=m.name, verify="rs", B=2, k=2),
                                     0.0, _tv(srcs[name], m, "rs"),
                                     test="TV(first 3 emitted tokens, p³) of the 'standard final check' reading",
                                     note="measured distance from p (the paper concedes the output is not p)"))
        pair = harness_sources()["medium"]
        ev.append(_lossless_mc(ctx, pair, ms, plan.reading, cfg["tv_runs"]))
    return ev


def _tv(pair, method: R.Method, reading: str) -> float:
    m = method.regime("sampling")
    if m.kind == "fusion":
        m = m.with_verify(reading)
    return _tv_cached(pair, m)


@lru_cache(maxsize=None)
def _tv_cached(pair, m: R.Method) -> float:
    return ex.tv_to_target(R.Setup(pair, m, 2, 2), 3)


def _lossless_mc(ctx, pair, methods, reading: str, n: int) -> Evidence:
    """Chi-square of the first 2 emitted tokens against p² for every method (Bonferroni min-p
    over the methods), with the plug-in TV and its null level as the measured value."""
    pN = pair.target.sequence_probs(2)
    worst = (1.0, 0.0, 0.0, "")
    ps = []
    for m0 in methods:
        m = m0.regime("sampling")
        if m.kind == "fusion":
            m = m.with_verify(reading)
        ft = mc.sample_first_tokens(R.Setup(pair, m, 4, 4), n, 2, seed=ctx.rng("lossless", m.name))
        counts = mc.sequence_counts(ft.tokens, pair.V)
        p = mc.chi2_pvalue(counts, pN)
        ps.append(p)
        tv = mc.plugin_tv(counts, pN)
        if p <= worst[0]:
            worst = (p, tv, mc.plugin_tv_null(pN, n), m.name)
    k = len(ps)
    p_adj = min(1.0, k * min(ps))
    df = pair.V ** 2 - 1
    det = stats.chi2_detectable_w(df, n, ctx.alpha_test / k)
    outcome = "fail" if p_adj < ctx.alpha_test else ("pass" if det <= 0.1 else "underpowered")
    return ctx.mc(Evidence("mc", label("medium source (V = 8)", B=4, k=4, verify=reading, methods=k), 0.0,
                           worst[1], p_value=p_adj, n=n, alpha=ctx.alpha_test, power=stats.POWER, detectable=det,
                           tolerance=0.1,
                           test=f"chi-square of the first 2 emitted tokens ({pair.V ** 2} cells) against p² for each "
                                f"of {k} methods, Bonferroni min-p; measured = plug-in TV of the worst method, "
                                "detectable in Cohen's w",
                           outcome=outcome, note=f"worst method {worst[3]}: plug-in TV {worst[1]:.4f} (null level "
                                                 f"{worst[2]:.4f}), chi-square p {worst[0]:.2e}"))


def method_call(m: R.Method) -> str:
    """One expression that rebuilds a (tuned) ECSV variant from :mod:`spectheory.rules.ecsv`
    (needs ``import dataclasses, spectheory.rules.ecsv``): a counterexample's call names the tuned
    γ and α instead of re-running the tuning."""
    base = {"ECSV-lite": "ECSV_LITE", "ECSV-soft": "ECSV_SOFT", "Vote-unif": "VOTE_UNIF", "SD-1": "SD_1"}
    expr = (f"spectheory.rules.ecsv.{base[m.name]}" if m.name in base
            else f"spectheory.rules.ecsv.ecsv_spot({m.R})")
    import dataclasses
    ref = eval(expr, {"spectheory": __import__("spectheory.rules.ecsv")})  # noqa: S307 (our own expression)
    diff = {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if getattr(m, f.name) != getattr(ref, f.name)}
    if not diff:
        return expr
    if replace(ref, **diff) != m:
        raise ValueError(f"method_call: cannot rebuild {m.name}")
    return f"dataclasses.replace({expr}, " + ", ".join(f"{k}={v!r}" for k, v in diff.items()) + ")"


def exact_improvements(method: R.Method, reading: str = "rs", B: int = 2, k: int = 4,
                       drafter: R.Drafter = R.CLEAN) -> tuple[float, float]:
    """(2, the number of the three V = 3 sources on which ``method`` improves both accepted length
    and cross-entropy to p over SD-1), exact: rule 1 asks for ≥ 2."""
    rows = [_exact_row(src, drafter, B, k, m, reading) for src in small_sources() for m in (R.SD_1, method)]
    return 2.0, float(exact_decisions(rows, (method.name,))[0]["n_improves"])


def shrink_falsification(ctx, plan: Plan):
    """Counterexamples per reading. Principal (the standard final check): rule 3 at B = 2, k = 4,
    the best configuration of the exact harness improves on fewer than 2 of the 3 sources.
    Matching verification: rule 1 at its smallest (V = 3, B = 2, k = 2), the tuned ECSV-lite
    never improves on SD-1 (lossless, so cross-entropy to p cannot improve)."""
    out = []
    cfg = _cfg(ctx.quick)
    low = [m for m in plan_variants(plan, "rs", ctx.quick, ctx.seed) if m.name in cfg["exact_low"]]
    best = max(((dr, m) + exact_improvements(m, "rs", 2, 4, dr) for dr in cfg["exact_drafters"] for m in low),
               key=lambda t: t[3], default=None)
    if best is not None and best[3] < best[2]:
        dr, m, need, got = best
        out.append({"part": "rule3-rs", "V": 3, "order": 1, "B": 2, "k": 4, "method": m.name, "drafter": dr.name,
                    "source": "the three V = 3 sources (spectheory.sims.claims.ecsv.SMALL: mix0.1/0.4/0.7, seed 11)",
                    "claimed": need, "measured": got,
                    "note": f"the best configuration ({m.name}, γ={m.gamma:g}, α={tuple(m.alpha)}, {dr.name} drafter) "
                            f"improves both metrics on {got:g} of 3 sources (rule 1 needs 2): improvements vanish at "
                            "B = 2, k = 4",
                    "call": f"import dataclasses, spectheory.sims.claims.ecsv, spectheory.rules.ecsv; spectheory.sims.claims.ecsv."
                            f"exact_improvements({method_call(m)}, 'rs', 2, 4, spectheory.rules.ecsv."
                            f"{dr.name.upper()})"})
    src = small_sources()["medium"]
    lite = plan_variants(plan, "match", ctx.quick, ctx.seed)[0]
    e = _exact_row("medium", R.CLEAN, 2, 2, lite, "match")
    s1 = _exact_row("medium", R.CLEAN, 2, 2, R.SD_1, "match")
    if not (e["accepted_length"] > s1["accepted_length"] + 1e-9 and e["ce_per_token"] < s1["ce_per_token"] - 1e-9):
        out.append({"part": "rule1", "V": 3, "order": 1, "B": 2, "k": 2,
                    "method": f"{lite.name} (tuned: γ={lite.gamma:g}, α={tuple(lite.alpha)})",
                    "source": "spectheory.pairs.perturbed_pair(3, 1, concentration=0.3, how='mix', strength=0.4, "
                              "seed=11)",
                    "claimed": s1["accepted_length"], "measured": e["accepted_length"],
                    "note": f"cross-entropy to p {e['ce_per_token']:.6f} (ECSV) vs {s1['ce_per_token']:.6f} (SD-1): "
                            "equal, both emit p; accepted length lower",
                    "call": "import dataclasses, spectheory.sims.claims.ecsv, spectheory.rules.ecsv; [spectheory.sims.claims.ecsv._exact_row("
                            "'medium', spectheory.rules.ecsv.CLEAN, 2, 2, m, 'match')['accepted_length'] for m in "
                            f"(spectheory.rules.ecsv.SD_1, {method_call(lite)})]", "src": src.name})
    return out or None


def _falsification_scope(pair=None, B=None, **settings):
    if B is not None and B < 2:
        return f"B = {B}: one branch, nothing to fuse"
    return None


register(
    id="ecsv.falsification", paper=PAPER, reference="Experiments, 'Falsification criteria'",
    statement="The paper's falsification plan run in simulation (and on logits): ECSV-lite, ECSV-spot (R=1..4), "
              "ECSV-soft against SD-1, SD-multi, Vote-unif and Oracle-Top1 at matched verifier budget, B ∈ {2,4,8}, "
              "k ∈ {2,4,8}, clean and noisy drafters; accepted length, cross-entropy to p and TV of the output to p; "
              "its criteria: reject if ECSV fails to beat SD-1 on both; revise if Vote-unif matches ECSV; "
              "impractical if improvements vanish at B = 2, k = 4.",
    interpretation="Matched budget: every method under the rule scores k + 1 verifier positions per step (SD-1's). "
                   "'Datasets' are Markov sources of three alignment levels. α, γ of every ECSV variant are tuned on "
                   "held-out sources under the verification in force (γ = 0, the unweighted vote, is in the grid). "
                   "Each criterion is a part read as 'exists' (the most generous reading: the hypothesis survives if "
                   "any configuration passes). Principal reading: fused drafts verified by the standard final check "
                   "min(1, p/q̄) (q̄ the branches' mean drafter row), lossy as the paper's Limitations concede — "
                   "rule1-rs: some variant improves both accepted length and cross-entropy to p over SD-1 on ≥ 2 "
                   "sources; rule2-rs: some variant beats Vote-unif by > 1% on ≥ 2 sources (else 'revise'); "
                   "rule3-rs: rule 1 survives at B = 2, k = 4. Other readings beside it: matching verification "
                   "(the verifier's sample must equal the fused token; lossless) for rules 1–3 and the measured "
                   "law ('lossless'); rule 2 for the variants without verifier calls ('rule2-lite').",
    parts=(Part("rule1-rs", "Rule 1 does not reject: at matched budget an ECSV variant improves both accepted length "
                            "and cross-entropy to p over SD-1 on ≥ 2 sources, fused drafts verified by min(1, p/q̄) "
                            "(the 'standard final check').", relation="exists", modes=("exact", "mc")),
           Part("rule2-rs", "Rule 2 does not call for revision: an ECSV variant beats Vote-unif by > 1% on ≥ 2 sources "
                            "(standard final check).", relation="exists", modes=("mc",)),
           Part("rule3-rs", "Rule 3: the improvement of rule 1 persists at B = 2, k = 4 (standard final check).",
                relation="exists", modes=("exact", "mc")),
           Part("rule1", "Rule 1 with matching verification (the verifier's own sample must equal the fused token).",
                relation="exists", modes=("exact", "mc", "logits")),
           Part("rule2", "Rule 2 with matching verification.", relation="exists", modes=("mc",)),
           Part("rule3", "Rule 3 with matching verification.", relation="exists", modes=("exact", "mc")),
           Part("lossless", "Under matching verification every method's output law is p.", relation="law",
                modes=("exact", "mc")),
           Part("rule2-lite", "Rule 2 for ECSV-lite / ECSV-soft (reliability from drafter signals, no verifier call), "
                              "standard final check.", relation="exists", modes=("exact",))),
    readings=(
        Reading("standard-final-check", "The plan's three criteria with fused drafts verified by standard speculative "
                "decoding's rejection test, min(1, p/q̄), which the paper concedes does not sample p exactly.",
                ("rule1-rs", "rule2-rs", "rule3-rs"), role="principal",
                quote="Method, Fusion rule: 'The fused draft t*,1:k is then passed to the verifier for acceptance, "
                      "identical to standard speculative decoding's final check, except using the fused tokens.' "
                      "Limitations: 'The fused sequence is not an exact sample from the verifier distribution; like "
                      "standard speculative decoding, we target correctness and efficiency, not sampling fidelity.'",
                why="Setup says standard SD accepts 'the longest prefix consistent with V under rejection sampling' and "
                    "ECSV 'instead fuse[s] branches ... then verif[ies] that fused sequence'; the Limitations say the "
                    "output is not an exact sample from V, which is true of this check and false of matching the "
                    "verifier's sample (lossless); and rule 1 asks for lower perplexity, which no lossless method can "
                    "give. The drafter probability of a fused token, q̄, is ours: the paper names none."),
        Reading("matching", "The same criteria with step 5 read as matching: the verifier samples y ~ p and the "
                "fused token is accepted iff it equals y (lossless, so cross-entropy to p cannot improve).",
                ("rule1", "rule2", "rule3", "lossless"), kind="rule",
                why="Step 5 ('run V forward along t*,1:k until a mismatch; accept the matched prefix') and the coding "
                    "view ('y_j is drawn from pV') support it, but it contradicts the Limitations (its output is an "
                    "exact sample) and makes rule 1's perplexity criterion unsatisfiable by construction."),
        Reading("drafter-signals-only", "Rule 2 for the variants whose weights come from drafter signals alone "
                "(ECSV-lite, ECSV-soft), standard final check.", ("rule2-lite",), kind="stricter",
                why="The paper's rule 2 speaks of 'ECSV'; asking it of each variant without verifier calls is "
                    "stricter: does reliability modelling from drafter signals contribute?")),
    scope=Scope("Configurations with B ≥ 2 branches (something to fuse) at matched budget; every harness and exact "
                "configuration is in scope.", guard=_falsification_scope),
    choices=(Choice("vote_margin", 0.01, (0.0, 0.01, 0.05),
                    "how much longer ECSV's accepted length must be than Vote-unif's for the vote not to 'match' it "
                    "(rule 2); the paper gives no band", invented=True),),
    modes=("exact", "mc", "logits"),
    check=check_falsification, subject=AS_READ, mc_tests=7, shrink=shrink_falsification,
    controls=(Control("anti-reliability fusion", MINORITY_PLAN, "negative control: every variant fuses the least "
                      "agreeing, least probable draft; it must fail every decision rule",
                      parts=("rule1-rs", "rule2-rs", "rule3-rs", "rule1", "rule2", "rule3", "rule2-lite")),
              Control("lossy reading as lossless", RS_PLAN, "negative control: fused drafts verified against q̄ "
                      "(the rs reading) and claimed lossless", parts=("lossless",))))
