"""Real speculative decoding with two causal LMs, measured (Leviathan et al. 2023, Alg. 1).

Each iteration: the draft proposes γ tokens (γ one-token forwards on its KV cache), the target
scores the last committed token and all γ drafts in **one** forward (γ + 1 positions, its KV
cache), and the toolkit's own verifier :func:`spectheory.verifiers.sd.speculative_verify`
(its unchecked entry, on the distributions built here) decides what is emitted. Rejected
positions are cropped from both caches.

Recorded per iteration: τ (accepted drafts), the tokens emitted, the acceptance probability
``a_j = min(1, p_j(x_j)/q_j(x_j))`` of each drafted token under the correct rule (whatever
``rule`` verified, so that a broken verifier is caught), the on-policy overlap
``β_j = Σ min(p_j, q_j)`` at each drafted position, each draft call's seconds, the target
call's seconds and the number of tokens it scored, and the verifier's seconds.

Given the drafts, τ has the law P(τ ≥ k) = Π_{j≤k} a_j exactly (the verifier draws one
uniform per position), and given the context before drafting, P(first draft accepted) = β_1:
both make exact on-policy tests (:mod:`spectheory.validate.evidence`).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from spectheory.rules.sd import STANDARD, SDRule
from spectheory.rng import sample_index
from spectheory.verifiers.sd import speculative_verify_unchecked

SD_FORMAT = "spectheory.sdrun/2"
#: Formats :meth:`SDRun.load` reads (version 1 lacks drafts, n_out, p_x, q_x, batch).
SD_FORMATS = ("spectheory.sdrun/1", SD_FORMAT)


@dataclass(eq=False)
class SDRun:
    """One speculative-decoding generation (module docstring). Arrays have one row per
    iteration; ``(n, γ)`` arrays hold NaN where not applicable."""

    gamma: int
    tau: np.ndarray               # (n,) accepted draft tokens
    emitted: np.ndarray           # (n,) tokens emitted (after a stop token / length cap)
    accept_prob: np.ndarray       # (n, γ) a_j of each drafted token
    beta: np.ndarray              # (n, γ) Σ min(p_j, q_j) at each drafted position
    draft_call_s: np.ndarray      # (n, γ)
    target_call_s: np.ndarray     # (n,)
    target_call_k: np.ndarray     # (n,) tokens scored by the target call
    verify_s: np.ndarray          # (n,)
    tokens: np.ndarray            # (N,) generated ids
    ar_probe_s: np.ndarray | None = None  # (n,) one-token target call on the committed context
    prompt_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    meta: dict = field(default_factory=dict)
    # format 2 (None when read from a format-1 file)
    drafts: np.ndarray | None = None   # (n, γ) drafted token ids x_j
    n_out: np.ndarray | None = None    # (n,) tokens the verifier returned (τ + 1 with a bonus), before any cut
    p_x: np.ndarray | None = None      # (n, γ) p_j(x_j): target probability of each drafted token
    q_x: np.ndarray | None = None      # (n, γ) q_j(x_j)
    batch: np.ndarray | None = None    # (n,) rows in the batched model calls of the iteration (1: one prompt)

    def __post_init__(self):
        if self.ar_probe_s is None:
            self.ar_probe_s = np.full(self.tau.shape[0], np.nan)

    def verified(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every verified draft position of the run, in order: (accepted, r, β), each (m,).

        An iteration verifies drafts j = 1..min(τ + 1, γ): the first τ accepted, draft τ + 1
        (if τ < γ) rejected; later drafts are never looked at. ``r_j = min(1, p_j(x_j)/q_j(x_j))``
        is the correct rule's acceptance probability of the drafted token (recorded whatever
        rule ran), ``β_j = Σ min(p_j, q_j)`` its expectation over x_j ~ q_j given the context.
        """
        g = self.gamma
        k = np.minimum(self.tau + 1, g)                        # verified drafts per iteration
        j = np.arange(g)[None, :]
        sel = j < k[:, None]
        acc = (j < self.tau[:, None])[sel].astype(np.float64)
        return acc, np.asarray(self.accept_prob, dtype=np.float64)[sel], np.asarray(self.beta, dtype=np.float64)[sel]

    @property
    def n_iterations(self) -> int:
        return int(self.tau.shape[0])

    @property
    def tokens_per_iteration(self) -> np.ndarray:
        """τ + 1 (the correction or bonus token), before any stop/length truncation."""
        return self.tau + 1.0

    @property
    def seconds(self) -> float:
        """Model calls plus verification, summed (excludes the prompt prefill)."""
        return float(np.nansum(self.draft_call_s) + self.target_call_s.sum() + self.verify_s.sum())

    def conditional_tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """E[τ + 1 | drafts] = 1 + Σ_k Π_{j≤k} a_j and Var[τ | drafts] per iteration."""
        a = np.nan_to_num(self.accept_prob, nan=0.0)
        surv = np.cumprod(a, axis=1)                       # P(τ ≥ k), k = 1..γ
        mean = surv.sum(axis=1)
        # E[τ²] = Σ_k (2k − 1) P(τ ≥ k)
        k = np.arange(1, self.gamma + 1)
        var = (surv * (2 * k - 1)).sum(axis=1) - mean ** 2
        return 1.0 + mean, np.clip(var, 0.0, None)

    def save(self, path) -> Path:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez_compressed(
                f, format=np.str_(SD_FORMAT), gamma=np.int64(self.gamma), tau=self.tau, emitted=self.emitted,
                accept_prob=self.accept_prob, beta=self.beta, draft_call_s=self.draft_call_s,
                target_call_s=self.target_call_s, target_call_k=self.target_call_k, verify_s=self.verify_s,
                tokens=self.tokens, ar_probe_s=self.ar_probe_s, prompt_ids=self.prompt_ids,
                meta=np.str_(json.dumps(self.meta, default=str)),
                **{k: getattr(self, k) for k in ("drafts", "n_out", "p_x", "q_x", "batch")
                   if getattr(self, k) is not None})
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path) -> "SDRun":
        from .trace import open_npz
        with open_npz(path, SD_FORMATS) as z:
            try:
                opt = {k: z[k] for k in ("drafts", "n_out", "p_x", "q_x", "batch") if k in z.files}
                run = cls(int(z["gamma"]), z["tau"], z["emitted"], z["accept_prob"], z["beta"], z["draft_call_s"],
                          z["target_call_s"], z["target_call_k"], z["verify_s"], z["tokens"],
                          z["ar_probe_s"] if "ar_probe_s" in z.files else None, z["prompt_ids"],
                          json.loads(str(z["meta"])), **opt)
            except (KeyError, ValueError, OSError, EOFError) as e:
                raise ValueError(f"{path}: damaged {SD_FORMAT} file ({type(e).__name__}: {e}); delete it and "
                                 "rerun the same command to recompute this prompt (nothing else is lost)") from None
        run.check(path)
        return run

    def check(self, where="SDRun") -> None:
        """Shapes agree: (n,) per-iteration arrays, (n, γ) per-draft arrays (a clear error otherwise)."""
        n, g = self.tau.shape[0], self.gamma
        shapes = {"emitted": (n,), "target_call_s": (n,), "target_call_k": (n,), "verify_s": (n,),
                  "ar_probe_s": (n,), "accept_prob": (n, g), "beta": (n, g), "draft_call_s": (n, g),
                  "drafts": (n, g), "n_out": (n,), "p_x": (n, g), "q_x": (n, g), "batch": (n,)}
        for k, shp in shapes.items():
            v = getattr(self, k)
            if v is not None and np.shape(v) != shp:
                raise ValueError(f"{where}: {k} has shape {np.shape(v)}, expected {shp} for {n} iterations at "
                                 f"γ = {g} (a truncated or damaged record: delete it and rerun to recompute it)")


