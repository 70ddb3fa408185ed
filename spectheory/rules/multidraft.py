"""Multi-draft and block verification rules of SpecTr-GBV (Lin et al. 2026), as data.

Notation: ``p`` target, ``q`` draft (the paper swaps them; see spectheory.closed_forms.multidraft).

* ``spectr_gbv`` — Alg. 1 (verification), Eq. 2/3 (sub-block and full-block acceptance
  ``h``), Eq. 4 (residual) and Alg. 2 (distribution modification), combined as Alg. 3.
* ``gbv`` — greedy block verification, single draft (Sec. 3.3). **Interpretation**: the
  paper's Sec. 3.3 prints ``α(x^i) = Σ max(ν_i p − q, 0)/Σ max(q − ν_i p, 0)`` with an
  unclipped ν, which is Sun et al. 2024b's (non-greedy) block verification; the catalog's
  ``gbv.optimal`` value ``Σ min(p(x^i), q(x^i))`` and the paper's Remark 5.2 ("Bound(1) ...
  corresponds exactly to GBV") identify GBV with SpecTr-GBV at K = 1 (Sun et al. 2024c), so
  that is the default (``h_form="eq2"``); ``h_form="sec3.3"`` is the printed formula, a switch.
* ``kseq`` — SpecTr's K-SEQ (Sun et al. 2023; Lin et al. Sec. 3.2): per position, candidates
  tried in order, each accepted w.p. ``min(1, p(x)/(ρ q(x)))``; first accepted emitted and
  the drafts carrying it retained; none → residual ``norm(max(p − ρq, 0))``. **Interpretation**:
  the paper does not say which K the ρ equation uses after drafts are dropped; default
  ``rho_k="retained"`` (ρ solved for the number of drafts still alive, as in SpecTr's
  draft-tree form); ``rho_k="initial"`` keeps the initial K (a switch).

Alg. 1 ambiguities, each a switch:
  ``h_skip`` — line 5 rejects a sub-block already in H without sampling (default,
  "as printed"); ``"ignore_H"`` samples it again.
  ``resume`` — line 3 restarts each draft at i = τ + 1 (default).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..checks import check_int


@dataclass(frozen=True)
class MultiDraftRule:
    """One multi-draft verification rule.

    algorithm: ``"spectr_gbv"`` or ``"kseq"`` (GBV is ``spectr_gbv`` run with K = 1).
    h_form: ``"eq2"`` (Eq. 2/3), ``"sec3.3"`` (the printed single-draft GBV formula) or
    ``"one"`` (broken: accept every sub-block, a coupling that is not lossless).
    residual: ``"eq4"`` (correct), ``"p"`` (broken: resample from the target).
    modify: apply Alg. 2's distribution modification before the next iteration.
    h_in_H: ``"reject"`` (Alg. 1 line 5 as printed) or ``"ignore_H"``.
    power: exponent used for K in ``(1 − m)^K`` (None → K; a broken variant fixes it to 1).
    h_scale: factor applied to every sub-block acceptance h (1 for the correct rule; a broken
    variant with a wrong constant changes it).
    rho: ``"solve"`` (K-SEQ ρ from the equation), ``"one"`` (broken: ρ = 1) or ``"K"`` (broken:
    ρ = the number of drafts, the top of the bracket).
    rho_k: ``"retained"`` or ``"initial"`` (K-SEQ, see module docstring).
    """

    name: str
    algorithm: str = "spectr_gbv"
    h_form: str = "eq2"
    residual: str = "eq4"
    modify: bool = True
    h_in_H: str = "reject"
    power: int | None = None
    h_scale: float = 1.0
    rho: str = "solve"
    rho_k: str = "retained"
    description: str = ""

    def __post_init__(self):
        for attr, ok in (("algorithm", ("spectr_gbv", "kseq")), ("h_form", ("eq2", "sec3.3", "one")),
                         ("residual", ("eq4", "p")), ("h_in_H", ("reject", "ignore_H")),
                         ("rho", ("solve", "one", "K")), ("rho_k", ("retained", "initial"))):
            if getattr(self, attr) not in ok:
                raise ValueError(f"{attr} must be one of {ok}, got {getattr(self, attr)!r}")
        if not isinstance(self.modify, bool):
            raise TypeError(f"modify must be a bool, got {self.modify!r}")
        if self.power is not None:
            check_int(self.power, "power", min=1)
        if not (isinstance(self.h_scale, (int, float)) and 0.0 <= self.h_scale <= 1.0):
            raise ValueError(f"h_scale must be a number in [0, 1], got {self.h_scale!r}")

    def exponent(self, K: int) -> int:
        K = check_int(K, "K", min=1)
        return K if self.power is None else self.power


SPECTR_GBV = MultiDraftRule("spectr-gbv", description="SpecTr-GBV, Alg. 1 + Alg. 2 (Alg. 3), Eq. 2-4")
GBV = MultiDraftRule("gbv", description="greedy block verification = SpecTr-GBV at K = 1 (Sec. 3.3, Sun et al. 2024c)")
GBV_SEC33 = MultiDraftRule("gbv:sec3.3-printed", h_form="sec3.3",
                           description="alternative reading: GBV with the α(x^i) formula printed in Sec. 3.3")
KSEQ = MultiDraftRule("k-seq", algorithm="kseq", modify=False,
                      description="SpecTr K-SEQ (Sun et al. 2023), ρ solved for the drafts still alive")

BROKEN_NO_MODIFY = MultiDraftRule(
    "broken:no-modification", modify=False,
    description="negative control: skips Alg. 2's distribution modification between iterations")
BROKEN_RESIDUAL_P = MultiDraftRule(
    "broken:residual=p", residual="p",
    description="negative control: after τ < γ samples the correction from p instead of Eq. 4")
BROKEN_POWER_1 = MultiDraftRule(
    "broken:(1-m)^1", power=1,
    description="negative control: uses (1 − m)^1 instead of (1 − m)^K in Eq. 2-4 and Alg. 2")
BROKEN_IGNORE_H = MultiDraftRule(
    "variant:ignore-H", h_in_H="ignore_H",
    description="Alg. 1 with line 5's 'x_k^i ∉ H' test dropped (sub-blocks re-sampled)")
BROKEN_ACCEPT_ALL = MultiDraftRule(
    "broken:accept-all", h_form="one",
    description="negative control: accepts every sub-block (h ≡ 1): τ = γ, far from lossless")
KSEQ_RHO_ONE = MultiDraftRule(
    "broken:kseq-rho=1", algorithm="kseq", modify=False, rho="one",
    description="negative control: K-SEQ with ρ fixed to 1 (plain SD test on every candidate)")
KSEQ_RHO_K = MultiDraftRule(
    "broken:kseq-rho=K", algorithm="kseq", modify=False, rho="K",
    description="negative control: K-SEQ with ρ fixed to the number of drafts (the top of [1, K]) instead "
                "of the root of the ρ equation")
BROKEN_HALF_H = MultiDraftRule(
    "broken:h/2", h_scale=0.5,
    description="negative control: accepts each sub-block with half of Eq. 2/3's probability (a wrong constant)")
KSEQ_RHO_INITIAL = MultiDraftRule(
    "variant:kseq-rho(K initial)", algorithm="kseq", modify=False, rho_k="initial",
    description="K-SEQ with ρ solved for the initial K even after drafts are dropped")
