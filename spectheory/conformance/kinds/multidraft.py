"""The multi-draft and tree kind: verifiers of K independent drafts or of a static token tree.

Two layouts (what the verifier receives at each call):

``drafts`` (K independent drafts, as SpecTr's K-SEQ and SpecTr-GBV take them)
    ``fn(p, q, drafts, rng) -> emitted tokens`` with ``drafts`` (K, γ) ids, each drafted from q
    along the chain independently of the others, ``p`` (K, γ+1, V) the target's rows after every
    prefix of each draft, ``q`` (K, γ, V) the draft's (the layout of
    :func:`spectheory.verifiers.multidraft.spectr_gbv_verify`).
``tree`` (a static token tree, as tree-attention decoders verify it)
    ``fn(p, q, tokens, parents, rng) -> emitted tokens`` with M nodes in breadth-first order:
    ``tokens`` (M,) ids, ``parents`` (M,) the parent's node index (−1: a child of the root);
    ``p`` (M+1, V): row 0 the target after the context, row j+1 after node j's path; ``q``
    (M+1, V) the draft's rows, from which each node's children were drawn (i.i.d.). The tree's
    shape is fixed by branching factors (b_1, …, b_D): the root has b_1 children, each node at
    depth d has b_{d+1}.

The output is the emitted tokens: the tokens of an accepted path (a prefix of one draft, a path
of the tree) and one correction or bonus token, 1..γ+1 (D+1) tokens.

**Lossless** verdict: the output law — the first N tokens of a run against p^N and the law of
every token of each call's block completed from p, by position and state
(:mod:`spectheory.conformance.checks`), no token with p = 0 (a proof), and the support probes (the
block kind's, every draft or tree node carrying the probe's token: never a token with p = 0, no crash). **Matches the named rule**: where the rule is one spectheory implements —
``kseq``, ``gbv``, ``spectr-gbv`` (exact engine :mod:`spectheory.exact.multidraft`, drafts layout)
or ``specinfer`` (multi-round rejection, Miao et al. 2024's SpecInfer: candidates verified in
order, each accepted with probability min(1, r(x)/q(x)), the running residual
r ← norm(max(r − q, 0)) after each rejection, a draw from r when all are rejected; on K drafts
the drafts carrying the accepted token stay candidates at the next depth, on a tree the
accepted node's children do; exact engine below) — the law of one call's block against the
exact engine, E[τ] per call against the engine's E[τ | start state], and the structure of
every call (the emitted prefix is on a draft / a tree path).

spectheory's rules run through the same pipeline as negative controls: a multi-round verifier
that never updates its residual (lossy), and lossless verifiers with other rules (standard
speculative sampling on the first draft only; ignoring the drafts and emitting one token from
p), which the rule checks must reject.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ... import instances as inst
from ...checks import check_int
from ...closed_forms import multidraft as cf
from ...exact import multidraft as exact_md
from ...exact.specinfer import MAX_K, MAX_NODES, check_tree, residual, specinfer_drafts_law, specinfer_tree_law, \
    tree_size
from ...judge import stats
from ...judge.evidence import Evidence
from ...rules.multidraft import GBV, KSEQ, SPECTR_GBV, MultiDraftRule
from ..adapters import BlockVerifier, tokens_of
from ..checks import CHECKS, TOL_TAU, TOL_W, Check, first_n, label
from ..forced import inverse_cdf
from ..kind import Block, Control, Kind
from ..probes import ProbeRequest, probe_list
from ..runs import Runs, Trace, rows_json
from ..trial import (SANITY_CALLS, SANITY_DRAFT, SANITY_TOKEN, SANITY_V, adapter_choices, check_arity, cli_flags,
                     sanity_rows)
from .block import SPARSE, block_plan, floor_shows, residual_zero_mass

__all__ = ["MultiDraftKind", "MultiDraftVerifier", "check_multidraft_verifier", "specinfer_drafts_law",
           "specinfer_tree_law", "tree_size", "check_tree"]

LAYOUTS = ("drafts", "tree")
#: rules with an exact engine: name -> MultiDraftRule (spectheory.rules.multidraft) or "specinfer"
RULES = {"kseq": KSEQ, "gbv": GBV, "spectr-gbv": SPECTR_GBV, "specinfer": "specinfer"}
INSTANCES = ("markov1-V3-mix0.4", "iid-V4-strong", "iid-V3-disjoint", "iid-V1", SPARSE)
GAMMAS = (1, 2)


# --- the adapter ------------------------------------------------------------------------------

@dataclass
class MultiDraftVerifier(BlockVerifier):
    """A user's multi-draft (``tree=None``: K drafts) or tree (``tree``: branching factors)
    verifier with the conversions it needs (adapter, dtype, batched, framework as for block
    verifiers; ``batched`` adds a leading axis of size 1 to every input)."""

    K: int = 2
    tree: tuple | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.tree is None:
            self.K = check_int(self.K, "K (number of drafts)", min=1, max=MAX_K)
        else:
            self.tree = check_tree(self.tree)

    @property
    def layout(self) -> str:
        return "drafts" if self.tree is None else "tree"

    def with_options(self, **options):
        return type(self)(self.fn, **{**self.options(), **options}, name=self.name, K=self.K, tree=self.tree,
                          arg_order=self.arg_order)

    def call_drafts(self, p_rep, q_rep, drafts, rng) -> tuple:
        self.sources.current = rng
        out = self.invoke(self._to_framework(np.asarray(p_rep)), self._to_framework(np.asarray(q_rep)),
                          self._to_framework(np.asarray(drafts, dtype=np.int64), integer=True), rng)
        return tokens_of(out, self.batched)

    def call_tree(self, p_rep, q_rep, tokens, parents, rng) -> tuple:
        self.sources.current = rng
        out = self.invoke(self._to_framework(np.asarray(p_rep)), self._to_framework(np.asarray(q_rep)),
                          self._to_framework(np.asarray(tokens, dtype=np.int64), integer=True),
                          self._to_framework(np.asarray(parents, dtype=np.int64), integer=True), rng)
        return tokens_of(out, self.batched)


def tree_parents(branching) -> np.ndarray:
    """Parent index of every node (breadth-first order; −1: the root)."""
    parents, level = [], [-1]
    for b in branching:
        nxt = []
        for par in level:
            for _ in range(b):
                parents.append(par)
                nxt.append(len(parents) - 1)
        level = nxt
    return np.asarray(parents, dtype=np.int64)


# --- reference verifiers (the user's shape; spectheory's rules and the controls) ----------------

def _multiround(r, q, cands, rng, update=True, strict=True, floor=0.0):
    """Index into ``cands`` of the accepted candidate (None) and the final residual;
    ``floor``: the residual clamped from below (the impossible-token control)."""
    r = np.asarray(r, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    for j, x in enumerate(cands):
        u = rng.random()
        ratio = min(1.0, r[x] / q[x]) if q[x] > 0 else (1.0 if r[x] > 0 else 0.0)
        if (u < ratio) if strict else (u <= ratio):
            return j, r
        if update:
            r = residual(r, q) if not floor else np.maximum(r - q, floor) / np.maximum(r - q, floor).sum()
    return None, r


def multiround_drafts(update: bool = True, strict: bool = True, name: str = "specinfer", filter_alive: bool = True,
                      floor: float = 0.0):
    """SpecInfer-style multi-round rejection on K drafts (drafts layout); ``update=False``: the
    residual is never updated (lossy control); ``strict=False``: accept on u ≤ ratio;
    ``filter_alive=False``: every draft stays a candidate at every depth, whatever it carried
    before (a bookkeeping bug: the emitted prefix mixes drafts)."""

    def verify(p, q, drafts, rng):
        p, q, drafts = np.asarray(p, np.float64), np.asarray(q, np.float64), np.asarray(drafts)
        K, g = drafts.shape
        alive = list(range(K))
        out = []
        for i in range(g):
            cands = [int(drafts[k, i]) for k in alive]
            j, r = _multiround(p[alive[0], i], q[alive[0], i], cands, rng, update, strict, floor)
            if j is None:
                return out + [inverse_cdf(r, rng.random())]
            x = cands[j]
            out.append(x)
            if filter_alive:
                alive = [k for k in alive if int(drafts[k, i]) == x]
            else:
                alive = [alive[j]] + [k for k in alive if k != alive[j]]
        return out + [inverse_cdf(p[alive[0], g], rng.random())]

    verify.__name__ = verify.__qualname__ = name
    return verify


def multiround_tree(update: bool = True, strict: bool = True, name: str = "specinfer-tree",
                    by_depth: bool = False, floor: float = 0.0):
    """SpecInfer-style multi-round rejection on a static token tree (tree layout);
    ``by_depth=True``: the candidates after an accepted node are every node one level deeper,
    not its children (an indexing bug: the emitted prefix leaves the tree's paths)."""

    def verify(p, q, tokens, parents, rng):
        p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
        tokens, parents = np.asarray(tokens), np.asarray(parents)
        depth = np.zeros(len(parents), dtype=np.int64)
        for j, par in enumerate(parents):
            depth[j] = 0 if par < 0 else depth[par] + 1
        node, out = -1, []
        while True:
            kids = np.flatnonzero(parents == node) if not by_depth or node < 0 else \
                np.flatnonzero(depth == depth[node] + 1)
            if kids.size == 0:
                return out + [inverse_cdf(p[node + 1], rng.random())]
            cands = [int(tokens[c]) for c in kids]
            j, r = _multiround(p[node + 1], q[node + 1], cands, rng, update, strict, floor)
            if j is None:
                return out + [inverse_cdf(r, rng.random())]
            out.append(cands[j])
            node = int(kids[j])

    verify.__name__ = verify.__qualname__ = name
    return verify


def first_draft_sd(p, q, drafts, rng):
    """Standard speculative sampling on the first draft only (lossless; another rule)."""
    from ..references import reference_verifier
    return reference_verifier(np.asarray(p)[0], np.asarray(q)[0], list(np.asarray(drafts)[0]), rng)


def first_path_sd(p, q, tokens, parents, rng):
    """Standard speculative sampling along the first child of every node (lossless)."""
    from ..references import reference_verifier
    p, q, tokens, parents = np.asarray(p), np.asarray(q), np.asarray(tokens), np.asarray(parents)
    node, path, prow, qrow = -1, [], [], []
    while True:
        kids = np.flatnonzero(parents == node)
        prow.append(p[node + 1])
        if kids.size == 0:
            break
        qrow.append(q[node + 1])
        node = int(kids[0])
        path.append(int(tokens[node]))
    return reference_verifier(np.array(prow), np.array(qrow), path, rng)


def prefix_shifted(p, q, drafts, rng):
    """Standard speculative sampling on the first draft that reports the accepted prefix one
    position late (``draft[1:τ+1]``, an off-by-one slice): off the drafts' paths."""
    out = first_draft_sd(p, q, drafts, rng)
    d = [int(t) for t in np.asarray(drafts)[0]]
    tau = len(out) - 1
    return d[1:tau + 1] + [out[-1]] if tau else out


def kseq_verifier(p, q, drafts, rng):
    """SpecTr's K-SEQ on K drafts (Sun et al. 2023; rule ``KSEQ``): per depth, the alive
    candidates are tried in order, each accepted with probability min(1, p(x)/(ρ q(x))), ρ
    solved for the number alive (:func:`spectheory.closed_forms.multidraft.kseq_rho`); the drafts
    carrying the accepted token stay alive; none accepted → norm(max(p − ρq, 0))."""
    p, q, drafts = np.asarray(p, np.float64), np.asarray(q, np.float64), np.asarray(drafts)
    K, g = drafts.shape
    alive, out = list(range(K)), []
    for i in range(g):
        pr, qr = p[alive[0], i], q[alive[0], i]
        rho = cf.kseq_rho(pr, qr, len(alive))
        acc = None
        for k in alive:
            x = int(drafts[k, i])
            if rng.random() < min(1.0, pr[x] / (rho * qr[x])):
                acc = x
                break
        if acc is None:
            return out + [inverse_cdf(cf.kseq_residual(pr, qr, rho), rng.random())]
        out.append(acc)
        alive = [k for k in alive if int(drafts[k, i]) == acc]
    return out + [inverse_cdf(p[alive[0], g], rng.random())]


def spectr_gbv_verifier(rule: MultiDraftRule = SPECTR_GBV):
    """SpecTr-GBV / GBV (Alg. 1, one call; :func:`spectheory.verifiers.multidraft.spectr_gbv_verify`)."""
    from ...verifiers.multidraft import spectr_gbv_verify

    def verify(p, q, drafts, rng):
        return list(spectr_gbv_verify(p, q, np.asarray(drafts), seed=rng, rule=rule).tokens)

    verify.__name__ = verify.__qualname__ = f"spectr_gbv_verify[{rule.name}]"
    return verify


specinfer_verifier = multiround_drafts(name="specinfer_verifier")
specinfer_tree_verifier = multiround_tree(name="specinfer_tree_verifier")

#: negative controls: (name, layout, callable, description, what it must fail: "lossless", "rule",
#: "structure" or "probes", the smallest K it applies to)
CONTROLS = (
    ("specinfer:residual-not-updated", "drafts", multiround_drafts(update=False, name="residual-not-updated"),
     "negative control (lossy): multi-round rejection that tests every candidate against p and draws the "
     "correction from p (the residual is never updated)", "lossless", 2),
    ("specinfer-tree:residual-not-updated", "tree", multiround_tree(update=False, name="residual-not-updated"),
     "negative control (lossy): multi-round rejection on the tree with the residual never updated", "lossless", 1),
    ("first-draft-SD", "drafts", first_draft_sd,
     "negative control of the rule checks (lossless, another rule): standard speculative sampling on the "
     "first draft only", "rule", 1),
    ("first-path-SD", "tree", first_path_sd,
     "negative control of the rule checks (lossless, another rule): standard speculative sampling along "
     "every node's first child", "rule", 1),
    ("alive-not-filtered", "drafts", multiround_drafts(filter_alive=False, name="alive-not-filtered"),
     "negative control of the structure check: multi-round rejection whose candidates at each depth are all "
     "K drafts, not those carrying the accepted prefix (the emitted prefix mixes drafts)", "structure", 2),
    ("prefix-shifted", "drafts", prefix_shifted,
     "negative control of the structure check: standard speculative sampling on the first draft reporting "
     "the accepted prefix one position late (draft[1:τ+1])", "structure", 1),
    ("children-by-depth", "tree", multiround_tree(by_depth=True, name="children-by-depth"),
     "negative control of the structure check: multi-round rejection on the tree whose candidates after an "
     "accepted node are every node one level deeper, not its children", "structure", 1),
    ("specinfer:residual-clamped-1e-5", "drafts", multiround_drafts(floor=1e-5, name="residual-clamped-1e-5"),
     "negative control of impossible_tokens: multi-round rejection whose residual is clamped from below at 1e-5, so "
     "tokens with p = 0 keep mass in the correction", "impossible", 1),
    ("specinfer-tree:residual-clamped-1e-5", "tree", multiround_tree(floor=1e-5, name="residual-clamped-1e-5"),
     "negative control of impossible_tokens: multi-round rejection on the tree with the residual clamped at 1e-5",
     "impossible", 1),
    ("specinfer:accept-u≤ratio", "drafts", multiround_drafts(strict=False, name="accept-u≤ratio"),
     "probe control: multi-round rejection accepting on u ≤ ratio (u = 0 accepts a p = 0 token)", "probes", 1),
    ("specinfer-tree:accept-u≤ratio", "tree", multiround_tree(strict=False, name="accept-u≤ratio"),
     "probe control: multi-round rejection on the tree accepting on u ≤ ratio", "probes", 1),
)


# --- exact engines (by instance name: cached) ---------------------------------------------------

def _outcome_law(outcomes) -> dict:
    law: dict = {}
    for o in outcomes:
        key = tuple(int(t) for t in o.t) + (int(o.y),)
        law[key] = law.get(key, 0.0) + float(o.prob)
    return law


@lru_cache(maxsize=256)
def engine_law(pair_name: str, rule: str, gamma: int, K: int, tree: tuple | None, state: int) -> dict:
    """Exact law of one call of ``rule`` from ``state`` (instances by name: cached)."""
    pair = inst.get(pair_name)
    if rule == "specinfer":
        return specinfer_tree_law(pair, tree, state) if tree is not None else \
            specinfer_drafts_law(pair, gamma, K, state)
    return _outcome_law(exact_md.iteration_outcomes(cf.block_tree(pair, gamma, state), K, RULES[rule]))


def engine_expected_tau(pair_name, rule, gamma, K, tree, n_states) -> np.ndarray:
    return np.array([sum(pr * (len(b) - 1) for b, pr in engine_law(pair_name, rule, gamma, K, tree, s).items())
                     for s in range(n_states)])


# --- runs -------------------------------------------------------------------------------------

@dataclass
class MultiTrace(Trace):
    """A :class:`~spectheory.conformance.runs.Trace` with, per call, whether the emitted prefix
    lies on a draft (a tree path)."""

    on_tree: np.ndarray = field(default=None)


class MultiRuns(Runs):
    """Runs of a multi-draft or tree verifier (:class:`..runs.Runs`): each call drafts K
    independent drafts (every node of the tree, its children i.i.d. from q) along the chain."""

    with_draft = False

    def setup(self):
        v, pair = self.sampler, self.pair
        q_tab = pair.draft.table
        q_cdf = np.cumsum(q_tab, axis=1)
        q_cdf /= q_cdf[:, -1:]
        self.q_cdf = q_cdf.tolist()
        self.q_list = q_tab.tolist()
        self.last = [int(np.flatnonzero(row)[-1]) for row in q_tab]
        self.p_rep = v.represent(pair.target.table, "target")
        self.q_rep = v.represent(q_tab, "draft")
        self.on_tree: list = []
        self.parents = tree_parents(v.tree) if v.tree is not None else None

    def _draw(self, s):
        V, S = self.pair.V, self.pair.n_states
        x = min(bisect.bisect_right(self.q_cdf[s], self.draft_rng.random()), self.last[s])
        return x, (s * V + x) % S

    def prepare(self, s, context):
        v, g = self.sampler, self.gamma
        if v.tree is None:
            drafts, states = [], []
            for _ in range(v.K):
                st, row, sts = s, [], [s]
                for _i in range(g):
                    x, st = self._draw(st)
                    row.append(x)
                    sts.append(st)
                drafts.append(row)
                states.append(sts)
            paths = {tuple(d[:i]) for d in drafts for i in range(g + 1)}
            return {"drafts": drafts, "states": np.asarray(states), "paths": paths, "firsts": [d[0] for d in drafts],
                    "s": s}
        tokens, node_state, paths, path_of = [], [], {()}, []
        for par in self.parents:
            ps = s if par < 0 else node_state[par]
            x, st = self._draw(ps)
            tokens.append(x)
            node_state.append(st)
            path_of.append((() if par < 0 else path_of[par]) + (x,))
            paths.add(path_of[-1])
        return {"tokens": tokens, "rows": [s] + node_state, "paths": paths,
                "firsts": [t for t, par in zip(tokens, self.parents) if par < 0], "s": s}

    def invoke(self, prepared, rng):
        v, g = self.sampler, self.gamma
        if v.tree is None:
            st = prepared["states"]
            return v.call_drafts(self.p_rep[st], self.q_rep[st[:, :g]], prepared["drafts"], rng)
        rows = prepared["rows"]
        return v.call_tree(self.p_rep[rows], self.q_rep[rows], prepared["tokens"], self.parents, rng)

    def read(self, raw):
        return raw

    def inputs(self, prepared, rng_state) -> dict:
        g, pair = self.gamma, self.pair
        if self.sampler.tree is None:
            st = prepared["states"]
            return {"p": rows_json(pair.target.table[st]), "q": rows_json(pair.draft.table[st[:, :g]]),
                    "drafts": prepared["drafts"], "rng_state": rng_state}
        rows = prepared["rows"]
        return {"p": rows_json(pair.target.table[rows]), "q": rows_json(pair.draft.table[rows]),
                "tokens": prepared["tokens"], "parents": [int(j) for j in self.parents], "rng_state": rng_state}

    def after_call(self, prepared, out):
        self.on_tree.append(tuple(out[:-1]) in prepared["paths"])

    def off_structure(self, prepared, out) -> bool:
        return not self.on_tree[-1]

    def needed(self, prepared, out) -> int:
        """1 when every first-depth candidate's test needs a random value (0 < p(x) < q(x)): then
        any order of testing them draws at least one uniform in the call."""
        s = prepared["s"]
        p, q = self.p_list[s], self.q_list[s]
        return int(all(0.0 < p[x] < q[x] for x in prepared["firsts"]))

    def zero_mass(self, prepared) -> float:
        s = prepared["s"]
        p_seen, q_seen = self.sampler.seen(self.p_rep[[s]]), self.sampler.seen(self.q_rep[[s]])
        return residual_zero_mass(p_seen, q_seen, prepared["firsts"][:1])

    def context_of(self, prepared, s) -> str:
        return f"start state {s}, " + (f"drafts {prepared['drafts']}" if "drafts" in prepared else
                                       f"tree tokens {prepared['tokens']}")

    def trace(self) -> MultiTrace:
        t = self.rec.trace(self.name, self.completion_seed)
        return MultiTrace(**{k: getattr(t, k) for k in t.__dataclass_fields__},
                          on_tree=np.asarray(self.on_tree, dtype=bool))


# --- checks against the named rule -------------------------------------------------------------

def _rule_checks(rule: str, K: int, tree):
    """The checks of the "matches the rule" verdict for ``rule``."""

    def block_law(trace, pair, alpha):
        law = engine_law(pair.name, rule, trace.gamma, K, tree, 0)
        blocks = list(law)
        index = {b: i for i, b in enumerate(blocks)}
        counts = np.zeros(len(blocks) + 1)
        for row, L in zip(trace.emitted[trace.first], trace.length[trace.first]):
            counts[index.get(tuple(int(t) for t in row[:L]), len(blocks))] += 1
        probs = np.array([law[b] for b in blocks] + [0.0])
        return [stats.chisquare_gof(label(trace), counts, probs / probs.sum(), alpha=alpha, tolerance_w=TOL_W,
                                    note=f"first call of {int(trace.first.sum())} runs; {len(blocks)} possible blocks "
                                         f"(exact engine of {rule}), one cell for any other block")]

    def expected_tau(trace, pair, alpha):
        e = engine_expected_tau(pair.name, rule, trace.gamma, K, tree, pair.n_states)
        tau = (trace.length - 1).astype(np.float64)
        d = tau - e[trace.start]
        n = d.size
        se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        return [stats.z_test_mean(label(trace), float(e[trace.start].mean()), mean=float(tau.mean()), se=se, n=n,
                                  alpha=alpha, tolerance=TOL_TAU, what="accepted tokens per call",
                                  note=f"claimed = mean over calls of the exact engine's E[τ | start state] ({rule}); "
                                       "τ − E[τ | s] are martingale differences")]

    def structure(trace, pair, alpha):
        bad = int((~trace.on_tree).sum())
        return [Evidence("exact", label(trace), 0.0, float(bad), n=trace.n_calls,
                         test="structure of every call: the emitted prefix (all but the last token) is a prefix "
                              "of a draft / a path of the tree; claimed/measured = violating calls",
                         outcome="fail" if bad else "pass",
                         note=f"{bad} calls emitted a prefix that is on no draft" if bad else "")]

    ref = "Sun et al. 2023 (SpecTr)" if rule == "kseq" else \
        "Miao et al. 2024 (SpecInfer), multi-round rejection" if rule == "specinfer" else \
        "Lin et al. 2026 (SpecTr-GBV), Alg. 1"
    ctl = "first-draft-SD" if tree is None else "first-path-SD"
    return (
        Check("multidraft.rule_block_law", f"The block emitted by one call has the exact law of one {rule} "
              "iteration (spectheory's exact engine).", ref, block_law, 1, (ctl,), group="standard"),
        Check("multidraft.rule_expected_tau", f"Mean accepted tokens per call equals the exact engine's "
              f"E[τ | start state] for {rule}.", ref, expected_tau, 1, (ctl,), group="standard"),
        Check("multidraft.structure", "Every call emits the tokens of an accepted path of the drafts (tree) "
              "and one more token.", ref, structure, 0,
              ("alive-not-filtered", "prefix-shifted") if tree is None else ("children-by-depth",), group="standard"),
    )


def lossless_checks(tree):
    """The lossless checks of :mod:`..checks` with this layout's controls."""
    ctl = ("specinfer:residual-not-updated", "prefix-shifted") if tree is None else \
        ("specinfer-tree:residual-not-updated",)
    clamp = "specinfer:residual-clamped-1e-5" if tree is None else "specinfer-tree:residual-clamped-1e-5"
    return tuple(Check(c.id, c.statement, c.reference, c.run, c.mc_tests, (clamp,) if c.mc_tests == 0 else ctl,
                       group="lossless") for c in CHECKS if c.group == "lossless")


# --- the kind ----------------------------------------------------------------------------------

class MultiDraftKind(Kind):
    name = "multidraft"
    seed_tag = "conformance-multidraft"
    INSTANCES, GAMMAS = INSTANCES, GAMMAS
    MAX_GAMMA = 3
    paper = "Miao et al. 2024; Sun et al. 2023; Lin et al. 2026"
    OPTION_DEFAULTS = {"adapter": "probs", "dtype": "float64", "batched": False, "framework": "numpy"}
    what = "verifier"

    def __init__(self, fn, *, name=None, rule=None, K=2, tree=None, **options):
        super().__init__(fn, name=name, K=K, tree=tree, **options)
        if rule is not None:
            if isinstance(rule, MultiDraftRule):
                rule = next((k for k, v in RULES.items() if v == rule), rule.name)
            if rule not in RULES:
                raise ValueError(f"rule must be one of {tuple(RULES)} (or None: losslessness only), got {rule!r}")
            if self.sampler.tree is not None and rule != "specinfer":
                raise ValueError(f"rule {rule!r} verifies K independent drafts: a tree verifier can be matched with "
                                 "rule='specinfer' only")
            if rule == "gbv" and self.sampler.K != 1:
                raise ValueError(f"GBV verifies a single draft: use K=1 (got K={self.sampler.K}), or rule='spectr-gbv'")
        self.rule = rule
        tree_ = self.sampler.tree
        self.title = "multi-draft verifier" if tree_ is None else "tree verifier"
        self.call_text = "a multi-draft verifier fn(p, q, drafts, rng)" if tree_ is None else \
            "a tree verifier fn(p, q, tokens, parents, rng)"
        what = f"{self.sampler.K} independent drafts" if tree_ is None else f"the static tree {tree_}"
        self.interpretation = f"Black-box check of a verifier of {what} on the built-in instances; see docs/conformance.md."

    def wrap(self, fn, *, name="", K=2, tree=None, adapter="probs", dtype="float64", batched=False,
             framework="numpy"):
        if isinstance(fn, MultiDraftVerifier):
            return fn
        return MultiDraftVerifier(fn, adapter=adapter, dtype=dtype, batched=batched, framework=framework, name=name,
                                  K=K, tree=tree)

    @property
    def gamma_of_tree(self):
        return len(self.sampler.tree) if self.sampler.tree is not None else None

    def check_gammas(self, gammas):
        if self.sampler.tree is not None:
            return (len(self.sampler.tree),)
        return super().check_gammas(gammas)

    def check_instances(self, instances):
        out = super().check_instances(instances)
        for nm in out:
            if inst.get(nm).V > 4 and nm != SPARSE:
                raise ValueError(f"instance {nm!r} has V = {inst.get(nm).V}: the exact engines need V ≤ 4")
        return out

    def checks(self):
        tree = self.sampler.tree
        return lossless_checks(tree) + (_rule_checks(self.rule, self.sampler.K, tree) if self.rule else ())

    def blocks(self, instances, gammas):
        return block_plan(self.checks(), instances, gammas)

    def runner(self, sampler, block, seed):
        pair = self.pair(block)
        return MultiRuns(sampler, pair, block.gamma, first_n(pair.V), seed, block.instance)

    def controls(self):
        v = self.sampler
        out = []
        for cname, layout, fn, desc, role, min_k in CONTROLS:
            if layout != v.layout or (v.tree is None and v.K < min_k):
                continue
            roles = ("support probes",) if role == "probes" else ("checks",)
            out.append(Control(cname, fn, desc, roles, applies=(lambda b: floor_shows(b.instance))
                               if role == "impossible" else None))
        return out

    def control_sampler(self, control, for_probes=False):
        return MultiDraftVerifier(control.fn, name=control.name, K=self.sampler.K, tree=self.sampler.tree)

    def titles(self):
        rule = self.rule
        return {"lossless": "lossless",
                "standard": f"matches {rule} (spectheory's exact engine)" if rule else
                "matches a named rule (not checked: pass rule=kseq|gbv|spectr-gbv|specinfer)"}

    def settings(self):
        v = self.sampler
        return {**v.options(), "layout": v.layout, "K": v.K if v.tree is None else None,
                "tree": list(v.tree) if v.tree else None, "rule": self.rule}

    def layout(self, block_info=None):
        v = self.sampler
        return {"kind": "multidraft", "K": v.K if v.tree is None else None,
                "tree": list(v.tree) if v.tree else None, "rule": self.rule}

    # --- probes: every draft (every node) carries the probe's token --------------------------------
    def probes(self, sampler):
        g = len(sampler.tree) if sampler.tree is not None else min(getattr(self, "run_gammas", self.GAMMAS))
        return [pr.at_gamma(g) for pr in probe_list(sampler)]

    def _layout_rows(self, sampler, P, Q, draft):
        """The probe's rows laid out for the sampler: (K, γ+1, V), (K, γ, V) and the drafts, or the
        tree's (M+1, V) rows (row j+1: after node j's path) and its tokens."""
        g = len(draft)
        if sampler.tree is None:
            K = sampler.K
            return (np.broadcast_to(P, (K,) + P.shape).copy(), np.broadcast_to(Q, (K,) + Q.shape).copy(),
                    np.tile(np.asarray(draft), (K, 1)))
        parents = tree_parents(sampler.tree)
        depth = []
        for par in parents:
            depth.append(0 if par < 0 else depth[par] + 1)
        rows_p = [P[0]] + [P[d + 1] for d in depth]
        rows_q = [Q[0]] + [Q[min(d + 1, g - 1)] for d in depth]
        return np.array(rows_p), np.array(rows_q), np.array([draft[d] for d in depth])

    def probe_call(self, sampler, probe, rng):
        if probe.logits is not None:
            P, Q = sampler.from_logits(probe.logits[0]), sampler.from_logits(probe.logits[1])
        else:
            P, Q = sampler.represent(probe.p, "target"), sampler.represent(probe.q, "draft")
        p, q, d = self._layout_rows(sampler, P, Q, probe.draft)
        out = sampler.call_drafts(p, q, d, rng) if sampler.tree is None else \
            sampler.call_tree(p, q, d, tree_parents(sampler.tree), rng)
        return [ProbeRequest(probe.p, probe.q, tuple(probe.draft), out)]

    def probe_rerun(self, probe) -> dict:
        src = probe.logits if probe.logits is not None else (probe.p, probe.q)
        P, Q = np.asarray(src[0], dtype=np.float64), np.asarray(src[1], dtype=np.float64)
        p, q, d = self._layout_rows(self.sampler, P, Q, probe.draft)
        out = {"p": p.tolist(), "q": q.tolist(), "forced": probe.forced}
        if self.sampler.tree is None:
            out["drafts"] = d.tolist()
        else:
            out.update(tokens=d.tolist(), parents=[int(j) for j in tree_parents(self.sampler.tree)])
        if probe.logits is not None:
            out["logits"] = True
        return out

    def rerun_call(self, sampler, inputs, rng):
        conv = sampler.from_logits if inputs.get("logits") else None
        P = conv(inputs["p"]) if conv else sampler.represent(inputs["p"], "target")
        Q = conv(inputs["q"]) if conv else sampler.represent(inputs["q"], "draft")
        if "drafts" in inputs:
            return sampler.call_drafts(P, Q, inputs["drafts"], rng)
        return sampler.call_tree(P, Q, inputs["tokens"], np.asarray(inputs["parents"]), rng)

    # --- the trial ---------------------------------------------------------------------------------
    def trial(self, gammas):
        from ..trial import trial
        return trial(self, min(gammas))

    def trial_arity(self):
        v = self.sampler
        if v.tree is None:
            check_arity(v.fn, 4, "fn(p, q, drafts, rng)",
                        "a verifier of K independent drafts takes (p (K, γ+1, V), q (K, γ, V), drafts (K, γ), rng); a "
                        "tree verifier takes (p, q, tokens, parents, rng): pass tree=(b1, b2, ...) (--tree 2,2)")
        else:
            check_arity(v.fn, 5, "fn(p, q, tokens, parents, rng)",
                        "a tree verifier takes (p (M+1, V), q (M+1, V), tokens (M,), parents (M,), rng); a verifier of "
                        "K independent drafts takes (p, q, drafts, rng): leave tree out (--K 2)")

    def _trial_runner(self, sampler, pair, seed, gamma):
        r = MultiRuns(sampler, pair, gamma if sampler.tree is None else len(sampler.tree), 1, seed, "trial")
        return r

    def trial_call(self, sampler, pair, drng, rng, gamma):
        runner = getattr(self, "_trial_runs", None)
        if runner is None or runner.sampler is not sampler:
            runner = self._trial_runs = self._trial_runner(sampler, pair, 7, gamma)
        out = runner.invoke(runner.prepare(0, []), rng)
        return [out], [runner.gamma]

    def trial_point_mass(self, sampler, rng, gamma):
        g = gamma if sampler.tree is None else len(sampler.tree)
        p1, q1, _ = sanity_rows(g=1)
        P = np.repeat(sampler.represent(p1[:1], "target"), g + 1, axis=0)
        Q = np.repeat(sampler.represent(q1, "draft"), g, axis=0)
        p, q, d = self._layout_rows(sampler, P, Q, (SANITY_DRAFT,) * g)
        out = sampler.call_drafts(p, q, d, rng) if sampler.tree is None else \
            sampler.call_tree(p, q, d, tree_parents(sampler.tree), rng)
        return [out], [SANITY_TOKEN]

    def trial_point_mass_message(self, wrong) -> str:
        return (f"on target rows that are a point mass at token {SANITY_TOKEN} (every drafted token {SANITY_DRAFT} has "
                f"p = 0), {len(wrong)} of {SANITY_CALLS} calls emitted something else first (e.g. {list(wrong[0][0])}); "
                f"any lossless verifier emits {SANITY_TOKEN}")

    def trial_first_tokens(self, sampler, pair, drng, rng):
        runner = getattr(self, "_law_runs", None)
        if runner is None or runner.sampler is not sampler:
            runner = self._law_runs = MultiRuns(sampler, pair, 1 if sampler.tree is None else len(sampler.tree), 1, 9,
                                                "trial")
        out = runner.invoke(runner.prepare(0, []), rng)
        return [out[0] if out else None]

    def trial_accepts(self, sampler, pair, drng, rng, gamma):
        rows = pair.target.table
        P, Q = sampler.represent(rows, "target"), sampler.represent(rows, "draft")
        V, S = pair.V, pair.n_states
        x = int(drng.choice(V, p=rows[0]))
        if sampler.tree is None:
            K = sampler.K
            out = sampler.call_drafts(np.broadcast_to(P[[0, x % S]], (K, 2, V)).copy(),
                                      np.broadcast_to(Q[[0]], (K, 1, V)).copy(), np.full((K, 1), x), rng)
        else:
            M = tree_size(sampler.tree)
            out = sampler.call_tree(np.broadcast_to(P[0], (M + 1, V)).copy(), np.broadcast_to(Q[0], (M + 1, V)).copy(),
                                    np.full(M, x), tree_parents(sampler.tree), rng)
        return len(out) >= 2 and out[0] == x

    def accepts_gamma(self, gamma):
        return gamma

    def trial_describe(self, sampler, g, V) -> str:
        opts = sampler.options()
        b = "1, " if opts.get("batched") else ""
        arr = "tensors" if opts.get("framework") == "torch" else "NumPy arrays"
        if sampler.tree is None:
            K = sampler.K
            return (f"with {cli_flags(opts)} it receives p of shape ({b}{K}, {g + 1}, {V}), q ({b}{K}, {g}, {V}), "
                    f"drafts ({b}{K}, {g}) integer ids, as {arr}, and rng: a numpy Generator")
        M = tree_size(sampler.tree)
        return (f"with {cli_flags(opts)} it receives p of shape ({b}{M + 1}, {V}), q ({b}{M + 1}, {V}), tokens "
                f"({b}{M},) and parents ({b}{M},) integer arrays, as {arr}, and rng: a numpy Generator")

    def option_choices(self):
        return adapter_choices()

    def arg_orders(self):
        if self.sampler.tree is None:
            return ("p", "q", "drafts", "rng"), (0, 1, 2, 3)
        return ("p", "q", "tokens", "parents", "rng"), (0, 0, 1, 1, 2)  # p, q and tokens, parents: same shapes


def check_multidraft_verifier(fn, *, K: int = 2, tree=None, rule: str | None = None, adapter: str = "probs",
                              dtype: str = "float64", batched: bool = False, framework: str = "numpy",
                              n: int = 10_000, gammas=GAMMAS, instances=INSTANCES, seed: int = 0,
                              alpha: float = 0.01, controls: bool = True, control_n: int | None = None,
                              probes: bool = True, progress: bool = False, name: str | None = None,
                              trial: bool = True) -> dict:
    """Test a multi-draft verifier ``fn(p, q, drafts, rng)`` (K independent drafts) or a tree
    verifier ``fn(p, q, tokens, parents, rng)`` (``tree``: branching factors per depth, e.g.
    ``(2, 2)``) for losslessness and, with ``rule`` (``"kseq"``, ``"gbv"``, ``"spectr-gbv"``,
    ``"specinfer"``), for matching that rule's exact engine. See the module docstring."""
    from ..driver import run
    kind = MultiDraftKind(fn, name=name, rule=rule, K=K, tree=tree, adapter=adapter, dtype=dtype, batched=batched,
                          framework=framework)
    return run(kind, n=n, gammas=gammas, instances=instances, seed=seed, alpha=alpha, controls=controls,
               control_n=control_n, probes=probes, progress=progress, trial=trial)