class _Profile:
    """``with prof("phase"):`` adds the block's seconds to ``d["phase"]`` (no-op when d is None)."""

    def __init__(self, d):
        self.d = d

    def __call__(self, phase):
        self.phase = phase
        return self

    def __enter__(self):
        if self.d is not None:
            self._t = time.perf_counter()
        return self

    def __exit__(self, *a):
        if self.d is not None:
            self.d[self.phase] = self.d.get(self.phase, 0.0) + time.perf_counter() - self._t
        return False


class _SDRow:
    """One prompt's speculative decoding state and records, shared by the one-prompt path
    (:func:`speculative_decode`) and the batched one (:func:`speculative_decode_batch`): the
    same draws from the same generator in the same order, so both emit the same tokens."""

    def __init__(self, prompt_ids, seed, gamma: int, max_new_tokens: int, stop, rule: SDRule, name: str,
                 category: str, job=None):
        self.prompt_ids = [int(i) for i in prompt_ids]
        self.seq = list(self.prompt_ids)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.gamma, self.max_new_tokens, self.stop, self.rule = gamma, max_new_tokens, stop, rule
        self.name, self.category, self.job = name, category, job
        self.out: list = []
        self.done = False
        self.rec = {k: [] for k in ("tau", "emitted", "a", "beta", "dcall", "tcall", "tk", "vs", "probe",
                                    "x", "n_out", "px", "qx", "batch")}
        self.xs: list = []
        self.qs: list = []
        self.dts: list = []
        self.pre_t = self.pre_d = 0.0
        self.wall0 = time.perf_counter()

    def draw(self, q: np.ndarray, temperature: float) -> int:
        x = int(q.argmax()) if temperature == 0 else sample_index(self.rng, q)
        self.xs.append(x)
        self.qs.append(q)
        return x

    def verify(self, P: np.ndarray, tt: float, tk: int, batch: int) -> tuple[int, int]:
        """Verify the drafted ``self.xs`` against P ((γ+1, V)), commit, record; returns
        (τ, n_before): the iteration accepted τ drafts after a context of n_before tokens."""
        gamma = self.gamma
        Q = np.stack(self.qs)
        x_arr = np.asarray(self.xs, dtype=np.int64)
        t0 = time.perf_counter()
        # P, Q are sampling_probs rows and xs were drawn from Q: the verifier's unchecked entry
        # (the same verdict and draws as speculative_verify, without re-validating (2γ+1)·V entries)
        verdict = speculative_verify_unchecked(P, Q, x_arr, self.rng, rule=self.rule)
        vs = time.perf_counter() - t0
        rows = np.arange(gamma)
        px, qx = P[rows, x_arr], Q[rows, x_arr]
        # the theory's acceptance probabilities (the correct rule), whatever rule verified:
        # a broken verifier then shows up as a mismatch in spectheory.validate.evidence
        a = STANDARD.accept_probability(px, qx)
        beta = np.minimum(P[:gamma], Q).sum(axis=1)
        block = list(verdict.tokens)
        cut = len(block)
        for i, tok in enumerate(block):
            if tok in self.stop:
                cut, self.done = i + 1, True
                break
        if len(self.out) + cut >= self.max_new_tokens:
            cut, self.done = self.max_new_tokens - len(self.out), True
        block = block[:cut]
        n_before = len(self.seq)
        self.seq.extend(verdict.tokens)
        self.out.extend(block)
        r = self.rec
        r["tau"].append(verdict.tau)
        r["emitted"].append(len(block))
        r["n_out"].append(len(verdict.tokens))
        r["a"].append(a)
        r["beta"].append(beta)
        r["px"].append(px)
        r["qx"].append(qx)
        r["x"].append(x_arr)
        r["dcall"].append(list(self.dts))
        r["tcall"].append(tt)
        r["tk"].append(tk)
        r["vs"].append(vs)
        r["batch"].append(batch)
        r["probe"].append(np.nan)
        self.xs, self.qs, self.dts = [], [], []
        return verdict.tau, n_before

    def result(self, meta: dict) -> SDRun:
        r = self.rec
        meta = dict(name=self.name, category=self.category, rule=self.rule.name,
                    seed=self.seed if isinstance(self.seed, (int, type(None))) else str(self.seed),
                    prefill_target_s=self.pre_t, prefill_draft_s=self.pre_d,
                    wall_s=time.perf_counter() - self.wall0,
                    stopped=bool(self.out and self.out[-1] in self.stop), **meta)
        g = self.gamma
        return SDRun(g, np.asarray(r["tau"], dtype=np.int64), np.asarray(r["emitted"], dtype=np.int64),
                     np.asarray(r["a"]).reshape(-1, g), np.asarray(r["beta"]).reshape(-1, g),
                     np.asarray(r["dcall"], dtype=np.float64).reshape(-1, g),
                     np.asarray(r["tcall"], dtype=np.float64), np.asarray(r["tk"], dtype=np.int64),
                     np.asarray(r["vs"], dtype=np.float64), np.asarray(self.out, dtype=np.int64),
                     np.asarray(r["probe"], dtype=np.float64), np.asarray(self.prompt_ids, dtype=np.int64), meta,
                     drafts=np.asarray(r["x"], dtype=np.int64).reshape(-1, g),
                     n_out=np.asarray(r["n_out"], dtype=np.int64),
                     p_x=np.asarray(r["px"], dtype=np.float64).reshape(-1, g),
                     q_x=np.asarray(r["qx"], dtype=np.float64).reshape(-1, g),
                     batch=np.asarray(r["batch"], dtype=np.int64))


