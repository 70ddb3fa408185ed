"""Each family's algorithm as a real decoding loop on a model pair, batched over prompts.

Three loops, each driving the toolkit's own verifier (``spectheory/verifiers/*.py``) with the two
models' next-token rows, recording per iteration what the family's theory needs, so that the
measured acceptance can be tested against the trace-exact theory of the same run
(:mod:`spectheory.validate.replay_loops`):

* ``se`` — Speculative Ensemble, the alternate proposal framework (Fu et al. 2025, App. B.1
  Alg. 1) with the weighted ensemble r = λq + (1 − λ)p as the target: the default proposer q
  proposes γ tokens, p scores them in one call, :func:`spectheory.verifiers.se.ensemble_verify`
  accepts each with min(1, r/m_k); on full acceptance the verifier's next token (from its own
  row) becomes the cache C and the roles swap (p proposes C plus γ_p − 1 tokens, q scores);
  any rejection resamples from norm(max(r − m_k, 0)) and returns to q. Recorded per cycle: the
  proposer k, the proposals, α_j = Σ min(m_k, r) and r_j = min(1, r(x_j)/m_k(x_j)) at each.
* ``multidraft`` — K i.i.d. drafts of length γ from the draft model (K rows per prompt), the
  target scores all of them in one call, and GBV (K = 1), SpecTr-GBV (K drafts;
  :func:`spectheory.verifiers.multidraft.spectr_gbv_verify`) or K-SEQ
  (:func:`~spectheory.verifiers.multidraft.kseq_verify`) verifies; the accepted draft's cache
  row is copied to the prompt's K rows. Every iteration starts from the unmodified target (Alg.
  2's distribution modification is not run: the acceptance claims are about one iteration at a
  given context). Recorded: τ, the draft kept, and per draft and depth the joint path
  probabilities P(x^i), Q(x^i) (products of p_j(x_j), q_j(x_j)); for K-SEQ per depth the
  candidates alive and the exact acceptance 1 − (1 − β(ρ))^n of that context.
* ``ersd`` — batch drafting at every position (a depth-one tree of k alternatives): ERSD
  (:func:`spectheory.verifiers.ersd.ersd_verify`, exponential races) emits the token; GSD
  (:func:`~spectheory.verifiers.ersd.gsd_verify`, k alternatives drawn from q without
  replacement) is verified at the same context with its own draws (its token, also ~ p, is not
  emitted). Recorded per position: both acceptance indices, the exact ERSD first-token
  acceptance E_t = Σ_x 1/Σ_y max(p(y)/p(x), q(y)/q(x)), the Poisson-matching bound H_t and 1 − TV.

Each loop has a negative control: the same loop with a broken rule (``<loop>-control``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

LOOP_FORMAT = "spectheory.looprun/1"


@dataclass(eq=False)
class LoopRun:
    """One prompt through one family's real decoding loop: per-iteration arrays (``arrays``,
    each with one row per iteration), the emitted tokens, the prompt, and ``meta`` (family,
    rule, settings, timings)."""

    family: str
    arrays: dict
    tokens: np.ndarray
    prompt_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.arrays = {k: np.asarray(v) for k, v in self.arrays.items()}
        ns = {v.shape[0] for v in self.arrays.values() if v.ndim}
        if len(ns) > 1:
            raise ValueError(f"{self.family} loop record: arrays have different numbers of iterations "
                             f"{ {k: v.shape for k, v in self.arrays.items()} } (a truncated or damaged record)")
        self.tokens = np.asarray(self.tokens, dtype=np.int64)
        self.prompt_ids = np.asarray(self.prompt_ids, dtype=np.int64)

    @property
    def n_iterations(self) -> int:
        return int(next(iter(self.arrays.values())).shape[0]) if self.arrays else 0

    def __getitem__(self, k):
        return self.arrays[k]

    def save(self, path) -> Path:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez_compressed(f, format=np.str_(LOOP_FORMAT), family=np.str_(self.family), tokens=self.tokens,
                                prompt_ids=self.prompt_ids, meta=np.str_(json.dumps(self.meta, default=str)),
                                **{f"a_{k}": v for k, v in self.arrays.items()})
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path) -> "LoopRun":
        from .trace import open_npz
        with open_npz(path, (LOOP_FORMAT,)) as z:
            try:
                arrays = {k[2:]: z[k] for k in z.files if k.startswith("a_")}
                return cls(str(z["family"]), arrays, z["tokens"], z["prompt_ids"], json.loads(str(z["meta"])))
            except (KeyError, ValueError) as e:
                raise ValueError(f"{path}: damaged {LOOP_FORMAT} file ({e}); delete it and rerun the same command "
                                 "to recompute this prompt (nothing else is lost)") from None


@dataclass(frozen=True)
class LoopSpec:
    """A registered loop: its function, the broken rule of its negative control, its defaults."""

    name: str
    run: object
    control: str | None = None
    description: str = ""
    defaults: dict = field(default_factory=dict)


LOOPS: dict = {}


# --- shared machinery ------------------------------------------------------------------------

def _common(prompts, seeds, names, categories):
    from spectheory.checks import check_int
    prompts = [[int(i) for i in p] for p in prompts]
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("give at least one prompt, each holding at least one token")
    n = len(prompts)
    seeds = list(range(n)) if seeds is None else list(seeds)
    names = [f"loop{i}" for i in range(n)] if names is None else list(names)
    categories = [""] * n if categories is None else list(categories)
    if not len(seeds) == len(names) == len(categories) == n:
        raise ValueError(f"seeds, names and categories must have one entry per prompt ({n})")
    for s in seeds:
        check_int(s, "seed", min=0)
    return prompts, seeds, names, categories


class _Row:
    """One prompt's state in a loop: committed text, emitted tokens, generator, records."""

    def __init__(self, i, prompt, seed, name, category, max_new_tokens, stop):
        import time
        self.i, self.prompt, self.seq, self.out = i, list(prompt), list(prompt), []
        self.rng = np.random.default_rng(seed)
        self.seed, self.name, self.category = seed, name, category
        self.max_new_tokens, self.stop = max_new_tokens, stop
        self.rec: dict = {}
        self.done = False
        self.t0 = time.perf_counter()
        self.calls = 0.0

    def add(self, **kw):
        for k, v in kw.items():
            self.rec.setdefault(k, []).append(v)

    def commit(self, block) -> int:
        """Append the verifier's tokens, cut at a stop token or the length cap; returns the
        number emitted."""
        block = [int(t) for t in block]
        cut = len(block)
        for j, t in enumerate(block):
            if t in self.stop:
                cut, self.done = j + 1, True
                break
        if len(self.out) + cut >= self.max_new_tokens:
            cut, self.done = self.max_new_tokens - len(self.out), True
        self.seq.extend(block)
        self.out.extend(block[:cut])
        return cut

    def result(self, family, meta) -> "LoopRun":
        import time
        arrays = {}
        for k, v in self.rec.items():
            arrays[k] = np.asarray(v)
        meta = dict(name=self.name, category=self.category, seed=self.seed, calls_s=self.calls,
                    wall_s=time.perf_counter() - self.t0, stopped=bool(self.out and self.out[-1] in self.stop), **meta)
        return LoopRun(family, arrays, np.asarray(self.out, dtype=np.int64), np.asarray(self.prompt, dtype=np.int64),
                       meta)


