"""Many rows through one causal LM at once: one KV cache, per-row lengths, holes (imported lazily).

:class:`BatchedLM` is the batched twin of :class:`spectheory.validate.hf.CachedLM`. Its KV cache has B rows
and S *slots*; every forward appends the same number L of slots to every row, and a row that
has fewer tokens to feed is left-padded with **holes**: slots that no query may attend to. A
token rejected by a verifier is not cut out of the cache either: its slot becomes a hole. So
rows of different lengths, different acceptance lengths and different prompts share one
cache with no copying, and the model sees each row exactly as if it were alone:

* **attention**: an explicit 4-D mask (B, 1, L, S + L): query slot i of row b attends to slot
  j iff j ≤ i and slot j holds a live token of row b — or j = i (a hole attends to itself, so
  no softmax row is empty and no NaN reaches the cache);
* **positions**: each live token's position id is the number of live tokens before it in its
  row (rotary embeddings see the row's own text; holes take no position);
* **logits**: ``rows`` trailing slots per row (the fed tokens are right-aligned).

Holes cost attention work (cheap next to the MLPs at these lengths); :meth:`compact` squeezes
them out when they pile up. Rows can be dropped or duplicated (:meth:`select`: finished prompts
leave, K drafts share a prefix) and two caches merged (:meth:`merge`: continuous batching, new
prompts join). Equality with the one-prompt path: the same tokens meet the same keys at the
same positions; masked keys contribute exact zeros, but the float32 reductions run over
different shapes, so logits agree to rounding (about 1e-6), not bit for bit, and greedy or
seeded sampling emits the same tokens unless a draw lands within rounding of a boundary
(tested on the tiny model: identical tokens).
"""
from __future__ import annotations

import time

import numpy as np

from .hf import cache_keyword, output_width, require_torch


class BatchMemoryError(MemoryError):
    """A batch does not fit in memory (message says how large it is and what to do)."""


def kv_bytes_per_token(model) -> int:
    """Bytes of key and value cache one token costs across the model's layers."""
    cfg = model.config
    layers = int(getattr(cfg, "num_hidden_layers", 1))
    heads = int(getattr(cfg, "num_key_value_heads", None) or getattr(cfg, "num_attention_heads", 1))
    head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
    emb = model.get_input_embeddings().weight
    return 2 * layers * heads * head_dim * emb.element_size()


def estimate_batch_bytes(model, rows: int, slots: int, step: int, vocab: int) -> int:
    """Peak bytes of one forward of ``rows`` rows × ``step`` new slots over ``slots`` cached:
    the cache (after the step; ×2 while torch.cat copies it), the logits of the step (float32 in
    torch and float64 in NumPy), the mask, and the layer activations (about 16 hidden-size
    vectors per new slot: attention, the MLP's intermediate, residuals)."""
    cfg = model.config
    h = int(cfg.hidden_size)
    inter = int(getattr(cfg, "intermediate_size", 4 * h))
    kv = 2 * kv_bytes_per_token(model) * rows * (slots + step)
    logits = rows * step * vocab * (4 + 8)
    mask = rows * step * (slots + step) * 4
    act = rows * step * (8 * h + 3 * inter) * 4
    return int(kv + logits + mask + act)


def check_batch_fits(model, rows: int, slots: int, step: int, vocab: int, what: str = "batch") -> None:
    """Raise :class:`BatchMemoryError` when a forward would need more than the memory available
    (CPU: MemAvailable; CUDA: free device memory)."""
    need = estimate_batch_bytes(model, rows, slots, step, vocab)
    dev = next(model.parameters()).device
    have = None
    if dev.type == "cuda":
        torch = require_torch()
        have = torch.cuda.mem_get_info(dev)[0]
    else:
        from .models import available_memory_gb
        gb = available_memory_gb()
        have = None if gb is None else gb * 2 ** 30
    if have is not None and need > 0.9 * have:
        raise BatchMemoryError(
            f"the {what} does not fit in memory: {rows} rows × {slots + step} slots need about "
            f"{need / 2 ** 30:.1f} GiB, {have / 2 ** 30:.1f} GiB available. Lower --batch (each row costs about "
            f"{need / rows / 2 ** 30:.2f} GiB here) or --max-new-tokens; what was written so far is kept.")


