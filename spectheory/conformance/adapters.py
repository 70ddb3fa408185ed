"""Wrap a user's speculative-sampling code so spectheory can drive it.

A **block verifier** is the shape of most rejection samplers (``transformers``, inference
servers): ``fn(p, q, draft_tokens, rng) -> emitted tokens`` with ``p`` the target's (γ+1, V)
next-token scores at the γ drafted positions plus the bonus position, ``q`` the draft's
(γ, V) scores, ``draft_tokens`` the γ drafted ids and ``rng`` the random source the verifier
should draw from. :class:`BlockVerifier` converts spectheory's exact distributions into what
the function expects:

``adapter``   ``"probs"`` (probabilities), ``"logprobs"`` (log-softmax, ``-inf`` where p = 0)
              or ``"logits"`` (unnormalised: log-probabilities plus a per-model constant,
              ``-inf`` masking), computed in ``dtype`` (float64, float32, float16);
``batched``   inputs get a leading batch axis of size 1 (``(1, γ+1, V)``, ``(1, γ)``), and a
              ``(1, L)`` output is accepted;
``framework`` ``"numpy"`` or ``"torch"`` (tensors in, tensors or lists out).

Whatever the framework, the global random sources (torch's, NumPy's, Python's ``random``) draw
from the ``rng`` during the checker's calls, and draws that escape are detected
(:mod:`spectheory.conformance.sources`; :attr:`BlockVerifier.sources`).

The output must be the emitted tokens of the call: the accepted drafted prefix followed by
the correction or bonus token (a sequence of ints, 1-D array, or tensor).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

ADAPTERS = ("probs", "logprobs", "logits")
DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16}
FRAMEWORKS = ("numpy", "torch")
#: Constant added to the log-probabilities of each model for the ``logits`` adapter (real
#: logits are not normalised; the verifier must softmax them itself).
LOGIT_SHIFT = {"target": 2.5, "draft": -1.25}


#: at most this many distinct call inputs kept per runner (:meth:`BlockVerifier.block_inputs`)
_MAX_CACHED_INPUTS = 4096


class VerifierOutputError(ValueError):
    """The verifier returned something that is not a block of token ids."""

#: What a block verifier must return, said once for every message that needs it.
OUTPUT_CONTRACT = ("it must return the emitted tokens of the call (the accepted draft prefix, then one "
                   "correction or bonus token) as a 1-D sequence of integer ids: a list, a NumPy array or "
                   "a tensor")


def _log(rows: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(rows, dtype=np.float64))


def softmax_in(z, dtype) -> np.ndarray:
    """Softmax over the last axis computed in ``dtype`` (as a float32/float16 model does)."""
    z = np.asarray(z, dtype=dtype)
    m = z.max(axis=-1, keepdims=True)
    e = np.exp(z - m)
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax_in(z, dtype) -> np.ndarray:
    z = np.asarray(z, dtype=dtype)
    m = z.max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        return (z - m) - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


@dataclass
class BlockVerifier:
    """A user's block verifier with the conversions it needs (see the module docstring)."""

    fn: Callable[..., Any]
    adapter: str = "probs"
    dtype: str = "float64"
    batched: bool = False
    framework: str = "numpy"
    name: str = ""
    #: the order in which the sampler takes (p, q, draft_tokens, rng): None is that order; the
    #: trial uses others to tell a usage error (arguments swapped) from a bug
    arg_order: tuple | None = None
    _torch: Any = field(default=None, init=False, repr=False)
    #: routing of the global random sources and escape detection for this sampler
    sources: Any = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if not callable(self.fn):
            raise TypeError(f"the verifier must be callable, got {type(self.fn).__name__}")
        if self.adapter not in ADAPTERS:
            raise ValueError(f"adapter must be one of {ADAPTERS}, got {self.adapter!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {self.dtype!r}")
        if not isinstance(self.batched, (bool, np.bool_)):
            raise TypeError(f"batched must be a bool, got {self.batched!r}")
        if self.framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {FRAMEWORKS}, got {self.framework!r}")
        if self.framework == "torch":
            import torch  # noqa: F401  (fails early with ImportError when torch is absent)
            self._torch = torch
        if not self.name:
            self.name = getattr(self.fn, "__qualname__", None) or repr(self.fn)
        from .sources import RandomSources
        self.sources = RandomSources(self.fn)

    def options(self) -> dict:
        """The adapter options (as keyword arguments of the check functions)."""
        return {"adapter": self.adapter, "dtype": self.dtype, "batched": self.batched, "framework": self.framework}

    def with_options(self, **options):
        """The same function under other adapter options (a fresh instance)."""
        return type(self)(self.fn, **{**self.options(), **options}, name=self.name, arg_order=self.arg_order)

    @property
    def np_dtype(self):
        return DTYPES[self.dtype]

    def represent(self, rows, which: str) -> np.ndarray:
        """Exact probability rows (float64) → what the verifier takes, as a NumPy array."""
        if which not in LOGIT_SHIFT:
            raise ValueError(f"which must be one of {tuple(LOGIT_SHIFT)}, got {which!r}")
        rows = np.asarray(rows, dtype=np.float64)
        if self.adapter == "probs":
            if self.dtype == "float64":
                return rows
            return softmax_in(_log(rows), self.np_dtype)
        if self.adapter == "logprobs":
            return log_softmax_in(_log(rows), self.np_dtype)
        return (_log(rows) + LOGIT_SHIFT[which]).astype(self.np_dtype)

    def from_logits(self, logits) -> np.ndarray:
        """Raw logits (float64) → the verifier's representation (for the float probes)."""
        z = np.asarray(logits, dtype=np.float64)
        if self.adapter == "probs":
            return self.softmax(z)
        if self.adapter == "logprobs":
            return log_softmax_in(z, self.np_dtype)
        return z.astype(self.np_dtype)

    def softmax(self, z) -> np.ndarray:
        """Softmax in the verifier's dtype, with torch's kernel when the framework is torch
        (so a probe can predict the verifier's own rounding)."""
        if self.framework == "torch":
            t = self._torch.as_tensor(np.asarray(z, dtype=np.float64)).to(self._tensor_dtype())
            return t.softmax(dim=-1).to(self._torch.float64).numpy()
        return softmax_in(z, self.np_dtype).astype(np.float64)

    def seen(self, rep) -> np.ndarray:
        """The probabilities (float64 values) the sampler gets from represented rows ``rep``: the
        rows themselves for probabilities, their softmax in the sampler's dtype otherwise."""
        rep = np.asarray(rep)
        if self.adapter == "probs":
            return rep.astype(np.float64)
        return self.softmax(rep.astype(np.float64))

    def _tensor_dtype(self):
        return getattr(self._torch, self.dtype)  # "float64" / "float32" / "float16"

    def _to_framework(self, arr, integer=False):
        if self.batched:
            arr = arr[None]
        if self.framework == "torch":
            t = self._torch.as_tensor(np.ascontiguousarray(arr))
            return t.long() if integer else t.to(self._tensor_dtype())
        return arr

    def __call__(self, p_rep, q_rep, draft, rng) -> tuple:
        """Call the verifier on represented inputs; return the emitted tokens as a tuple. The
        global random sources draw from ``rng`` while :attr:`sources` is active (the driver and
        the probes open it around their calls)."""
        p_in = self._to_framework(np.asarray(p_rep))
        q_in = self._to_framework(np.asarray(q_rep))
        d_in = self._to_framework(np.asarray(draft, dtype=np.int64), integer=True)
        self.sources.current = rng
        out = self.invoke(p_in, q_in, d_in, rng)
        return tokens_of(out, self.batched)

    def block_inputs(self, p_table, q_table, states, draft, cache: dict | None = None) -> tuple:
        """The inputs of one call as the sampler takes them: the represented rows of ``p_table``
        at ``states`` (γ + 1 of them), of ``q_table`` at the first γ, and the drafted ids — what
        :meth:`__call__` builds from the rows. With ``cache`` (a dict kept by the caller for one
        pair of tables), torch inputs are built once per distinct (states, draft) and each call
        gets fresh copies (``clone``: a sampler that writes into its inputs cannot change a
        later call's); the per-call conversion NumPy → torch was a tenth of a small torch
        sampler's time."""
        if self.framework != "torch" or cache is None:
            return (self._to_framework(np.asarray(p_table[states])),
                    self._to_framework(np.asarray(q_table[states[:-1]])),
                    self._to_framework(np.asarray(draft, dtype=np.int64), integer=True))
        key = (tuple(states), tuple(draft))
        made = cache.get(key)
        if made is None:
            made = self.block_inputs(p_table, q_table, states, draft)
            if len(cache) < _MAX_CACHED_INPUTS:
                cache[key] = made
        return tuple(t.clone() for t in made)

    def invoke(self, *args):
        """Call the sampler with its arguments in :attr:`arg_order`."""
        if self.arg_order is None:
            return self.fn(*args)
        return self.fn(*(args[i] for i in self.arg_order))


