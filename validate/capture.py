"""Real-model logit traces for the ``logits`` evidence mode (docs/statistical_method.md).

A :class:`LogitTrace` holds, for each position of one generated text, the target's and the
draft's raw logits on the same context and the token that was emitted there. It is plain
NumPy and saves to ``.npz``; only :func:`capture_logits` needs torch/transformers, imported
lazily (``pip install 'spectheory[validate]'``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spectheory.distributions import DistributionError, softmax

#: Version of the ``.npz`` layout written by :meth:`LogitTrace.save`.
FORMAT_VERSION = 1

_INSTALL_HINT = "pip install 'spectheory[validate]'"
_CHUNK_ROWS = 256  # rows per softmax call when validating (bounds float64 temporaries)


def _check_logits(z: np.ndarray, name: str) -> None:
    """Finite or ``-inf`` entries only, no all-``-inf`` row (the softmax checks)."""
    for lo in range(0, z.shape[0], _CHUNK_ROWS):
        try:
            softmax(z[lo:lo + _CHUNK_ROWS], name=name)
        except DistributionError as e:
            raise DistributionError(f"{e} (in rows {lo}..{lo + _CHUNK_ROWS - 1})") from None


@dataclass(eq=False)
class LogitTrace:
    """Both models' logits along one generated text.

    target_logits, draft_logits: (T, V) float — row t scores the same context (prompt +
    ``tokens[:t]``). tokens: (T,) int — the token emitted at position t. name: instance label
    used in evidence records. temperature: the temperature the tokens were sampled at
    (metadata; replay defaults to it).
    """

    target_logits: np.ndarray
    draft_logits: np.ndarray
    tokens: np.ndarray
    name: str = "trace"
    temperature: float = 1.0

    def __post_init__(self):
        tl, dl = np.asarray(self.target_logits), np.asarray(self.draft_logits)
        for z, nm in ((tl, "target_logits"), (dl, "draft_logits")):
            if z.ndim != 2:
                raise DistributionError(f"{nm} must have shape (T, V), got {z.shape}")
        if tl.shape[1] != dl.shape[1]:
            raise DistributionError(
                f"mismatched vocabularies: target_logits has V={tl.shape[1]}, draft_logits has V={dl.shape[1]}")
        if tl.shape[0] != dl.shape[0]:
            raise DistributionError(
                f"mismatched lengths: target_logits has T={tl.shape[0]}, draft_logits has T={dl.shape[0]}")
        if tl.shape[0] == 0:
            raise DistributionError("empty trace (T = 0)")
        tl = tl if np.issubdtype(tl.dtype, np.floating) else tl.astype(np.float64)
        dl = dl if np.issubdtype(dl.dtype, np.floating) else dl.astype(np.float64)
        _check_logits(tl, "target_logits")
        _check_logits(dl, "draft_logits")
        tok = np.asarray(self.tokens)
        if tok.shape != (tl.shape[0],):
            raise DistributionError(f"tokens must have shape ({tl.shape[0]},), got {tok.shape}")
        if tok.size and not np.issubdtype(tok.dtype, np.integer):
            raise DistributionError(f"tokens must be integers, got dtype {tok.dtype}")
        tok = tok.astype(np.int64)
        if ((tok < 0) | (tok >= tl.shape[1])).any():
            raise DistributionError(f"tokens must lie in [0, {tl.shape[1]})")
        if not (self.temperature > 0 and np.isfinite(self.temperature)):
            raise DistributionError(f"temperature must be a positive finite number, got {self.temperature!r}")
        self.target_logits, self.draft_logits, self.tokens = tl, dl, tok
        self.temperature = float(self.temperature)
        self.name = str(self.name)

    @property
    def T(self) -> int:
        return self.target_logits.shape[0]

    @property
    def V(self) -> int:
        return self.target_logits.shape[1]

    def probs(self, temperature: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(p, q)`` as (T, V) float64 at ``temperature`` (default: the trace's)."""
        t = self.temperature if temperature is None else temperature
        return softmax(self.target_logits, t, name="target_logits"), softmax(self.draft_logits, t, name="draft_logits")

    def compact(self, temperature: float | None = None, top_k: int | None = None):
        """The :class:`~spectheory.validate.trace.CompactTrace` of this trace at ``temperature``
        (default: the trace's); ``top_k`` slice size (default: the whole vocabulary, so the
        slice is exact and the leftover mass 0)."""
        from .trace import CompactTrace
        t = self.temperature if temperature is None else float(temperature)
        p, q = self.probs(t)
        return CompactTrace.from_distributions(p, q, self.tokens, top_k=self.V if top_k is None else top_k,
                                               meta=dict(name=self.name, temperature=t, V=self.V))

    def save(self, path) -> Path:
        """Write a compressed ``.npz`` (exactly at ``path``; no suffix is appended)."""
        path = Path(path)
        with open(path, "wb") as f:
            np.savez_compressed(
                f, format_version=np.int64(FORMAT_VERSION), target_logits=self.target_logits,
                draft_logits=self.draft_logits, tokens=self.tokens, name=np.str_(self.name),
                temperature=np.float64(self.temperature))
        return path

    @classmethod
    def load(cls, path) -> "LogitTrace":
        """Read a trace written by :meth:`save` (re-validated)."""
        with np.load(Path(path), allow_pickle=False) as z:
            if "format_version" not in z.files:
                raise ValueError(f"{path}: not a LogitTrace file (no format_version key)")
            v = int(z["format_version"])
            if v != FORMAT_VERSION:
                raise ValueError(f"{path}: LogitTrace format version {v}, this spectheory reads {FORMAT_VERSION}")
            return cls(z["target_logits"], z["draft_logits"], z["tokens"],
                       name=str(z["name"]), temperature=float(z["temperature"]))