def is_oom(err: BaseException) -> bool:
    """True for the out-of-memory errors torch raises (CPU allocator, CUDA)."""
    if isinstance(err, MemoryError):
        return True
    msg = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in msg or "can't allocate memory" in msg
                                              or "cannot allocate memory" in msg)


class BatchedLM:
    """A causal LM over B rows with one KV cache of holes and live slots (module docstring).

    ``feed(seqs, rows)`` appends ``seqs[b]`` to row b (rows with fewer tokens are left-padded with
    holes) and returns the logits of the ``rows`` last slots of every row as a (B, rows, V)
    float64 array, with the forward's seconds (device-synchronised). ``discard_last(k)`` turns
    the last ``k[b]`` live slots of row b into holes (rejected drafts). ``npos[b]`` is the
    number of live tokens of row b.
    """

    def __init__(self, model, vocab_size: int, device=None, *, pad_id: int = 0, hidden_layers: int = 0):
        self.torch = torch = require_torch()
        from transformers import DynamicCache
        self._cache_cls = DynamicCache
        self.model = model.eval()
        self.device = next(model.parameters()).device if device is None else torch.device(device)
        self.V = int(vocab_size)
        if output_width(model) < self.V:
            raise ValueError(f"model emits {output_width(model)} logits per position < V = {self.V}")
        self.dtype = model.get_input_embeddings().weight.dtype
        if not self.dtype.is_floating_point:
            self.dtype = torch.float32
        self.pad_id = int(pad_id)
        self.hidden_layers = int(hidden_layers)
        self.last_hidden = None  # (B, hidden_layers, H) of the last feed when hidden_layers > 0
        self._cache_kw = cache_keyword(model)
        self.reset()

    # --- state ------------------------------------------------------------------------------
    def reset(self):
        self.cache = self._cache_cls()
        self.valid = np.zeros((0, 0), dtype=bool)
        self.npos = np.zeros(0, dtype=np.int64)

    @property
    def rows(self) -> int:
        return int(self.valid.shape[0])

    @property
    def slots(self) -> int:
        return int(self.valid.shape[1])

    def _sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def _layers(self):
        return self.cache.layers

    # --- forward ----------------------------------------------------------------------------
    def feed(self, seqs, rows: int = 1, *, hidden: bool = False) -> tuple[np.ndarray, float]:
        torch = self.torch
        seqs = [[int(t) for t in s] for s in seqs]
        B = self.rows if self.rows else len(seqs)
        if len(seqs) != B:
            raise ValueError(f"feed() needs one token list per row ({B}), got {len(seqs)}")
        L = max((len(s) for s in seqs), default=0)
        if L == 0:
            raise ValueError("feed() needs at least one token in some row")
        rows = int(rows)
        if not 1 <= rows <= L:
            raise ValueError(f"rows must lie in [1, {L}], got {rows}")
        S = self.slots
        if self.rows == 0:
            self.valid = np.zeros((B, 0), dtype=bool)
            self.npos = np.zeros(B, dtype=np.int64)
        ids = np.full((B, L), self.pad_id, dtype=np.int64)
        new = np.zeros((B, L), dtype=bool)
        pos = np.empty((B, L), dtype=np.int64)
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        for b, s in enumerate(seqs):
            n = len(s)
            pos[b] = self.npos[b]
            if n:
                ids[b, L - n:] = s
                new[b, L - n:] = True
                pos[b, L - n:] = self.npos[b] + np.arange(n)
        valid = np.concatenate([self.valid, new], axis=1)
        j = np.arange(S + L)
        i = S + np.arange(L)
        allowed = (j[None, :] <= i[:, None])[None] & valid[:, None, :]
        allowed[:, np.arange(L), i] = True
        mask = torch.zeros((B, 1, L, S + L), dtype=self.dtype)
        mask.masked_fill_(torch.from_numpy(~allowed)[:, None], torch.finfo(self.dtype).min)
        dev = self.device
        self._sync()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = self.model(input_ids=torch.from_numpy(ids).to(dev), attention_mask=mask.to(dev),
                             position_ids=torch.from_numpy(pos).to(dev), use_cache=True,
                             **{self._cache_kw: self.cache}, logits_to_keep=rows, output_hidden_states=bool(hidden))
            z = out.logits[:, -rows:, : self.V].double().cpu().numpy()
            if hidden and self.hidden_layers:
                hs = out.hidden_states[-self.hidden_layers:]
                self.last_hidden = torch.stack([h[:, -1] for h in hs], dim=1).float().cpu().numpy()
        self._sync()
        dt = time.perf_counter() - t0
        self.valid = valid
        self.npos = self.npos + lens
        return z, dt

    # --- cache surgery ----------------------------------------------------------------------
    def discard_last(self, k) -> None:
        """Turn the last ``k[b]`` live slots of row b into holes; crop slots dead in every row."""
        k = np.broadcast_to(np.asarray(k, dtype=np.int64), (self.rows,))
        if (k < 0).any() or (k > self.npos).any():
            raise ValueError(f"cannot discard {k.tolist()} live slots from rows holding {self.npos.tolist()}")
        for b in np.flatnonzero(k):
            live = np.flatnonzero(self.valid[b])
            self.valid[b, live[-k[b]:]] = False
        self.npos = self.npos - k
        self._crop_dead_tail()

    def _crop_dead_tail(self):
        alive = self.valid.any(axis=0)
        last = int(np.flatnonzero(alive)[-1]) + 1 if alive.any() else 0
        drop = self.slots - last
        if drop > 0:
            self.cache.crop(-drop)
            self.valid = self.valid[:, :last]

    def select(self, idx) -> None:
        """Keep rows ``idx`` in that order (repeats duplicate a row, e.g. K drafts of one prefix)."""
        idx = np.asarray(idx, dtype=np.int64).ravel()
        if idx.size == 0:
            self.reset()
            return
        if idx.min() < 0 or idx.max() >= self.rows:
            raise IndexError(f"row indices must lie in [0, {self.rows}), got {idx.tolist()}")
        if idx.size == self.rows and (idx == np.arange(self.rows)).all():
            return
        t = self.torch.from_numpy(idx).to(self.device)
        self.cache.batch_select_indices(t)
        self.valid = self.valid[idx]
        self.npos = self.npos[idx]
        self._crop_dead_tail()
        self._compact_dead_head()

    def _compact_dead_head(self):
        alive = self.valid.any(axis=0)
        if alive.size and not alive[0]:
            first = int(np.flatnonzero(alive)[0]) if alive.any() else self.slots
            if first:
                for lay in self._layers():
                    lay.keys = lay.keys[..., first:, :]
                    lay.values = lay.values[..., first:, :]
                self.valid = self.valid[:, first:]

    def merge(self, other: "BatchedLM") -> None:
        """Append the rows of ``other`` (same model), left-padding the shorter cache with holes."""
        torch = self.torch
        if other.rows == 0:
            return
        if self.rows == 0:
            self.cache, self.valid, self.npos = other.cache, other.valid.copy(), other.npos.copy()
            other.reset()
            return
        Sa, Sb = self.slots, other.slots
        S = max(Sa, Sb)
        if S > 0:
            ref = self._layers() if Sa else other._layers()
            la_all = self._layers() if Sa else [None] * len(ref)
            lb_all = other._layers() if Sb else [None] * len(ref)
            for r, la, lb in zip(ref, la_all, lb_all):
                for name in ("keys", "values"):
                    t = getattr(r, name)
                    a = getattr(la, name) if la is not None else t.new_zeros((self.rows,) + t.shape[1:2] + (0, t.shape[3]))
                    b = getattr(lb, name) if lb is not None else t.new_zeros((other.rows,) + t.shape[1:2] + (0, t.shape[3]))
                    a = torch.cat([a.new_zeros(a.shape[:2] + (S - Sa, a.shape[3])), a], dim=2) if S > Sa else a
                    b = torch.cat([b.new_zeros(b.shape[:2] + (S - Sb, b.shape[3])), b], dim=2) if S > Sb else b
                    setattr(r, name, torch.cat([a, b], dim=0))
            if not Sa:
                self.cache = other.cache
        pad = lambda v, n: np.concatenate([np.zeros((v.shape[0], n), dtype=bool), v], axis=1)  # noqa: E731
        self.valid = np.concatenate([pad(self.valid, S - Sa), pad(other.valid, S - Sb)], axis=0)
        self.npos = np.concatenate([self.npos, other.npos])
        other.reset()

    def add_empty_rows(self, n: int) -> None:
        """Start ``n`` rows that hold nothing yet (their first feed is their prefill)."""
        empty = BatchedLM.__new__(BatchedLM)
        empty.__dict__.update(self.__dict__)
        empty.cache = self._cache_cls()
        empty.valid = np.zeros((int(n), 0), dtype=bool)
        empty.npos = np.zeros(int(n), dtype=np.int64)
        empty.reset = lambda: None
        self.merge(empty)

    def hole_fraction(self) -> float:
        return 1.0 - float(self.valid.mean()) if self.valid.size else 0.0

    def compact(self) -> None:
        """Squeeze the holes out: each row's live slots, in order, right-aligned."""
        torch = self.torch
        if self.rows == 0:
            return
        n = self.valid.sum(axis=1)
        S = int(n.max())
        idx = np.zeros((self.rows, S), dtype=np.int64)
        valid = np.zeros((self.rows, S), dtype=bool)
        for b in range(self.rows):
            live = np.flatnonzero(self.valid[b])
            idx[b, S - live.size:] = live
            valid[b, S - live.size:] = True
        t = torch.from_numpy(idx).to(self.device)
        for lay in self._layers():
            for name in ("keys", "values"):
                a = getattr(lay, name)
                g = t[:, None, :, None].expand(a.shape[0], a.shape[1], S, a.shape[3])
                setattr(lay, name, torch.gather(a, 2, g))
        self.valid = valid