_TORCH_INTEGER = frozenset(f"torch.{t}" for t in ("int64", "int32", "int16", "int8", "uint8"))


def tokens_of(out, batched: bool = False) -> tuple:
    """Normalise a verifier's output (list, array, tensor; (1, L) when batched) to a tuple of
    ints; raise :class:`VerifierOutputError` for anything else (NaN, floats, wrong shape), with
    what was returned and what is expected."""
    if out is None:
        raise VerifierOutputError(f"the function returned None; {OUTPUT_CONTRACT}")
    if isinstance(out, dict):
        raise VerifierOutputError(f"the function returned a dict (keys {list(out)[:4]}); {OUTPUT_CONTRACT}")
    if isinstance(out, (str, bytes)):
        raise VerifierOutputError(f"the function returned a {type(out).__name__}; {OUTPUT_CONTRACT}")
    if isinstance(out, tuple) and len(out) == 2 and len(getattr(out[0], "shape", ())) >= 1:
        raise VerifierOutputError("the verifier returned a pair (e.g. tokens and a count): return only the "
                                  "emitted tokens (wrap it: lambda *a: fn(*a)[0])")
    if hasattr(out, "detach"):
        if str(out.dtype) in _TORCH_INTEGER and (out.dim() == 1 or (batched and out.dim() == 2 and out.shape[0] == 1)):
            return tuple(out.reshape(-1).tolist())  # integer ids already (the common case, without NumPy)
        out = out.detach().cpu().numpy()
    try:
        arr = np.asarray(out)
    except ValueError as err:  # ragged nested sequences
        raise VerifierOutputError(f"the function returned a ragged nested sequence ({err}); {OUTPUT_CONTRACT}") \
            from None
    if arr.dtype == object:
        raise VerifierOutputError(f"the function returned {type(out).__name__} of non-numeric items; {OUTPUT_CONTRACT}")
    if batched and arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim == 0:
        raise VerifierOutputError(f"the function returned shape () (a scalar {arr.dtype}: {arr.item()!r}); "
                                  f"{OUTPUT_CONTRACT}")
    if arr.ndim == 2 and arr.shape[0] == 1 and not batched:
        raise VerifierOutputError(f"expected a 1-D block of token ids, got shape {arr.shape}: a leading batch "
                                  "axis (run with --batched / batched=True, then inputs get one too)")
    if arr.ndim != 1:
        raise VerifierOutputError(f"expected a 1-D block of token ids, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating) or not np.all(np.isfinite(arr)) \
                or not np.all(arr == np.round(arr)):
            raise VerifierOutputError(f"emitted tokens are not integer ids: {arr!r}")
    return tuple(int(t) for t in arr)
