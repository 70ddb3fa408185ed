"""The claim registry (v2): every catalog claim registered once, in parts, with the check that
tests it (docs/architecture.md).

A claim module (``sims/claims/<family>.py``) registers each claim with :func:`register`: the
paper (a key of :mod:`spectheory.sims.papers`) and where in it, the statement, our reading of it, its
**parts** (:class:`Part`: what the claim says, one relation each), the algorithm under test
(``subject``), the deliberately broken variants the same check must reject (``controls``, each
naming the parts it must fail), and how many Monte Carlo tests one run of its check performs
(``mc_tests``; the report's Bonferroni split needs it before anything runs).
"""
from __future__ import annotations

import contextlib
import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from spectheory.judge.evidence import MODES, Evidence, tagging
from spectheory.rng import derive_seed

from . import papers

#: the relation a part of a claim asserts (fixed vocabulary; docs/architecture.md)
RELATIONS = {
    "=": "value equality (a formula equals the exact or simulated value)",
    "law": "two distributions are equal (e.g. lossless: emitted sequences follow p)",
    "≤": "upper bound", "≥": "lower bound", "<": "strict upper bound", ">": "strict lower bound",
    "ordering": "a ranking of methods (A ≥ B ≥ C)",
    "monotone": "increases or decreases in a parameter",
    "scaling": "growth rate or complexity (O(V), log k)",
    "exists": "some setting achieves a property",
}
#: relations whose parts may carry a least-slack record (sims/slack.py)
INEQUALITIES = ("≤", "≥", "<", ">", "ordering", "monotone")
_PART_ID = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")


@dataclass(frozen=True)
class Part:
    """One thing a claim says, with its own verdict.

    ``relation``: one of :data:`RELATIONS`. ``checkable=False`` (with a ``reason``) for a part
    the toolkit cannot grade (it is shown as not checked, never folded into a ``holds``; it may
    carry ``info`` evidence). ``modes``: the evidence modes this part is graded in (default:
    the claim's modes)."""

    id: str
    statement: str
    relation: str
    checkable: bool = True
    reason: str = ""
    modes: tuple[str, ...] | None = None
    #: an algebraic identity of the model (it cannot fail in the model): its verdict comes from
    #: ``proof`` (evidence mode ``proof``); numerical evidence of the part is kept as an
    #: implementation test, not as support for the paper (issue 24, item 4)
    identity: bool = False
    #: ``proof() -> (holds: bool, detail: str)``: a symbolic proof (sympy) of an identity part; the
    #: detail names the expression shown to simplify to zero (or what did not)
    proof: Callable[[], tuple[bool, str]] | None = None
    #: an identity part: the sizes its proof covers ("general: symbolic B and k", "B = 2, 3, 4"),
    #: shown beside its verdict (issue 34, item 3)
    proved_for: str = ""
    #: a property of a model or formula this project reconstructed (not printed in the paper): what was
    #: reconstructed and why. Such a part cannot fail for the paper's reasons, so its verdict is shown as
    #: "holds in the reconstructed model", never counted as support for the paper (issue 34, item 3)
    reconstructed: str = ""
    #: a strict-monotonicity or strict-improvement part (the non-degeneracy rule applies to it,
    #: :mod:`spectheory.judge.degeneracy`); None: strict exactly when the relation is < or >
    strict: bool | None = None

    @property
    def is_strict(self) -> bool:
        return self.relation in ("<", ">") if self.strict is None else bool(self.strict)

    @property
    def verdict_class(self) -> str:
        """What this part's verdict rests on (:data:`spectheory.judge.verdicts.CLASSES`)."""
        return "reconstructed" if self.reconstructed else "identity" if self.identity else "evidence"


@dataclass(frozen=True)
class Reading:
    """One way to read a claim (issue 24, item 1).

    Exactly one reading of a claim has ``role="principal"``: the paper's statement with the
    assumptions it states and, where it is silent, the reading its own text supports. Its
    ``quote`` (the paper's words, with section and sentence: "§4.2: '...'") is required. The
    headline verdict is the principal reading's: the combination of the verdicts of its
    ``parts``. Every other reading (``role="alternative"``; ``kind`` says which: ``literal``,
    ``stricter``, ``integer``, ``accounting``, ``rule``, ``disclaimed``, ``tacit-assumption``,
    ...) is a finding reported beside the headline with its own verdict, never folded into it.
    Every part belongs to exactly one reading. ``why``: one line saying why this reading is (or
    is not) the principal one."""

    id: str
    statement: str
    parts: tuple[str, ...]
    role: str = "alternative"
    quote: str = ""
    why: str = ""
    kind: str = ""