class _Pool:
    """Continuous batching for a loop: ``lms`` (BatchedLM per model), ``rep`` rows per prompt
    (row b·rep + j belongs to active prompt b), prefill of every new prompt's text but its last
    token (the last committed token is always pending)."""

    def __init__(self, models, V, device, rep=1, prefix_cache=None):
        from .batch import BatchedLM, PrefixCache
        self.models, self.V, self.device, self.rep = models, V, device, rep
        self.lms = [BatchedLM(m, V, device) for m in models]
        self.active: list = []
        self.pcache = PrefixCache() if prefix_cache is None else prefix_cache

    def add(self, rows: list) -> None:
        from .batch import check_batch_fits
        longest = max(len(r.seq) for r in rows)
        B = (len(self.active) + len(rows)) * self.rep
        check_batch_fits(self.models[0], B, max(self.lms[0].slots, longest) + 8, 8, self.V,
                         what=f"loop batch of {len(self.active) + len(rows)} prompts × {self.rep} rows")
        for lm, m in zip(self.lms, self.models):
            new, _ = self.pcache.rows(m, self.V, [r.seq[:-1] for r in rows for _ in range(self.rep)], self.device)
            lm.merge(new)
        self.active += rows

    def keep(self, rows_idx) -> None:
        """Keep the listed cache rows (any order, repeats allowed) for the states that remain."""
        for lm in self.lms:
            lm.select(rows_idx)
            if lm.hole_fraction() > 0.5:
                lm.compact()

    def retire(self, on_done, family, meta) -> None:
        keep, idx = [], []
        for b, r in enumerate(self.active):
            if r.done:
                on_done(r.i, r.result(family, meta))
            else:
                keep.append(r)
                idx += list(range(b * self.rep, (b + 1) * self.rep))
        if len(keep) < len(self.active):
            self.active = keep
            self.keep(idx)


