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
both make exact on-policy tests (:mod:`validate.evidence`).
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

SD_FORMAT = "spectheory.sdrun/1"


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

    def __post_init__(self):
        if self.ar_probe_s is None:
            self.ar_probe_s = np.full(self.tau.shape[0], np.nan)

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
                meta=np.str_(json.dumps(self.meta, default=str)))
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path) -> "SDRun":
        with np.load(Path(path), allow_pickle=False) as z:
            fmt = str(z["format"]) if "format" in z.files else None
            if fmt != SD_FORMAT:
                raise ValueError(f"{path}: not a {SD_FORMAT} file (format = {fmt!r})")
            return cls(int(z["gamma"]), z["tau"], z["emitted"], z["accept_prob"], z["beta"], z["draft_call_s"],
                       z["target_call_s"], z["target_call_k"], z["verify_s"], z["tokens"],
                       z["ar_probe_s"] if "ar_probe_s" in z.files else None, z["prompt_ids"],
                       json.loads(str(z["meta"])))


def speculative_decode(target_model, draft_model, prompt_ids, gamma: int, max_new_tokens: int,
                       temperature: float = 1.0, *, top_k: int | None = None, top_p: float | None = None,
                       seed=0, stop_ids=(), vocab_size: int | None = None, device: str | None = None,
                       rule: SDRule = STANDARD, name: str = "sd", category: str = "",
                       on_tokens=None, ar_probe: bool = True, probe_every: int = 1) -> SDRun:
    """Run speculative decoding of ``target_model`` with ``draft_model`` (module docstring).

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
    """
    from .hf import CachedLM, common_vocab, require_torch
    from .trace import sampling_probs
    require_torch()
    if int(gamma) != gamma or gamma < 1:
        raise ValueError(f"gamma (draft length) must be an integer ≥ 1, got {gamma!r}")
    if int(max_new_tokens) != max_new_tokens or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer ≥ 1, got {max_new_tokens!r}")
    if isinstance(probe_every, bool) or int(probe_every) != probe_every or probe_every < 1:
        raise ValueError(f"probe_every must be an integer ≥ 1, got {probe_every!r}")
    gamma, probe_every = int(gamma), int(probe_every)
    prompt_ids = [int(i) for i in prompt_ids]
    if not prompt_ids:
        raise ValueError("the prompt must hold at least one token")
    V = common_vocab(target_model, draft_model) if vocab_size is None else int(vocab_size)
    rng = np.random.default_rng(seed)
    stop = {int(s) for s in stop_ids}
    tgt, drf = CachedLM(target_model, V, device), CachedLM(draft_model, V, device)

    def probs(z):
        return sampling_probs(z, temperature, top_k=top_k, top_p=top_p)

    seq = list(prompt_ids)
    # prefill all but the last prompt token: the last committed token is always "pending"
    pre_t = pre_d = 0.0
    if len(seq) > 1:
        _, pre_t = tgt.feed(seq[:-1], rows=1)
        _, pre_d = drf.feed(seq[:-1], rows=1)
    out = []
    rec = {k: [] for k in ("tau", "emitted", "a", "beta", "dcall", "tcall", "tk", "vs", "probe")}
    done = False
    wall0 = time.perf_counter()
    while not done:
        # draft γ tokens
        xs, qs, dts = [], [], []
        pending = seq[drf.length:]
        for j in range(gamma):
            z, dt = drf.feed(pending, rows=1)
            q = probs(z[0])
            x = int(q.argmax()) if temperature == 0 else sample_index(rng, q)
            xs.append(x)
            qs.append(q)
            dts.append(dt)
            pending = [x]
        # verify: one target forward over the pending committed token(s) and the γ drafts
        feed = seq[tgt.length:] + xs
        zt, tt = tgt.feed(feed, rows=gamma + 1)
        P = probs(zt)
        Q = np.stack(qs)
        t0 = time.perf_counter()
        # P, Q are sampling_probs rows and xs were drawn from Q: the verifier's unchecked entry
        # (the same verdict and draws as speculative_verify, without re-validating (2γ+1)·V entries)
        verdict = speculative_verify_unchecked(P, Q, np.asarray(xs, dtype=np.int64), rng, rule=rule)
        vs = time.perf_counter() - t0
        x_arr = np.asarray(xs)
        # the theory's acceptance probabilities (the correct rule), whatever rule verified:
        # a broken verifier then shows up as a mismatch in validate.evidence
        a = STANDARD.accept_probability(P[np.arange(gamma), x_arr], Q[np.arange(gamma), x_arr])
        beta = np.minimum(P[:gamma], Q).sum(axis=1)
        block = list(verdict.tokens)
        cut = len(block)
        for i, tok in enumerate(block):
            if tok in stop:
                cut, done = i + 1, True
                break
        if len(out) + cut >= max_new_tokens:
            cut, done = max_new_tokens - len(out), True
        block = block[:cut]
        # commit; caches keep only verified context (the last committed token stays pending)
        n_before = len(seq)
        seq.extend(verdict.tokens)
        keep = min(n_before + verdict.tau, len(seq) - 1)
        tgt.crop(keep)
        drf.crop(min(drf.length, keep))
        out.extend(block)
        probe = np.nan
        if ar_probe and not done and len(rec["tau"]) % probe_every == 0 and len(seq) - tgt.length == 1:
            _, probe = tgt.feed(seq[tgt.length:], rows=1)
            tgt.crop(len(seq) - 1)
        rec["probe"].append(probe)
        rec["tau"].append(verdict.tau)
        rec["emitted"].append(len(block))
        rec["a"].append(a)
        rec["beta"].append(beta)
        rec["dcall"].append(dts)
        rec["tcall"].append(tt)
        rec["tk"].append(len(feed))
        rec["vs"].append(vs)
        if on_tokens is not None:
            on_tokens(len(block))
    meta = dict(name=name, category=category, temperature=float(temperature), top_k=top_k, top_p=top_p,
                V=V, rule=rule.name, seed=seed if isinstance(seed, (int, type(None))) else str(seed),
                prefill_target_s=pre_t, prefill_draft_s=pre_d, wall_s=time.perf_counter() - wall0,
                device=str(tgt.device), stopped=bool(out and out[-1] in stop))
    return SDRun(gamma, np.asarray(rec["tau"], dtype=np.int64), np.asarray(rec["emitted"], dtype=np.int64),
                 np.asarray(rec["a"]), np.asarray(rec["beta"]), np.asarray(rec["dcall"]),
                 np.asarray(rec["tcall"]), np.asarray(rec["tk"], dtype=np.int64), np.asarray(rec["vs"]),
                 np.asarray(out, dtype=np.int64), np.asarray(rec["probe"], dtype=np.float64),
                 np.asarray(prompt_ids, dtype=np.int64), meta)
