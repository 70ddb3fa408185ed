"""Monte Carlo of ECSV branch voting on Markov pairs, and the paper's falsification harness.

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous
manuscript under revision, 2026. ``p`` target (verifier), ``q`` draft, ``B`` branches of
depth ``k``.

The public functions validate their arguments, build the kernel's tables from a
:class:`spectheory.rules.ecsv.Setup` (alias tables of the target and the drafter's sampling
law; for the exact-proposal reading, the fused token's proposal rows by enumeration), split
the work over independent xoshiro256++ streams (:func:`spectheory.rng.stream_states`; results
do not depend on how the streams are scheduled) and call the kernel with preallocated outputs.

Estimators (stated where they are reported):

* per-step means (accepted length τ, verifier positions) with batch-means standard errors
  (each stream cut into :data:`N_BATCHES` consecutive batches);
* ratios (verifier positions per output token, cross-entropy per token) as ratio of sums,
  with delta-method standard errors over the same batches;
* TV of the output law to p: the plug-in ``½ Σ |n_x/n − p^N(x)|`` over the first N emitted
  tokens of n independent runs, reported with its *null level* — the expected plug-in value
  if the runs were exact draws from p^N (:func:`plugin_tv_null`) — and a chi-square test of
  p^N; the plug-in is biased upward by about that level.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats as _st

from .._kernels import ecsv as _k
from .._kernels.core import build_alias
from ..checks import check_enumerable, check_int, check_int_array, check_level, check_state, check_type
from ..markov import MarkovPair
from ..rng import check_random_state, stream_states
from ..rules import ecsv as R

N_STREAMS = 16
N_BATCHES = 20
#: Largest proposal-row table (start states × fused-prefix nodes × V) of the rs_exact reading.
MAX_PI_CELLS = 1 << 22

_KIND = {"sd1": _k.KIND_SD1, "sd_multi": _k.KIND_MULTI, "oracle": _k.KIND_ORACLE, "fusion": _k.KIND_FUSION}
_VERIFY = {"match": _k.V_MATCH, "rs": _k.V_RS, "rs_exact": _k.V_RS_EXACT, "greedy": _k.V_GREEDY}
_SELECT = {"disagreement": _k.SEL_DISAGREE, "entropy": _k.SEL_ENTROPY, "least": _k.SEL_LEAST}
_TIES = {"verifier": _k.TIES_VERIFIER, "qbar": _k.TIES_QBAR, "none": _k.TIES_NONE}


def _check_setup(setup) -> R.Setup:
    return check_type(setup, R.Setup, "setup", " (spectheory.rules.ecsv.Setup)")


def _pi_tables(setup: R.Setup):
    """Proposal rows π_j(· | fused prefix) of every start state (rs_exact), by enumeration."""
    from ..exact import ecsv as ex
    V, S, d = setup.V, setup.S, setup.d
    off = np.zeros(d + 1, dtype=np.int64)
    for j in range(1, d + 1):
        off[j] = off[j - 1] + V ** (j - 1)
    if S * off[d] * V > MAX_PI_CELLS:
        raise ValueError(f"the exact-proposal reading needs {S}×{off[d]}×{V} proposal cells (limit {MAX_PI_CELLS})")
    pi = np.zeros((S, off[d], V))
    for s in range(S):
        F = ex.step_law(setup, s).fused
        for j in range(d):
            Fj1 = F.reshape(V ** (j + 1), V ** (d - j - 1)).sum(axis=1).reshape(V ** j, V)
            den = Fj1.sum(axis=1, keepdims=True)
            pi[s, off[j]:off[j] + V ** j] = np.where(den > 0, Fj1 / np.where(den > 0, den, 1.0), 0.0)
    return off, pi


def tables(setup: R.Setup) -> _k.ECSVTables:
    """The kernel's tables for ``setup`` (one bundle)."""
    setup = _check_setup(setup)
    m = setup.method
    p_prob, p_alias = build_alias(setup.p_rows)
    q_prob, q_alias = build_alias(setup.q_rows)
    if m.verify == "rs_exact":
        if m.kind != "fusion":
            raise ValueError("the exact-proposal reading applies to fused drafts")
        pi_off, pi = _pi_tables(setup)
    else:
        pi_off, pi = np.zeros(setup.d + 1, dtype=np.int64), np.zeros((1, 1, 1))
    return _k.ECSVTables(
        V=setup.V, S=setup.S, B=setup.Bd, d=setup.d, R=setup.R_used, kind=_KIND[m.kind], verify=_VERIFY[m.verify],
        uniform=m.weights == "uniform", branchwise=m.scope == "branch", a_ent=float(m.alpha[0]),
        a_agr=float(m.alpha[1]), a_sc=float(m.alpha[2]), a_spot=float(m.alpha[3]), gamma=float(m.gamma),
        lam=float(m.lam), top_m=int(m.top_m), select=_SELECT[m.spot_select], ties=_TIES[m.ties],
        residual_p=m.residual == "p", emit_draft=m.on_mismatch == "draft",
        p_rows=np.ascontiguousarray(setup.p_rows), p_ros=setup.p_ros, p_prob=p_prob, p_alias=p_alias,
        p_log=np.ascontiguousarray(setup.p_log), p_top=setup.p_top, p_second_log=setup.p_second_log,
        q_rows=np.ascontiguousarray(setup.q_rows), q_ros=setup.q_ros, q_prob=q_prob, q_alias=q_alias,
        q_log=np.ascontiguousarray(setup.q_log), q_ent=setup.q_ent, pi_off=pi_off, pi=pi)


