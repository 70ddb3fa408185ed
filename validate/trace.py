"""Compact real-logit traces (format ``spectheory.trace/3``; /2 still reads; see docs/validate.md).

A full next-token distribution of a 151,936-token vocabulary costs 1.2 MiB per position in
float64. A :class:`CompactTrace` keeps instead, per position t of one generated text,

* the **exact sufficient statistics** of the pair (p_t target, q_t draft), computed from the
  full distributions at capture time in float64: β_t = Σ min(p,q) (claim sd.acceptance),
  TV, KL(p‖q), KL(q‖p), the entropies H(p), H(q) (nats), and the probabilities of the emitted
  token under p and q;
* a **top-k slice** of both distributions: the k token ids with the largest p + q, p and q at
  those ids (float32), and the exact leftover masses ``p_rest = 1 − Σ_slice p``,
  ``q_rest`` (float64), plus the slice's own ``Σ_slice min(p, q)`` (float64);

about 3 KiB per position at k = 256 (≈ 200 KiB per 64 positions before compression).

Everything here is NumPy; torch is needed only to produce logits (:mod:`spectheory.validate.capture`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from spectheory.checks import check_int, check_int_array, check_real
from spectheory.distributions import DistributionError, check_distribution

#: ``format`` key written by :meth:`CompactTrace.save` (3: optional hidden-state projections).
TRACE_FORMAT = "spectheory.trace/3"
#: Formats :meth:`CompactTrace.load` reads.
TRACE_FORMATS = ("spectheory.trace/2", TRACE_FORMAT)
#: Errors a damaged or truncated ``.npz`` raises on opening or reading an array.
NPZ_ERRORS = (ValueError, OSError, EOFError, KeyError)


class open_npz:
    """``with open_npz(path, formats) as z``: an ``.npz`` archive whose ``format`` key is one of
    ``formats``, or a clear ValueError naming the file (damaged, truncated, not an archive, or
    another format). FileNotFoundError passes through."""

    def __init__(self, path, formats):
        self.path, self.formats = Path(path), tuple(formats)

    def __enter__(self):
        import zipfile
        import zlib
        try:
            z = np.load(self.path, allow_pickle=False)
        except FileNotFoundError:
            raise
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as err:
            raise ValueError(f"{self.path}: not a readable {self.formats[-1]} file ({type(err).__name__}: {err}); "
                             "a truncated file from an interrupted write? Delete it and rerun the same command to "
                             "recompute it (nothing else is lost)") from None
        if not hasattr(z, "files"):
            raise ValueError(f"{self.path}: not a {self.formats[-1]} file (a bare .npy array, not an .npz archive)")
        self.z = z
        try:
            fmt = str(z["format"]) if "format" in z.files else None
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as err:
            z.close()
            raise ValueError(f"{self.path}: damaged file ({type(err).__name__}: {err}); delete it and rerun") from None
        if fmt not in self.formats:
            z.close()
            raise ValueError(f"{self.path}: not a {self.formats[-1]} file (format = {fmt!r}; this spectheory reads "
                             f"{', '.join(self.formats)})")
        return z

    def __exit__(self, et, ev, tb):
        import zipfile
        import zlib
        self.z.close()
        if et is not None and issubclass(et, (zipfile.BadZipFile, zlib.error, EOFError)):
            raise ValueError(f"{self.path}: damaged or truncated file ({et.__name__}: {ev}); delete it and rerun "
                             "the same command to recompute it (nothing else is lost)") from None
        return False
#: Default size of the stored top-k slice.
DEFAULT_TOP_K = 256

#: Rounding slack on stored statistics (float32 slices, 1 − Σ leftovers).
_STAT_ATOL = 1e-5
_PROB_KEYS = ("beta", "tv", "p_token", "q_token", "beta_slice", "p_rest", "q_rest")
HIDDEN_KEYS = ("hidden_proj", "emb_proj")
_STAT_KEYS = ("beta", "tv", "kl_pq", "kl_qp", "entropy_p", "entropy_q", "p_token", "q_token",
              "beta_slice", "p_rest", "q_rest")


def check_sampling(temperature, top_k=None, top_p=None) -> None:
    """The sampling setup shared by capture, real SD and replay: temperature finite and ≥ 0
    (0 = greedy), top_k an integer ≥ 1, top_p in (0, 1] (None: no filter)."""
    if isinstance(temperature, (bool, np.bool_)) or not isinstance(temperature, (int, float, np.number)) \
            or not (temperature >= 0 and np.isfinite(temperature)):
        raise ValueError(f"temperature must be finite and ≥ 0, got {temperature!r}")
    if top_k is not None:
        check_int(top_k, "top_k", min=1)
    if top_p is not None:
        check_real(top_p, "top_p", lo=0.0, hi=1.0, lo_open=True)


def sampling_probs(logits, temperature: float = 1.0, *, top_k: int | None = None,
                   top_p: float | None = None) -> np.ndarray:
    """Sampling distribution(s) from logits, float64, rows of shape (..., V).

    temperature 0 is greedy decoding: the one-hot distribution on the first argmax. top_k
    keeps the k largest logits (ties at the boundary kept), top_p keeps the smallest set of
    most probable tokens whose mass reaches top_p (after temperature), renormalised. The same
    transform is applied to target and draft (the sampling distributions SD verifies).
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise DistributionError(f"logits must be a non-empty array over the vocabulary (..., V), got shape {z.shape}")
    if z.ndim == 1:
        return sampling_probs(z[None], temperature, top_k=top_k, top_p=top_p)[0]
    check_sampling(temperature, top_k, top_p)
    # a row's max is finite iff the row has no NaN (max propagates it), no +inf and is not
    # entirely -inf: one pass instead of three, the detailed checks only to name the fault
    zmax = z.max(axis=-1, keepdims=True)
    if not np.isfinite(zmax).all():
        if np.isnan(z).any() or np.isposinf(z).any():
            raise DistributionError("logits contain NaN or +inf")
        if np.isneginf(z).all(axis=-1).any():
            raise DistributionError("a row of logits is entirely -inf")
    if temperature == 0:
        out = np.zeros_like(z)
        np.put_along_axis(out, z.argmax(axis=-1)[..., None], 1.0, axis=-1)
        return out
    if top_k is not None:
        k = min(int(top_k), z.shape[-1])
        kth = -np.partition(-z, k - 1, axis=-1)[..., k - 1:k]
        z = np.where(z >= kth, z, -np.inf)
    # softmax in place on one fresh array: the same operations, so the same bits, as
    # e = exp(z/t − max(z/t)); e / Σe, without four (rows, V) temporaries. The row max is the
    # one found above (top-k keeps it, and x ↦ x/t is monotone, so max(z/t) is exactly
    # zmax/t); at t = 1, z/t is z and one pass makes the copy.
    if temperature == 1:
        z = z - zmax
    else:
        z = z / temperature
        z -= zmax / temperature
    p = np.exp(z, out=z)
    p /= p.sum(axis=-1, keepdims=True)
    if top_p is not None:
        keep = np.empty(p.shape, dtype=bool)
        for r in np.ndindex(p.shape[:-1]):
            keep[r] = _nucleus(p[r], top_p)
        p = np.where(keep, p, 0.0)
        p /= p.sum(axis=-1, keepdims=True)
    return p