def _drive(pool, prompts, seeds, names, categories, max_new_tokens, stop, batch, step, family, meta, on_done,
           on_tokens):
    """Run ``step(pool)`` (one iteration of every active prompt) until every prompt is done."""
    from .batch import BatchMemoryError, is_oom
    results: list = [None] * len(prompts)

    def done(i, run):
        results[i] = run
        if on_done is not None:
            on_done(i, run)

    queue = list(range(len(prompts)))[::-1]
    try:
        while queue or pool.active:
            if queue and len(pool.active) < batch:
                new = [queue.pop() for _ in range(min(batch - len(pool.active), len(queue)))]
                pool.add([_Row(i, prompts[i], seeds[i], names[i], categories[i], max_new_tokens, stop) for i in new])
            for r, n in step(pool):
                if on_tokens is not None and n:
                    on_tokens(n)
            pool.retire(done, family, meta)
    except BatchMemoryError:
        raise
    except Exception as e:
        if is_oom(e):
            raise BatchMemoryError(
                f"ran out of memory in the {family} loop with {len(pool.active)} prompts at once; lower --batch. "
                f"The {sum(x is not None for x in results)} prompts finished before were handed over already.") from None
        raise
    return results


def _probs(temperature, top_k, top_p):
    from .trace import sampling_probs
    return lambda z: sampling_probs(z, temperature, top_k=top_k, top_p=top_p)


def _draw(rng, p, temperature) -> int:
    from spectheory.rng import sample_index
    return int(p.argmax()) if temperature == 0 else sample_index(rng, p)


def _setup(target_model, draft_model, vocab_size):
    from .hf import common_vocab, require_torch
    require_torch()
    return common_vocab(target_model, draft_model) if vocab_size is None else int(vocab_size)


# --- Speculative Ensemble: Alg. 1 with a weighted ensemble -------------------------------------