# --- streams ---------------------------------------------------------------------------------

@dataclass
class Estimate:
    """A Monte Carlo estimate: value, standard error, and how it was formed."""

    value: float
    se: float
    n: int
    how: str

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        z = float(_st.norm.ppf(0.5 + check_level(level, "level") / 2))
        return self.value - z * self.se, self.value + z * self.se


@dataclass
class StreamResult:
    """Per-step records of ``N_STREAMS`` chains of ``per`` steps each (stream-major)."""

    setup: R.Setup
    tau: np.ndarray
    cost_parallel: np.ndarray
    cost_sequential: np.ndarray
    ce: np.ndarray
    per: int
    summary: dict = field(default_factory=dict)

    def _batches(self, x):
        nb = max(1, min(N_BATCHES, self.per))
        blen = self.per // nb
        y = np.asarray(x, dtype=np.float64)[: N_STREAMS * self.per].reshape(N_STREAMS, self.per)[:, : nb * blen]
        return y.reshape(N_STREAMS * nb, blen).sum(axis=1), blen

    def mean(self, x, how: str) -> Estimate:
        sums, blen = self._batches(x)
        m = sums / blen
        se = float(m.std(ddof=1) / np.sqrt(m.size)) if m.size > 1 else float("nan")
        return Estimate(float(np.mean(x)), se, int(np.size(x)), how)

    def ratio(self, num, den, how: str) -> Estimate:
        a, _ = self._batches(num)
        b, _ = self._batches(den)
        r = float(np.sum(num) / np.sum(den))
        z = a - r * b
        se = float(z.std(ddof=1) * np.sqrt(z.size) / b.sum()) if z.size > 1 else float("nan")
        return Estimate(r, se, int(np.size(num)), how)

    def estimates(self) -> dict:
        """Accepted length, tokens per step, verifier positions per step and per output token
        (both accountings) and cross-entropy to p per emitted token, each an :class:`Estimate`."""
        tok = self.tau + 1.0
        bm = f"batch means ({N_STREAMS} streams × {N_BATCHES} batches)"
        dm = f"ratio of sums, delta-method se over {N_STREAMS * N_BATCHES} batches"
        return {"accepted_length": self.mean(self.tau, "mean τ per step, " + bm),
                "tokens_per_step": self.mean(tok, "mean τ + 1 per step, " + bm),
                "cost_parallel_per_step": self.mean(self.cost_parallel, bm),
                "cost_sequential_per_step": self.mean(self.cost_sequential, bm),
                "vtpo_parallel": self.ratio(self.cost_parallel, tok, dm),
                "vtpo_sequential": self.ratio(self.cost_sequential, tok, dm),
                "ce_per_token": self.ratio(self.ce, tok, dm)}