def _require_torch():
    try:
        import torch
        import transformers  # noqa: F401  (the models passed in are transformers causal LMs)
    except ImportError as e:
        raise ImportError(
            f"validate.capture_logits needs torch and transformers: {_INSTALL_HINT}") from e
    return torch


def capture_logits(target_model, draft_model, tokenizer, prompt: str, max_new_tokens: int,
                   temperature: float = 1.0, *, seed: int | None = None,
                   name: str = "trace") -> LogitTrace:
    """Generate from the target (sampling at ``temperature``) and record both models' logits.

    At each step both causal LMs score the same context (prompt + tokens so far, KV-cached);
    the next token is sampled from softmax(target logits / temperature) as recorded, so the
    trace is self-consistent. Logits are cut to ``len(tokenizer)`` columns (checkpoints of one
    family often pad their output layers to different widths). Stops early at EOS (the EOS
    position is kept).
    """
    from spectheory.checks import check_int, check_real
    check_int(max_new_tokens, "max_new_tokens", min=1)          # arguments first: no torch import,
    check_real(temperature, "temperature", lo=0.0, lo_open=True)  # no model call on bad input
    if seed is not None:
        check_int(seed, "seed", min=0)
    torch = _require_torch()
    V = len(tokenizer)
    gen = torch.Generator().manual_seed(int(seed)) if seed is not None else None
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    eos = getattr(tokenizer, "eos_token_id", None)

    def step(model, past, ids):
        dev = next(model.parameters()).device
        inp = ids if past is None else ids[:, -1:]
        out = model(input_ids=inp.to(dev), past_key_values=past, use_cache=True)
        z = out.logits[0, -1].double().cpu()
        if z.shape[-1] < V:
            raise ValueError(f"model logits have width {z.shape[-1]} < len(tokenizer) = {V}")
        return z[:V], out.past_key_values

    tl, dl, toks = [], [], []
    t_past = d_past = None
    target_model.eval()
    draft_model.eval()
    with torch.no_grad():
        for _ in range(int(max_new_tokens)):
            zt, t_past = step(target_model, t_past, ids)
            zd, d_past = step(draft_model, d_past, ids)
            probs = torch.softmax(zt / temperature, dim=-1)
            tok = int(torch.multinomial(probs, 1, generator=gen))
            tl.append(zt.numpy())
            dl.append(zd.numpy())
            toks.append(tok)
            ids = torch.cat([ids, torch.tensor([[tok]], dtype=ids.dtype)], dim=1)
            if eos is not None and tok == eos:
                break
    return LogitTrace(np.stack(tl), np.stack(dl), np.asarray(toks, dtype=np.int64),
                      name=name, temperature=temperature)


# --- compact capture (format spectheory.trace/3) -------------------------------------------