def run_se(target_model, draft_model, prompts, max_new_tokens, *, control=False, temperature=1.0, top_k=None,
           top_p=None, seeds=None, stop_ids=(), vocab_size=None, device=None, names=None, categories=None,
           batch=8, on_tokens=None, on_done=None, options=None, prefix_cache=None) -> list:
    """The ``se`` loop (module docstring). options: ``lam`` (λ, default 0.5), ``gamma_q`` (4),
    ``gamma_p`` (1); ``control``: verify against the other member (the ensemble forgotten)."""
    from spectheory.ensembles import weighted_ensemble
    from spectheory.rules.se import BROKEN_VERIFY_MEMBER, STANDARD
    from spectheory.verifiers.se import ensemble_verify
    from spectheory.checks import check_int, check_real
    o = {**dict(lam=0.5, gamma_q=4, gamma_p=1), **(options or {})}
    lam = check_real(o["lam"], "λ", lo=0.0, hi=1.0)
    gam = (check_int(o["gamma_q"], "γ_q", min=1), check_int(o["gamma_p"], "γ_p", min=1))
    prompts, seeds, names, categories = _common(prompts, seeds, names, categories)
    V = _setup(target_model, draft_model, vocab_size)
    rule = BROKEN_VERIFY_MEMBER if control else STANDARD
    ens = weighted_ensemble(lam)
    probs = _probs(temperature, top_k, top_p)
    pool = _Pool([draft_model, target_model], V, device, prefix_cache=prefix_cache)  # members (q, p): 0 = draft
    G = max(gam)

    def step(pool):
        rows = pool.active
        B = len(rows)
        for b, r in enumerate(rows):
            r.T = [r.C] if getattr(r, "C", None) is not None else []
            r.cached = bool(r.T)
            r.k = r.who if r.T else 0
            r.mk = [r.Crow] if r.T else []
            r.pend = {m: r.seq[pool.lms[m].npos[b]:] for m in (0, 1)}
        # proposals: each member's rows that propose extend T one token per forward
        for m in (0, 1):
            need = [gam[m] - len(r.T) if r.k == m else 0 for r in rows]
            for s in range(max(need)):
                feeds = []
                for r, nd in zip(rows, need):
                    if s < nd:
                        f = r.pend[m] + (r.T[-1:] if r.T else [])
                        feeds.append(f)
                        r.pend[m] = []
                    else:
                        feeds.append([])
                z, dt = pool.lms[m].feed(feeds, rows=1)
                share = dt / max(1, sum(1 for f in feeds if f))
                for b, (r, nd) in enumerate(zip(rows, need)):
                    if s < nd:
                        row = probs(z[b, 0])
                        r.mk.append(row)
                        r.T.append(_draw(r.rng, row, temperature))
                        r.calls += share
        # scoring: the other member scores pending + T (one forward per member)
        for m in (0, 1):
            who = [b for b, r in enumerate(rows) if r.k != m]
            if not who:
                continue
            feeds = [rows[b].pend[m] + rows[b].T if b in who else [] for b in range(B)]
            L = max(len(rows[b].T) + 1 for b in who)
            z, dt = pool.lms[m].feed(feeds, rows=L)
            for b in who:
                r = rows[b]
                r.mv = probs(z[b, L - len(r.T) - 1:])
                r.calls += dt / len(who)
        out = []
        keep_t = np.zeros((2, B), dtype=np.int64)
        for b, r in enumerate(rows):
            k, T = r.k, r.T
            mk, mv = np.stack(r.mk), r.mv
            members = np.stack([mk, mv[:-1]]) if k == 0 else np.stack([mv[:-1], mk])
            verdict = ensemble_verify(members, k, np.asarray(T, dtype=np.int64), ens, seed=r.rng, rule=rule)
            R = ens(members)
            x = np.asarray(T)
            idx = np.arange(len(T))
            a = STANDARD.accept_probability(R, members[k], members[1 - k])[idx, x]
            n_before = len(r.seq)
            C_next = None
            if verdict.tau == len(T) and rule.residual != "drop":
                t = _draw(r.rng, mv[-1], temperature)   # the verifier's next token
                if rule.bonus == "unchecked":
                    block = list(verdict.tokens) + [t]
                else:
                    block, C_next, r.Crow, r.who = list(verdict.tokens), t, mv[-1], 1 - k
            else:
                block = list(verdict.tokens)
            n = r.commit(block)
            r.C = None if r.done else C_next
            pad = lambda v: np.concatenate([np.asarray(v, dtype=np.float64), np.full(G - len(v), np.nan)])  # noqa: E731
            r.add(proposer=k, n_proposed=len(T), tau=verdict.tau, alpha=pad(verdict.alpha), accept_prob=pad(a),
                  emitted=n, n_out=len(block), cached=int(r.cached))
            keep = n_before + verdict.tau
            for m in (0, 1):
                keep_t[m, b] = max(int(pool.lms[m].npos[b]) - keep, 0)
            out.append((r, n))
        for m in (0, 1):
            pool.lms[m].discard_last(keep_t[m])
        return out

    meta = dict(loop="se", lam=lam, gamma_q=gam[0], gamma_p=gam[1], rule=rule.name, temperature=float(temperature),
                top_k=top_k, top_p=top_p, V=V, batch_size=batch,
                ensemble=f"weighted r = λq + (1−λ)p, λ = {lam:g}, members (q, p), q proposes first (Alg. 1)")
    return _drive(pool, prompts, seeds, names, categories, max_new_tokens, {int(s) for s in stop_ids}, batch, step,
                  "se", meta, on_done, on_tokens)