@dataclass(frozen=True)
class Scope:
    """What an instance must satisfy for a claim to speak about it and for its mechanism to be
    active (issue 24, item 2). ``guard(pair, **settings) -> None`` when the instance is in scope,
    else a short reason ("SpecBranch never forks: k_max(1 − max q) < 2"). Checks, the shrinker
    (``shrinker(..., scope=...)``) and least-slack searches (``search_pairs(..., scope=...)``)
    skip out-of-scope instances; a violation found outside the scope is reported as "outside
    the claim's scope", never as a counterexample."""

    statement: str
    guard: Callable[..., str | None] | None = None
    #: the cases of the non-degeneracy rule (:data:`spectheory.judge.degeneracy.CASES`) in which the
    #: quantity the claim's strict parts speak of cannot move: an instance in one of them is outside the
    #: scope (:meth:`why_out` applies the rule before ``guard``; a case the rule cannot read from the
    #: pair's rows, e.g. ``saturation``, the guard words with :func:`spectheory.judge.degeneracy.degenerate`).
    #: A claim with a strict part must declare it: ``()`` says that no case of the rule can occur in scope
    degenerate: tuple[str, ...] | None = None
    #: ``resolve(name) -> pair``: how the rule reads an instance the checks name by a string (a family's
    #: own instances); None: names are read only by the guard
    resolve: Callable[[str], Any] | None = None

    def why_out(self, pair, *, rule: bool = True, **settings) -> str | None:
        """None if ``pair`` (with ``settings``) is in scope, else the reason it is not: first the
        non-degeneracy rule for the scope's ``degenerate`` cases, then the claim's own guard.
        ``rule=False``: for a part that is not strict the rule does not apply (neither here nor in a
        degenerate reason the guard words itself)."""
        if self.degenerate and rule:
            inst = self.resolve(pair) if self.resolve is not None and isinstance(pair, str) else pair
            why = degenerate_reason(self.degenerate, inst, **settings)
            if why:
                return why
        why = None if self.guard is None else self.guard(pair, **settings)
        if why and not rule:
            from spectheory.judge.degeneracy import case_of
            if case_of(why) is not None:
                return None
        return why


def degenerate_reason(cases, pair=None, **settings) -> str | None:
    """The non-degeneracy rule (:func:`spectheory.judge.degeneracy.cannot_move`) applied to an
    instance: a pair's target and draft rows in the contexts the target reaches (anything with
    ``target`` and ``draft`` tables; a pair named by a string is not read), ``lam`` (an ensemble
    weight) and ``acceptance`` among the settings."""
    from spectheory.judge.degeneracy import cannot_move
    p = q = reached = None
    if pair is not None and hasattr(pair, "target") and hasattr(pair, "draft"):
        p, q = np.asarray(pair.target.table), np.asarray(pair.draft.table)
        try:
            from spectheory.markov import stationary_distribution
            reached = stationary_distribution(pair.target.transition_matrix()) > 1e-12
        except Exception:  # noqa: BLE001 - an order-0 or odd pair: every row counts
            reached = None
    lam = settings.get("lam", settings.get("λ"))
    return cannot_move(cases, p=p, q=q, reached=reached, lam=lam, acceptance=settings.get("acceptance"))


@dataclass(frozen=True)
class Choice:
    """A modelling choice the paper leaves open (issue 24, item 3; issue 34): ``default`` is what the
    checks use; ``values`` the admissible range (its ends, or a few points) the runner re-runs every
    claim at, whatever its verdict, so that a verdict is the headline only if it persists across
    them. ``invented=True`` for a band or tolerance this project invents (the report names it
    as ours). Checks read the value in force with ``ctx.choice(name)``."""

    name: str
    default: Any
    values: tuple
    why: str
    invented: bool = False


@dataclass(frozen=True)
class Control:
    """A deliberately broken variant of the subject; the claim's check must call it ``fails``
    in every evidence mode listed in ``modes`` (default: every mode the claim uses) of every
    part listed in ``parts`` (default: every checkable part)."""

    name: str
    subject: Any
    description: str
    modes: tuple[str, ...] | None = None
    parts: tuple[str, ...] | None = None


