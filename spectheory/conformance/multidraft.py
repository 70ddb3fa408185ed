"""Multi-draft and tree verifiers: the third kind of sampler ``spectheory.conformance`` tests.

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
(:mod:`spectheory.conformance.checks`) — and support probes (forced uniforms: never a token with
p = 0, no crash). **Matches the named rule**: where the rule is one spectheory implements —
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
import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from time import perf_counter

import numpy as np

from .. import instances as inst
from ..judge import stats
from ..judge.evidence import Evidence

from ..checks import check_int
from ..closed_forms import multidraft as cf
from ..exact import multidraft as exact_md
from ..markov import MarkovPair, next_state
from ..rules.multidraft import GBV, KSEQ, SPECTR_GBV, MultiDraftRule
from .adapters import BlockVerifier, tokens_of
from .checks import TOL_TAU, TOL_W, Check, first_tokens, label, token_law_by_state
from .driver import Trace, VerifierCrash, _Recorder, _spawn, crash_from
from .forced import ForcedSourceUnsupported, ForcedUniforms, inverse_cdf

LAYOUTS = ("drafts", "tree")
#: rules with an exact engine: name -> MultiDraftRule (spectheory.rules.multidraft) or "specinfer"
RULES = {"kseq": KSEQ, "gbv": GBV, "spectr-gbv": SPECTR_GBV, "specinfer": "specinfer"}
INSTANCES = ("markov1-V3-mix0.4", "iid-V4-strong", "iid-V3-disjoint", "iid-V1")
GAMMAS = (1, 2)
MAX_K = 4
MAX_NODES = 64


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


def check_tree(tree) -> tuple:
    """Branching factors (b_1, …, b_D) of a static tree: 1 ≤ D ≤ 3, b ≥ 1, ≤ 64 nodes."""
    if isinstance(tree, (str, bytes)) or np.ndim(tree) != 1:
        raise TypeError(f"tree must be a sequence of branching factors per depth, e.g. (2, 2), got {tree!r}")
    bs = tuple(check_int(b, "branching factor", min=1, max=8) for b in tree)
    if not 1 <= len(bs) <= 3:
        raise ValueError(f"tree depth must be 1..3 (exact engines enumerate every draw), got {len(bs)}")
    if tree_size(bs) > MAX_NODES:
        raise ValueError(f"the tree {bs} has {tree_size(bs)} nodes; at most {MAX_NODES}")
    return bs


def tree_size(branching) -> int:
    total, level = 0, 1
    for b in branching:
        level *= b
        total += level
    return total


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

def _residual(r, q):
    w = np.maximum(np.asarray(r, dtype=np.float64) - np.asarray(q, dtype=np.float64), 0.0)
    s = w.sum()
    return w / s if s > 0 else np.asarray(r, dtype=np.float64)  # r ≤ q everywhere: rejection had probability 0


def _multiround(r, q, cands, rng, update=True, strict=True):
    """Index into ``cands`` of the accepted candidate (None) and the final residual."""
    r = np.asarray(r, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    for j, x in enumerate(cands):
        u = rng.random()
        ratio = min(1.0, r[x] / q[x]) if q[x] > 0 else (1.0 if r[x] > 0 else 0.0)
        if (u < ratio) if strict else (u <= ratio):
            return j, r
        if update:
            r = _residual(r, q)
    return None, r


def multiround_drafts(update: bool = True, strict: bool = True, name: str = "specinfer", filter_alive: bool = True):
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
            j, r = _multiround(p[alive[0], i], q[alive[0], i], cands, rng, update, strict)
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
                    by_depth: bool = False):
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
            j, r = _multiround(p[node + 1], q[node + 1], cands, rng, update, strict)
            if j is None:
                return out + [inverse_cdf(r, rng.random())]
            out.append(cands[j])
            node = int(kids[j])

    verify.__name__ = verify.__qualname__ = name
    return verify


def first_draft_sd(p, q, drafts, rng):
    """Standard speculative sampling on the first draft only (lossless; another rule)."""
    from .references import reference_verifier
    return reference_verifier(np.asarray(p)[0], np.asarray(q)[0], list(np.asarray(drafts)[0]), rng)


def first_path_sd(p, q, tokens, parents, rng):
    """Standard speculative sampling along the first child of every node (lossless)."""
    from .references import reference_verifier
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
    from ..verifiers.multidraft import spectr_gbv_verify

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
    ("specinfer:accept-u≤ratio", "drafts", multiround_drafts(strict=False, name="accept-u≤ratio"),
     "probe control: multi-round rejection accepting on u ≤ ratio (u = 0 accepts a p = 0 token)", "probes", 1),
    ("specinfer-tree:accept-u≤ratio", "tree", multiround_tree(strict=False, name="accept-u≤ratio"),
     "probe control: multi-round rejection on the tree accepting on u ≤ ratio", "probes", 1),
)


# --- exact engines ----------------------------------------------------------------------------

def _outcome_law(outcomes) -> dict:
    law: dict = {}
    for o in outcomes:
        key = tuple(int(t) for t in o.t) + (int(o.y),)
        law[key] = law.get(key, 0.0) + float(o.prob)
    return law


def _rows(pair, state):
    return pair.target.table[state], pair.draft.table[state]


def _check_engine(pair, state):
    from ..checks import check_state, check_type
    check_type(pair, MarkovPair, "pair")
    if pair.V > 4:
        raise ValueError(f"the exact engines enumerate every draw: V ≤ 4, got V = {pair.V}")
    return check_state(state, pair.n_states, "state")


def specinfer_drafts_law(pair: MarkovPair, gamma: int, K: int, state: int = 0) -> dict:
    """Exact law {emitted block: probability} of one multi-round (SpecInfer-style) call on K
    drafts from ``state``: every draft outcome enumerated (the alive drafts' tokens at each
    depth) and every acceptance test integrated (weight min(1, r/q) and its complement)."""
    state = _check_engine(pair, state)
    gamma = check_int(gamma, "gamma", min=1, max=3)
    K = check_int(K, "K (number of drafts)", min=1, max=MAX_K)
    V, S = pair.V, pair.n_states
    law: dict = {}

    def go(depth, s, n_alive, w, prefix):
        p, q = _rows(pair, s)
        if depth == gamma:
            for y in np.flatnonzero(p):
                law[prefix + (int(y),)] = law.get(prefix + (int(y),), 0.0) + w * float(p[y])
            return
        supp = np.flatnonzero(q)
        acc: dict = {}
        none: dict = {}
        for cand in itertools.product(supp, repeat=n_alive):
            pc = float(np.prod(q[list(cand)]))
            r, stay = p.astype(np.float64), 1.0
            for x in cand:
                a = min(1.0, r[x] / q[x])
                if a > 0:
                    key = (int(x), cand.count(x))
                    acc[key] = acc.get(key, 0.0) + pc * stay * a
                stay *= 1.0 - a
                if stay <= 0:
                    break
                r = _residual(r, q)
            if stay > 0:
                key = tuple(np.round(r, 15))
                none[key] = none.get(key, 0.0) + pc * stay
        for rk, pr in none.items():
            r = np.asarray(rk)
            for y in np.flatnonzero(r):
                law[prefix + (int(y),)] = law.get(prefix + (int(y),), 0.0) + w * pr * float(r[y])
        for (x, c), pr in acc.items():
            go(depth + 1, int(next_state(s, x, V, S)), c, w * pr, prefix + (x,))

    go(0, state, K, 1.0, ())
    return law


def specinfer_tree_law(pair: MarkovPair, branching: tuple, state: int = 0) -> dict:
    """Exact law of one multi-round call on the static tree ``branching`` from ``state``."""
    state = _check_engine(pair, state)
    branching = check_tree(branching)
    V, S = pair.V, pair.n_states
    D = len(branching)
    law: dict = {}

    def go(depth, s, w, prefix):
        p, q = _rows(pair, s)
        if depth == D:
            for y in np.flatnonzero(p):
                law[prefix + (int(y),)] = law.get(prefix + (int(y),), 0.0) + w * float(p[y])
            return
        acc: dict = {}
        none: dict = {}
        for cand in itertools.product(np.flatnonzero(q), repeat=branching[depth]):
            pc = float(np.prod(q[list(cand)]))
            r, stay = p.astype(np.float64), 1.0
            for x in cand:
                a = min(1.0, r[x] / q[x])
                if a > 0:
                    acc[int(x)] = acc.get(int(x), 0.0) + pc * stay * a
                stay *= 1.0 - a
                if stay <= 0:
                    break
                r = _residual(r, q)
            if stay > 0:
                key = tuple(np.round(r, 15))
                none[key] = none.get(key, 0.0) + pc * stay
        for rk, pr in none.items():
            r = np.asarray(rk)
            for y in np.flatnonzero(r):
                law[prefix + (int(y),)] = law.get(prefix + (int(y),), 0.0) + w * pr * float(r[y])
        for x, pr in acc.items():
            go(depth + 1, int(next_state(s, x, V, S)), w * pr, prefix + (x,))

    go(0, state, 1.0, ())
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
    """A :class:`~spectheory.conformance.driver.Trace` with, per call, whether the emitted
    prefix lies on a draft (a tree path)."""

    on_tree: np.ndarray = field(default=None)


class MultiRunner:
    """Independent runs of a multi-draft or tree verifier from state 0, extendable (as
    :class:`~spectheory.conformance.driver.BlockRunner`)."""

    def __init__(self, verifier: MultiDraftVerifier, pair: MarkovPair, gamma: int, n_tokens: int, seed,
                 name: str = ""):
        from .driver import CallLedger
        from .forced import CountingGenerator
        draft_ss, verifier_ss, completion_ss = _spawn(seed, 3)
        self.draft_rng = np.random.Generator(np.random.PCG64(draft_ss))
        self.verifier_rng = CountingGenerator(np.random.Generator(np.random.PCG64(verifier_ss)))  # same stream, counted
        verifier.sources.own(self.draft_rng, self.verifier_rng)
        self.completion_seed = completion_ss
        self.ledger = CallLedger()
        self.last_inputs: dict = {}
        self.sampler_s = 0.0
        self.verifier, self.pair, self.n_tokens, self.name = verifier, pair, n_tokens, name or pair.name
        self.gamma = gamma if verifier.tree is None else len(verifier.tree)
        q_tab = pair.draft.table
        q_cdf = np.cumsum(q_tab, axis=1)
        q_cdf /= q_cdf[:, -1:]
        self.q_cdf = q_cdf.tolist()
        self.last = [int(np.flatnonzero(row)[-1]) for row in q_tab]
        self.p_rep = verifier.represent(pair.target.table, "target")
        self.q_rep = verifier.represent(q_tab, "draft")
        self.rec = _Recorder(pair, self.gamma, n_tokens, with_draft=False)
        self.on_tree: list = []
        self.crash: VerifierCrash | None = None
        self.calls = 0
        if verifier.tree is not None:
            self.parents = tree_parents(verifier.tree)

    @property
    def n_runs(self) -> int:
        return len(self.rec.run_tokens)

    def _draw(self, s):
        V, S = self.pair.V, self.pair.n_states
        x = min(bisect.bisect_right(self.q_cdf[s], self.draft_rng.random()), self.last[s])
        return x, (s * V + x) % S

    def _needed(self, s, first_tokens) -> int:
        """1 when every first-depth candidate's test needs a random value (0 < p(x) < q(x)): then
        any order of testing them draws at least one uniform in the call."""
        p, q = self.pair.target.table[s], self.pair.draft.table[s]
        return int(all(0.0 < p[x] < q[x] for x in first_tokens))

    def _call(self, s):
        """One call from state s: (output, set of on-tree prefixes, context string); its exact
        inputs are kept in :attr:`last_inputs` (for a rerunnable call)."""
        from .driver import rows_json
        v, g = self.verifier, self.gamma
        bg = getattr(self.verifier_rng, "bit_generator", None)
        state = bg.state if bg is not None else None
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
            st_arr = np.asarray(states)
            self.last_inputs = {"p": rows_json(self.pair.target.table[st_arr]),
                                "q": rows_json(self.pair.draft.table[st_arr[:, :g]]), "drafts": drafts,
                                "rng_state": state, "needed": self._needed(s, [d[0] for d in drafts])}
            t0 = perf_counter()
            out = v.call_drafts(self.p_rep[st_arr], self.q_rep[st_arr[:, :g]], drafts, self.verifier_rng)
            self.sampler_s += perf_counter() - t0
            paths = {tuple(d[:i]) for d in drafts for i in range(g + 1)}
            return out, paths, f"drafts {drafts}"
        tokens, node_state, paths = [], [], {()}
        path_of = []
        for j, par in enumerate(self.parents):
            ps = s if par < 0 else node_state[par]
            x, st = self._draw(ps)
            tokens.append(x)
            node_state.append(st)
            path_of.append((() if par < 0 else path_of[par]) + (x,))
            paths.add(path_of[-1])
        rows = [s] + node_state
        self.last_inputs = {"p": rows_json(self.pair.target.table[rows]), "q": rows_json(self.pair.draft.table[rows]),
                            "tokens": tokens, "parents": [int(j) for j in self.parents], "rng_state": state,
                            "needed": self._needed(s, [t for t, par in zip(tokens, self.parents) if par < 0])}
        t0 = perf_counter()
        out = v.call_tree(self.p_rep[rows], self.q_rep[rows], tokens, self.parents, self.verifier_rng)
        self.sampler_s += perf_counter() - t0
        return out, paths, f"tree tokens {tokens}"

    def extend(self, n_runs: int) -> None:
        if self.crash is not None or self.n_runs >= n_runs:
            return
        with self.verifier.sources.active(f"{self.name} γ={self.gamma}"):
            self._extend(n_runs)

    def _extend(self, n_runs):
        V, S = self.pair.V, self.pair.n_states
        rec = self.rec
        while self.n_runs < n_runs:
            s, got, first = 0, [], True
            while len(got) < self.n_tokens:
                self.calls += 1
                ctx = ""
                counts = getattr(self.verifier_rng, "decision_values", None)
                u0 = counts() if counts is not None else 0
                try:
                    out, paths, ctx = self._call(s)
                    rec.check(out)
                except Exception as err:  # noqa: BLE001
                    inputs = {k: v for k, v in self.last_inputs.items() if k != "needed"} or None
                    self.crash = crash_from(err, f"{self.name} γ={self.gamma}",
                                            f"call {self.calls}, run {self.n_runs + 1}, start state {s}"
                                            + (f", {ctx}" if ctx else ""), inputs)
                    return
                rec.record(s, first, out)
                on = tuple(out[:-1]) in paths
                self.on_tree.append(on)
                where = f"call {self.calls}, run {self.n_runs + 1}, start state {s}, {ctx}, emitted {list(out)}"
                if counts is not None:
                    self.ledger.note_draws(self.calls, self.last_inputs["needed"], counts() - u0, where)
                if not on and self.ledger.structure_example is None:
                    self.ledger.structure_example = {**{k: v for k, v in self.last_inputs.items() if k != "needed"},
                                                     "output": list(out),
                                                     "context": f"call {self.calls}, run {self.n_runs + 1}"}
                first = False
                got.extend(out)
                for t in out:
                    s = (s * V + t) % S
            rec.run_tokens.append(got[:self.n_tokens])

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
    ctl = ("specinfer:residual-not-updated", "prefix-shifted") if tree is None else \
        ("specinfer-tree:residual-not-updated",)
    return (
        Check("conformance.first_tokens", "The first N emitted tokens are distributed as p^N (lossless).",
              "Leviathan et al. 2023, Thm 3.5", lambda t, pair, a: [first_tokens(t, pair, a)], 1, ctl,
              group="lossless"),
        Check("conformance.token_law_by_state", "Every token of a call's block (completed from p) has law "
              "p(·|s) in the state it is drawn in, at every position (lossless).",
              "Leviathan et al. 2023, Thm 3.5 (a valid verification, call by call)",
              lambda t, pair, a: [token_law_by_state(t, pair, a)], 1, ctl, group="lossless"),
    )


# --- probes -----------------------------------------------------------------------------------

def _probe_cases(verifier: MultiDraftVerifier):
    """(name, p row, q row, draft token, forced value, V): i.i.d. rows at every position."""
    return [
        ("p=0 drafted token in every draft, u=0", [0.0, 0.5, 0.5], [0.5, 0.25, 0.25], 0, "zero"),
        ("p=0 drafted token in every draft, u=1−ulp", [0.0, 0.5, 0.5], [0.5, 0.25, 0.25], 0, "max"),
        ("disjoint supports, u=0", [0.5, 0.5, 0.0], [0.0, 0.0, 1.0], 2, "zero"),
        ("disjoint supports, u=1−ulp", [0.5, 0.5, 0.0], [0.0, 0.0, 1.0], 2, "max"),
        ("one-token vocabulary, u=0", [1.0], [1.0], 0, "zero"),
        ("one-token vocabulary, u=1−ulp", [1.0], [1.0], 0, "max"),
    ]


def probe_inputs(verifier: MultiDraftVerifier, gamma: int) -> dict:
    """{probe name: keyword arguments of :func:`.replay.rerun` that repeat the probe call}."""
    g = gamma if verifier.tree is None else len(verifier.tree)
    out = {}
    for name, p_row, q_row, x, forced in _probe_cases(verifier):
        p_row, q_row = np.asarray(p_row, dtype=np.float64), np.asarray(q_row, dtype=np.float64)
        if verifier.tree is None:
            K = verifier.K
            out[name] = {"p": np.broadcast_to(p_row, (K, g + 1, p_row.size)).tolist(),
                         "q": np.broadcast_to(q_row, (K, g, q_row.size)).tolist(), "drafts": [[x] * g] * K,
                         "forced": forced}
        else:
            M = tree_size(verifier.tree)
            out[name] = {"p": np.broadcast_to(p_row, (M + 1, p_row.size)).tolist(),
                         "q": np.broadcast_to(q_row, (M + 1, q_row.size)).tolist(), "tokens": [x] * M,
                         "parents": [int(j) for j in tree_parents(verifier.tree)], "forced": forced}
    return out


def run_multi_probes(verifier: MultiDraftVerifier, gamma: int, blocked=()) -> list[Evidence]:
    """Support probes: one call each with every uniform forced, every draft (every tree node)
    the same token; any lossless verifier emits a block of valid ids, never a token with p = 0.
    Applied as block probes are (:func:`.probes.accounting`: at least one uniform per
    acceptance decision, one more value for the last token, nothing escaped, ``blocked``
    empty)."""
    from .driver import crash_location, describe
    from .probes import ACCEPT_TARGET, accounting, event_of
    g = gamma if verifier.tree is None else len(verifier.tree)
    out_ev = []
    for name, p_row, q_row, x, forced in _probe_cases(verifier):
        p_row, q_row = np.asarray(p_row), np.asarray(q_row)
        V = p_row.size
        rng = ForcedUniforms(forced)
        label_ = f"probe: {name}"
        out, crash, unsupported = None, None, None
        with verifier.sources.active(label_):
            try:
                if verifier.tree is None:
                    K = verifier.K
                    p = np.broadcast_to(verifier.represent(p_row[None], "target"), (K, g + 1, V)).copy()
                    q = np.broadcast_to(verifier.represent(q_row[None], "draft"), (K, g, V)).copy()
                    out = verifier.call_drafts(p, q, np.full((K, g), x), rng)
                else:
                    M = tree_size(verifier.tree)
                    p = np.broadcast_to(verifier.represent(p_row[None], "target"), (M + 1, V)).copy()
                    q = np.broadcast_to(verifier.represent(q_row[None], "draft"), (M + 1, V)).copy()
                    out = verifier.call_tree(p, q, np.full(M, x), tree_parents(verifier.tree), rng)
            except ForcedSourceUnsupported as err:
                unsupported = err
            except Exception as err:  # noqa: BLE001
                crash = f"raised {describe(err)} at {crash_location(err)}"
        escaped = verifier.sources.escaped_in(label_)
        if unsupported is not None:
            out_ev.append(stats.info("exact", name, 0.0, None, test="boundary probe (forced uniforms)",
                                     note=f"Probe not applied: {unsupported}"))
            continue
        found = [crash] if crash else []
        if out is not None:
            if not 1 <= len(out) <= g + 1 or min(out) < 0 or max(out) >= V:
                found.append(f"emitted {list(out)}: not 1..{g + 1} ids in [0, {V})")
            else:
                found += [f"position {i}: emitted token {t} has p = 0" for i, t in enumerate(out) if p_row[t] <= 0]
        note = (f"every draft token {x}, p = {p_row.tolist()}, q = {q_row.tolist()}. Targets {ACCEPT_TARGET} and the "
                f"last token's draw; stands for {event_of(forced, verifier.dtype)}. Output: {out}")
        reasons = accounting(rng, out, g, escaped, blocked)
        if found:
            out_ev.append(stats.exact_equal(name, 0, len(found), what="violations (forced uniforms)",
                                            note=note + "; VIOLATION: " + "; ".join(found)))
        elif reasons:
            out_ev.append(stats.info("exact", name, 0.0, 0.0, test="boundary probe (forced uniforms)",
                                     note=note + "; probe not applied (" + "; ".join(reasons) + ")"))
        else:
            out_ev.append(stats.exact_equal(name, 0, 0, what="violations (forced uniforms)", note=note))
    return out_ev


# --- the entry point --------------------------------------------------------------------------