# --- multi-draft: GBV, SpecTr-GBV, K-SEQ -------------------------------------------------------

MD_ALGORITHMS = ("gbv", "spectr_gbv", "kseq")


def md_rules(algorithm: str, control: bool):
    """(rule run in the loop, the correct rule the theory uses) for a multi-draft algorithm."""
    from spectheory.rules import multidraft as R
    correct = {"gbv": R.GBV, "spectr_gbv": R.SPECTR_GBV, "kseq": R.KSEQ}[algorithm]
    broken = {"gbv": R.BROKEN_ACCEPT_ALL, "spectr_gbv": R.BROKEN_POWER_1, "kseq": R.KSEQ_RHO_ONE}[algorithm]
    return (broken if control else correct), correct


def run_multidraft(target_model, draft_model, prompts, max_new_tokens, *, control=False, temperature=1.0,
                   top_k=None, top_p=None, seeds=None, stop_ids=(), vocab_size=None, device=None, names=None,
                   categories=None, batch=8, on_tokens=None, on_done=None, options=None,
                   prefix_cache=None) -> list:
    """The ``multidraft`` loop (module docstring). options: ``algorithm`` (gbv, spectr_gbv, kseq;
    default spectr_gbv), ``K`` (drafts, default 2; 1 for gbv), ``gamma`` (default 3). ``control``:
    GBV accepting every sub-block, SpecTr-GBV with (1 − m)^1, K-SEQ with ρ = 1."""
    from spectheory.checks import check_int
    from spectheory.closed_forms import multidraft as cf
    from spectheory.verifiers.multidraft import block_h, kseq_verify, spectr_gbv_verify
    o = {**dict(algorithm="spectr_gbv", K=2, gamma=3), **(options or {})}
    alg = o["algorithm"]
    if alg not in MD_ALGORITHMS:
        raise ValueError(f"multidraft algorithm must be one of {MD_ALGORITHMS}, got {alg!r}")
    K = 1 if alg == "gbv" else check_int(o["K"], "K (drafts)", min=1)
    g = check_int(o["gamma"], "γ", min=1)
    prompts, seeds, names, categories = _common(prompts, seeds, names, categories)
    V = _setup(target_model, draft_model, vocab_size)
    rule, correct = md_rules(alg, control)
    probs = _probs(temperature, top_k, top_p)
    pool = _Pool([target_model, draft_model], V, device, rep=K, prefix_cache=prefix_cache)

    def step(pool):
        tgt, drf = pool.lms
        rows = pool.active
        B = len(rows)
        x = np.zeros((B, K, g), dtype=np.int64)
        qrows = np.zeros((B, K, g, V))
        feeds = [rows[b].seq[drf.npos[b * K + j]:] for b in range(B) for j in range(K)]
        for i in range(g):
            z, dt = drf.feed(feeds, rows=1)
            Q = probs(z[:, 0])
            for b, r in enumerate(rows):
                r.calls += dt / B
                for j in range(K):
                    qrows[b, j, i] = Q[b * K + j]
                    x[b, j, i] = _draw(r.rng, Q[b * K + j], temperature)
            feeds = [[int(x[b, j, i])] for b in range(B) for j in range(K)]
        feeds = [rows[b].seq[tgt.npos[b * K + j]:] + x[b, j].tolist() for b in range(B) for j in range(K)]
        zt, tt = tgt.feed(feeds, rows=g + 1)
        P = probs(zt).reshape(B, K, g + 1, V)
        out, src, k_t, k_d = [], [], np.zeros(B * K, dtype=np.int64), np.zeros(B * K, dtype=np.int64)
        for b, r in enumerate(rows):
            r.calls += tt / B
            p, q, d = P[b], qrows[b], x[b]
            if alg == "kseq":
                v = kseq_verify(p, q, d, seed=r.rng, rule=rule)
            else:
                v = spectr_gbv_verify(p, q, d, seed=r.rng, rule=rule)
            kk, ii = np.arange(K)[:, None], np.arange(g)[None, :]
            px, qx = p[kk, ii, d], q[kk, ii, d]
            rec = dict(tau=v.tau, draft=v.draft, n_out=len(v.tokens), drafts=d.copy(), path_p=np.cumprod(px, axis=1),
                       path_q=np.cumprod(qx, axis=1))
            if alg == "kseq":
                # per depth: drafts alive (sharing the accepted prefix) and the exact acceptance of that context
                acc_p, alive_n = np.full(g, np.nan), np.zeros(g, dtype=np.int64)
                for i in range(min(v.tau + 1, g)):
                    alive = [j for j in range(K) if list(d[j, :i]) == list(v.tokens[:i])]
                    alive_n[i] = len(alive)
                    pi, qi = p[alive[0], i], q[alive[0], i]
                    acc_p[i] = cf.kseq_acceptance(pi, qi, len(alive))   # ρ solved for the n alive (KSEQ)
                rec.update(alive=alive_n, depth_accept_prob=acc_p)
            else:
                h, _, _ = block_h(p, q, d, K, correct)   # the correct rule's sub-block acceptances
                rec.update(h=h)
            n_before = len(r.seq)
            n = r.commit(v.tokens)
            r.add(emitted=n, **rec)
            f = max(v.draft, 0)
            src += [b * K + f] * K
            keep = n_before + v.tau
            k_t[b * K:(b + 1) * K] = max(int(tgt.npos[b * K + f]) - keep, 0)
            k_d[b * K:(b + 1) * K] = max(int(drf.npos[b * K + f]) - keep, 0)
            out.append((r, n))
        for lm, k in ((tgt, k_t), (drf, k_d)):
            lm.select(src)
            lm.discard_last(k)
        return out

    meta = dict(loop="multidraft", algorithm=alg, K=K, gamma=g, rule=rule.name, theory_rule=correct.name,
                temperature=float(temperature), top_k=top_k, top_p=top_p, V=V, batch_size=batch,
                note="every iteration starts from the unmodified target (Alg. 2's modification not run)")
    return _drive(pool, prompts, seeds, names, categories, max_new_tokens, {int(s) for s in stop_ids}, batch, step,
                  alg, meta, on_done, on_tokens)