def _check_sd_args(gamma, max_new_tokens, probe_every):
    if isinstance(gamma, bool) or int(gamma) != gamma or gamma < 1:
        raise ValueError(f"gamma (draft length) must be an integer ≥ 1, got {gamma!r}")
    if isinstance(max_new_tokens, bool) or int(max_new_tokens) != max_new_tokens or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer ≥ 1, got {max_new_tokens!r}")
    if isinstance(probe_every, bool) or int(probe_every) != probe_every or probe_every < 1:
        raise ValueError(f"probe_every must be an integer ≥ 1, got {probe_every!r}")
    return int(gamma), int(max_new_tokens), int(probe_every)


def _model_meta(model) -> dict:
    from .models import weights_label
    return {"weights": weights_label(model)}


def speculative_decode(target_model, draft_model, prompt_ids, gamma: int, max_new_tokens: int,
                       temperature: float = 1.0, *, top_k: int | None = None, top_p: float | None = None,
                       seed=0, stop_ids=(), vocab_size: int | None = None, device: str | None = None,
                       rule: SDRule = STANDARD, name: str = "sd", category: str = "",
                       on_tokens=None, ar_probe: bool = True, probe_every: int = 1, profile: dict | None = None) -> SDRun:
    """Run speculative decoding of ``target_model`` with ``draft_model`` on one prompt, batch size 1
    (module docstring; :func:`speculative_decode_batch` runs many prompts at once).

    temperature 0 is greedy decoding (p and q one-hot on their argmax: a draft is accepted
    iff it is the target's argmax). ``on_tokens(n)`` is called with the tokens emitted per
    iteration (progress bars).

    ar_probe: after each iteration, time one extra one-token target forward on the committed
    context and crop it away again (not part of SD, excluded from its time): the
    autoregressive cost per token measured under the same machine conditions as the SD calls
    (on a shared machine the load drifts; a baseline timed at another moment is biased).
    probe_every: probe only iterations 0, k, 2k, … (``ar_probe_s`` is NaN on the others; the cost
    profile averages the finite ones). A probe costs one target forward, about a quarter of an SD
    run's time at γ = 1 on a CPU: ``spectheory validate`` probes every 4th iteration.
    profile: a dict that accumulates seconds by phase (benchmarks/bench_validate_batch.py).
    """
    from .hf import CachedLM, common_vocab, require_torch
    from .trace import check_sampling, sampling_probs
    gamma, max_new_tokens, probe_every = _check_sd_args(gamma, max_new_tokens, probe_every)
    check_sampling(temperature, top_k, top_p)
    require_torch()
    prompt_ids = [int(i) for i in prompt_ids]
    if not prompt_ids:
        raise ValueError("the prompt must hold at least one token")
    V = common_vocab(target_model, draft_model) if vocab_size is None else int(vocab_size)
    row = _SDRow(prompt_ids, seed, gamma, max_new_tokens, {int(s) for s in stop_ids}, rule, name, category)
    tgt, drf = CachedLM(target_model, V, device), CachedLM(draft_model, V, device)

    prof = _Profile(profile)

    def probs(z):
        with prof("sampling"):
            return sampling_probs(z, temperature, top_k=top_k, top_p=top_p)

    seq = row.seq
    # prefill all but the last prompt token: the last committed token is always "pending"
    if len(seq) > 1:
        with prof("prefill"):
            _, row.pre_t = tgt.feed(seq[:-1], rows=1)
            _, row.pre_d = drf.feed(seq[:-1], rows=1)
    row.wall0 = time.perf_counter()
    while not row.done:
        # draft γ tokens
        pending = seq[drf.length:]
        for j in range(gamma):
            with prof("draft forward"):
                z, dt = drf.feed(pending, rows=1)
            pending = [row.draw(probs(z[0]), temperature)]
            row.dts.append(dt)
        # verify: one target forward over the pending committed token(s) and the γ drafts
        feed = seq[tgt.length:] + row.xs
        with prof("target forward"):
            zt, tt = tgt.feed(feed, rows=gamma + 1)
        P = probs(zt)
        with prof("verify and records"):
            tau, n_before = row.verify(P, tt, len(feed), 1)
        # commit; caches keep only verified context (the last committed token stays pending)
        keep = min(n_before + tau, len(seq) - 1)
        with prof("cache"):
            tgt.crop(keep)
            drf.crop(min(drf.length, keep))
        if ar_probe and not row.done and (len(row.rec["tau"]) - 1) % probe_every == 0 and len(seq) - tgt.length == 1:
            with prof("AR probe"):
                _, row.rec["probe"][-1] = tgt.feed(seq[tgt.length:], rows=1)
                tgt.crop(len(seq) - 1)
        if on_tokens is not None:
            on_tokens(row.rec["emitted"][-1])
    return row.result(dict(temperature=float(temperature), top_k=top_k, top_p=top_p, V=V, device=str(tgt.device),
                           batch_size=1, **_model_meta(target_model)))