@dataclass(frozen=True)
class UserPairs:
    """A claim that runs on the user's own Markov pairs (``spectheory verify --instances FILE``,
    docs/instances.md).

    ``what``: what the check does with each pair (one sentence: the catalog and ``spectheory
    list`` show it); ``mc_tests_per_pair``: the most Monte Carlo tests one run of its check makes
    per user pair (the Bonferroni split of a user-pairs run counts this bound, so it is known
    before anything runs). The check asks for its instances with :meth:`Context.pairs` and builds
    them with :meth:`Context.get`: on a normal run they return the built-in instances, on a
    user-pairs run the user's pairs that fit (a pair that does not fit a comparison is skipped
    with a note saying why)."""

    what: str
    mc_tests_per_pair: int = 0


@dataclass(frozen=True)
class Claim:
    id: str
    paper: Any
    reference: str
    statement: str
    check: Callable[["Context", Any], list[Evidence]]
    subject: Any = None
    controls: tuple[Control, ...] = ()
    mc_tests: int = 0
    interpretation: str = ""
    #: the smallest counterexample when the check fails: a dict, or a list of dicts (one per failing
    #: part, each naming its ``part``), or None
    shrink: Callable[["Context", Any], dict | list | None] | None = None
    #: evidence modes the check grades ("exact", "mc", "logits"); each must be covered by a
    #: negative control that fails in that mode (see :func:`register`).
    modes: tuple[str, ...] = ("exact", "mc")
    #: the claim's relation when it has one part (``parts`` then defaults to one part ``main``)
    relation: str | None = None
    parts: tuple[Part, ...] = ()
    #: set when the check runs on the user's own pairs (``verify --instances``; :class:`UserPairs`)
    user_pairs: UserPairs | None = None
    #: the claim's readings (:class:`Reading`); empty: one principal reading over every part
    readings: tuple[Reading, ...] = ()
    #: what an instance must satisfy for the claim to speak about it (:class:`Scope`), or None
    scope: Scope | None = None
    #: modelling choices the paper leaves open (:class:`Choice`)
    choices: tuple[Choice, ...] = ()

    def __post_init__(self):
        if not self.parts and self.relation is not None:  # one part, "main": the claim itself
            object.__setattr__(self, "parts", (Part("main", self.statement, self.relation),))
        if not self.readings and self.parts:
            object.__setattr__(self, "readings", (Reading("paper", self.statement, tuple(p.id for p in self.parts),
                                                          role="principal"),))

    @property
    def principal(self) -> Reading:
        """The reading that decides the headline verdict."""
        return next(r for r in self.readings if r.role == "principal")

    def reading_of(self, part_id: str) -> Reading:
        """The reading a part belongs to."""
        return next(r for r in self.readings if part_id in r.parts)

    def choice(self, name: str) -> Choice:
        for c in self.choices:
            if c.name == name:
                return c
        raise KeyError(f"{self.id}: no choice {name!r} (choices: {', '.join(c.name for c in self.choices) or 'none'})")

    def control_modes(self, control: Control) -> tuple[str, ...]:
        """Modes in which ``control`` must come out ``fails``."""
        return self.modes if control.modes is None else control.modes

    def part_modes(self, part: Part) -> tuple[str, ...]:
        """Modes ``part`` is graded in."""
        return self.modes if part.modes is None else part.modes

    def part(self, part_id: str) -> Part:
        for p in self.parts:
            if p.id == part_id:
                return p
        raise KeyError(f"{self.id}: no part {part_id!r} (parts: {', '.join(p.id for p in self.parts)})")

    @property
    def checkable_parts(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.checkable)

    def control_parts(self, control: Control) -> tuple[str, ...]:
        """Parts in which ``control`` must come out ``fails``."""
        return tuple(p.id for p in self.checkable_parts) if control.parts is None else tuple(control.parts)

    def control_requirements(self, control: Control) -> dict[str, tuple[str, ...]]:
        """``{part: modes}``: every (part, mode) in which ``control`` must fail."""
        out = {}
        for pid in self.control_parts(control):
            modes = tuple(m for m in self.control_modes(control) if m in self.part_modes(self.part(pid)))
            if modes:
                out[pid] = modes
        return out

    @property
    def choice_reruns(self) -> int:
        """Re-runs of the subject at the open choices (:class:`Choice`), whatever its verdict at the
        defaults: one per non-default value of each choice."""
        return sum(sum(1 for v in c.values if v != c.default) for c in self.choices)

    @property
    def rerun_required(self) -> dict[str, tuple[str, ...]]:
        """What a choice re-run is graded in, ``{part: modes}``: a part graded in exact mode is graded
        by its exact evidence alone (exact evidence decides it: the re-run's Monte Carlo, if the check
        runs any, is not graded and not counted); a part without exact evidence, and an ``exists`` part
        (its comparisons are alternatives on different instances), in its own modes (``logits`` aside,
        which never runs here)."""
        out = {}
        for p in self.checkable_parts:
            modes = tuple(m for m in self.part_modes(p) if m != "logits")
            # an 'exists' part's comparisons are alternatives on different instances: exact alone cannot decide it
            out[p.id] = ("exact",) if "exact" in modes and p.relation != "exists" else modes
        return out

    @property
    def rerun_mc_tests(self) -> int:
        """Monte Carlo tests one choice re-run grades: the check's ``mc_tests`` when some part is graded
        in ``mc`` there (it has no exact evidence), else none."""
        return self.mc_tests if any("mc" in ms for ms in self.rerun_required.values()) else 0

    @property
    def n_mc_tests(self) -> int:
        """Monte Carlo tests in one full run of this claim: the subject, its controls, and the
        re-runs of the subject at its choices' other values that are graded in ``mc``
        (:attr:`rerun_mc_tests`; known before anything runs, so the Bonferroni denominator is too)."""
        return self.mc_tests * (1 + len(self.controls)) + self.rerun_mc_tests * self.choice_reruns

    @property
    def strict_parts(self) -> tuple[Part, ...]:
        """The checkable strict-monotonicity / strict-improvement parts (the non-degeneracy rule's)."""
        return tuple(p for p in self.checkable_parts if p.is_strict)

    @property
    def relation_label(self) -> str:
        """The relation(s) of the claim's parts, for a summary table (``=``, ``≤/law``)."""
        rels = []
        for p in self.parts:
            if p.relation not in rels:
                rels.append(p.relation)
        return "/".join(rels)


