"""Branch-voting methods of ECSV, as data, with the baselines and broken variants beside them.

Source: "Error-Correcting Speculative Decoding via Branch Voting" (ECSV), anonymous
manuscript under revision, 2026. Notation: ``p`` target (the verifier), ``q`` draft (the
drafter), ``B`` branches of depth ``k`` (the paper's letters; the catalog calls B ``K``).

One decoding step from a context (a Markov state):

1. **Drafting.** B branches of depth k are sampled from the drafter's *sampling law*: its
   rows (a clean drafter, or a noisy / quantised one: log-probabilities rounded to a grid)
   at temperature T, then cut to the nucleus top-p (:class:`Drafter`). ``q_{b,j}`` is the
   row branch b's token j was drawn from (after its own prefix).
2. **Reliability signals** per (b, j): ``u = −H(q_{b,j})``; agreement = the fraction of the
   other branches with the same token; self-consistency ``log q_{b,j}(t̂_{b,j})``; and, at
   the R spot-checked positions S, ``c = log p(t̂_{b,j}) − log p(second best)``.
3. **Weights** ``r = α1 u + α2 agreement + α3 log q(t̂) + α4 1[j ∈ S] c``;
   ``w_{b,j} = exp(γ r_{b,j})`` (positionwise) or ``w_b = exp(γ mean_j r_{b,j})`` (branchwise).
4. **Fusion** per position j: candidates = the branch tokens ∪ the top-M tokens of the
   average row ``q̄_j``; score ``S(t) = Σ_b w 1[t̂ = t] + λ Σ_b w q_{b,j}(t)``; argmax; ties
   broken by the verifier's row at j if j was spot-checked, else by ``q̄_j``, then (our
   addition, the paper stops there) by the smaller token id.
5. **Verification** of the fused draft (readings, each a switch, see ``verify``).

Interpretations (each documented in docs/ecsv.md):

* **Spot-check rows.** The verifier's row at a spot-checked position j is taken after the
  prefix fused *without* spot information (a first fusion pass); the final fusion then uses
  the spot features. (The paper does not say along which prefix V is run; this is causal
  and needs no branch to be special.)
* **Spot positions.** The R positions of highest disagreement ``1 − max_t count_j(t)/B``,
  ties by higher mean entropy, then smaller j (``spot_select="disagreement"``, the paper's
  ECSV-spot); ``"entropy"`` orders by mean entropy first.
* **Budget rule** (Budget control): per step the verifier may score at most
  ``L = k + 1`` positions (what SD-1 at depth k scores in one forward). ECSV-spot spends
  ``R_used = min(R, ⌊k/2⌋)`` spot checks and verifies a fused draft of depth
  ``d = k − R_used`` (``|S_pre| + |S_post| = R_used + d + 1 ≤ L``); surplus is banked.
* **Verification** (``verify``): ``"match"`` — the verifier samples ``y ~ p`` at each
  position and the fused token is accepted iff equal (the paper's step 5 and coding view;
  lossless); ``"rs"`` — "identical to standard speculative decoding's final check":
  accept with ``min(1, p(t*)/q̄(t*))``, correction from ``norm(max(p − q̄, 0))`` (exactly
  Leviathan et al. for one branch; lossy for a fused draft, whose law is not q̄);
  ``"rs_exact"`` — the same test against the fused token's true proposal law, computed by
  enumeration (small V only; lossless); ``"greedy"`` — the verifier at temperature 0.
* **SD-multi** ("accept-first-that-passes"): the B branches verified as a token tree
  against the verifier's own samples (a branch survives while it matches). **Oracle-Top1**:
  the branch with the largest expected accepted length under the verifier (full lookahead:
  ``Σ_j Π_{i≤j} p(t̂_i)``; greedy: its matched length), then verified; not budget-matched.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..checks import check_int, check_real

KINDS = ("sd1", "sd_multi", "oracle", "fusion")
VERIFY = ("match", "rs", "rs_exact", "greedy")
WEIGHTS = ("uniform", "reliability")
SCOPES = ("position", "branch")
SPOT_SELECT = ("disagreement", "entropy", "least")
BUDGETS = ("rule", "forget_spot")
RESIDUALS = ("correct", "p")
ON_MISMATCH = ("verifier", "draft")
TIES = ("verifier", "qbar", "none")

#: log(0) used wherever a log-probability of a zero-mass token enters a score.
LOG_FLOOR = float(np.log(1e-300))


@dataclass(frozen=True)
class Drafter:
    """The drafter's sampling law, a transform of the pair's draft rows q.

    quantize_step: 0 for the clean drafter; > 0 rounds log q to a grid of that many nats
    and renormalises (a quantised / noisy drafter). temperature: q^(1/T), renormalised.
    top_p: keep the smallest set of most probable tokens (ties in index order) whose mass
    before them is < top_p, renormalised (1 keeps everything).
    """

    name: str = "clean"
    temperature: float = 1.0
    top_p: float = 1.0
    quantize_step: float = 0.0

    def __post_init__(self):
        check_real(self.temperature, "temperature", lo=0.0, lo_open=True)
        check_real(self.top_p, "top_p", lo=0.0, hi=1.0, lo_open=True)
        check_real(self.quantize_step, "quantize_step", lo=0.0)

    def rows(self, q_rows) -> np.ndarray:
        """The sampling law of each row of ``q_rows`` (R, V)."""
        q = np.asarray(q_rows, dtype=np.float64)
        with np.errstate(divide="ignore"):
            z = np.log(q)
        if self.quantize_step > 0:
            z = np.where(np.isfinite(z), np.round(z / self.quantize_step) * self.quantize_step, -np.inf)
        z = z / self.temperature
        z = z - z.max(axis=-1, keepdims=True)
        w = np.exp(z)
        w /= w.sum(axis=-1, keepdims=True)
        if self.top_p < 1.0:
            order = np.argsort(-w, axis=-1, kind="stable")
            ws = np.take_along_axis(w, order, axis=-1)
            before = np.cumsum(ws, axis=-1) - ws
            keep = np.zeros_like(w, dtype=bool)
            np.put_along_axis(keep, order, before < self.top_p, axis=-1)
            w = np.where(keep, w, 0.0)
            w /= w.sum(axis=-1, keepdims=True)
        return w


CLEAN = Drafter("clean")
#: a quantised drafter sampled hotter: log q rounded to a 2-nat grid, temperature 1.5 (on the
#: harness sources it overlaps p less than the clean drafter at every alignment level)
NOISY = Drafter("noisy", temperature=1.5, quantize_step=2.0)


@dataclass(frozen=True)
class Method:
    """One method of the falsification plan (or a broken variant of one).

    kind: ``"sd1"`` (one branch, standard verification), ``"sd_multi"`` (B branches as a
    token tree), ``"oracle"`` (Oracle-Top1) or ``"fusion"`` (Vote-unif and the ECSV
    variants). verify: see the module docstring (``sd1`` in the sampling regime uses
    ``"rs"``, which for one branch is standard speculative sampling). weights:
    ``"uniform"`` (every w = 1) or ``"reliability"`` (``exp(γ r)``). alpha: the four
    coefficients (entropy, agreement, self-consistency, spot check). scope: positionwise
    or branchwise weights. lam: soft-vote weight λ. top_m: the M tokens of q̄ added to the
    candidates. R: spot checks per step. ties: ``"verifier"`` (the spot row first, then
    q̄), ``"qbar"`` (q̄ only), ``"none"`` (smallest token id only).

    Broken switches (negative controls): budget ``"forget_spot"`` (the counter does not
    charge spot checks: the draft keeps depth k), residual ``"p"`` (a rejection resamples
    from p instead of the residual), on_mismatch ``"draft"`` (a mismatch emits the fused
    token instead of the verifier's), spot_select ``"least"`` (checks the *least*
    uncertain positions).
    """

    name: str
    kind: str = "fusion"
    verify: str = "match"
    weights: str = "reliability"
    alpha: tuple = (1.0, 1.0, 0.0, 0.0)
    gamma: float = 1.0
    scope: str = "position"
    lam: float = 0.0
    top_m: int = 2
    R: int = 0
    spot_select: str = "disagreement"
    ties: str = "verifier"
    budget: str = "rule"
    residual: str = "correct"
    on_mismatch: str = "verifier"
    description: str = ""

    def __post_init__(self):
        for attr, ok in (("kind", KINDS), ("verify", VERIFY), ("weights", WEIGHTS), ("scope", SCOPES),
                         ("spot_select", SPOT_SELECT), ("budget", BUDGETS), ("residual", RESIDUALS),
                         ("on_mismatch", ON_MISMATCH), ("ties", TIES)):
            if getattr(self, attr) not in ok:
                raise ValueError(f"{attr} must be one of {ok}, got {getattr(self, attr)!r}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        a = self.alpha
        if not isinstance(a, tuple) or len(a) != 4:
            raise ValueError(f"alpha must be a tuple of 4 coefficients (entropy, agreement, "
                             f"self-consistency, spot), got {a!r}")
        for i, v in enumerate(a):
            check_real(v, f"alpha[{i}]")
        check_real(self.gamma, "gamma")
        check_real(self.lam, "lam (λ)", lo=0.0)
        check_int(self.top_m, "top_m (M)", min=0)
        check_int(self.R, "R (spot checks)", min=0)
        if self.kind != "fusion" and (self.R or self.lam):
            raise ValueError(f"{self.kind} has no fusion: R and λ must be 0")
        if self.kind == "sd1" and self.verify not in ("rs", "greedy"):
            raise ValueError("SD-1 is standard speculative decoding: verify must be 'rs' or 'greedy'")
        if self.kind in ("sd_multi", "oracle") and self.verify not in ("match", "greedy"):
            raise ValueError(f"{self.kind} verifies by matching the verifier's sample: verify must be "
                             "'match' or 'greedy'")

    # --- derived -------------------------------------------------------------------------

    def n_branches(self, B: int) -> int:
        """Branches actually drafted (SD-1 drafts one)."""
        return 1 if self.kind == "sd1" else check_int(B, "B (branches)", min=1)

    def plan(self, k: int) -> tuple[int, int]:
        """``(R_used, d)``: spot checks and fused depth one step spends at SD-1 depth k under
        the budget rule (``R_used + d + 1 ≤ k + 1``; the broken counter keeps d = k)."""
        k = check_int(k, "k (depth)", min=1)
        r = min(self.R, k // 2)
        if self.budget == "forget_spot":
            return r, k
        return r, k - r

    def with_verify(self, verify: str) -> "Method":
        """The same method under another verification reading (name suffixed)."""
        if verify == self.verify:
            return self
        base = self.name.split(" [")[0]
        return replace(self, verify=verify, name=f"{base} [{verify}]")

    def regime(self, regime: str) -> "Method":
        """The method in the ``"sampling"`` regime (SD-1: rs; SD-multi, Oracle and fusion:
        match) or the ``"greedy"`` regime (every method verifies greedily)."""
        if regime == "greedy":
            return self.with_verify("greedy")
        if regime != "sampling":
            raise ValueError(f"regime must be 'sampling' or 'greedy', got {regime!r}")
        return self.with_verify("rs" if self.kind == "sd1" else ("match" if self.verify == "greedy" else self.verify))


SD_1 = Method("SD-1", kind="sd1", verify="rs", description="standard speculative decoding, one branch")
SD_MULTI = Method("SD-multi", kind="sd_multi", description="B branches, accept the first that passes "
                  "(token-tree matching against the verifier's samples), no fusion")
VOTE_UNIF = Method("Vote-unif", weights="uniform", description="unweighted majority vote, then verification")
ORACLE_TOP1 = Method("Oracle-Top1", kind="oracle", description="best single branch by full verifier lookahead "
                     "(reference, not budget-matched)")
ECSV_LITE = Method("ECSV-lite", alpha=(1.0, 1.0, 0.0, 0.0),
                   description="weights from drafter entropy and inter-branch agreement, no spot checks")


def ecsv_spot(R: int) -> Method:
    """ECSV-spot with R verifier spot checks at the most disagreeing positions."""
    R = check_int(R, "R (spot checks)", min=1)
    return Method(f"ECSV-spot(R={R})", alpha=(1.0, 1.0, 0.0, 1.0), R=R,
                  description=f"ECSV-lite weights plus {R} spot check(s) per step at top-disagreement positions")


ECSV_SPOT = tuple(ecsv_spot(R) for R in (1, 2, 3, 4))
ECSV_SOFT = Method("ECSV-soft", alpha=(1.0, 1.0, 0.0, 0.0), lam=0.5,
                   description="ECSV-lite plus the soft vote λ Σ_b w q_b(t), λ = 0.5")

#: every method of the falsification plan (Baselines + ECSV variants)
PLAN = (SD_1, SD_MULTI, VOTE_UNIF, ORACLE_TOP1, ECSV_LITE) + ECSV_SPOT + (ECSV_SOFT,)

# --- alternative readings and broken variants (negative controls) ----------------------------

ECSV_LITE_RS = ECSV_LITE.with_verify("rs")
ECSV_LITE_RS_EXACT = ECSV_LITE.with_verify("rs_exact")
ECSV_BRANCHWISE = replace(ECSV_LITE, name="ECSV-lite(branchwise)", scope="branch",
                          description="ECSV-lite with branchwise weights w_b = exp(γ mean_j r_{b,j})")
IGNORE_RELIABILITY = replace(ECSV_LITE, name="broken:weights-ignore-reliability", alpha=(0.0, 0.0, 0.0, 0.0),
                             description="negative control: ECSV whose weights ignore every reliability signal")
INVERTED_WEIGHTS = replace(ECSV_LITE, name="broken:inverted-weights", gamma=-1.0,
                           description="negative control: γ < 0, the least reliable branches weigh most")
FORGET_SPOT = replace(ecsv_spot(2), name="broken:budget-forgets-spot-checks", budget="forget_spot",
                      description="negative control: the budget counter does not charge the spot checks "
                                  "(fused depth stays k)")
RS_EXACT_RESIDUAL_P = replace(ECSV_LITE_RS_EXACT, name="broken:rs_exact-residual=p", residual="p",
                              description="negative control: exact-proposal rejection sampling whose "
                                          "correction is drawn from p instead of norm(max(p − π, 0))")
MATCH_EMITS_DRAFT = replace(ECSV_LITE, name="broken:mismatch-emits-draft", on_mismatch="draft",
                            description="negative control: on a mismatch the fused token is emitted "
                                        "instead of the verifier's sample")
SPOT_LEAST = replace(ecsv_spot(2), name="variant:spot-least-uncertain", spot_select="least",
                     description="spot checks at the least disagreeing positions")
SD_1_NO_RESIDUAL = replace(SD_1, name="broken:sd1-residual=p", residual="p",
                           description="negative control: SD-1 whose correction is drawn from p")


# --- a method on a problem: the tables both engines read ---------------------------------------

@dataclass(frozen=True, eq=False)
class Setup:
    """A method applied to a pair with B branches at SD-1 depth k: the validated inputs and
    the per-row tables the exact engine and the kernel both read.

    ``R_used, d``: spot checks and fused depth of one step (:meth:`Method.plan`); ``Bd``:
    branches drafted (1 for SD-1). Tables are indexed by row (``p_ros[state]``,
    ``q_ros[state]``): ``q_rows`` the drafter's sampling law, ``q_ent`` its entropies (nats),
    ``q_log``/``p_log`` logs floored at :data:`LOG_FLOOR`, ``p_top`` the argmax of each target
    row (smallest id on ties), ``p_second_log`` the log of its second largest value.
    """

    pair: object
    method: Method
    B: int
    k: int
    drafter: Drafter = CLEAN

    def __post_init__(self):
        from ..checks import check_type
        from ..markov import MarkovPair
        check_type(self.pair, MarkovPair, "pair")
        check_type(self.method, Method, "method", " (spectheory.rules.ecsv)")
        check_type(self.drafter, Drafter, "drafter", " (spectheory.rules.ecsv)")
        object.__setattr__(self, "B", check_int(self.B, "B (branches)", min=1))
        object.__setattr__(self, "k", check_int(self.k, "k (depth)", min=1))
        if self.method.kind in ("sd_multi", "oracle", "fusion") and self.B > 64:
            raise ValueError(f"B = {self.B} branches is more than the 64 the engines support")
        if self.k > 64:
            raise ValueError(f"k = {self.k} is deeper than the 64 positions the engines support")
        pair = self.pair
        p = np.ascontiguousarray(pair.target.rows, dtype=np.float64)
        q = np.ascontiguousarray(self.drafter.rows(pair.draft.rows))
        with np.errstate(divide="ignore"):
            q_log = np.maximum(np.log(q), LOG_FLOOR)
            p_log = np.maximum(np.log(p), LOG_FLOOR)
            q_ent = -np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0).sum(axis=1)
        order = np.argsort(-p, axis=1, kind="stable")
        second = p[np.arange(p.shape[0]), order[:, 1]] if p.shape[1] > 1 else np.zeros(p.shape[0])
        with np.errstate(divide="ignore"):
            p_second_log = np.maximum(np.log(second), LOG_FLOOR)
        R_used, d = self.method.plan(self.k)
        for name, val in (("p_rows", p), ("q_rows", q), ("q_log", q_log), ("p_log", p_log), ("q_ent", q_ent),
                          ("p_top", order[:, 0].astype(np.int64)), ("p_second_log", p_second_log),
                          ("p_ros", np.ascontiguousarray(pair.target.row_of_state, dtype=np.int64)),
                          ("q_ros", np.ascontiguousarray(pair.draft.row_of_state, dtype=np.int64)),
                          ("R_used", R_used), ("d", d), ("Bd", self.method.n_branches(self.B))):
            if isinstance(val, np.ndarray):
                val.setflags(write=False)
            object.__setattr__(self, name, val)

    @property
    def V(self) -> int:
        return self.pair.V

    @property
    def S(self) -> int:
        return self.pair.n_states

    @property
    def allowance(self) -> int:
        """Verifier positions per step the budget rule allows: SD-1's ``k + 1``."""
        return self.k + 1

    def describe(self) -> dict:
        return {"pair": self.pair.name, "method": self.method.name, "B": self.B, "k": self.k,
                "drafter": self.drafter.name, "R_used": self.R_used, "d": self.d}