def simulate(setup: R.Setup, n_steps: int, *, seed=None, start_state: int = 0) -> StreamResult:
    """``N_STREAMS`` independent chains of ⌈n_steps / N_STREAMS⌉ consecutive steps each from
    ``start_state`` (the context continues across steps): per-step τ, verifier positions in
    both accountings and Σ −log p of the emitted tokens."""
    setup = _check_setup(setup)
    n_steps = check_int(n_steps, "n_steps", min=N_STREAMS)
    check_state(start_state, setup.S)
    T = tables(setup)
    per = -(-n_steps // N_STREAMS)
    total = per * N_STREAMS
    st = stream_states(seed, N_STREAMS)
    tau = np.empty(total, dtype=np.int64)
    cp = np.empty(total)
    cs = np.empty(total)
    ce = np.empty(total)
    _k.streams(st, T, int(start_state), per, tau, cp, cs, ce)
    res = StreamResult(setup, tau, cp, cs, ce, per)
    return res


@dataclass
class FirstTokens:
    """First ``n_tokens`` emitted tokens of independent runs, the first step's fused draft
    (SD-1: its branch; SD-multi: branch 1) and its τ."""

    tokens: np.ndarray
    draft: np.ndarray
    tau: np.ndarray


def sample_first_tokens(setup: R.Setup, n_runs: int, n_tokens: int, *, seed=None,
                        start_state: int = 0) -> FirstTokens:
    """``n_runs`` independent runs from ``start_state``, each continued over steps until
    ``n_tokens`` tokens are emitted."""
    setup = _check_setup(setup)
    n_runs = check_int(n_runs, "n_runs", min=1)
    n_tokens = check_int(n_tokens, "n_tokens", min=1)
    check_state(start_state, setup.S)
    T = tables(setup)
    per = -(-n_runs // N_STREAMS)
    total = per * N_STREAMS
    st = stream_states(seed, N_STREAMS)
    toks = np.empty((total, n_tokens), dtype=np.int64)
    draft = np.empty((total, setup.d), dtype=np.int64)
    tau = np.empty(total, dtype=np.int64)
    _k.first_tokens_runs(st, T, int(start_state), per, n_tokens, toks, draft, tau)
    return FirstTokens(toks[:n_runs], draft[:n_runs], tau[:n_runs])


def sequence_counts(tokens, V: int) -> np.ndarray:
    """Counts of each of the V^N sequences in ``tokens`` (n, N), first token most significant."""
    V = check_int(V, "V", min=1)
    tokens = check_int_array(tokens, "tokens", min=0, max=V - 1, ndim=2)
    N = check_enumerable(V, tokens.shape[1], "N (tokens per run)")
    return np.bincount(tokens @ (V ** np.arange(N - 1, -1, -1)), minlength=V ** N)


def plugin_tv(counts, probs) -> float:
    """Plug-in TV ``½ Σ |counts/n − probs|``."""
    c = np.asarray(counts, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64)
    if c.shape != p.shape or c.ndim != 1 or c.sum() <= 0:
        raise ValueError(f"counts and probs must be matching 1-D arrays with a positive total, got {c.shape}, {p.shape}")
    return float(0.5 * np.abs(c / c.sum() - p).sum())


def plugin_tv_null(probs, n: int) -> float:
    """Expected plug-in TV of n exact draws from ``probs``: ``½ Σ_x E|N_x/n − p_x|`` with
    ``N_x ~ Bin(n, p_x)`` (mean absolute deviation of a binomial, exact closed form)."""
    p = np.asarray(probs, dtype=np.float64)
    n = check_int(n, "n", min=1)
    out = 0.0
    for px in p[p > 0]:
        if px >= 1.0:
            continue
        m = int(np.floor(n * px)) + 1  # E|X − np| = 2 m C(n,m) p^m (1−p)^{n−m+1}, m = ⌊np⌋ + 1
        out += 2 * m * np.exp(_st.binom.logpmf(m, n, px) + np.log1p(-px)) / n
    return float(0.5 * out)


def chi2_pvalue(counts, probs) -> float:
    """Chi-square goodness-of-fit p-value of counts against probs (cells of expected count
    below 5 pooled into one)."""
    c = np.asarray(counts, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64)
    n = c.sum()
    if (c[p == 0] > 0).any():
        return 0.0
    e = p * n
    small = e < 5
    if small.any():
        c = np.concatenate((c[~small], [c[small].sum()]))
        e = np.concatenate((e[~small], [e[small].sum()]))
        keep = e > 0
        c, e = c[keep], e[keep]
    if c.size < 2:
        return 1.0
    return float(_st.chisquare(c, e).pvalue)


# --- the falsification harness -----------------------------------------------------------------

def default_sources(V: int = 8, seed: int = 20260, concentration: float = 0.3) -> dict:
    """Markov pairs of three alignment levels (order 1, V tokens): a peaked Dirichlet target
    and a draft mixed with noise of weight ε ∈ {0.1, 0.4, 0.7} ('aligned', 'medium', 'weak')."""
    from ..pairs import perturbed_pair
    V = check_int(V, "V", min=2)
    out = {}
    for name, eps in (("aligned", 0.1), ("medium", 0.4), ("weak", 0.7)):
        out[name] = perturbed_pair(V, 1, concentration=concentration, how="mix", strength=eps, seed=seed,
                                   name=f"{name}(ε={eps})-V{V}-o1")
    return out


def harness(sources: dict, methods=R.PLAN, Bs=(2, 4, 8), ks=(2, 4, 8), drafters=(R.CLEAN, R.NOISY), *,
            n_steps: int = 20_000, seed=0, tv_runs: int = 0, tv_tokens: int = 2, reading: str = "match",
            regime: str = "sampling") -> list[dict]:
    """Every method at every (source, drafter, B, k): one row each with Monte Carlo
    estimates (:class:`Estimate`) of accepted length, tokens per step, verifier positions
    per step and per output token (parallel and sequential accounting), cross-entropy to p
    per emitted token and — when ``tv_runs`` > 0 — the plug-in TV of the first
    ``tv_tokens`` emitted tokens against p with its null level. ``reading`` is the
    verification of fused drafts in the sampling regime (``"match"`` or ``"rs"``);
    ``regime="greedy"`` verifies every method greedily."""
    if not isinstance(sources, dict) or not sources:
        raise ValueError("sources must be a non-empty dict {name: MarkovPair}")
    for name, pair in sources.items():
        check_type(pair, MarkovPair, f"sources[{name!r}]")
    if reading not in ("match", "rs"):
        raise ValueError(f"reading must be 'match' or 'rs', got {reading!r}")
    rng = check_random_state(seed)
    base = int(rng.integers(0, 2**62))
    rows = []
    for src, pair in sources.items():
        for dr in drafters:
            check_type(dr, R.Drafter, "drafter")
            for B in Bs:
                for k in ks:
                    for m0 in methods:
                        m = m0.regime(regime)
                        if regime == "sampling" and m.kind == "fusion":
                            m = m.with_verify(reading)
                        if m0.kind == "sd1" and B != Bs[0]:
                            continue  # SD-1 does not depend on B: one row per (source, drafter, k)
                        setup = R.Setup(pair, m, B, k, dr)
                        ss = np.random.SeedSequence(base, spawn_key=(len(rows),))
                        res = simulate(setup, n_steps, seed=ss)
                        row = {"source": src, "drafter": dr.name, "B": B, "k": k, "method": m0.name,
                               "verify": m.verify, "R_used": setup.R_used, "d": setup.d,
                               "allowance": setup.allowance, **res.estimates()}
                        if tv_runs:
                            ft = sample_first_tokens(setup, tv_runs, tv_tokens, seed=ss.spawn(1)[0])
                            pN = pair.target.sequence_probs(tv_tokens)
                            counts = sequence_counts(ft.tokens, pair.V)
                            row["tv"] = plugin_tv(counts, pN)
                            row["tv_null"] = plugin_tv_null(pN, tv_runs)
                            row["tv_chi2_p"] = chi2_pvalue(counts, pN)
                        rows.append(row)
    return rows


#: The tuning grid of :func:`tune` (the paper: "α, γ chosen on a small held-out set").
GAMMAS = (0.0, 0.5, 1.0, 2.0, 4.0)
SPOT_ALPHAS = (1.0, 4.0)
SIGNAL_ALPHAS = ((1.0, 1.0), (1.0, 0.0), (0.0, 1.0))


def tune(method: R.Method, held_out: dict, *, B: int = 4, k: int = 4, drafter: R.Drafter = R.CLEAN,
         reading: str = "match", regime: str = "sampling", n_steps: int = 8_000, seed=0, gammas=GAMMAS,
         signal_alphas=SIGNAL_ALPHAS, spot_alphas=SPOT_ALPHAS) -> tuple[R.Method, dict]:
    """Choose a fusion method's ``γ`` and coefficients on held-out sources: the grid point
    with the largest mean accepted length over ``held_out`` at (B, k) — γ ∈ ``gammas`` (default
    :data:`GAMMAS`; γ = 0 is the unweighted vote), (α_entropy, α_agreement) ∈ ``signal_alphas``
    (:data:`SIGNAL_ALPHAS`), and α_spot ∈ ``spot_alphas`` (:data:`SPOT_ALPHAS`) for spot-check
    variants; ties go to the smaller γ. Returns the tuned method (same
    name) and ``{grid point: mean accepted length}``. Methods without weights are returned
    unchanged."""
    check_type(method, R.Method, "method", " (spectheory.rules.ecsv)")
    if not isinstance(held_out, dict) or not held_out:
        raise ValueError("held_out must be a non-empty dict {name: MarkovPair}")
    if method.kind != "fusion" or method.weights == "uniform":
        return method, {}
    from dataclasses import replace
    rng = check_random_state(seed)
    base = int(rng.integers(0, 2**62))
    scores = {}
    spot = tuple(spot_alphas) if method.R else (method.alpha[3],)
    for g in gammas:
        for a01 in (tuple(signal_alphas) if g > 0 else (method.alpha[:2],)):
            for a3 in (spot if g > 0 else (method.alpha[3],)):
                m = replace(method, gamma=g, alpha=(a01[0], a01[1], method.alpha[2], a3)).regime(regime)
                if regime == "sampling":
                    m = m.with_verify(reading)
                acc = [simulate(R.Setup(pair, m, B, k, drafter), n_steps,
                                seed=np.random.SeedSequence(base, spawn_key=(i,))).estimates()["accepted_length"].value
                       for i, pair in enumerate(held_out.values())]
                scores[(g, a01[0], a01[1], a3)] = float(np.mean(acc))
    g, a0, a1, a3 = max(scores, key=lambda key: (scores[key], -key[0]))
    return replace(method, gamma=g, alpha=(a0, a1, method.alpha[2], a3)), scores


def _z(a: Estimate, b: Estimate, margin: float = 0.0) -> float:
    """z statistic of ``a − b − margin`` (independent estimates)."""
    se = float(np.hypot(a.se, b.se))
    diff = a.value - b.value - margin
    return diff / se if se > 0 else (np.inf if diff > 0 else (-np.inf if diff < 0 else 0.0))


def rule1_decision(n_improves: int, n_possible: int, min_datasets: int = 2) -> str:
    """Rule 1 of the falsification plan at one configuration ("fails to improve … on ≥2 datasets,
    reject"): ``survives`` with ≥ ``min_datasets`` datasets improving, ``rejected`` when fewer than
    ``min_datasets`` can still improve (improving or undecided), else ``undetermined``."""
    if n_improves >= min_datasets:
        return "survives"
    return "rejected" if n_possible < min_datasets else "undetermined"


def falsification(rows: list[dict], *, alpha: float = 0.01, margin: float = 0.01,
                  variants=("ECSV-lite",) + tuple(m.name for m in R.ECSV_SPOT) + ("ECSV-soft",),
                  min_datasets: int = 2, low=(2, 4)) -> dict:
    """The paper's decision rules on a harness table, each comparison a one-sided z-test at
    level ``alpha`` (independent estimates, batch-means standard errors).

    Per (variant, drafter, B, k) and source: ECSV *improves* on SD-1 when its accepted length is
    significantly higher **and** its cross-entropy to p significantly lower; it *cannot improve*
    when either is significantly on the wrong side. Rule 1 (**reject**, "fails to improve both
    on ≥ ``min_datasets`` datasets"): a configuration *survives* with ≥ ``min_datasets``
    improving sources, is *rejected* when fewer than ``min_datasets`` sources can still improve,
    and is *undetermined* otherwise (the tests lacked power). Rule 2 (**revise**, "Vote-unif
    matches ECSV"): ECSV *beats* Vote-unif at a source when ``acc_E − (1 + margin)·acc_V > 0``
    significantly, *cannot* when ``< 0`` significantly; the configuration calls for revision when
    fewer than ``min_datasets`` sources can beat the vote (``revise``), not when ≥
    ``min_datasets`` beat it, else undetermined. Rule 3 (**impractical**): rule 1 at (B, k) =
    ``low``. Returns ``{"configs": [...], "rule1", "rule2", "rule3"}`` with counts."""
    alpha = check_level(alpha, "alpha")
    zc = float(_st.norm.isf(alpha))
    idx = {(r["source"], r["drafter"], r["B"], r["k"], r["method"]): r for r in rows}
    sd1 = {(r["source"], r["drafter"], r["k"]): r for r in rows if r["method"] == "SD-1"}
    sources = sorted({r["source"] for r in rows})
    configs = []
    keys = sorted({(r["drafter"], r["B"], r["k"], r["method"]) for r in rows if r["method"] in variants})
    for dr, B, k, meth in keys:
        per_src = []
        for src in sources:
            e = idx.get((src, dr, B, k, meth))
            s1 = sd1.get((src, dr, k))
            v = idx.get((src, dr, B, k, "Vote-unif"))
            if e is None or s1 is None:
                continue
            z_acc = _z(e["accepted_length"], s1["accepted_length"])
            z_ce = _z(s1["ce_per_token"], e["ce_per_token"])
            beats_vote = cannot_beat = None
            if v is not None:
                z_v = _z(e["accepted_length"], v["accepted_length"], margin * v["accepted_length"].value)
                beats_vote, cannot_beat = bool(z_v > zc), bool(z_v < -zc)
            per_src.append({"source": src, "acc_ecsv": e["accepted_length"].value,
                            "acc_sd1": s1["accepted_length"].value, "ce_ecsv": e["ce_per_token"].value,
                            "ce_sd1": s1["ce_per_token"].value,
                            "acc_vote": None if v is None else v["accepted_length"].value,
                            "accepted_up": bool(z_acc > zc), "ce_down": bool(z_ce > zc),
                            "improves": bool(z_acc > zc and z_ce > zc),
                            "cannot_improve": bool(z_acc < -zc or z_ce < -zc),
                            "beats_vote": beats_vote, "cannot_beat_vote": cannot_beat,
                            "vtpo_ecsv": e["vtpo_parallel"].value, "vtpo_sd1": s1["vtpo_parallel"].value})
        n_imp = sum(p["improves"] for p in per_src)
        n_possible = sum(not p["cannot_improve"] for p in per_src)
        n_bv = sum(bool(p["beats_vote"]) for p in per_src)
        n_bv_possible = sum(p["cannot_beat_vote"] is False for p in per_src)
        r1 = rule1_decision(n_imp, n_possible, min_datasets)
        r2 = "not-revise" if n_bv >= min_datasets else ("revise" if n_bv_possible < min_datasets else "undetermined")
        configs.append({"variant": meth, "drafter": dr, "B": B, "k": k, "sources": per_src,
                        "n_improves": n_imp, "n_possible": n_possible, "rule1": r1, "reject": r1 != "survives",
                        "n_beats_vote": n_bv, "rule2": r2, "revise": r2 != "not-revise",
                        "n_accepted_up": sum(p["accepted_up"] for p in per_src),
                        "n_ce_down": sum(p["ce_down"] for p in per_src)})
    low_cfg = [c for c in configs if (c["B"], c["k"]) == tuple(low)]

    def count(cs, key, val):
        return sum(c[key] == val for c in cs)
    return {"configs": configs, "alpha": alpha, "margin": margin, "min_datasets": min_datasets,
            "rule1": {"reject": all(c["rule1"] == "rejected" for c in configs), "n_configs": len(configs),
                      "n_survive": count(configs, "rule1", "survives"), "n_reject": count(configs, "rule1", "rejected"),
                      "n_undetermined": count(configs, "rule1", "undetermined")},
            "rule2": {"revise": all(c["rule2"] == "revise" for c in configs), "n_configs": len(configs),
                      "n_not_revise": count(configs, "rule2", "not-revise"), "n_revise": count(configs, "rule2", "revise"),
                      "n_undetermined": count(configs, "rule2", "undetermined")},
            "rule3": {"impractical": all(c["rule1"] == "rejected" for c in low_cfg) if low_cfg else None,
                      "n_configs": len(low_cfg), "n_survive": count(low_cfg, "rule1", "survives"),
                      "n_vanish": count(low_cfg, "rule1", "rejected"),
                      "n_undetermined": count(low_cfg, "rule1", "undetermined")}}


def tune_plan(methods, held_out: dict, **kw) -> tuple[tuple, dict]:
    """:func:`tune` every method of ``methods`` (those without weights unchanged); returns the
    tuned methods and ``{name: (γ, α)}``."""
    out, chosen = [], {}
    for m in methods:
        tm, _ = tune(m, held_out, **kw)
        out.append(tm)
        if tm.kind == "fusion" and tm.weights == "reliability":
            chosen[tm.name] = (tm.gamma, tm.alpha)
    return tuple(out), chosen