REGISTRY: dict[str, Claim] = {}


class RegistrationError(ValueError):
    """A claim registration breaks the registry's rules."""


#: the keywords :func:`register` takes (the fields of :class:`Claim`)
REGISTER_KEYWORDS = tuple(f for f in Claim.__dataclass_fields__)


def register(**kwargs) -> Claim:
    """Register one catalog claim.

    ``parts``: the claim's :class:`Part` s; without them, ``relation`` is required and the claim
    is one part ``main`` with the claim's statement. Rules (issue 5, "every check can fail";
    issue 15, parts): the claim lists the evidence ``modes`` its check grades; every (checkable
    part, mode) pair (``logits`` excepted: real logits have no broken twin to replay) must be
    covered by at least one negative control that is expected to fail there; a claim with Monte
    Carlo evidence declares ``mc_tests`` > 0; ``paper`` names known papers (:mod:`spectheory.sims.papers`).
    The runner then checks each control per part and per mode (:func:`spectheory.sims.runner.control_verdict`).
    """
    unknown = [k for k in kwargs if k not in REGISTER_KEYWORDS]
    if unknown:  # named before anything else: `relaton=` must not read as a missing relation
        import difflib
        close = difflib.get_close_matches(unknown[0], REGISTER_KEYWORDS, n=1, cutoff=0.6)
        raise RegistrationError(f"{kwargs.get('id')}: register() got an unexpected keyword argument {unknown[0]!r}"
                                + (f" (did you mean {close[0]!r}?)" if close else
                                   f" (it takes: {', '.join(REGISTER_KEYWORDS)})"))
    for key, cls in (("controls", Control), ("parts", Part), ("readings", Reading), ("choices", Choice),
                     ("modes", str)):  # one item where a tuple of them goes (a missing trailing comma)
        if isinstance(kwargs.get(key), cls):
            raise RegistrationError(f"{kwargs.get('id')}: {key} takes a tuple of {cls.__name__}, got one {cls.__name__}: "
                                    f"write {key}=({cls.__name__ if cls is not str else repr(kwargs[key])}"
                                    f"{'(...)' if cls is not str else ''},) (the trailing comma makes the tuple)")
    if not kwargs.get("parts") and kwargs.get("relation") is None:
        raise RegistrationError(f"{kwargs.get('id')}: give the claim's relation ({', '.join(RELATIONS)}) "
                                "or its parts")
    claim = Claim(**{**kwargs, "parts": tuple(kwargs.get("parts") or ())})
    if claim.id in REGISTRY:
        raise RegistrationError(f"claim {claim.id!r} registered twice")
    try:
        papers.keys_of(claim.paper)
    except papers.UnknownPaperError as err:
        raise RegistrationError(f"{claim.id}: {err}") from None
    bad = [m for m in claim.modes if m not in MODES or m == "proof"]
    if bad or not claim.modes:
        raise RegistrationError(f"{claim.id}: modes must be a non-empty subset of {MODES[:3]} (mode 'proof' comes "
                                f"from identity parts' proofs), got {claim.modes!r}")
    if claim.relation is not None and claim.relation not in RELATIONS:
        raise RegistrationError(f"{claim.id}: unknown relation {claim.relation!r}; use one of {', '.join(RELATIONS)}")
    _check_parts(claim)
    _check_readings(claim)
    names = [c.name for c in claim.controls]
    if len(set(names)) != len(names):
        raise RegistrationError(f"{claim.id}: two controls share a name")
    checkable = {p.id for p in claim.checkable_parts}
    for ctl in claim.controls:
        extra = set(claim.control_modes(ctl)) - set(claim.modes)
        if extra:
            raise RegistrationError(f"{claim.id}: control {ctl.name!r} names modes {sorted(extra)} "
                                    "the claim does not use")
        if ctl.parts is not None:
            unknown = [p for p in ctl.parts if p not in checkable]
            if unknown or not ctl.parts:
                raise RegistrationError(f"{claim.id}: control {ctl.name!r} names parts {unknown or list(ctl.parts)} "
                                        f"that are not checkable parts of the claim ({', '.join(sorted(checkable))})")
            idle = [p for p in ctl.parts if p not in claim.control_requirements(ctl)]
            if idle:
                raise RegistrationError(f"{claim.id}: control {ctl.name!r} names parts {idle} graded in none of "
                                        f"its modes {claim.control_modes(ctl)}")
    covered = {(p, m) for ctl in claim.controls for p, ms in claim.control_requirements(ctl).items() for m in ms}
    missing = [(p.id, m) for p in claim.checkable_parts for m in claim.part_modes(p)
               if m != "logits" and (p.id, m) not in covered]
    if missing:
        one = len(claim.parts) == 1
        what = [m for _, m in missing] if one else missing
        raise RegistrationError(
            f"{claim.id}: no negative control covers evidence {'mode(s)' if one else '(part, mode) pair(s)'} "
            f"{what}; every (checkable part, mode) a check grades needs a broken variant that must fail there")
    if claim.user_pairs is not None and not isinstance(claim.user_pairs, UserPairs):
        raise RegistrationError(f"{claim.id}: user_pairs must be a UserPairs(...) record, got {claim.user_pairs!r}")
    if ("mc" in claim.modes) != (claim.mc_tests > 0):
        raise RegistrationError(f"{claim.id}: mode 'mc' listed as {('mc' in claim.modes)} but mc_tests="
                                f"{claim.mc_tests}")
    REGISTRY[claim.id] = claim
    return claim