def speculative_decode_batch(target_model, draft_model, prompts, gamma: int, max_new_tokens: int,
                             temperature: float = 1.0, *, top_k: int | None = None, top_p: float | None = None,
                             seeds=None, stop_ids=(), vocab_size: int | None = None, device: str | None = None,
                             rule: SDRule = STANDARD, names=None, categories=None, batch: int = 8,
                             on_tokens=None, on_done=None, ar_probe: bool = True, probe_every: int = 1,
                             compact_above: float = 0.5, profile: dict | None = None,
                             prefix_cache=None) -> list[SDRun]:
    """Speculative decoding of many prompts at once (continuous batching, :class:`spectheory.validate.batch.BatchedLM`).

    Up to ``batch`` prompts decode together: every draft step is one draft forward over all
    rows, every verification one target forward over all rows' γ + 1 tokens, then each row is
    verified by :func:`spectheory.verifiers.sd.speculative_verify_unchecked` with its own
    generator (``seeds[i]``, default i), drafts and acceptance lengths; rejected slots become
    holes in the caches. A finished prompt leaves the batch (``on_done(i, run)`` is called at
    once, so a caller can save it) and the next one is prefilled and merged in. Each prompt's
    :class:`SDRun` is the one :func:`speculative_decode` gives with ``seed=seeds[i]`` (the same
    draws in the same order; logits equal to rounding), except the timings: a row records its
    share of every batched call (call seconds / rows in the call), so that summed over rows they
    are the wall time of the calls; ``batch`` (per iteration) records the rows.

    The AR probe times one one-token target forward of all rows every ``probe_every``-th batch
    step (each row's share recorded), then removes it. Memory is checked before every prefill
    and every ``probe_every`` steps (:class:`spectheory.validate.batch.BatchMemoryError` with the size and
    what to do); a torch out-of-memory error becomes the same error. Finished prompts were
    already handed to ``on_done``. ``prefix_cache`` (:class:`spectheory.validate.batch.PrefixCache`): prompt
    prefixes already run through the models (shared with capture, other γ and the loops).
    """
    from .batch import BatchedLM, BatchMemoryError, PrefixCache, check_batch_fits, is_oom
    from .hf import common_vocab, require_torch
    from .trace import check_sampling, sampling_probs
    from spectheory.checks import check_int
    gamma, max_new_tokens, probe_every = _check_sd_args(gamma, max_new_tokens, probe_every)
    check_sampling(temperature, top_k, top_p)
    batch = check_int(batch, "batch", min=1)
    prompts = [[int(i) for i in p] for p in prompts]
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("give at least one prompt, each holding at least one token")
    n = len(prompts)
    seeds = list(range(n)) if seeds is None else list(seeds)
    names = [f"sd{i}" for i in range(n)] if names is None else list(names)
    categories = [""] * n if categories is None else list(categories)
    if not len(seeds) == len(names) == len(categories) == n:
        raise ValueError(f"seeds, names and categories must have one entry per prompt ({n})")
    require_torch()
    V = common_vocab(target_model, draft_model) if vocab_size is None else int(vocab_size)
    stop = {int(s) for s in stop_ids}
    tgt, drf = BatchedLM(target_model, V, device), BatchedLM(draft_model, V, device)
    pcache = PrefixCache() if prefix_cache is None else prefix_cache
    meta = dict(temperature=float(temperature), top_k=top_k, top_p=top_p, V=V, device=str(tgt.device),
                batch_size=batch, **_model_meta(target_model))

    prof = _Profile(profile)

    def probs(z):
        with prof("sampling"):
            return sampling_probs(z, temperature, top_k=top_k, top_p=top_p)

    queue = list(range(n))[::-1]
    active: list[_SDRow] = []
    results: list = [None] * n
    step = 0
    try:
        while queue or active:
            if queue and len(active) < batch:
                new = [queue.pop() for _ in range(min(batch - len(active), len(queue)))]
                rows = [_SDRow(prompts[i], seeds[i], gamma, max_new_tokens, stop, rule, names[i], categories[i], i)
                        for i in new]
                longest = max(len(r.seq) for r in rows)
                check_batch_fits(target_model, len(active) + len(rows), max(tgt.slots, longest) + gamma + 1,
                                 gamma + 1, V, what=f"batch of {len(active) + len(rows)} prompts")
                with prof("prefill"):
                    t_new, pt = pcache.rows(target_model, V, [r.seq[:-1] for r in rows], device)
                    d_new, pd = pcache.rows(draft_model, V, [r.seq[:-1] for r in rows], device)
                for r, a, b_ in zip(rows, pt, pd):
                    r.pre_t, r.pre_d = a, b_
                    r.wall0 = time.perf_counter()
                with prof("cache"):
                    tgt.merge(t_new)
                    drf.merge(d_new)
                active += rows
            B = len(active)
            # draft γ tokens for every row
            pend = [r.seq[drf.npos[b]:] for b, r in enumerate(active)]
            for j in range(gamma):
                with prof("draft forward"):
                    z, dt = drf.feed(pend, rows=1)
                Q = probs(z[:, 0])
                with prof("sampling"):
                    pend = [[r.draw(Q[b], temperature)] for b, r in enumerate(active)]
                for r in active:
                    r.dts.append(dt / B)
            # verify: one target forward over every row's pending token and γ drafts
            feeds = [r.seq[tgt.npos[b]:] + r.xs for b, r in enumerate(active)]
            with prof("target forward"):
                zt, tt = tgt.feed(feeds, rows=gamma + 1)
            P = probs(zt)
            k_t, k_d = np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.int64)
            for b, r in enumerate(active):
                with prof("verify and records"):
                    tau, n_before = r.verify(P[b], tt / B, len(feeds[b]), B)
                keep = min(n_before + tau, len(r.seq) - 1)
                k_t[b] = tgt.npos[b] - keep
                k_d[b] = max(drf.npos[b] - keep, 0)
                if on_tokens is not None:
                    on_tokens(r.rec["emitted"][-1])
            with prof("cache"):
                tgt.discard_last(k_t)
                drf.discard_last(k_d)
            # finished prompts leave the batch
            live = [b for b, r in enumerate(active) if not r.done]
            for b, r in enumerate(active):
                if r.done:
                    results[r.job] = r.result(meta)
                    if on_done is not None:
                        on_done(r.job, results[r.job])
            if len(live) < B:
                active = [active[b] for b in live]
                with prof("cache"):
                    tgt.select(live)
                    drf.select(live)
            if ar_probe and active and step % probe_every == 0:
                check_batch_fits(target_model, len(active), tgt.slots, gamma + 1, V,
                                 what=f"batch of {len(active)} prompts")
                with prof("AR probe"):
                    _, pr = tgt.feed([[r.seq[-1]] for r in active], rows=1)
                for r in active:
                    r.rec["probe"][-1] = pr / len(active)
                with prof("cache"):
                    tgt.discard_last(np.ones(len(active), dtype=np.int64))
            with prof("cache"):
                for lm in (tgt, drf):
                    if lm.hole_fraction() > compact_above:
                        lm.compact()
            step += 1
    except BatchMemoryError:
        raise
    except Exception as e:  # torch's out-of-memory errors become a clear message
        if is_oom(e):
            raise BatchMemoryError(
                f"ran out of memory with {len(active)} prompts in the batch ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:200]}); lower --batch. The {sum(r is not None for r in results)} "
                "prompts finished before were handed over (saved) already.") from None
        raise
    return results