# --- ERSD / GSD batch drafting ---------------------------------------------------------------

def run_ersd(target_model, draft_model, prompts, max_new_tokens, *, control=False, temperature=1.0, top_k=None,
             top_p=None, seeds=None, stop_ids=(), vocab_size=None, device=None, names=None, categories=None,
             batch=8, on_tokens=None, on_done=None, options=None, prefix_cache=None) -> list:
    """The ``ersd`` loop (module docstring). options: ``k`` (alternatives per position, default 4).
    ``control``: ERSD with independent races for the draft and the target."""
    from spectheory.checks import check_int
    from spectheory.closed_forms.ersd import ersd_first_acceptance_sorted, poisson_matching_bound
    from spectheory.divergences import overlap
    from spectheory.rules.ersd import BROKEN_ERSD_INDEPENDENT, ERSD, GSD
    from spectheory.verifiers.ersd import ersd_verify, gsd_verify
    o = {**dict(k=4), **(options or {})}
    k = check_int(o["k"], "k (alternatives)", min=1)
    prompts, seeds, names, categories = _common(prompts, seeds, names, categories)
    V = _setup(target_model, draft_model, vocab_size)
    rule = BROKEN_ERSD_INDEPENDENT if control else ERSD
    probs = _probs(temperature, top_k, top_p)
    pool = _Pool([target_model, draft_model], V, device, prefix_cache=prefix_cache)

    def step(pool):
        tgt, drf = pool.lms
        rows = pool.active
        B = len(rows)
        zt, tt = tgt.feed([r.seq[tgt.npos[b]:] for b, r in enumerate(rows)], rows=1)
        zd, td = drf.feed([r.seq[drf.npos[b]:] for b, r in enumerate(rows)], rows=1)
        P, Q = probs(zt[:, 0]), probs(zd[:, 0])
        out = []
        for b, r in enumerate(rows):
            r.calls += (tt + td) / B
            p, q = P[b], Q[b]
            ve = ersd_verify(p, q, k, seed=r.rng, rule=rule)
            nz = int(np.count_nonzero(q))
            alts = r.rng.choice(V, size=min(k, nz), replace=False, p=q / q.sum())
            vg = gsd_verify(p, q, alts, seed=r.rng, rule=GSD)
            n = r.commit([ve.token])
            r.add(index_ersd=ve.index or 0, index_gsd=vg.index or 0, exact=float(ersd_first_acceptance_sorted(p, q)),
                  bound=float(poisson_matching_bound(p, q)), beta=float(overlap(p, q)), emitted=n,
                  token_p=float(p[ve.token]))
            out.append((r, n))
        return out

    meta = dict(loop="ersd", k=k, rule=rule.name, gsd_rule=GSD.name, temperature=float(temperature), top_k=top_k,
                top_p=top_p, V=V, batch_size=batch,
                note="index 0 = no alternative accepted; ERSD emits the token, GSD is verified at the same context")
    return _drive(pool, prompts, seeds, names, categories, max_new_tokens, {int(s) for s in stop_ids}, batch, step,
                  "ersd", meta, on_done, on_tokens)