def _check_parts(claim: Claim) -> None:
    bad = [p for p in claim.parts if not isinstance(p, Part)]
    if bad:
        raise RegistrationError(f"{claim.id}: parts must be Part(...) records, got {bad[0]!r}")
    ids = [p.id for p in claim.parts]
    if len(set(ids)) != len(ids):
        raise RegistrationError(f"{claim.id}: two parts share an id ({ids})")
    for p in claim.parts:
        if not _PART_ID.match(p.id):
            raise RegistrationError(f"{claim.id}: part id {p.id!r} must be lower-case letters, digits, '_', '-', '.'")
        if p.relation not in RELATIONS:
            raise RegistrationError(f"{claim.id}: part {p.id!r} has unknown relation {p.relation!r}; use one of "
                                    f"{', '.join(RELATIONS)}")
        if not p.checkable and not p.reason.strip():
            raise RegistrationError(f"{claim.id}: part {p.id!r} is not checkable: say why (reason=...)")
        if p.modes is not None and (not p.modes or set(p.modes) - set(claim.modes)):
            raise RegistrationError(f"{claim.id}: part {p.id!r} modes {p.modes!r} must be a non-empty subset of "
                                    f"the claim's modes {claim.modes!r}")


ROLES = ("principal", "alternative")


def _check_readings(claim: Claim) -> None:
    """Every part in exactly one reading, exactly one principal reading, valid choices/scope."""
    rs = claim.readings
    bad = [r for r in rs if not isinstance(r, Reading)]
    if bad:
        raise RegistrationError(f"{claim.id}: readings must be Reading(...) records, got {bad[0]!r}")
    ids = [r.id for r in rs]
    if len(set(ids)) != len(ids):
        raise RegistrationError(f"{claim.id}: two readings share an id ({ids})")
    roles = [r.role for r in rs]
    if any(r not in ROLES for r in roles):
        raise RegistrationError(f"{claim.id}: a reading's role must be one of {ROLES}, got {roles}")
    if roles.count("principal") != 1:
        raise RegistrationError(f"{claim.id}: exactly one reading must be principal (got {roles.count('principal')})")
    part_ids = [p.id for p in claim.parts]
    seen: dict[str, str] = {}
    for r in rs:
        if not r.parts:
            raise RegistrationError(f"{claim.id}: reading {r.id!r} names no parts")
        for pid in r.parts:
            if pid not in part_ids:
                raise RegistrationError(f"{claim.id}: reading {r.id!r} names unknown part {pid!r} "
                                        f"(parts: {', '.join(part_ids)})")
            if pid in seen:
                raise RegistrationError(f"{claim.id}: part {pid!r} is in readings {seen[pid]!r} and {r.id!r}; "
                                        "a part belongs to exactly one reading")
            seen[pid] = r.id
    loose = [p for p in part_ids if p not in seen]
    if loose:
        raise RegistrationError(f"{claim.id}: parts {loose} belong to no reading")
    if claim.scope is not None and not isinstance(claim.scope, Scope):
        raise RegistrationError(f"{claim.id}: scope must be a Scope(...) record, got {claim.scope!r}")
    cn = [c.name for c in claim.choices]
    if any(not isinstance(c, Choice) for c in claim.choices) or len(set(cn)) != len(cn):
        raise RegistrationError(f"{claim.id}: choices must be Choice(...) records with distinct names")
    for p in claim.parts:
        if p.proof is not None and not p.identity:
            raise RegistrationError(f"{claim.id}: part {p.id!r} has a proof but is not marked identity=True")
        if p.identity and not callable(p.proof):
            raise RegistrationError(f"{claim.id}: identity part {p.id!r} needs proof=fn, fn() -> (holds, detail): "
                                    "its verdict comes from the symbolic proof")
        if p.identity and not p.checkable:
            raise RegistrationError(f"{claim.id}: identity part {p.id!r} must be checkable (its numerical check is "
                                    "kept as an implementation test)")
    for c in claim.choices:
        if not isinstance(c.values, tuple) or not c.values:
            raise RegistrationError(f"{claim.id}: choice {c.name!r} needs a non-empty tuple of values (its admissible "
                                    f"range), got {c.values!r}")
    _check_classes(claim)