def _descending_order(p: np.ndarray) -> np.ndarray:
    """``np.argsort(-p, kind="stable")`` (descending, ties in index order) for a 1-D array
    without NaN, about 4x faster at V = 151,936: NumPy's unstable (SIMD) sort, then the
    positions inside runs of equal values re-sorted by index (one int64 sort of their
    (run, index) keys; logits are float32 or bfloat16 upstream, so ties are common)."""
    order = np.argsort(-p)
    ps = p[order]
    tie = ps[1:] == ps[:-1]
    if tie.any():
        tied = np.zeros(p.shape[0], dtype=bool)  # sorted positions inside a run of equal values
        tied[1:] |= tie
        tied[:-1] |= tie
        at = np.flatnonzero(tied)
        run = np.concatenate(([0], np.cumsum(~tie)))[at]  # run id of each tied position
        order[at] = np.sort(run * p.shape[0] + order[at]) % p.shape[0]
    return order


def _nucleus(p: np.ndarray, top_p: float) -> np.ndarray:
    """Top-p mask of one distribution: the most probable tokens (ties in index order) whose
    mass *before* them is < top_p, i.e. ``before < top_p`` with ``order = argsort(-p, stable)``,
    ``before = cumsum(p[order]) − p[order]``.

    Only a prefix of that order matters, so the candidates are the tokens with p at least the
    m-th largest value (ties included, so they are exactly the first entries of the full
    stable order, and their cumulative sums are the same numbers), m = 1024, 16384, …; once
    their cumulative mass reaches top_p + 1e-9, no later token can be kept (its ``before`` is
    at least that mass less a rounding of ~1e-16). Otherwise (flat rows, top_p ≈ 1) the whole
    row is ordered. Same mask, bit for bit, as the full stable sort; at V = 151,936 about
    1 ms instead of ~15 ms per row when the nucleus is small, ~5 ms when it is not.
    """
    V = p.shape[0]
    m = 1024
    while m < V and top_p < 1.0:
        thr = np.partition(p, V - m)[V - m]
        if thr <= 0:
            break
        cand = np.flatnonzero(p >= thr)
        order = cand[_descending_order(p[cand])]
        ps = p[order]
        cs = np.cumsum(ps)
        if cs[-1] >= top_p + 1e-9:
            keep = np.zeros(V, dtype=bool)
            keep[order[cs - ps < top_p]] = True
            return keep
        if cs[-1] + (16 * m - cand.size) * thr < top_p + 1e-9:
            break  # the next 16m tokens (each ≤ thr) cannot carry the mass: sort the row
        m *= 16
    order = _descending_order(p)
    ps = p[order]
    before = np.cumsum(ps) - ps  # mass strictly before each sorted token
    keep = np.zeros(V, dtype=bool)
    keep[order] = before < top_p
    return keep