class PrefixCache:
    """Each prompt's prefix (all its tokens but the last) run through each model **once**: the
    key/value rows are kept (on the model's device, live slots only) and every later use —
    capture, SD at every γ, every family loop — starts its rows from them instead of running the
    prompt again. The prefix of a prompt is the same tokens at the same positions whatever batch
    it was computed in, so a row built from the cache is the row a fresh prefill would give (to
    float rounding). ``prefill_s[(model, prefix)]``: the seconds its batched forward took, shared
    evenly among the prompts computed together."""

    def __init__(self):
        self.store: dict = {}
        self.prefill_s: dict = {}

    @staticmethod
    def _key(model, ids):
        return (id(model), tuple(int(t) for t in ids))

    def rows(self, model, vocab_size: int, seqs, device=None, *, hidden_layers: int = 0, chunk: int = 16):
        """A :class:`BatchedLM` whose row b holds ``seqs[b]`` (prefixes; may be empty), computing
        the prefixes not cached yet in batches of ``chunk``; and the prefill seconds per row."""
        torch = require_torch()
        seqs = [[int(t) for t in s] for s in seqs]
        todo, seen = [], set()
        for s in seqs:
            k = self._key(model, s)
            if s and k not in self.store and k not in seen:
                todo.append(s)
                seen.add(k)
        for lo in range(0, len(todo), chunk):
            part = todo[lo:lo + chunk]
            lm = BatchedLM(model, vocab_size, device)
            _, dt = lm.feed(part, rows=1)
            for b, s in enumerate(part):
                live = torch.from_numpy(np.flatnonzero(lm.valid[b])).to(lm.device)
                kv = [(lay.keys[b:b + 1].index_select(2, live).clone(), lay.values[b:b + 1].index_select(2, live).clone())
                      for lay in lm.cache.layers]
                self.store[self._key(model, s)] = kv
                self.prefill_s[self._key(model, s)] = dt / len(part)
        out = BatchedLM(model, vocab_size, device, hidden_layers=hidden_layers)
        B = len(seqs)
        S = max(len(s) for s in seqs) if seqs else 0
        if S == 0:
            out.add_empty_rows(B)
            return out, [0.0] * B
        ref = next(self.store[self._key(model, s)] for s in seqs if s)
        for li in range(len(ref)):
            ks, vs = [], []
            for s in seqs:
                if s:
                    k, v = self.store[self._key(model, s)][li]
                else:
                    k = v = ref[li][0][:, :, :0]
                pad = S - k.shape[2]
                ks.append(torch.cat([k.new_zeros(k.shape[:2] + (pad, k.shape[3])), k], dim=2) if pad else k)
                vs.append(torch.cat([v.new_zeros(v.shape[:2] + (pad, v.shape[3])), v], dim=2) if pad else v)
            out.cache.update(torch.cat(ks, dim=0), torch.cat(vs, dim=0), li)
        out.valid = np.zeros((B, S), dtype=bool)
        for b, s in enumerate(seqs):
            out.valid[b, S - len(s):] = True
        out.npos = np.array([len(s) for s in seqs], dtype=np.int64)
        return out, [self.prefill_s.get(self._key(model, s), 0.0) for s in seqs]