def _check_classes(claim: Claim) -> None:
    """Identities say what sizes their proof covers; strict parts sit under the non-degeneracy rule."""
    from spectheory.judge.degeneracy import CASES
    for p in claim.parts:
        if p.identity and not str(p.proved_for).strip():
            raise RegistrationError(f"{claim.id}: identity part {p.id!r} must say what its proof covers (proved_for="
                                    "'general: symbolic B and k', or the sizes it was proved at)")
        if not isinstance(p.reconstructed, str):
            raise RegistrationError(f"{claim.id}: part {p.id!r}: reconstructed= says what was reconstructed and why "
                                    "(a sentence)")
    declared = None if claim.scope is None else claim.scope.degenerate
    cases = tuple(declared or ())
    bad = [c for c in cases if c not in CASES]
    if bad:
        raise RegistrationError(f"{claim.id}: unknown degeneracy case(s) {bad}; the rule's cases: {', '.join(CASES)}")
    if claim.strict_parts and declared is None:
        raise RegistrationError(
            f"{claim.id}: strict part(s) {[p.id for p in claim.strict_parts]} need a scope naming the cases of the "
            f"non-degeneracy rule in which their quantity cannot move (Scope(..., degenerate=(...)), () when none "
            f"can occur in scope; cases: {', '.join(CASES)})")


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


def _current_part() -> str | None:
    from spectheory.judge.evidence import _CURRENT_PART
    return _CURRENT_PART.get()


#: what a scope reason says when the comparison on the instance outside the scope was a tie (a strict
#: inequality met with equality): the report lists it beside the headline (non-degeneracy rule)
TIE_THERE = "graded there it fails by equality (a tie)"