def _xlogy_ratio(a, b, log_a=None, log_b=None):
    """Σ a log(a/b) per row, 0·log 0 = 0, +inf where a > 0 = b (``log_a``, ``log_b``: the
    logs if already at hand)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.log(a) if log_a is None else log_a
        lb = np.log(b) if log_b is None else log_b
        t = np.where(a > 0, a * (la - lb), 0.0)
    return t.sum(axis=-1)


def sufficient_statistics(p, q, tokens, top_k: int = DEFAULT_TOP_K) -> dict:
    """Exact per-position statistics and the top-k slice from full distributions.

    p, q: (T, V) float64 distributions (rows sum to 1); tokens: (T,) emitted token ids.
    Returns a dict of the arrays :class:`CompactTrace` stores (keys ``_STAT_KEYS`` plus
    ``slice_ids``, ``slice_p``, ``slice_q``).
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.ndim != 2 or q.ndim != 2:
        raise DistributionError(f"p and q must have shape (T, V), got {p.shape} and {q.shape}")
    if p.shape[1] != q.shape[1]:
        raise DistributionError(f"mismatched vocabularies: p has V={p.shape[1]}, q has V={q.shape[1]}")
    if p.shape[0] != q.shape[0]:
        raise DistributionError(f"mismatched lengths: p has T={p.shape[0]}, q has T={q.shape[0]}")
    check_distribution(p, name="p")
    check_distribution(q, name="q")
    T, V = p.shape
    tok = np.asarray(tokens)
    if tok.shape != (T,) or (T and not np.issubdtype(tok.dtype, np.integer)):
        raise DistributionError(f"tokens must be {T} integer ids, got shape {tok.shape} dtype {tok.dtype}")
    if T and (tok.min() < 0 or tok.max() >= V):
        raise DistributionError(f"tokens must lie in [0, {V})")
    return _sufficient_statistics(p, q, tok, min(check_int(top_k, "top_k", min=1), V))


def _sufficient_statistics(p, q, tok, k: int) -> dict:
    """:func:`sufficient_statistics` without its checks, for distributions the toolkit has
    just built itself (``spectheory.validate.capture``): p, q (T, V) float64 rows from
    :func:`sampling_probs`, tok (T,) ids in [0, V), 1 ≤ k ≤ V. The logs of p and q are
    taken once and shared by the entropies and both KLs (same values, half the work)."""
    T, V = p.shape
    m = np.minimum(p, q)
    beta = m.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p, log_q = np.log(p), np.log(q)
        ent_p = -np.where(p > 0, p * log_p, 0.0).sum(axis=1)
        ent_q = -np.where(q > 0, q * log_q, 0.0).sum(axis=1)
    s = p + q
    ids = np.argpartition(-s, k - 1, axis=1)[:, :k] if k < V else np.tile(np.arange(V), (T, 1))
    order = np.argsort(-np.take_along_axis(s, ids, axis=1), axis=1, kind="stable")
    ids = np.take_along_axis(ids, order, axis=1)
    sp, sq = np.take_along_axis(p, ids, axis=1), np.take_along_axis(q, ids, axis=1)
    mask = np.ones((T, V), dtype=bool)
    np.put_along_axis(mask, ids, False, axis=1)
    rows = np.arange(T)
    return {
        "beta": beta, "tv": 0.5 * np.abs(p - q).sum(axis=1),
        "kl_pq": _xlogy_ratio(p, q, log_p, log_q), "kl_qp": _xlogy_ratio(q, p, log_q, log_p),
        "entropy_p": ent_p, "entropy_q": ent_q,
        "p_token": p[rows, tok], "q_token": q[rows, tok],
        "beta_slice": np.minimum(sp, sq).sum(axis=1),
        "p_rest": np.where(mask, p, 0.0).sum(axis=1), "q_rest": np.where(mask, q, 0.0).sum(axis=1),
        "slice_ids": ids.astype(np.int32), "slice_p": sp.astype(np.float32), "slice_q": sq.astype(np.float32),
    }


