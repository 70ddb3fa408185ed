"""The claim registry: every catalog claim registered once, with the check that tests it.

A claim module (``sims/claims/<family>.py``) registers each id from ``shared/CLAIMS.md``
with :func:`register`, giving the paper and equation, the statement, the algorithm under
test (``subject``), the deliberately broken variants the same check must reject
(``controls``), and how many Monte Carlo tests one run of its check performs (``mc_tests``;
the report's Bonferroni split needs it before anything runs).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from spectheory.rng import derive_seed

from spectheory.judge.evidence import Evidence


@dataclass(frozen=True)
class Control:
    """A deliberately broken variant of the subject; the claim's check must call it ``fails``
    in every evidence mode listed in ``modes`` (default: every mode the claim uses)."""

    name: str
    subject: Any
    description: str
    modes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    reference: str
    statement: str
    check: Callable[["Context", Any], list[Evidence]]
    subject: Any = None
    controls: tuple[Control, ...] = ()
    mc_tests: int = 0
    interpretation: str = ""
    shrink: Callable[["Context", Any], dict | None] | None = None
    #: evidence modes the check grades ("exact", "mc", "logits"); each must be covered by a
    #: negative control that fails in that mode (see :func:`register`).
    modes: tuple[str, ...] = ("exact", "mc")

    def control_modes(self, control: Control) -> tuple[str, ...]:
        """Modes in which ``control`` must come out ``fails``."""
        return self.modes if control.modes is None else control.modes

    @property
    def n_mc_tests(self) -> int:
        """Monte Carlo tests in one full run of this claim, controls included."""
        return self.mc_tests * (1 + len(self.controls))


REGISTRY: dict[str, Claim] = {}


class RegistrationError(ValueError):
    """A claim registration breaks the registry's rules."""


def register(**kwargs) -> Claim:
    """Register one catalog claim.

    Rules (issue 5, "every check can fail"): the claim lists the evidence ``modes`` its check
    grades; every mode (``logits`` excepted: real logits have no broken twin to replay) must be
    covered by at least one negative control that is expected to fail in it; a claim with
    Monte Carlo evidence declares ``mc_tests`` > 0. The runner then checks each control
    mode by mode (:func:`sims.runner.control_verdicts`).
    """
    claim = Claim(**kwargs)
    if claim.id in REGISTRY:
        raise RegistrationError(f"claim {claim.id!r} registered twice")
    from spectheory.judge.evidence import MODES
    bad = [m for m in claim.modes if m not in MODES]
    if bad or not claim.modes:
        raise RegistrationError(f"{claim.id}: modes must be a non-empty subset of {MODES}, got {claim.modes!r}")
    names = [c.name for c in claim.controls]
    if len(set(names)) != len(names):
        raise RegistrationError(f"{claim.id}: two controls share a name")
    for ctl in claim.controls:
        extra = set(claim.control_modes(ctl)) - set(claim.modes)
        if extra:
            raise RegistrationError(f"{claim.id}: control {ctl.name!r} names modes {sorted(extra)} "
                                    "the claim does not use")
    covered = {m for ctl in claim.controls for m in claim.control_modes(ctl)}
    missing = [m for m in claim.modes if m != "logits" and m not in covered]
    if missing:
        raise RegistrationError(
            f"{claim.id}: no negative control covers evidence mode(s) {missing}; every mode a check "
            "grades needs a broken variant that must fail in that mode")
    if ("mc" in claim.modes) != (claim.mc_tests > 0):
        raise RegistrationError(f"{claim.id}: mode 'mc' listed as {('mc' in claim.modes)} but mc_tests="
                                f"{claim.mc_tests}")
    REGISTRY[claim.id] = claim
    return claim


def load_all() -> dict[str, Claim]:
    """Import every claim module so the registry is complete."""
    from . import claims  # noqa: F401  (modules register on import)
    return REGISTRY


class UnknownClaimError(KeyError):
    """A ``--claims`` pattern matches no registered claim."""

    def __str__(self):
        return str(self.args[0])


def select(pattern: str = "*") -> list[Claim]:
    """Claims whose id matches any of the comma-separated globs, in registry order.

    Every glob must match at least one claim: a typo inside a list (``sd.lossless,sd.acceptence``)
    is an error naming the pattern that matched nothing, not a silently smaller run."""
    load_all()
    if not isinstance(pattern, str):
        raise TypeError(f"claims pattern must be a string, got {type(pattern).__name__}")
    pats = [p.strip() for p in pattern.split(",") if p.strip()] or ["*"]
    unmatched = [p for p in pats if not any(fnmatch.fnmatchcase(cid, p) for cid in REGISTRY)]
    if unmatched:
        raise UnknownClaimError(
            f"no registered claim matches {', '.join(repr(p) for p in unmatched)}"
            + (f" (in {pattern!r})" if len(pats) > 1 else "")
            + f"; known: {', '.join(REGISTRY)}")
    return [c for c in REGISTRY.values() if any(fnmatch.fnmatchcase(c.id, p) for p in pats)]


def total_mc_tests() -> int:
    """Monte Carlo tests in a report over the whole registry (the Bonferroni denominator)."""
    return sum(c.n_mc_tests for c in load_all().values())


@dataclass
class Context:
    """What a check gets besides its subject: the tier, the per-test error rate and seeds."""

    seed: int = 0
    quick: bool = False
    alpha_family: float = 0.01
    claim_id: str = ""
    subject_name: str = ""
    alpha_test: float = field(init=False)
    mc_tests_run: int = field(default=0, init=False)

    def __post_init__(self):
        self.alpha_test = self.alpha_family / max(1, total_mc_tests())

    def rng(self, *labels: str) -> np.random.Generator:
        """A Generator seeded from (run seed, claim id, subject, labels): reproducible and
        independent across checks."""
        return np.random.default_rng(derive_seed(self.seed, self.claim_id, self.subject_name, *labels))

    def size(self, default: int, quick: int) -> int:
        return quick if self.quick else default

    def mc(self, ev: Evidence) -> Evidence:
        """Count a Monte Carlo test (the runner checks the count against ``mc_tests``)."""
        self.mc_tests_run += 1
        return ev