@dataclass
class Context:
    """What a check gets besides its subject: the tier, the per-test error rate and seeds."""

    seed: int = 0
    quick: bool = False
    alpha_family: float = 0.01
    claim_id: str = ""
    subject_name: str = ""
    #: the claim's parts (``Part`` records; empty outside a registered claim's run)
    parts: tuple = ()
    #: the user's own pairs (name → MarkovPair) on a ``verify --instances`` run, else None
    user: dict | None = None
    #: the Bonferroni denominator when it is not the whole registry's (a user-pairs run)
    mc_total: int | None = None
    #: what this run is graded in, ``{part: modes}``: every part in its modes for the subject, the
    #: (part, mode) pairs a control must fail in for a control (:meth:`wants`); None: everything
    required: dict | None = None
    #: overrides of the claim's open choices on this run (``{name: value}``; :meth:`choice`)
    choices: dict = field(default_factory=dict)
    #: the claim's choices and scope (set by the runner from the registration)
    claim_choices: tuple = ()
    scope: Any = None
    alpha_test: float = field(init=False)
    mc_tests_run: int = field(default=0, init=False)
    #: least-slack records found by the check, per part (:meth:`least_slack`)
    slack: dict = field(default_factory=dict, init=False)
    #: notes the check leaves for the report (e.g. a user pair skipped by a comparison, and why)
    notes: list = field(default_factory=list, init=False)
    #: violations found outside the claim's scope (by the shrinker, or :meth:`outside`): reported
    #: as "outside the claim's scope", never as counterexamples (issue 24, item 2)
    scope_findings: list = field(default_factory=list, init=False)
    #: every instance the check asked the scope about (:meth:`out_of_scope`): ``(instance, part, reason
    #: or None)``; the non-degeneracy walk (tests/test_degeneracy.py) reads it
    scope_checked: list = field(default_factory=list, init=False)

    def __post_init__(self):
        self.alpha_test = self.alpha_family / max(1, total_mc_tests() if self.mc_total is None else self.mc_total)

    def pairs(self, default, *, fits: Callable | None = None, what: str = "") -> list[str]:
        """The instance names a comparison runs on: ``default`` (built-in instance names) on a
        normal run; on a user-pairs run (``verify --instances``) the user's pairs for which
        ``fits(pair)`` returns None. ``fits`` returns why a pair does not fit (``"needs an order-0
        pair"``); each skipped pair leaves a note naming ``what`` comparison skipped it. Build the
        pairs with :meth:`get`."""
        if self.user is None:
            return list(default)
        out = []
        for name, pair in self.user.items():
            why = fits(pair) if fits is not None else None
            if why:
                note = f"user pair {name!r} skipped{f' by {what}' if what else ''}: {why}"
                if note not in self.notes:
                    self.notes.append(note)
            else:
                out.append(name)
        return out

    def get(self, name: str):
        """The pair named ``name``: a user pair on a user-pairs run, else a built-in instance."""
        if self.user is not None and name in self.user:
            return self.user[name]
        from spectheory import instances
        return instances.get(name)

    def choice(self, name: str):
        """The value in force of the claim's open choice ``name``: the run's override (the runner
        sweeps a failing claim's choices over their admissible values) or the declared default."""
        if name in self.choices:
            return self.choices[name]
        for c in self.claim_choices:
            if c.name == name:
                return c.default
        raise KeyError(f"{self.claim_id}: no choice {name!r} declared "
                       f"(choices: {', '.join(c.name for c in self.claim_choices) or 'none'})")

    def out_of_scope(self, pair, *, part: str | None = None, **settings) -> str | None:
        """None if ``pair`` is inside the claim's scope (or the claim declares none), else why not
        (the non-degeneracy rule first, for the scope's ``degenerate`` cases; then the claim's guard).
        The rule speaks of strict parts only: for ``part`` (default the part being checked, ``with
        ctx.part(...)``) that is not strict it does not apply; with no part known it does."""
        part = part if part is not None else _current_part()
        why = None if self.scope is None else self.scope.why_out(pair, rule=self._strict(part), **settings)
        self._checked(pair, part, why)
        return why

    def degenerate(self, pair, *, part: str | None = None, **settings) -> str | None:
        """The non-degeneracy rule alone (the scope's ``degenerate`` cases, not the claim's guard): the
        reason ``pair`` is a degenerate instance, or None. For comparisons whose instances are chosen
        outside the claim's own guard on purpose (a negative control's sources)."""
        part = part if part is not None else _current_part()
        cases = () if self.scope is None or not self._strict(part) else (self.scope.degenerate or ())
        inst = (self.scope.resolve(pair) if cases and self.scope.resolve is not None and isinstance(pair, str)
                else pair)
        why = degenerate_reason(cases, inst, **settings) if cases else None
        self._checked(pair, part, why)
        return why

    def _strict(self, part: str | None) -> bool:
        known = next((p for p in self.parts if p.id == part), None) if part is not None else None
        return True if known is None else known.is_strict

    def _checked(self, pair, part, why):
        name = pair if isinstance(pair, str) else getattr(pair, "name", None) or type(pair).__name__
        self.scope_checked.append((str(name), part, why))

    def outside(self, ev: Evidence, reason: str) -> Evidence:
        """Label ``ev`` as evidence about an instance outside the claim's scope (``reason``, e.g.
        what :meth:`out_of_scope` returned): it becomes ``info``, shown under the claim as "outside
        the claim's scope: ...", and never enters a verdict. Returns ``ev``."""
        if not reason:
            raise ValueError(f"{self.claim_id}: say why the instance is outside the claim's scope")
        tie = ev.tie or (ev.outcome == "fail" and "tie" in (ev.note or ""))
        ev.out_of_scope = str(reason) + (f"; {TIE_THERE}" if tie and TIE_THERE not in str(reason) else "")
        ev.outcome, ev.tie = "info", False
        return ev

    def rng(self, *labels: str) -> np.random.Generator:
        """A Generator seeded from (run seed, claim id, subject, labels): reproducible and
        independent across checks."""
        return np.random.default_rng(derive_seed(self.seed, self.claim_id, self.subject_name, *labels))

    def size(self, default: int, quick: int) -> int:
        return quick if self.quick else default

    @property
    def modes(self) -> tuple:
        """The evidence modes this run is graded in (in any part)."""
        if self.required is None:
            return MODES
        return tuple(m for m in MODES if any(m in ms for ms in self.required.values()))

    def wants(self, mode: str, part: str | None = None) -> bool:
        """Whether this run's evidence in ``mode`` (of ``part``, or of any part) is graded. A check
        may skip work a control is not judged on: its Monte Carlo (``if ctx.wants("mc")``) when it
        must fail in exact mode only (the runner then accepts zero Monte Carlo tests from it instead
        of ``mc_tests``), a part's costly search (``if ctx.wants("exact", "rises")``) when it is not
        required in that part. The subject is graded in everything its claim lists."""
        if self.required is None:
            return True
        return mode in (self.required.get(part, ()) if part is not None else self.modes)

    def mc(self, ev: Evidence) -> Evidence:
        """Count a Monte Carlo test (the runner checks the count against ``mc_tests``)."""
        self.mc_tests_run += 1
        return ev

    def _known_part(self, part_id: str):
        if self.parts and part_id not in {p.id for p in self.parts}:
            raise KeyError(f"{self.claim_id}: no part {part_id!r} (parts: {', '.join(p.id for p in self.parts)})")
        return next((p for p in self.parts if p.id == part_id), None)

    def part(self, part_id: str) -> "PartTag":
        """Tag evidence with a part of the claim: ``tag = ctx.part("iid"); ev.append(tag(e))``
        (also a list), or ``with ctx.part("iid"): ...`` (every Evidence created inside, naming
        no part itself, bears on "iid")."""
        self._known_part(part_id)
        return PartTag(part_id)

    def least_slack(self, part_id: str, record) -> None:
        """Attach a least-slack record (:class:`spectheory.sims.slack.LeastSlack` or its dict) to an
        inequality-type part (relation ≤ ≥ < > ordering monotone)."""
        part = self._known_part(part_id)
        if part is not None and part.relation not in INEQUALITIES:
            raise ValueError(f"{self.claim_id}: part {part_id!r} has relation {part.relation!r}; a least-slack "
                             f"record belongs to an inequality-type part ({', '.join(INEQUALITIES)})")
        self.slack[part_id] = record.to_json() if hasattr(record, "to_json") else dict(record)


class PartTag(contextlib.AbstractContextManager):
    """What :meth:`Context.part` returns: call it on evidence (or a list) to tag it, or use it as
    a context manager."""

    def __init__(self, part_id: str):
        self.id = part_id
        self._cm = None

    def __call__(self, ev):
        if isinstance(ev, Evidence):
            ev.part = self.id
            return ev
        out = list(ev)
        for e in out:
            e.part = self.id
        return out

    def __enter__(self):
        self._cm = tagging(self.id)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        cm, self._cm = self._cm, None
        return cm.__exit__(*exc)