def capture_trace(target_model, draft_model, prompt_ids, max_new_tokens: int, temperature: float = 1.0,
                  *, top_k: int | None = None, top_p: float | None = None, seed=0,
                  stop_ids=(), slice_k: int = None, vocab_size: int | None = None,
                  device: str | None = None, name: str = "trace", category: str = "",
                  on_token=None):
    """Generate from the target and record a :class:`~spectheory.validate.trace.CompactTrace`.

    Both models score the same context with their KV caches (one forward per position each);
    the emitted token is drawn from the target's sampling distribution p_t (temperature,
    top_k/top_p; temperature 0 = greedy), so the trace is the target's own text. The exact
    statistics of (p_t, q_t) and the top-``slice_k`` slice are computed from the full
    distributions at each position, then the distributions are dropped. The target's
    one-token forward times are recorded (the autoregressive cost per token). Stops after a
    token in ``stop_ids`` (kept) or ``max_new_tokens``. ``on_token(t)`` is called per position
    (progress bars).
    """
    from .hf import CachedLM, common_vocab, require_torch
    from spectheory.checks import check_int, check_int_array
    from spectheory.rng import sample_index

    from .trace import DEFAULT_TOP_K, CompactTrace, _sufficient_statistics, check_sampling, sampling_probs
    # every argument is checked before torch is imported or a model is called
    check_int(max_new_tokens, "max_new_tokens", min=1)
    check_sampling(temperature, top_k, top_p)
    check_int(seed, "seed", min=0)
    if slice_k is not None:
        check_int(slice_k, "slice_k", min=1)
    if vocab_size is not None:
        check_int(vocab_size, "vocab_size", min=1)
    prompt_ids = [int(i) for i in check_int_array(prompt_ids, "prompt_ids", min=0, max=None if vocab_size is None
                                                  else vocab_size - 1).ravel()]
    if not prompt_ids:
        raise ValueError("the prompt must hold at least one token")
    require_torch()
    V = common_vocab(target_model, draft_model) if vocab_size is None else int(vocab_size)
    slice_k = DEFAULT_TOP_K if slice_k is None else int(slice_k)
    rng = np.random.default_rng(seed)
    stop = {int(s) for s in stop_ids}
    tgt, drf = CachedLM(target_model, V, device), CachedLM(draft_model, V, device)
    zt, pre_t = tgt.feed(prompt_ids, rows=1)
    zd, pre_d = drf.feed(prompt_ids, rows=1)
    rows, toks, tcall, dcall = [], [], [np.nan], [np.nan]
    for t in range(int(max_new_tokens)):
        p = sampling_probs(zt[0], temperature, top_k=top_k, top_p=top_p)
        q = sampling_probs(zd[0], temperature, top_k=top_k, top_p=top_p)
        tok = int(p.argmax()) if temperature == 0 else sample_index(rng, p)
        # p, q come from sampling_probs and tok from p: the unchecked statistics (same numbers)
        rows.append(_sufficient_statistics(p[None], q[None], np.array([tok]), min(slice_k, V)))
        toks.append(tok)
        if on_token is not None:
            on_token(t)
        if tok in stop or t == max_new_tokens - 1:
            break
        zt, dt_t = tgt.feed([tok])
        zd, dt_d = drf.feed([tok])
        tcall.append(dt_t)
        dcall.append(dt_d)
    meta = dict(name=name, category=category, temperature=float(temperature), top_k=top_k, top_p=top_p,
                V=V, seed=seed if isinstance(seed, (int, type(None))) else str(seed),
                prefill_target_s=pre_t, prefill_draft_s=pre_d, slice_k=min(slice_k, V),
                stopped=bool(toks[-1] in stop), device=str(tgt.device))
    return CompactTrace.concat_rows(rows, np.asarray(toks, dtype=np.int64), prompt_ids=prompt_ids,
                                    target_call_s=np.asarray(tcall), draft_call_s=np.asarray(dcall),
                                    meta=meta)


# --- batched compact capture ------------------------------------------------------------------

