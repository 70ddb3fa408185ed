"""Verification rules and drafting strategies of Kobus & Gündüz (Kobus & Gündüz, "Speculative
Decoding via Exponential Races"), as data, with the broken variants the checks must reject.

Two methods decide, at one context, which drafted alternative (if any) is accepted:

* **GSD** (greedy speculative decoding, the paper's §2 and Alg. 4): the drafted alternatives
  x_1, x_2, … are drawn from q *without replacement* (equivalently, the first arrivals of an
  exponential race under q, App. A); alternative i is accepted with probability
  ``min(1, r_i(x_i)/q_i(x_i))`` where ``q_i`` is q with x_1..x_{i−1} removed and renormalised and
  ``r_1 = p``, ``r_{i+1} = norm(max(r_i − q_i, 0))`` (recursive rejection, Jeon et al. 2024). If
  every alternative is rejected, the emitted token is drawn from the last residual.
* **ERSD** (the paper's §3, Alg. 2 and Alg. 5): one exponential ``E_y ~ Exp(1)`` per token y, shared by
  both races. The draft's alternatives are the first arrivals ``argsort_y E_y/q(y)``; the target's
  winner ``X_p = argmin_y E_y/p(y)`` is always the emitted token, and it is *accepted* iff it is
  among the drafted alternatives.

Either way one context yields an **acceptance index** I (the position of the accepted
alternative among the alternatives the method would draft, 1-based; ∞ when no alternative
could be accepted) and an **emitted token** X. A drafting tree (``spectheory.trees``) keeps the
indices it drafted at each vertex: if I is one of them the walk moves to that child, otherwise X
is the last token of the iteration. ``simple`` (one vertex), ``sequence`` (k vertices in a chain),
``batch`` (k children of the root) and ``tree`` drafting are special trees.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

METHOD_GSD = 0
METHOD_ERSD = 1

# GSD draft-distribution update after a rejected alternative
Q_WITHOUT_REPLACEMENT = 0   # q_{i+1} = q_i with x_i removed, renormalised (correct, Alg. 4)
Q_NOT_UPDATED = 1           # q_{i+1} = q although x_i can no longer be drawn (broken)
ACCEPT_FIRST_ALWAYS = 2     # the first alternative is accepted unverified (broken, lossy)

# ERSD emitted token on rejection
ON_REJECT_TARGET_WINNER = 0  # emit X_p, the target race's winner (correct, Alg. 2)
ON_REJECT_RESAMPLE = 1       # emit a fresh draw from p (broken: p conditioned on rejection ≠ p)


@dataclass(frozen=True)
class GSDRule:
    """Greedy speculative decoding with recursive rejection (the paper's Alg. 4).

    q_update: ``"without_replacement"`` (correct) or ``"none"`` (the verifier keeps using the
    original q for every alternative although the drafts were drawn without replacement).
    accept: ``"recursive"`` (correct) or ``"always_first"`` (the first alternative is emitted
    unverified: acceptance index always 1, output law q — a degenerate verifier).
    """

    name: str
    q_update: str = "without_replacement"
    accept: str = "recursive"
    description: str = "GSD: drafts without replacement, recursive rejection (the paper's Alg. 4)"
    method: str = "gsd"

    def __post_init__(self):
        if self.q_update not in ("without_replacement", "none"):
            raise ValueError(f"unknown q_update {self.q_update!r}")
        if self.accept not in ("recursive", "always_first"):
            raise ValueError(f"unknown accept rule {self.accept!r}")
        if self.method != "gsd":
            raise ValueError(f"a GSDRule has method 'gsd', got {self.method!r}")

    @property
    def code(self) -> int:
        return METHOD_GSD

    @property
    def variant(self) -> int:
        if self.accept == "always_first":
            return ACCEPT_FIRST_ALWAYS
        return Q_WITHOUT_REPLACEMENT if self.q_update == "without_replacement" else Q_NOT_UPDATED


@dataclass(frozen=True)
class ERSDRule:
    """Exponential-race speculative decoding (the paper's Alg. 2, Alg. 5).

    shared: the draft's and the target's races use the same exponentials (correct); ``False``
    gives the two races independent exponentials (broken: still lossless, far lower acceptance).
    on_reject: ``"target_winner"`` (correct) or ``"resample"`` (emit a fresh draw from p).
    """

    name: str
    shared: bool = True
    on_reject: str = "target_winner"
    description: str = "ERSD: shared exponential races (the paper's Alg. 2 / Alg. 5)"
    method: str = "ersd"

    def __post_init__(self):
        if self.on_reject not in ("target_winner", "resample"):
            raise ValueError(f"unknown on_reject {self.on_reject!r}")
        if not isinstance(self.shared, (bool, np.bool_)):
            raise TypeError(f"shared must be a bool, got {self.shared!r}")
        if self.method != "ersd":
            raise ValueError(f"an ERSDRule has method 'ersd', got {self.method!r}")

    @property
    def code(self) -> int:
        return METHOD_ERSD

    @property
    def variant(self) -> int:
        return ON_REJECT_TARGET_WINNER if self.on_reject == "target_winner" else ON_REJECT_RESAMPLE


GSD = GSDRule("gsd")
ERSD = ERSDRule("ersd")
BROKEN_GSD_Q_NOT_UPDATED = GSDRule(
    "broken:gsd-q-not-renormalised", q_update="none",
    description="negative control: drafts without replacement, but each alternative verified "
                "against the original q (q_i not renormalised after removals)")
BROKEN_GSD_ACCEPT_FIRST = GSDRule(
    "broken:gsd-accept-first-unverified", accept="always_first",
    description="negative control: the first drafted alternative is emitted without verification "
                "(acceptance index always 1)")
BROKEN_ERSD_INDEPENDENT = ERSDRule(
    "broken:ersd-independent-races", shared=False,
    description="negative control: draft and target races with independent exponentials")
BROKEN_ERSD_RESAMPLE = ERSDRule(
    "broken:ersd-resample-on-reject", on_reject="resample",
    description="negative control: on rejection emit a fresh draw from p instead of the target "
                "race's winner")

RULES = {r.name: r for r in (GSD, ERSD, BROKEN_GSD_Q_NOT_UPDATED, BROKEN_GSD_ACCEPT_FIRST, BROKEN_ERSD_INDEPENDENT,
                             BROKEN_ERSD_RESAMPLE)}