LOOPS.update({
    "se": LoopSpec("se", run_se, "broken:verify-against-member",
                   "Speculative Ensemble, Alg. 1 with r = λq + (1−λ)p", dict(lam=0.5, gamma_q=4, gamma_p=1)),
    "gbv": LoopSpec("gbv", run_multidraft, "broken:accept-all", "GBV: one draft, block verification",
                    dict(algorithm="gbv", K=1, gamma=3)),
    "spectr_gbv": LoopSpec("spectr_gbv", run_multidraft, "broken:(1-m)^1", "SpecTr-GBV: K drafts",
                           dict(algorithm="spectr_gbv", K=2, gamma=3)),
    "kseq": LoopSpec("kseq", run_multidraft, "broken:kseq-rho=1", "K-SEQ: K drafts", dict(algorithm="kseq", K=4,
                                                                                         gamma=3)),
    "ersd": LoopSpec("ersd", run_ersd, "broken:ersd-independent-races", "batch drafting, ERSD and GSD", dict(k=4)),
})


def run_loop(name, target_model, draft_model, prompts, max_new_tokens, **kw):
    base = name.replace("-control", "")
    if base not in LOOPS:
        raise ValueError(f"unknown family loop {name!r}; known: {sorted(LOOPS)}")
    spec = LOOPS[base]
    options = {**spec.defaults, **(kw.pop("options", None) or {})}
    return spec.run(target_model, draft_model, prompts, max_new_tokens, control=name.endswith("-control"),
                    options=options, **kw)