class HiddenSpec:
    """Opt-in capture of the target's hidden states for classifiers trained on real runs (e.g.
    SpecBranch's H-RAD): at every position, the hidden states of the last ``layers`` layers at the
    slot that produces p_t (concatenated, layers·H values) and the input embedding of the emitted
    token (H values), each multiplied by a seeded Gaussian projection to ``dims`` values
    (``dims = 0``: no projection, the full vectors), stored float16. The projection matrices are
    ``default_rng(seed).standard_normal((layers·H, dims)) / sqrt(dims)`` and then
    ``standard_normal((H, dims)) / sqrt(dims)`` from the same generator (Johnson–Lindenstrauss:
    inner products kept to about 1/sqrt(dims)). Bytes per position: 2·2·dims (projected) or
    2·(layers + 1)·H (full; 3 KiB per layer at H = 1536)."""

    def __init__(self, layers: int = 4, dims: int = 64, seed: int = 0):
        from spectheory.checks import check_int
        self.layers = check_int(layers, "hidden layers", min=1)
        self.dims = check_int(dims, "hidden dims", min=0)
        self.seed = check_int(seed, "hidden projection seed", min=0)
        self._R = None

    def meta(self, H: int) -> dict:
        return dict(layers=self.layers, dims=self.dims or None, seed=self.seed, hidden_size=int(H),
                    hidden="last layers' hidden states at the slot producing p_t, concatenated (layer order "
                           "oldest first), times R_h", embedding="input embedding of the emitted token, times R_e",
                    projection="R_h, R_e = default_rng(seed).standard_normal((layers*H, dims)) / sqrt(dims), then "
                               "standard_normal((H, dims)) / sqrt(dims)" if self.dims else "none (full vectors)")

    def project(self, hid: np.ndarray, emb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """hid (n, layers, H), emb (n, H) → float16 (n, dims) each."""
        n, K, H = hid.shape
        h = hid.reshape(n, K * H).astype(np.float32)
        e = emb.astype(np.float32)
        if not self.dims:
            return h.astype(np.float16), e.astype(np.float16)
        if self._R is None or self._R[0].shape[0] != K * H:
            g = np.random.default_rng(self.seed)
            d = self.dims
            self._R = ((g.standard_normal((K * H, d)) / np.sqrt(d)).astype(np.float32),
                       (g.standard_normal((H, d)) / np.sqrt(d)).astype(np.float32))
        return (h @ self._R[0]).astype(np.float16), (e @ self._R[1]).astype(np.float16)


def capture_batch(target_model, draft_model, prompts, max_new_tokens: int, temperature: float = 1.0, *,
                  top_k: int | None = None, top_p: float | None = None, seeds=None, stop_ids=(),
                  slice_k: int | None = None, vocab_size: int | None = None, device: str | None = None,
                  names=None, categories=None, batch: int = 8, hidden: HiddenSpec | None = None,
                  on_token=None, on_done=None, prefix_cache=None) -> list:
    """:func:`capture_trace` for many prompts at once (continuous batching over
    :class:`spectheory.validate.batch.BatchedLM`): each step is one target and one draft forward over all
    rows, each row drawing its token from its own generator (``seeds[i]``, default i), so prompt
    i's trace is the one ``capture_trace(..., seed=seeds[i])`` records (statistics equal to
    rounding), except the call times: a row records its share of each batched call. A finished
    prompt is handed to ``on_done(i, trace)`` at once and the next one joins. ``hidden``: opt-in
    hidden-state projections (:class:`HiddenSpec`). Out of memory: a clear
    :class:`spectheory.validate.batch.BatchMemoryError`; finished prompts were handed over already."""
    from .batch import BatchedLM, BatchMemoryError, PrefixCache, check_batch_fits, is_oom
    from .hf import common_vocab, require_torch
    from spectheory.checks import check_int, check_int_array
    from spectheory.rng import sample_index

    from .trace import DEFAULT_TOP_K, CompactTrace, _sufficient_statistics, check_sampling, sampling_probs
    check_int(max_new_tokens, "max_new_tokens", min=1)
    check_sampling(temperature, top_k, top_p)
    batch = check_int(batch, "batch", min=1)
    if slice_k is not None:
        check_int(slice_k, "slice_k", min=1)
    if vocab_size is not None:
        check_int(vocab_size, "vocab_size", min=1)
    if hidden is not None and not isinstance(hidden, HiddenSpec):
        raise TypeError(f"hidden must be a spectheory.validate.capture.HiddenSpec or None, got {type(hidden).__name__}")
    prompts = [[int(i) for i in check_int_array(p, "prompt_ids", min=0, max=None if vocab_size is None
                                                else vocab_size - 1).ravel()] for p in prompts]
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("give at least one prompt, each holding at least one token")
    n = len(prompts)
    seeds = list(range(n)) if seeds is None else list(seeds)
    names = [f"trace{i}" for i in range(n)] if names is None else list(names)
    categories = [""] * n if categories is None else list(categories)
    if not len(seeds) == len(names) == len(categories) == n:
        raise ValueError(f"seeds, names and categories must have one entry per prompt ({n})")
    for s in seeds:
        check_int(s, "seed", min=0)
    torch = require_torch()
    V = common_vocab(target_model, draft_model) if vocab_size is None else int(vocab_size)
    k = min(DEFAULT_TOP_K if slice_k is None else int(slice_k), V)
    stop = {int(s) for s in stop_ids}
    K = hidden.layers if hidden is not None else 0
    tgt = BatchedLM(target_model, V, device, hidden_layers=K)
    drf = BatchedLM(draft_model, V, device)
    emb_w = target_model.get_input_embeddings().weight if hidden is not None else None
    pcache = PrefixCache() if prefix_cache is None else prefix_cache
    from .models import weights_label

    def probs(z):
        return sampling_probs(z, temperature, top_k=top_k, top_p=top_p)

    class Row:
        def __init__(self, i):
            self.i, self.rng, self.rows, self.toks = i, np.random.default_rng(seeds[i]), [], []
            self.tcall, self.dcall, self.hid, self.emb = [np.nan], [np.nan], [], []

    queue = list(range(n))[::-1]
    active: list = []
    zt = zd = hz = None  # current logits (B, V) and hidden states (B, K, H) of the active rows
    results: list = [None] * n
    try:
        while queue or active:
            if queue and len(active) < batch:
                new = [Row(queue.pop()) for _ in range(min(batch - len(active), len(queue)))]
                longest = max(len(prompts[r.i]) for r in new)
                check_batch_fits(target_model, len(active) + len(new), max(tgt.slots, longest) + 1, longest, V,
                                 what=f"capture batch of {len(active) + len(new)} prompts")
                t_new, pt = pcache.rows(target_model, V, [prompts[r.i][:-1] for r in new], device, hidden_layers=K)
                d_new, pd = pcache.rows(draft_model, V, [prompts[r.i][:-1] for r in new], device)
                z1, lt = t_new.feed([prompts[r.i][-1:] for r in new], rows=1, hidden=hidden is not None)
                z2, ld = d_new.feed([prompts[r.i][-1:] for r in new], rows=1)
                for r, a, b_ in zip(new, pt, pd):
                    r.pre = (a + lt / len(new), b_ + ld / len(new))
                zt = z1[:, 0] if zt is None else np.concatenate([zt, z1[:, 0]])
                zd = z2[:, 0] if zd is None else np.concatenate([zd, z2[:, 0]])
                if hidden is not None:
                    hz = t_new.last_hidden if hz is None else np.concatenate([hz, t_new.last_hidden])
                tgt.merge(t_new)
                drf.merge(d_new)
                active += new
            B = len(active)
            P, Q = probs(zt), probs(zd)
            toks = np.array([int(P[b].argmax()) if temperature == 0 else sample_index(r.rng, P[b])
                             for b, r in enumerate(active)], dtype=np.int64)
            st = _sufficient_statistics(P, Q, toks, k)
            if hidden is not None:
                with torch.no_grad():
                    e = emb_w[torch.from_numpy(toks).to(emb_w.device)].float().cpu().numpy()
                hp, ep = hidden.project(hz, e)
            keep = []
            for b, r in enumerate(active):
                r.rows.append({key: v[b:b + 1] for key, v in st.items()})
                r.toks.append(int(toks[b]))
                if hidden is not None:
                    r.hid.append(hp[b])
                    r.emb.append(ep[b])
                if on_token is not None:
                    on_token(r.i)
                if int(toks[b]) in stop or len(r.toks) == max_new_tokens:
                    meta = dict(name=names[r.i], category=categories[r.i], temperature=float(temperature),
                                top_k=top_k, top_p=top_p, V=V, seed=seeds[r.i], prefill_target_s=r.pre[0],
                                prefill_draft_s=r.pre[1], slice_k=k, stopped=bool(int(toks[b]) in stop),
                                device=str(tgt.device), batch_size=batch, weights=weights_label(target_model))
                    extra = {}
                    if hidden is not None:
                        meta["hidden"] = hidden.meta(emb_w.shape[1])
                        extra = dict(hidden_proj=np.stack(r.hid), emb_proj=np.stack(r.emb))
                    results[r.i] = CompactTrace.concat_rows(
                        r.rows, np.asarray(r.toks, dtype=np.int64), prompt_ids=prompts[r.i],
                        target_call_s=np.asarray(r.tcall), draft_call_s=np.asarray(r.dcall), meta=meta, **extra)
                    if on_done is not None:
                        on_done(r.i, results[r.i])
                else:
                    keep.append(b)
            if len(keep) < B:
                active = [active[b] for b in keep]
                tgt.select(keep)
                drf.select(keep)
                toks = toks[keep]
                if hidden is not None:
                    hz = hz[keep]
            if not active:
                zt = zd = hz = None
                continue
            z1, dt_t = tgt.feed([[t] for t in toks], rows=1, hidden=hidden is not None)
            z2, dt_d = drf.feed([[t] for t in toks], rows=1)
            zt, zd = z1[:, 0], z2[:, 0]
            if hidden is not None:
                hz = tgt.last_hidden
            for r in active:
                r.tcall.append(dt_t / len(active))
                r.dcall.append(dt_d / len(active))
    except BatchMemoryError:
        raise
    except Exception as e:
        if is_oom(e):
            raise BatchMemoryError(
                f"ran out of memory capturing {len(active)} prompts at once ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:200]}); lower --batch. The {sum(t is not None for t in results)} "
                "prompts finished before were handed over (saved) already.") from None
        raise
    return results