@dataclass(eq=False)
class CompactTrace:
    """Sufficient statistics and top-k slices along one generated text (module docstring).

    tokens (T,), prompt_ids (P,): token ids. stats: dict of (T,) float64 arrays
    (``beta tv kl_pq kl_qp entropy_p entropy_q p_token q_token beta_slice p_rest q_rest``);
    slice_ids (T, k) int32, slice_p, slice_q (T, k) float32. target_call_s (T,): seconds of
    the target's one-token forward at each position (the autoregressive cost; NaN if not
    timed). meta: name, category, temperature, top_k/top_p (sampling), V, models, prompt.
    """

    tokens: np.ndarray
    stats: dict
    slice_ids: np.ndarray
    slice_p: np.ndarray
    slice_q: np.ndarray
    prompt_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    target_call_s: np.ndarray | None = None
    draft_call_s: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    # opt-in (format 3): the target's hidden states at the position's last context slot, last K
    # layers concatenated, and the emitted token's input embedding, each through a seeded random
    # projection (meta["hidden"] says K, dims, seed), float16; None when not captured
    hidden_proj: np.ndarray | None = None
    emb_proj: np.ndarray | None = None

    def __post_init__(self):
        self.tokens = check_int_array(self.tokens, "tokens", min=0)
        T = self.tokens.shape[0] if self.tokens.ndim else 0
        if self.tokens.ndim != 1 or T == 0:
            raise DistributionError(f"tokens must be a non-empty 1-D array, got shape {self.tokens.shape}")
        missing = [k for k in _STAT_KEYS if k not in self.stats]
        if missing:
            raise DistributionError(f"stats lack {missing}")
        self.stats = {k: np.asarray(self.stats[k], dtype=np.float64) for k in _STAT_KEYS}
        for k, v in self.stats.items():
            if v.shape != (T,):
                raise DistributionError(f"stats[{k!r}] must have shape ({T},), got {v.shape}")
            if np.isnan(v).any():
                raise DistributionError(f"stats[{k!r}] contains NaN at position {int(np.flatnonzero(np.isnan(v))[0])}")
            lo, hi = (-_STAT_ATOL, 1.0 + _STAT_ATOL) if k in _PROB_KEYS else (-_STAT_ATOL, np.inf)
            if ((v < lo) | (v > hi)).any():
                t = int(np.flatnonzero((v < lo) | (v > hi))[0])
                raise DistributionError(f"stats[{k!r}] must lie in [0, {'1' if k in _PROB_KEYS else 'inf'}], "
                                        f"got {v[t]!r} at position {t}")
        self.slice_ids = np.asarray(self.slice_ids, dtype=np.int32)
        self.slice_p = np.asarray(self.slice_p, dtype=np.float32)
        self.slice_q = np.asarray(self.slice_q, dtype=np.float32)
        if not (self.slice_ids.ndim == 2 and self.slice_ids.shape[0] == T
                and self.slice_p.shape == self.slice_ids.shape == self.slice_q.shape):
            raise DistributionError(f"slices must share shape (T={T}, k), got ids {self.slice_ids.shape}, "
                                    f"p {self.slice_p.shape}, q {self.slice_q.shape}")
        if self.slice_ids.size and self.slice_ids.min() < 0:
            raise DistributionError(f"slice_ids must be token ids ≥ 0, got {self.slice_ids.min()}")
        for nm in ("slice_p", "slice_q"):
            v = getattr(self, nm)
            if not np.isfinite(v).all() or (v < -_STAT_ATOL).any() or (v > 1 + _STAT_ATOL).any():
                raise DistributionError(f"{nm} must hold probabilities in [0, 1]")
        self.prompt_ids = np.asarray(self.prompt_ids, dtype=np.int64)
        for nm in ("target_call_s", "draft_call_s"):
            v = getattr(self, nm)
            setattr(self, nm, np.full(T, np.nan) if v is None else np.asarray(v, dtype=np.float64))
        for nm in HIDDEN_KEYS:
            v = getattr(self, nm)
            if v is not None:
                v = np.asarray(v, dtype=np.float16)
                if v.ndim != 2 or v.shape[0] != T:
                    raise DistributionError(f"{nm} must have shape (T={T}, d), got {v.shape}")
                setattr(self, nm, v)
        self.meta = dict(self.meta)
        self.meta.setdefault("name", "trace")
        self.meta.setdefault("category", "")
        self.meta.setdefault("temperature", 1.0)
        check_real(self.meta["temperature"], "meta['temperature']", lo=0.0)

    # --- views ----------------------------------------------------------------------------
    @property
    def T(self) -> int:
        return self.tokens.shape[0]

    @property
    def k(self) -> int:
        return self.slice_ids.shape[1]

    @property
    def name(self) -> str:
        return str(self.meta["name"])

    @property
    def category(self) -> str:
        return str(self.meta["category"])

    @property
    def temperature(self) -> float:
        return float(self.meta["temperature"])

    @property
    def beta(self) -> np.ndarray:
        return self.stats["beta"]

    def lumped(self) -> tuple[np.ndarray, np.ndarray]:
        """(T, k+1) float64 distributions: the slice plus one bucket holding the leftover mass.

        Σ min over the lumped pair is β_slice + min(p_rest, q_rest) ≥ β (lumping can only
        merge mass); the gap is at most min(p_rest, q_rest) per position.
        """
        P = np.concatenate([self.slice_p.astype(np.float64), self.stats["p_rest"][:, None]], axis=1)
        Q = np.concatenate([self.slice_q.astype(np.float64), self.stats["q_rest"][:, None]], axis=1)
        P = np.clip(P, 0.0, None)
        Q = np.clip(Q, 0.0, None)
        return P / P.sum(axis=1, keepdims=True), Q / Q.sum(axis=1, keepdims=True)

    # --- construction and IO ---------------------------------------------------------------
    @classmethod
    def from_distributions(cls, p, q, tokens, *, top_k: int = DEFAULT_TOP_K, **kw) -> "CompactTrace":
        st = sufficient_statistics(p, q, tokens, top_k)
        ids, sp, sq = st.pop("slice_ids"), st.pop("slice_p"), st.pop("slice_q")
        return cls(tokens, st, ids, sp, sq, **kw)

    @classmethod
    def concat_rows(cls, rows: list[dict], tokens, **kw) -> "CompactTrace":
        """Assemble from per-position outputs of :func:`sufficient_statistics` (T = 1 each)."""
        cat = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
        ids, sp, sq = cat.pop("slice_ids"), cat.pop("slice_p"), cat.pop("slice_q")
        return cls(tokens, cat, ids, sp, sq, **kw)

    def save(self, path) -> Path:
        """Compressed ``.npz`` exactly at ``path`` (written to a temporary name, then renamed,
        so an interrupted run never leaves a half-written trace)."""
        import json
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        arrays = {f"stat_{k}": v for k, v in self.stats.items()}
        with open(tmp, "wb") as f:
            np.savez_compressed(
                f, format=np.str_(TRACE_FORMAT), tokens=self.tokens, prompt_ids=self.prompt_ids,
                slice_ids=self.slice_ids, slice_p=self.slice_p, slice_q=self.slice_q,
                target_call_s=self.target_call_s, draft_call_s=self.draft_call_s,
                meta=np.str_(json.dumps(self.meta, default=str)), **arrays,
                **{k: getattr(self, k) for k in HIDDEN_KEYS if getattr(self, k) is not None})
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path) -> "CompactTrace":
        import json
        with open_npz(path, TRACE_FORMATS) as z:
            try:
                stats = {k: z[f"stat_{k}"] for k in _STAT_KEYS}
                extra = {k: z[k] for k in HIDDEN_KEYS if k in z.files}
                tr = cls(z["tokens"], stats, z["slice_ids"], z["slice_p"], z["slice_q"],
                         prompt_ids=z["prompt_ids"], target_call_s=z["target_call_s"],
                         draft_call_s=z["draft_call_s"], meta=json.loads(str(z["meta"])), **extra)
            except KeyError as e:
                raise ValueError(f"{path}: damaged {TRACE_FORMAT} file (missing {e}); delete it and rerun the same "
                                 "command to recompute this prompt (nothing else is lost)") from None
        return tr
