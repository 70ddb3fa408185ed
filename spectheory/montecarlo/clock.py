"""A simulated wall clock for the cost model of Leviathan et al. 2023, §3.4 (Thm 3.8).

A speculative iteration advances the clock by the duration of every model call it makes:
its draft calls (mean duration ``c``) and its target calls (mean duration 1). Autoregressive
decoding of the same emitted tokens advances a second clock by one target call per token.
The walltime improvement is the ratio of the two clocks' long-run rates,
``E[autoregressive time] / E[speculative time]`` per iteration (renewal-reward).

Call durations are fixed (``shape=None``: exactly c and 1, Thm 3.8's model) or variable:
Gamma-distributed with the same means and coefficient of variation ``1/sqrt(shape)``. A sum of
m independent Gamma(shape, mean/shape) call times is Gamma(m·shape, mean/shape), so each
iteration's time costs one draw per call kind.

Which calls an iteration makes is the :class:`CallSchedule` under test: the paper's
algorithm drafts γ tokens (γ draft calls) and verifies them in **one parallel** target call;
a serial verifier calls the target once per emitted token, which is what the clock (and not
the token count) can tell apart.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_int, check_real

SCHEDULES = ("parallel", "serial")


@dataclass(frozen=True)
class CallSchedule:
    """Model calls of one iteration. ``verify="parallel"``: γ draft calls, 1 target call
    (Leviathan et al. 2023, Alg. 1, the cost model of Thm 3.8). ``verify="serial"``: γ draft
    calls and one target call per emitted token (a verifier without parallel scoring)."""

    verify: str = "parallel"

    def __post_init__(self):
        if self.verify not in SCHEDULES:
            raise ValueError(f"verify must be one of {SCHEDULES}, got {self.verify!r}")

    def draft_calls(self, gamma: int, n_emitted) -> np.ndarray:
        return np.full(np.shape(n_emitted), int(gamma), dtype=np.int64)

    def target_calls(self, gamma: int, n_emitted) -> np.ndarray:
        n = np.asarray(n_emitted, dtype=np.int64)
        return np.ones_like(n) if self.verify == "parallel" else n.copy()

    def expected_time(self, gamma: int, c: float, mean_emitted: float) -> float:
        """E[speculative time per iteration] given E[emitted tokens] (both schedules are
        linear in the emitted count)."""
        target = 1.0 if self.verify == "parallel" else float(mean_emitted)
        return gamma * c + target


PARALLEL = CallSchedule("parallel")
SERIAL = CallSchedule("serial")


def _call_time(rng: np.random.Generator, n_calls: np.ndarray, mean: float, shape: float | None) -> np.ndarray:
    """Total duration of ``n_calls`` calls of mean duration ``mean`` (per iteration)."""
    n = np.asarray(n_calls, dtype=np.float64)
    if shape is None or mean == 0.0:
        return n * mean
    out = np.zeros_like(n)
    pos = n > 0
    out[pos] = rng.gamma(n[pos] * shape, mean / shape)
    return out


def simulate_clocks(n_emitted, gamma: int, c: float, *, schedule: CallSchedule = PARALLEL,
                    seed=None, shape: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-iteration durations ``(autoregressive, speculative)`` of the tokens each iteration
    emitted (``n_emitted``, e.g. ``SimResult.n_emitted``): the speculative clock advances by
    the schedule's draft calls (mean c each) and target calls (mean 1 each); the
    autoregressive clock by one target call per emitted token."""
    from ..rng import check_random_state

    gamma = check_int(gamma, "gamma (draft length)", min=1)
    c = check_real(c, "c (draft/target call-time ratio)", lo=0.0)
    if shape is not None:
        shape = check_real(shape, "shape (Gamma call-time shape)", lo=0.0, lo_open=True)
    if not isinstance(schedule, CallSchedule):
        raise TypeError(f"schedule must be a CallSchedule, got {type(schedule).__name__}")
    n = np.asarray(n_emitted)
    if n.ndim != 1 or (n.size and (not np.issubdtype(n.dtype, np.integer) or n.min() < 0)):
        raise ValueError("n_emitted must be a 1-D array of non-negative integer token counts")
    rng = check_random_state(seed)
    ar = _call_time(rng, n, 1.0, shape)
    sd = (_call_time(rng, schedule.draft_calls(gamma, n), c, shape)
          + _call_time(rng, schedule.target_calls(gamma, n), 1.0, shape))
    return ar, sd


def ratio_of_means(num, den) -> tuple[float, float]:
    """``Σ num / Σ den`` over i.i.d. iterations and its delta-method standard error
    ``sd(num − R·den) / (mean(den) √n)``."""
    a = np.asarray(num, dtype=np.float64)
    b = np.asarray(den, dtype=np.float64)
    r = float(a.sum() / b.sum())
    se = float(np.std(a - r * b, ddof=1) / (b.mean() * np.sqrt(a.size)))
    return r, se
