"""Methods and branch-verification rules of SpecBranch (Shen, Shen, Kong, Liu, Lu & Wang, ICLR 2026),
as data, with the broken variants beside the correct ones.

Notation: ``p`` target, ``q`` draft. Time: a draft call costs ``t = 1``, a target call ``c``
(the paper's ``c = T_p/T_q``, the *inverse* of the draft/target ratio the SD family calls c).

**Methods** (:class:`Method`; the pipeline model is stated in full in docs/sb.md):

* ``AR`` — autoregressive decoding with the target: one target call per token.
* ``SPS`` — standard speculative sampling (Leviathan et al. 2023): draft γ tokens (γ calls),
  verify them in one target call, emit τ + 1 tokens (bonus included). Nothing overlaps.
* ``PSD`` — the parallel-SD model behind the paper's Theorem 1: while the target verifies a
  block of γ tokens, the draft drafts the next γ (assuming the block is accepted). Accepted
  block: the overlapped draft is the next block (no bonus token). A rejection invalidates the
  overlapped draft and the next block is drafted serially (γ draft calls, target idle).
* ``PEARL`` — PEARL-style parallel SD (Liu et al., ICLR 2025, and the public SpecBranch code's
  ``para_sd``): each round the target verifies the pending block *and* the first token drafted
  after it (pre-verify of the first token, using the target's distribution at the position
  after the block), while the draft drafts a segment of γ tokens from there. A rejection
  anywhere invalidates the overlapped segment; the next round's block is then empty.
* ``SPECBRANCH`` — the same pipeline with ``k = max(1, ⌊k_max(1 − q(x_b))⌋)`` branches forked
  at the branch point (batched: a depth step of k branches costs one draft call), the
  survivor chosen by a :class:`BranchRule`, and after each survivor an H-RAD decision
  (posterior drafting) of how much of the survivor's continuation to submit next:
  all-reject → none (the next branch point is the first continuation position),
  confidence → up to the first position whose draft confidence is below ε, all-accept → all.
* ablations ``SB_NO_BRANCH`` (k = 1, the head drafted from q and verified by SD) and
  ``SB_NO_HRAD`` (the confidence rule with threshold ε at every decision).
* negative controls: ``BROKEN_PEARL_KEEPS_OVERLAP`` / ``BROKEN_PSD_KEEPS_OVERLAP`` keep the
  overlapped draft after a rejection (drafted from the wrong context, tested with the draft
  probabilities of the actual context); ``BROKEN_SB_FIRST_BRANCH`` keeps the first branch
  whatever the target says.

**Branch rules** (:class:`BranchRule`): which k tokens head the branches, and how the survivor
is chosen against the target's distribution ``p`` at the branch point. The readings:

* ``SEED_MATCH`` — the branches are ``TopK(q, k)``; the target's own token at the branch point
  (a draw from p) selects the branch that matches it, else it is the correction (our reading
  of "keep the survivor by matching against the target").
* ``SEED_RATIO`` — ``TopK(q, k)``, and ``Match({q(x_b^i)}, {p(x_b^i)})`` read as recursive
  rejection over the branches: branch i is accepted with probability
  ``min(1, p_i(x^i)/q_i(x^i))`` (``q_i`` = q without the branches already tried, renormalised;
  ``p_{i+1} = norm(max(p_i − q_i, 0))`` after a rejection), the final residual sampled.
* ``CODE`` — what the public SpecBranch code does: branch tokens drawn from q without
  replacement (``torch.multinomial``), the branch with the largest p tested once with
  ``min(1, p/q)``, and on rejection the **argmax** of ``norm(max(p − q, 0))``.
* ``CODE_SAMPLED_RESIDUAL`` — the code's rule with the residual sampled instead of argmaxed
  (isolates the argmax).
* ``RRS_WOR`` — branch tokens drawn from q without replacement and recursive rejection
  sampling without replacement (Jeon et al. 2024): the lossless reference for sampled branches.
* ``IID_KSEQ`` — k i.i.d. branch tokens from q verified by SpecTr's K-SEQ (γ = 1): a
  multi-draft problem, computed with the multi-draft family's engine and closed forms.
* ``BROKEN_FIRST`` — negative control: keeps the first branch whatever the target says.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..checks import check_int, check_real, check_type

BRANCH_TOKENS = ("topk", "sample_wor", "iid")
BRANCH_VERIFY = ("match", "rrs", "best_p", "kseq", "first")
RESIDUALS = ("sample", "argmax")
KINDS = ("ar", "sps", "psd", "pipeline")
POLICIES = ("keep_all", "confidence", "hrad")
#: H-RAD's three signals, and the draft-length decision each one makes (docs/sb.md).
ALL_REJECT, CONFIDENCE, ALL_ACCEPT = 0, 1, 2
SIGNALS = ("all-reject", "confidence", "all-accept")


@dataclass(frozen=True)
class BranchRule:
    """How the k branch tokens are chosen (``tokens``) and verified (``verify``).

    tokens: ``"topk"`` (the k most probable draft tokens, ties to the lower id),
    ``"sample_wor"`` (k draws from q without replacement, in draw order), ``"iid"`` (k i.i.d.
    draws from q). verify: ``"match"`` (the target's draw selects the branch), ``"rrs"``
    (recursive rejection over the branches in order), ``"best_p"`` (the public code: the
    branch with the largest p, one ``min(1, p/q)`` test), ``"kseq"`` (SpecTr K-SEQ, needs
    ``tokens="iid"``), ``"first"`` (broken: the first branch survives). residual: how the
    correction is drawn after every branch is rejected (``"sample"`` or ``"argmax"``).
    """

    name: str
    tokens: str = "topk"
    verify: str = "match"
    residual: str = "sample"
    description: str = ""

    def __post_init__(self):
        for attr, ok in (("tokens", BRANCH_TOKENS), ("verify", BRANCH_VERIFY), ("residual", RESIDUALS)):
            if getattr(self, attr) not in ok:
                raise ValueError(f"{attr} must be one of {ok}, got {getattr(self, attr)!r}")
        if self.verify == "kseq" and self.tokens != "iid":
            raise ValueError("K-SEQ verifies i.i.d. drafts: use tokens='iid' with verify='kseq'")

    @property
    def tokens_code(self) -> int:
        return BRANCH_TOKENS.index(self.tokens)

    @property
    def verify_code(self) -> int:
        return BRANCH_VERIFY.index(self.verify)


SEED_MATCH = BranchRule("seed:match", "topk", "match",
                        description="as described, read as: TopK(q, k) branches, the target's own draw at the "
                                    "branch point keeps the branch it matches")
SEED_RATIO = BranchRule("seed:ratio", "topk", "rrs",
                        description="as described, read as: TopK(q, k) branches, Match({q(x_b^i)}, {p(x_b^i)}) as "
                                    "recursive rejection over the branches with the residual sampled")
CODE = BranchRule("code", "sample_wor", "best_p", "argmax",
                  description="the public SpecBranch code: branches drawn from q without replacement, the "
                              "largest-p branch tested with min(1, p/q), argmax of the residual on rejection")
CODE_SAMPLED_RESIDUAL = BranchRule("code:sampled-residual", "sample_wor", "best_p", "sample",
                                   description="the public code's rule with the residual sampled, not argmaxed")
RRS_WOR = BranchRule("rrs-without-replacement", "sample_wor", "rrs",
                     description="branches drawn from q without replacement, recursive rejection sampling "
                                 "without replacement (Jeon et al. 2024): lossless reference")
IID_KSEQ = BranchRule("iid+k-seq", "iid", "kseq",
                      description="k i.i.d. branch tokens verified by SpecTr's K-SEQ (multi-draft engine)")
BROKEN_FIRST = BranchRule("broken:first-branch", "topk", "first",
                          description="negative control: the first branch survives whatever the target says")

BRANCH_RULES = (SEED_MATCH, SEED_RATIO, CODE, CODE_SAMPLED_RESIDUAL, RRS_WOR, IID_KSEQ, BROKEN_FIRST)


@dataclass(frozen=True)
class Method:
    """One decoding method of the pipeline model (docs/sb.md states every modelling choice).

    kind: ``"ar"``, ``"sps"``, ``"psd"`` (Theorem 1's model) or ``"pipeline"`` (PEARL and
    SpecBranch). For ``"pipeline"``: ``branching`` (k from the confidence formula; else one
    head drawn from q and verified by SD), ``policy`` (the decision after a survivor:
    ``"keep_all"`` submits the whole continuation, ``"confidence"`` the part before the first
    position of draft confidence < ε, ``"hrad"`` a three-way signal from an H-RAD policy
    table), ``branch_rule`` (used when branching). ``keep_overlap`` (broken, ``"psd"`` and
    non-branching ``"pipeline"`` only): after a rejection the overlapped draft is kept.
    ``overlap`` (broken when False, ``"psd"``/``"pipeline"``): the draft waits for the target,
    a round lasts ``t_T + γ`` instead of ``max(t_T, γ)``. ``accept``: ``"ratio"`` (min(1, p/q))
    or ``"swapped"`` (broken: min(1, q/p)).
    """

    name: str
    kind: str
    branching: bool = False
    policy: str = "keep_all"
    branch_rule: BranchRule = field(default=RRS_WOR)
    keep_overlap: bool = False
    overlap: bool = True
    accept: str = "ratio"
    description: str = ""

    def __post_init__(self):
        if self.accept not in ("ratio", "swapped"):
            raise ValueError(f"accept must be 'ratio' or 'swapped', got {self.accept!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        check_type(self.branch_rule, BranchRule, "branch_rule", " (spectheory.rules.sb)")
        for flag in ("branching", "keep_overlap", "overlap"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        if self.kind != "pipeline" and (self.branching or self.policy != "keep_all"):
            raise ValueError(f"branching and draft-length policies belong to pipeline methods, not {self.kind!r}")
        if self.keep_overlap and (self.kind not in ("psd", "pipeline") or self.branching):
            raise ValueError("keep_overlap (a negative control) applies to PSD and non-branching pipelines only")
        if not self.overlap and self.kind not in ("psd", "pipeline"):
            raise ValueError("overlap=False (a negative control) applies to PSD and pipelines only")

    @property
    def is_pipeline(self) -> bool:
        return self.kind == "pipeline"


AR = Method("ar", "ar", description="autoregressive decoding with the target")
SPS = Method("sps", "sps", description="standard speculative sampling (Leviathan et al. 2023): draft, then verify")
PSD = Method("psd", "psd", description="parallel SD of Theorem 1's model: overlapped drafting, serial redraft after "
                                       "a rejection")
PEARL = Method("pearl", "pipeline", description="PEARL-style parallel SD: pre-verify of the first token, the next "
                                                "draft overlaps verification, a rejection invalidates it")
SPECBRANCH = Method("specbranch", "pipeline", branching=True, policy="hrad",
                    description="SpecBranch: H-RAD draft lengths, k = max(1, ⌊k_max(1 − q(x_b))⌋) branches")
SB_NO_BRANCH = Method("specbranch:no-branch", "pipeline", branching=False, policy="hrad",
                      description="ablation: SpecBranch without branches (k = 1)")
SB_NO_HRAD = Method("specbranch:no-hrad", "pipeline", branching=True, policy="confidence",
                    description="ablation: SpecBranch without H-RAD (pure confidence threshold ε)")
BROKEN_PEARL_KEEPS_OVERLAP = Method(
    "broken:pearl-keeps-overlap", "pipeline", keep_overlap=True,
    description="negative control: PEARL that keeps the overlapped draft after a rejection")
BROKEN_PSD_KEEPS_OVERLAP = Method(
    "broken:psd-keeps-overlap", "psd", keep_overlap=True,
    description="negative control: parallel SD that keeps the overlapped draft after a rejection (no redraft)")
BROKEN_PSD_NO_OVERLAP = Method(
    "broken:psd-no-overlap", "psd", overlap=False,
    description="negative control: parallel SD whose draft waits for the target (round time t_T + γ)")
BROKEN_PEARL_NO_OVERLAP = Method(
    "broken:pearl-no-overlap", "pipeline", overlap=False,
    description="negative control: PEARL whose draft waits for the target (round time t_T + γ)")
BROKEN_SB_NO_OVERLAP = Method(
    "broken:specbranch-no-overlap", "pipeline", branching=True, policy="hrad", overlap=False,
    description="negative control: SpecBranch whose draft waits for the target (round time t_T + γ)")
BROKEN_SB_BARE = Method(
    "broken:specbranch-without-hrad-and-branches", "pipeline", policy="confidence",
    description="negative control: 'SpecBranch' with neither H-RAD nor branches (a PEARL with a confidence "
                "threshold): removing a component it lacks changes nothing")
BROKEN_SPS_SWAPPED = Method(
    "broken:sps-accept=min(1,q/p)", "sps", accept="swapped",
    description="negative control: SpS with the acceptance ratio inverted, min(1, q/p)")
BROKEN_SB_FIRST_BRANCH = Method(
    "broken:specbranch-first-branch", "pipeline", branching=True, policy="hrad", branch_rule=BROKEN_FIRST,
    description="negative control: SpecBranch whose branch verifier keeps the first branch")

METHODS = (AR, SPS, PSD, PEARL, SPECBRANCH, SB_NO_BRANCH, SB_NO_HRAD)
CONTROLS = (BROKEN_PEARL_KEEPS_OVERLAP, BROKEN_PSD_KEEPS_OVERLAP, BROKEN_PSD_NO_OVERLAP, BROKEN_SPS_SWAPPED,
            BROKEN_SB_FIRST_BRANCH, BROKEN_PEARL_NO_OVERLAP, BROKEN_SB_NO_OVERLAP)


def n_branches(conf, k_max: int) -> np.ndarray | int:
    """``k = max(1, ⌊k_max (1 − conf)⌋)`` branches at a branch point of draft confidence
    ``conf`` (the draft's top-1 probability there); vectorised over ``conf``."""
    k_max = check_int(k_max, "k_max", min=1)
    c = np.asarray(conf, dtype=np.float64)
    if not np.all(np.isfinite(c)) or (c < 0).any() or (c > 1).any():
        raise ValueError(f"conf (draft confidence) must lie in [0, 1], got {conf!r}")
    # a tiny guard so that k_max·(1 − conf) = 2.9999999999999996 from rounding counts as 3
    k = np.maximum(1, np.floor(k_max * (1.0 - c) + 1e-12)).astype(np.int64)
    return int(k) if k.ndim == 0 else k


@dataclass(frozen=True, eq=False)
class Pipeline:
    """The knobs of one pipeline run.

    gamma: draft calls per round (PSD/SpS: the block length; PEARL/SpecBranch: the depth of
    the segment drafted while the target verifies). c: target call time / draft call time
    (``T_p/T_q``). target_cost: optional measured profile, ``target_cost[n − 1]`` = time of a
    target call that scores n positions (n = 1..len), in units of a draft call; replaces c
    (``c = target_cost[0]`` for AR). k_max, eps: SpecBranch's branch count and confidence
    threshold. policy_table: (S, 3) probabilities of H-RAD's three signals in each source
    state (rows sum to 1), needed by ``policy="hrad"`` methods.
    """

    gamma: int
    c: float | None = None
    target_cost: np.ndarray | None = None
    k_max: int = 4
    eps: float = 0.5
    policy_table: np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "gamma", check_int(self.gamma, "gamma (draft length)", min=1, max=64))
        object.__setattr__(self, "k_max", check_int(self.k_max, "k_max", min=1, max=64))
        object.__setattr__(self, "eps", check_real(self.eps, "eps (confidence threshold)", lo=0.0, hi=1.0))
        if (self.c is None) == (self.target_cost is None):
            raise ValueError("give exactly one of c (target/draft call-time ratio) and target_cost (a profile)")
        if self.c is not None:
            c = check_real(self.c, "c (target/draft call-time ratio T_p/T_q)", lo=0.0, lo_open=True)
            cost = np.full(self.gamma + 1, c)
        else:
            cost = np.asarray(self.target_cost, dtype=np.float64)
            if cost.ndim != 1 or cost.size < self.gamma + 1:
                raise ValueError(f"target_cost must be a 1-D profile of at least γ + 1 = {self.gamma + 1} call times "
                                 f"(positions 1..γ+1), got shape {cost.shape}")
            if not np.all(np.isfinite(cost)) or (cost <= 0).any():
                raise ValueError("target_cost must hold finite call times > 0")
            cost = cost[: self.gamma + 1].copy()
        cost.setflags(write=False)
        object.__setattr__(self, "target_cost", cost)
        if self.policy_table is not None:
            t = np.asarray(self.policy_table, dtype=np.float64)
            if t.ndim != 2 or t.shape[1] != 3:
                raise ValueError(f"policy_table must be an (S, 3) table of signal probabilities, got shape {t.shape}")
            if not np.all(np.isfinite(t)) or (t < 0).any() or np.abs(t.sum(axis=1) - 1).max() > 1e-9:
                raise ValueError("policy_table rows must be probability vectors over the three H-RAD signals")
            t = t.copy()
            t.setflags(write=False)
            object.__setattr__(self, "policy_table", t)

    def cost(self, n_positions: int) -> float:
        """Time of a target call scoring ``n_positions`` positions."""
        n = check_int(n_positions, "n_positions", min=1, max=self.gamma + 1)
        return float(self.target_cost[n - 1])

    @property
    def c_ar(self) -> float:
        """Time per token of autoregressive decoding (one target call scoring one position)."""
        return float(self.target_cost[0])


def policy_for(method: Method, pipe: Pipeline, n_states: int) -> np.ndarray:
    """(S, 3) signal probabilities of the method's draft-length policy in every state."""
    check_type(method, Method, "method", " (spectheory.rules.sb)")
    check_type(pipe, Pipeline, "pipe", " (spectheory.rules.sb.Pipeline)")
    out = np.zeros((n_states, 3))
    if method.policy == "keep_all":
        out[:, ALL_ACCEPT] = 1.0
    elif method.policy == "confidence":
        out[:, CONFIDENCE] = 1.0
    else:
        if pipe.policy_table is None:
            raise ValueError(f"method {method.name!r} uses H-RAD: give Pipeline(policy_table=...) "
                             "(spectheory.hrad.policy_table)")
        if pipe.policy_table.shape[0] != n_states:
            raise ValueError(f"policy_table has {pipe.policy_table.shape[0]} rows; the pair has {n_states} states")
        out[:] = pipe.policy_table
    return out
