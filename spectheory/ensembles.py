"""Ensemble functions r = E(q, p) of Speculative Ensemble (Fu et al., ICML 2025, Sec. 3.2).

* :func:`weighted`      Eq. 4  ``r = λ q + (1 − λ) p``
* :func:`weighted_n`    the n-model weighted ensemble ``r = Σ_i w_i p_i`` (Sec. 3.4, Table 2)
* :func:`contrastive`   Eq. 5  ``r = softmax((l_p − μ l_q) / T)``; ``T = 0`` is the argmax limit
  (uniform over the maximisers, the limit of the softmax as T → 0)
* :class:`Ensemble`     a named, validated ensemble function of the member distributions
  (``level="prob"``) or logits (``level="logits"``); ``Ensemble.from_function`` wraps any
  user function, checking its output is a distribution every time it is called.
* :func:`ensemble_source` the ensemble of Markov sources over one state space: r is itself
  a Markov source (one r row per state), so every exact engine that works on a source
  works on r.

Members are ordered as the paper orders them for two models: ``(q, p)`` (proposal first).
Probabilities → logits for logit-level ensembles uses ``log`` (−inf where the mass is 0).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .checks import check_int, check_real, check_real_array, check_type
from .distributions import DistributionError, check_distribution, softmax
from .markov import MarkovSource, lift_order


def weighted(q, p, lam: float) -> np.ndarray:
    """Eq. 4: ``λ q + (1 − λ) p`` (λ ∈ [0, 1]), row-wise."""
    lam = check_real(lam, "λ (weight of q)", lo=0.0, hi=1.0)
    q = check_distribution(q, name="q")
    p = check_distribution(p, name="p")
    if q.shape != p.shape:
        raise DistributionError(f"q and p must have the same shape, got {q.shape} and {p.shape}")
    return lam * q + (1.0 - lam) * p


def weighted_n(dists, weights) -> np.ndarray:
    """n-model weighted ensemble ``Σ_i w_i p_i``; ``dists`` has shape (n, ..., V), the
    weights are non-negative and sum to 1."""
    d = check_distribution(np.asarray(dists, dtype=np.float64), name="member distributions")
    if d.ndim < 2:
        raise DistributionError(f"member distributions must be stacked as (n, ..., V), got shape {d.shape}")
    w = check_real_array(weights, "weights", lo=0.0)
    if w.ndim != 1 or w.shape[0] != d.shape[0]:
        raise ValueError(f"need one weight per member: {d.shape[0]} members, weights of shape {w.shape}")
    if abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(f"weights must sum to 1, got {w.sum()!r}")
    return np.tensordot(w, d, axes=1)


def _argmax_limit(z: np.ndarray) -> np.ndarray:
    m = z.max(axis=-1, keepdims=True)
    hit = (z == m).astype(np.float64)
    return hit / hit.sum(axis=-1, keepdims=True)


def contrastive(l_p, l_q, mu: float, temperature: float = 1.0) -> np.ndarray:
    """Eq. 5: ``softmax((l_p − μ l_q) / T)`` on logits; ``T = 0`` gives the argmax limit
    (uniform over ties). μ ≥ 0. A token with ``l_p = −inf`` gets mass 0; ``l_q = −inf`` with
    μ > 0 would give it +inf and is refused."""
    mu = check_real(mu, "μ", lo=0.0)
    T = check_real(temperature, "temperature", lo=0.0)
    lp = np.asarray(l_p, dtype=np.float64)
    lq = np.asarray(l_q, dtype=np.float64)
    if lp.shape != lq.shape or lp.ndim == 0:
        raise DistributionError(f"l_p and l_q must have the same non-scalar shape, got {lp.shape}, {lq.shape}")
    for z, nm in ((lp, "l_p"), (lq, "l_q")):
        if np.isnan(z).any() or np.isposinf(z).any():
            raise DistributionError(f"{nm} contains NaN or +inf")
    if mu > 0 and (np.isneginf(lq) & ~np.isneginf(lp)).any():
        raise DistributionError("l_q = −inf where l_p is finite: l_p − μ l_q would be +inf "
                                "(contrastive decoding needs a draft with full support)")
    with np.errstate(invalid="ignore"):
        z = np.where(np.isneginf(lp), -np.inf, lp - mu * np.where(np.isneginf(lq), 0.0, lq))
    if T == 0.0:
        if np.isneginf(z.max(axis=-1)).any():
            raise DistributionError("a row with every contrastive logit −inf")
        return _argmax_limit(z)
    return softmax(z, T, name="l_p − μ l_q")


def _log(p):
    with np.errstate(divide="ignore"):
        return np.log(p)


@dataclass(frozen=True)
class Ensemble:
    """A named ensemble function of n member distributions, stacked as (n, ..., V).

    level ``"prob"``: ``fn`` receives the distributions; ``"logits"``: it receives their
    logs (a logit-level ensemble of Markov sources uses log-probabilities as logits).
    Every output is checked to be a distribution of the members' shape.
    """

    name: str
    fn: Callable
    n_members: int | None = None
    level: str = "prob"

    def __post_init__(self):
        if self.level not in ("prob", "logits"):
            raise ValueError(f"level must be 'prob' or 'logits', got {self.level!r}")
        if not callable(self.fn):
            raise TypeError("fn must be callable")
        if self.n_members is not None:
            check_int(self.n_members, "n_members", min=1)

    @classmethod
    def from_function(cls, fn: Callable, *, name: str = "user", n_members: int | None = None,
                      level: str = "prob") -> "Ensemble":
        """Wrap any user function ``fn(members) -> r`` (members stacked (n, ..., V))."""
        return cls(name, fn, n_members, level)

    def __call__(self, members) -> np.ndarray:
        m = check_distribution(np.asarray(members, dtype=np.float64), name="member distributions")
        if m.ndim < 2:
            raise DistributionError("members must be stacked as (n, ..., V)")
        if self.n_members is not None and m.shape[0] != self.n_members:
            raise ValueError(f"ensemble {self.name!r} takes {self.n_members} members, got {m.shape[0]}")
        arg = m if self.level == "prob" else _log(m)
        r = np.asarray(self.fn(arg), dtype=np.float64)
        if r.shape != m.shape[1:]:
            raise DistributionError(f"ensemble {self.name!r} returned shape {r.shape}, expected {m.shape[1:]}")
        return check_distribution(r, name=f"output of ensemble {self.name!r}")


def weighted_ensemble(lam: float) -> Ensemble:
    """Eq. 4 as an :class:`Ensemble` of members ``(q, p)``."""
    lam = check_real(lam, "λ (weight of q)", lo=0.0, hi=1.0)
    return Ensemble(f"WE λ={lam:g}", lambda m: lam * m[0] + (1.0 - lam) * m[1], 2, "prob")


def weighted_n_ensemble(weights: Sequence[float]) -> Ensemble:
    """n-model weighted ensemble as an :class:`Ensemble`."""
    w = check_real_array(weights, "weights", lo=0.0)
    if w.ndim != 1 or w.size < 2 or abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(f"weights must be ≥ 2 non-negative numbers summing to 1, got {weights!r}")
    return Ensemble("WE w=(" + ",".join(f"{x:.3g}" for x in w) + ")",
                    lambda m: np.tensordot(w, m, axes=1), int(w.size), "prob")


def contrastive_ensemble(mu: float, temperature: float = 1.0) -> Ensemble:
    """Eq. 5 as an :class:`Ensemble` of members ``(q, p)`` (logit level)."""
    mu = check_real(mu, "μ", lo=0.0)
    T = check_real(temperature, "temperature", lo=0.0)
    return Ensemble(f"CD μ={mu:g} T={T:g}", lambda l: contrastive(l[1], l[0], mu, T), 2, "logits")


def ensemble_source(sources: Sequence[MarkovSource], ens: Ensemble) -> MarkovSource:
    """The ensemble of Markov sources as a Markov source: one r row per state of the common
    state space (sources of lower order are lifted to the highest order)."""
    _check_sources(sources)
    check_type(ens, Ensemble, "ens", " (wrap a function with Ensemble.from_function)")
    order = max(s.order for s in sources)
    lifted = [s if s.order == order else lift_order(s, order) for s in sources]
    rows = ens(np.stack([s.table for s in lifted]))
    return MarkovSource(rows, order)


def _check_sources(sources) -> None:
    """Member sources: a sequence of ≥ 2 MarkovSources over one vocabulary."""
    if isinstance(sources, MarkovSource) or not isinstance(sources, Sequence):
        raise TypeError(f"sources must be a sequence of MarkovSources, got {type(sources).__name__}")
    if len(sources) < 2:
        raise ValueError(f"an ensemble needs at least two member sources, got {len(sources)}")
    for i, s in enumerate(sources):
        check_type(s, MarkovSource, f"sources[{i}]")
    Vs = [s.V for s in sources]
    if len(set(Vs)) > 1:
        raise DistributionError(f"member sources must share the vocabulary, got V = {Vs}")


def common_tables(sources: Sequence[MarkovSource]) -> np.ndarray:
    """Dense (n, S, V) tables of the member sources on their common (highest-order) state space."""
    _check_sources(sources)
    order = max(s.order for s in sources)
    return np.stack([(s if s.order == order else lift_order(s, order)).table for s in sources])
