"""Run registered claim checks and assemble a report (schema ``spectheory.report/3``,
docs/report_schema.md; the JSON Schema is ``sims/schemas/report-3.json``).

The headline of a claim is its principal reading's verdict; every other reading gets its own
verdict beside it (issue 24, item 1). When the principal reading fails, the subject is re-run at
every other value of each open choice (:class:`spectheory.sims.registry.Choice`, one at a time, the others at
their defaults, same seeds; controls stay at the defaults): the failure is robust if it persists
at every value, else the headline is ``depends`` (item 3). Identity parts get their verdict from
their symbolic proof (evidence mode ``proof``); their numerical check is an implementation test
(item 4). Real-model (``logits``) evidence gets its own verdict beside the paper-level one
(issue 25, item 3)."""
from __future__ import annotations

import platform
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from spectheory.judge import verdicts
from spectheory.judge.evidence import Evidence, combine
from spectheory.judge.format import versions

from . import papers
from .registry import INEQUALITIES, TIE_THERE, Claim, Context, select, total_mc_tests

SCHEMA = "spectheory.report/3"
#: how an info evidence's note starts when a check reports an instance outside the claim's scope
#: without :meth:`spectheory.sims.registry.Context.outside` (the report lists both the same way)
OUTSIDE = "outside the claim's scope"


def control_verdict(claim: Claim, control, evidence):
    """The judge's verdict of ``control`` of ``claim``: ``fails`` only if it fails in every
    (part, mode) it is required in. Returns (verdict, per mode, per part per mode)."""
    tag_parts(claim, evidence, f"control:{control.name}")
    return verdicts.control_verdict(claim.control_requirements(control), evidence, _relations(claim))


def _relations(claim: Claim) -> dict:
    return {p.id: p.relation for p in claim.parts}


def tag_parts(claim: Claim, evidence, who: str = "subject") -> None:
    """Give every evidence item its part (a one-part claim's only part when it names none) and
    refuse evidence for an unknown part, evidence of a multi-part claim that names no part, and
    graded evidence in a part declared not checkable."""
    parts = {p.id: p for p in claim.parts}
    only = claim.parts[0].id if len(claim.parts) == 1 else None
    for e in evidence:
        if e.part is None:
            if only is None:
                raise RuntimeError(f"{claim.id} ({who}): evidence {e.instance!r} names no part; tag it with "
                                   f"ctx.part(...) or part=... (parts: {', '.join(parts)})")
            e.part = only
        elif e.part not in parts:
            raise RuntimeError(f"{claim.id} ({who}): evidence {e.instance!r} names unknown part {e.part!r} "
                               f"(parts: {', '.join(parts)})")
        if not parts[e.part].checkable and e.outcome != "info":
            raise RuntimeError(f"{claim.id} ({who}): graded evidence {e.instance!r} in part {e.part!r}, declared "
                               "not checkable (only info evidence may go there)")


def _run_subject(claim: Claim, subject, subject_name: str, seed: int, quick: bool, alpha: float,
                 user: dict | None = None, mc_total: int | None = None, required: dict | None = None,
                 choices: dict | None = None, shrink: bool = True, rerun: bool = False):
    """One check; ``user``/``mc_total``: the user's pairs and their Bonferroni denominator on a
    ``--instances`` run; ``required``: the (part, mode) pairs a control is judged on (None: the
    subject, judged on every part in its modes); ``choices``: overrides of the claim's open
    choices; ``rerun``: a re-run of the subject at a choice value, graded in
    :attr:`Claim.rerun_required` only (evidence in other modes is dropped: it is not graded, and its
    Monte Carlo tests are not in the Bonferroni denominator); ``shrink``: look for the smallest
    counterexample when it fails."""
    if rerun:
        required = claim.rerun_required
    if required is None:
        required = {p.id: claim.part_modes(p) for p in claim.checkable_parts}
    ctx = Context(seed=seed, quick=quick, alpha_family=alpha, claim_id=claim.id, subject_name=subject_name,
                  parts=claim.parts, user=user, mc_total=mc_total, required=required,
                  claim_choices=claim.choices, scope=claim.scope, choices=dict(choices or {}))
    t0 = time.perf_counter()
    evidence = evidence_list(claim.check(ctx, subject), claim, subject_name)
    skipped_mc = ctx.mc_tests_run == 0 and not ctx.wants("mc")  # a control not graded in mc may skip it
    if user is None and ctx.mc_tests_run != claim.mc_tests and not skipped_mc:
        raise RuntimeError(f"{claim.id}: check ran {ctx.mc_tests_run} Monte Carlo tests but registered "
                           f"mc_tests={claim.mc_tests}; the Bonferroni split would be wrong")
    if user is not None and ctx.mc_tests_run > claim.user_pairs.mc_tests_per_pair * len(user):
        raise RuntimeError(f"{claim.id}: check ran {ctx.mc_tests_run} Monte Carlo tests on {len(user)} user pair(s) "
                           f"but declared at most {claim.user_pairs.mc_tests_per_pair} per pair (UserPairs)")
    tag_parts(claim, evidence, subject_name)
    if rerun:  # graded in its exact evidence where the part has any: the rest is not this run's evidence
        evidence = [e for e in evidence if e.outcome == "info" or e.mode in required.get(e.part, ())]
    if subject_name == "subject" and not rerun:
        for part in claim.checkable_parts:
            graded = {e.mode for e in evidence if e.outcome != "info" and e.part == part.id}
            missing = [m for m in claim.part_modes(part) if m != "logits" and m not in graded]
            if missing and user is not None:  # the user's pairs may not fit every comparison
                where = "" if len(claim.parts) == 1 else f" part {part.id!r}:"
                ctx.notes.append(f"{where} no user pair fits the {'/'.join(missing)} comparison(s)".strip())
            elif missing:
                where = "" if len(claim.parts) == 1 else f" part {part.id!r}"
                raise RuntimeError(f"{claim.id}:{where} registered modes {claim.part_modes(part)} but the check "
                                   f"graded no evidence in {missing} (a part that cannot be graded is declared "
                                   "checkable=False with a reason)")
    verdict = combine(evidence)
    counterexample = (claim.shrink(ctx, subject) if shrink and verdict == "fails" and claim.shrink and user is None
                      else None)
    return Result(verdict, evidence, counterexample, time.perf_counter() - t0, ctx.slack, ctx.notes,
                  ctx.scope_findings, scope_checked=ctx.scope_checked)


class CheckReturnError(TypeError):
    """A check returned something other than a list of Evidence (the message says what)."""


def evidence_list(returned, claim: Claim, who: str) -> list:
    """What a check returned, as a list of Evidence; :class:`CheckReturnError` naming what it
    returned instead (a float, None from a missing ``return``, a tuple of numbers, ...)."""
    what = f"{claim.id} ({who}): its check {getattr(claim.check, '__qualname__', claim.check)!s}"
    want = "a check returns a list of Evidence (spectheory.sims.shapes builds them: each, sweep, mc_law, ...)"
    if isinstance(returned, Evidence):
        raise CheckReturnError(f"{what} returned one Evidence, not a list of them; {want}: return [evidence]")
    if returned is None or isinstance(returned, (str, bytes, dict)) or not hasattr(returned, "__iter__"):
        got = "None (no `return` statement?)" if returned is None else f"a {type(returned).__name__} ({returned!r:.60})"
        raise CheckReturnError(f"{what} returned {got}; {want}")
    out = list(returned)
    for i, e in enumerate(out):
        if not isinstance(e, Evidence):
            raise CheckReturnError(f"{what} returned a list whose item {i} is a {type(e).__name__} ({e!r:.60}), not an "
                                   f"Evidence; {want}")
    return out


@dataclass
class Result:
    """What one (claim, subject or control) check gives the report."""

    verdict: str
    evidence: list
    counterexample: dict | None
    seconds: float
    slack: dict
    notes: list = field(default_factory=list)
    #: violations found outside the claim's scope (the shrinker's), for the report
    scope_findings: list = field(default_factory=list)
    #: the subject re-run at every other value of each of the claim's choices (whatever its verdict
    #: at the defaults): ``[{"choice", "value", "parts": {part: verdict}, "implementation":
    #: {identity part: verdict}, "slack": {part: record}, "seconds"}]``
    choice_runs: list = field(default_factory=list)
    #: parts a control left inconclusive (set by the report assembly)
    demoted: set = field(default_factory=set)
    #: every instance the check asked the scope about: ``(instance, part, reason or None)``
    scope_checked: list = field(default_factory=list)


def proof_evidence(claim: Claim) -> list[Evidence]:
    """Evidence of mode ``proof`` for each identity part: its ``proof()`` run (pass if it returns
    holds; a proof that raises fails, with the error as its note)."""
    out = []
    for p in claim.parts:
        if not p.identity:
            continue
        try:
            ok, detail = p.proof()
        except Exception as err:  # noqa: BLE001 - a broken proof is a failed proof, said so
            ok, detail = False, f"the proof raised {type(err).__name__}: {err}"
        out.append(Evidence("proof", f"{p.id}: symbolic identity", None, None, part=p.id,
                            test="symbolic proof (sympy): the identity's two sides simplify to the same expression",
                            outcome="pass" if ok else "fail", note=str(detail)))
    return out


def part_verdicts(claim: Claim, evidence) -> tuple[dict, dict]:
    """The parts' paper-level verdicts from a subject's evidence (exact, Monte Carlo and proof;
    logits evidence has its own verdict, :func:`spectheory.judge.verdicts.real_pair_verdict`).
    An identity part's verdict is its proof's; its numerical evidence is its implementation test.
    Returns (verdict per part, implementation-test verdict per identity part)."""
    syn = verdicts.synthetic(evidence)
    out, impl = {}, {}
    for p in claim.parts:
        mine = [e for e in syn if e.part == p.id]
        if not p.checkable:
            out[p.id] = verdicts.NOT_CHECKABLE
        elif p.identity:
            out[p.id] = combine([e for e in mine if e.mode == "proof"])
            impl[p.id] = verdicts.combine_part([e for e in mine if e.mode != "proof"], p.relation)
        else:
            out[p.id] = verdicts.combine_part(mine, p.relation)
    return out, impl


def principal_verdict(claim: Claim, part_v: dict) -> str:
    return verdicts.reading_verdict(part_v, claim.principal.parts)


def withheld(part_v: dict, impl: dict, demoted=()) -> dict:
    """The part verdicts a run's evidence gives, with what the report withholds, the same way at the
    defaults and at every choice value: an identity part whose implementation test fails, and a part
    one of its negative controls (run at the defaults) did not catch, are ``inconclusive`` unless they
    fail."""
    out = dict(part_v)
    for pid, iv in impl.items():
        if iv == "fails" and out[pid] != "fails":
            out[pid] = "inconclusive"
    for pid in demoted:
        if out.get(pid) not in ("fails", verdicts.NOT_CHECKABLE, None):
            out[pid] = "inconclusive"
    return out


def part_slack(claim: Claim, evidence, records: dict) -> dict:
    """Each inequality part's least slack in one run: its least-slack record (the searched tightest
    instance) and the slack of every graded comparison of it (``Evidence.slack``), the least of them,
    with the instance where it was found: ``{part: {"value", "instance", "source"}}`` (source
    ``search`` or ``exact`` / ``mc``: exact comparisons preferred, Monte Carlo ones where the part has
    none)."""
    import math
    out = {}
    for p in claim.checkable_parts:
        if p.relation not in INEQUALITIES:
            continue
        cands = []
        rec = records.get(p.id)
        if rec and rec.get("value") is not None and math.isfinite(float(rec["value"])):
            inst = rec.get("instance")
            if isinstance(inst, dict):
                inst = ", ".join(f"{k}={v}" for k, v in inst.items())
            cands.append((float(rec["value"]), inst if isinstance(inst, str) else rec.get("call", ""), "search"))
        mine = [e for e in evidence if e.part == p.id and e.outcome != "info" and e.slack is not None
                and e.mode in ("exact", "mc") and math.isfinite(float(e.slack))]
        exact = [e for e in mine if e.mode == "exact"]
        for e in exact or mine:
            cands.append((float(e.slack), e.instance, e.mode))
        if cands:
            v, inst, src = min(cands, key=lambda t: t[0])
            out[p.id] = {"value": v, "instance": inst, "source": src}
    return out


def _sweep_choices(claim: Claim, res: Result, seed: int, quick: bool, alpha: float, mc_total) -> None:
    """Re-run the subject at every non-default value of each open choice (one choice at a time,
    the others at their defaults, same seeds, no shrinking), graded in :attr:`Claim.rerun_required`,
    and keep each run's part verdicts, implementation tests and least slack per part."""
    proofs = [e for e in res.evidence if e.mode == "proof"]
    for ch in claim.choices:
        for value in ch.values:
            if value == ch.default:
                continue
            r = _run_subject(claim, claim.subject, "subject", seed, quick, alpha, None, mc_total, None,
                             choices={ch.name: value}, shrink=False, rerun=True)
            pv, impl = part_verdicts(claim, list(r.evidence) + proofs)
            res.choice_runs.append({"choice": ch.name, "value": value, "parts": pv, "implementation": impl,
                                    "slack": part_slack(claim, r.evidence, r.slack), "seconds": r.seconds})


def _run_task(claim_id: str, control: str | None, seed: int, quick: bool, alpha: float,
              user: dict | None = None, mc_total: int | None = None, sources: tuple = ()):
    """One (claim, control) check by name, so a worker process can run it. ``sources``: the
    user's claim modules (:mod:`spectheory.sims.user_claims`) a worker imports before looking the claim up.
    A user claim whose check raises, or breaks a registry rule at run time, raises
    :class:`spectheory.sims.user_claims.UserClaimsError` naming the claim (a usage error, not a crash)."""
    from . import user_claims
    from .registry import load_all
    user_claims.load_many(sources)
    claim = load_all()[claim_id]
    ctl = None if control is None else next(c for c in claim.controls if c.name == control)
    subject = claim.subject if ctl is None else ctl.subject
    who = "subject" if ctl is None else f"control:{ctl.name}"
    try:
        res = _run_subject(claim, subject, who, seed, quick, alpha, user, mc_total,
                           None if ctl is None else claim.control_requirements(ctl))
        if ctl is None:
            res.evidence = list(res.evidence) + proof_evidence(claim)
            if user is None and claim.choices:  # every claim's choices, whatever its verdict at the defaults
                _sweep_choices(claim, res, seed, quick, alpha, mc_total)
        return res
    except Exception as err:  # noqa: BLE001 - only user claims are rewrapped
        if not user_claims.is_user_claim(claim_id):
            raise
        if isinstance(err, CheckReturnError):  # located at the check's definition, not in this runner
            raise user_claims.UserClaimsError(f"{err}{user_claims.check_location(claim.check)}") from None
        origin = getattr(sys.modules.get(claim.check.__module__), "__file__", "") or ""
        raise user_claims.UserClaimsError(f"{claim_id} ({who}): "
                                          f"{user_claims.describe_error(err, origin, user_claims.check_location(claim.check))}"
                                          ) from None


def _run_group(items, seed: int, quick: bool, alpha: float, user: dict | None = None, mc_total: int | None = None,
               sources: tuple = ()):
    """Several (claim id, control name) checks in one worker, in order: a family's checks share
    its compiled kernels, so keeping them in one process compiles each kernel once."""
    return [_run_task(cid, ctl, seed, quick, alpha, user, mc_total, sources) for cid, ctl in items]


def family_of(claim: Claim) -> str:
    """The family of a claim: the claim module that registered it (``spectheory.sims.claims.ersd`` → ``ersd``)."""
    return claim.check.__module__.rsplit(".", 1)[-1]


#: seconds one family's checks took in a `verify --quick` run with a cold Numba cache (2026-11-27,
#: 2 cores): the longest go to the workers first (longest-processing-time order), so the run does not
#: wait at the end for a family whose kernels compile longest (cold --quick: 101 s in order of size,
#: 74 s in this order). Only the order of the work depends on it, never a verdict.
COLD_SECONDS = {"spectheory.sims.claims.ecsv": 30, "spectheory.sims.claims.sb": 25, "spectheory.sims.claims.ersd": 20, "spectheory.sims.claims.se": 16,
                "spectheory.sims.claims.multidraft": 12, "spectheory.sims.claims.sd": 6}


def _family_groups(tasks) -> list[list[tuple[str, str | None]]]:
    """Tasks grouped by the claim module that registered them (one family each), the families
    that take longest first (:data:`COLD_SECONDS`; other modules, e.g. a user's, by their number of
    checks, after the built-in ones)."""
    groups: dict[str, list] = {}
    for c, k in tasks:
        groups.setdefault(c.check.__module__, []).append((c.id, None if k is None else k.name))
    order = sorted(groups, key=lambda m: (-COLD_SECONDS.get(m, 0), -len(groups[m])))
    return [groups[m] for m in order]


def user_mc_total(n_pairs: int) -> int:
    """The Bonferroni denominator of a user-pairs run: every Monte Carlo test that the claims
    taking pairs (subjects and controls) may run on ``n_pairs`` pairs (whatever ``--claims``
    selects, as for a normal run)."""
    from .registry import load_all
    return sum(c.user_pairs.mc_tests_per_pair * n_pairs * (1 + len(c.controls))
               for c in load_all().values() if c.user_pairs is not None)


class _Progress:
    """Progress of a run: a bar with an ETA on a terminal (``bar``), and one line per finished
    family through ``log`` (printed above the bar, or alone without a terminal)."""

    def __init__(self, total: int, groups, by_id, bar: bool, log):
        self.total, self.log, self.done, self.t0 = total, log, 0, time.perf_counter()
        self.n_groups = len(groups)
        self.groups_done = 0
        self.bar = None
        if bar:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            from rich.console import Console
            self.bar = Progress(TextColumn("{task.description:<44}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), transient=True,
                                console=Console(stderr=True))
            self.bar.start()
            self.task = self.bar.add_task("checks", total=total)
        self.by_id = by_id

    def describe(self, text: str):
        if self.bar:
            self.bar.update(self.task, description=text)

    def advance(self, n: int = 1):
        self.done += n
        if self.bar:
            self.bar.advance(self.task, n)

    def family_done(self, group, seconds: float):
        self.groups_done += 1
        fam = family_of(self.by_id[group[0][0]])
        n_claims = len({cid for cid, _ in group})
        line = (f"{fam} family done: {n_claims} claim{'s' * (n_claims != 1)}, {len(group)} checks in {seconds:.1f} s "
                f"({self.groups_done} of {self.n_groups} families; {self.done}/{self.total} checks, "
                f"{time.perf_counter() - self.t0:.0f} s elapsed)")
        if self.bar:
            self.bar.console.print(line)
        elif self.log:
            self.log(line)

    def stop(self):
        if self.bar:
            self.bar.stop()


def run_claims(pattern: str = "*", *, quick: bool = False, seed: int = 0, alpha: float = 0.01,
               progress: bool = True, jobs: int = 1, executor=None, extra_evidence=None,
               extra_source: str | None = None, log=None, pairs: dict | None = None,
               pairs_source: str | None = None, claims_from=(), builtin: bool = True) -> dict:
    """Run every claim matching ``pattern`` and its negative controls; return the report.
    ``jobs`` > 1 (or an ``executor``) runs the checks in parallel (a local process pool,
    :mod:`spectheory.sims.sweep`), each family's checks in one worker so its kernels compile once;
    ``jobs=0`` means one worker per CPU (serial on one CPU). Every check is seeded from (seed,
    claim, subject), so the report is the one the serial run gives (timings aside).

    progress: a bar with an ETA (when true and the output is a terminal); log: a callable that
    gets one line each time a family finishes (``print``, or the command line's echo), used when
    there is no bar.

    extra_evidence: ``{claim_id: [Evidence, ...]}`` computed elsewhere (real-model ``logits``
    evidence: the command line computes it with ``validate``, which this floor never imports);
    it joins the subject's evidence and gets its own verdict, the real pair's, beside the paper-level
    one (the claim's ``sources.real``; it never enters the headline). extra_source: where it came from (the report's
    ``run.logits_run``).

    pairs: the user's own pairs (``{name: MarkovPair}``, :mod:`spectheory.sims.instances_file`): only the
    claims that take pairs (registered with ``user_pairs=``) run, each on these pairs instead of
    its built-in instances (docs/instances.md); pairs_source: where they came from (the report's
    ``run.instances``).

    claims_from: the user's claim modules (``.py`` paths, module names, or ``"entry-points"``;
    :mod:`spectheory.sims.user_claims`, docs/your_claims.md), loaded before ``pattern`` is matched; with
    ``builtin=False`` only their claims run ("instead of" the built-in registry) and the
    Bonferroni split counts only their Monte Carlo tests; with ``builtin=True`` they run beside the
    built-in claims ``pattern`` selects. A declaration problem raises
    :class:`spectheory.sims.user_claims.UserClaimsError` before any report exists."""
    from spectheory.checks import check_int, check_real

    from . import user_claims
    if isinstance(claims_from, str):
        claims_from = (claims_from,)
    sources = tuple(claims_from or ())
    mine = user_claims.load_many(sources)
    seed = check_int(seed, "seed", min=0)
    alpha = check_real(alpha, "alpha (family-wise error rate)", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    jobs = check_int(jobs, "jobs", min=0)
    if jobs == 0:
        import os
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    claims = select(pattern)
    user = mc_total = None
    if sources and not builtin:
        claims = [c for c in claims if c.id in mine]
        if not claims:
            raise ValueError(f"no claim of {', '.join(sources)} matches {pattern!r}; theirs: {', '.join(mine)}")
        from .registry import load_all
        mc_total = sum(load_all()[cid].n_mc_tests for cid in mine)
    if pairs is not None:
        user = dict(pairs)
        if not user:
            raise ValueError("no pairs given (the instances file lists none)")
        claims = [c for c in claims if c.user_pairs is not None]
        if not claims:
            raise ValueError(f"no claim matching {pattern!r} takes pairs; claims that do: "
                             + ", ".join(c.id for c in takes_pairs()))
        mc_total = user_mc_total(len(user))
    by_id = {c.id: c for c in claims}
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    tasks = [(c, None) for c in claims] + [(c, ctl) for c in claims for ctl in c.controls]
    results: dict = {}
    extra = dict(extra_evidence or {})
    groups = _family_groups(tasks)
    bar = bool(progress) and _is_terminal()
    prog = _Progress(len(tasks), groups, by_id, bar, log)
    try:
        if (jobs > 1 and len(groups) > 1) or executor is not None:
            import concurrent.futures as cf

            from .sweep import local_executor
            ex = executor or local_executor(min(jobs, len(groups)))
            prog.describe(f"{len(groups)} families on {min(jobs, len(groups)) if executor is None else 'the'} workers")
            try:
                futs = {ex.submit(_run_group, g, seed, quick, alpha, user, mc_total, sources): (g, time.perf_counter())
                        for g in groups}
                for fut in cf.as_completed(futs):
                    g, t_sub = futs[fut]
                    for key, res in zip(g, fut.result()):
                        results[key] = res
                    prog.advance(len(g))
                    prog.family_done(g, time.perf_counter() - t_sub)
            finally:
                if executor is None:
                    ex.shutdown(wait=True, cancel_futures=True)
        else:
            for g in sorted(groups, key=lambda g: list(by_id).index(g[0][0])):  # registry order
                t_g = time.perf_counter()
                for cid, ctl in g:
                    prog.describe(cid if ctl is None else f"{cid} [control {ctl}]")
                    results[(cid, ctl)] = _run_task(cid, ctl, seed, quick, alpha, user, mc_total, sources)
                    prog.advance()
                prog.family_done(g, time.perf_counter() - t_g)
    finally:
        prog.stop()
    for claim in claims:  # a user claim's control that never ran is a declaration problem
        if claim.id in mine:
            user_claims.check_run(claim, results[(claim.id, None)].evidence,
                                  {c.name: results[(claim.id, c.name)].evidence for c in claim.controls})
    for cid, evs in extra.items():  # real-logit evidence joins the claim's evidence (its own verdict, serial or parallel)
        if (cid, None) in results and evs:
            r = results[(cid, None)]
            evs = list(evs)
            tag_parts(by_id[cid], evs, "extra evidence")
            r.evidence = list(r.evidence) + evs

    out = [_claim_entry(claim, results, user is not None, seed, quick) for claim in claims]
    if user is not None:  # the report text states the instances actually used, not the built-in ones
        names = ", ".join(user)
        for c in out:
            c["instances_used"] = (f"This run used your pairs ({names}, from {pairs_source or 'the given pairs'}) "
                                   "in place of the built-in instances the reading names; a pair a comparison "
                                   "could not use is listed under the notes.")
    m = total_mc_tests() if mc_total is None else mc_total
    run = {"claims_pattern": pattern, "claims_from": list(sources), "seed": seed, "quick": quick, "alpha_family": alpha,
           "mc_tests_in_registry": m, "alpha_per_test": alpha / max(1, m),
           "correction": "Bonferroni over every Monte Carlo test in the registry (controls included)"
                         if mc_total is None else "Bonferroni over every Monte Carlo test of the claims of "
                         + ", ".join(sources) + " (controls included)" if user is None else "Bonferroni over every Monte Carlo test the claims taking pairs may "
                                              "run on these pairs (controls included)",
           "power": 0.9, "logits_run": extra_source, "started_at": started.isoformat(timespec="seconds"),
           "duration_s": round(time.perf_counter() - t0, 2), "versions": versions(),
           "platform": platform.platform(),
           "implementation_errors": [f"{c['id']}: {n}" for c in out for n in c["implementation_errors"]]}
    if user is not None:
        run["instances"] = {"source": pairs_source, "pairs": [_describe(n, p) for n, p in user.items()]}
    return {"schema": SCHEMA, "claims": out, "run": run}


def _describe(name: str, pair) -> dict:
    return {"name": name, "V": int(pair.V), "order": int(pair.order), "states": int(pair.n_states),
            **({"params": pair.params} if getattr(pair, "params", None) else {})}


def _is_terminal() -> bool:
    import sys
    return sys.stderr.isatty()


def takes_pairs() -> list[Claim]:
    """The registered claims that run on the user's own pairs (``user_pairs=``), in registry order."""
    return [c for c in select("*") if c.user_pairs is not None]


def _counterexamples(cex) -> list[dict]:
    """A shrink's result as a list: None, one counterexample, or one per failing part (each naming
    its ``part``)."""
    return [x for x in (cex if isinstance(cex, list) else [cex]) if x]


def _failing_part(claim: Claim, evidence, cex) -> str | None:
    """The part a counterexample belongs to: the one it names, else the first failing part."""
    if cex and cex.get("part") in {p.id for p in claim.parts}:
        return cex["part"]
    for p in claim.checkable_parts:
        if verdicts.part_verdict(evidence, p.id) == "fails":
            return p.id
    return None


def settings_line(cex: dict) -> str:
    """A counterexample's settings in one line (``V=3, B=2``)."""
    return ", ".join(f"{k}={v}" for k, v in cex.items()
                     if k not in ("source", "claimed", "measured", "call", "part", "what", "tie", "note"))


def _graded_modes(evidence, part: str) -> set:
    return {e.mode for e in evidence if e.part == part and e.outcome != "info"}


def _value_key(v) -> str:
    """A choice's value as a JSON object key (``4``, ``0.3``, ``flat``, ``[1, 2]``)."""
    import json
    return v if isinstance(v, str) else json.dumps(v.tolist() if hasattr(v, "tolist") else v, ensure_ascii=False)


def _json_value(v):
    """A choice's value in the JSON: as is when it is a JSON scalar, else as text (:func:`_value_key`)."""
    return v if v is None or isinstance(v, (bool, int, float, str)) else _value_key(v)


def _scope_findings(claim: Claim, evidence, res: Result) -> list[dict]:
    """What was found outside the claim's scope: evidence labelled so (``Context.outside`` or an
    info note starting "outside the claim's scope") and the shrinker's out-of-scope failures."""
    out = []
    for e in evidence:
        note = e.note or ""
        if e.out_of_scope or (e.outcome == "info" and note.startswith(OUTSIDE)):
            reason = e.out_of_scope or note[len(OUTSIDE):].lstrip(" :")
            out.append({"part": e.part, "instance": e.instance, "reason": reason,
                        "claimed": _json_num(e.claimed), "measured": _json_num(e.measured), "source": "check"})
    for f in res.scope_findings:
        out.append({**f, "source": "shrinker"})
    return out


def _json_num(x):
    from spectheory.judge.evidence import _num
    return _num(x)


def _choices_entry(claim: Claim, res: Result, part_v: dict) -> tuple[list, dict]:
    """The claim's choices with the principal reading's verdict (and every part's) at each value,
    and the headline over them (:func:`spectheory.judge.verdicts.over_choices`). ``part_v``: the
    part verdicts at the defaults, as the report gives them (controls and implementation tests
    applied); a re-run's part verdicts go through the same :func:`withheld` (the controls run at the
    defaults only)."""
    default = principal_verdict(claim, part_v)
    out, swept = [], {}
    for ch in claim.choices:
        entry = {"name": ch.name, "default": _json_value(ch.default), "values": [_json_value(v) for v in ch.values],
                 "why": ch.why, "invented": bool(ch.invented), "verdicts": {}, "parts": {}}
        runs = [r for r in res.choice_runs if r["choice"] == ch.name]
        if runs:
            vals = list(ch.values) if ch.default in ch.values else [ch.default] + list(ch.values)
            for v in vals:
                if v == ch.default:
                    pv = part_v
                else:
                    run = next(r for r in runs if r["value"] == v)
                    pv = withheld(run["parts"], run.get("implementation", {}), res.demoted)
                key = _value_key(v)
                entry["verdicts"][key] = principal_verdict(claim, pv)
                entry["parts"][key] = dict(pv)
            swept[ch.name] = {k: v for k, v in entry["verdicts"].items() if k != _value_key(ch.default)}
        out.append(entry)
    head = verdicts.over_choices(default, swept)
    head["swept"] = bool(swept)
    return out, head


def _choice_text(choices: list, names: list) -> str:
    """``k_max: holds at 2, fails at 4 (default), fails at 8``; several choices `;`-joined."""
    bits = []
    for ch in choices:
        if ch["name"] not in names:
            continue
        d = _value_key(ch["default"])
        bits.append(f"{ch['name']}: " + ", ".join(f"{v} at {k}" + (" (default)" if k == d else "")
                                                  for k, v in ch["verdicts"].items()))
    return "; ".join(bits)


def _depends_text(choices: list, depends: list) -> str:
    """``depends on k_max: holds at 2, fails at 4 (default)``; several choices `;`-joined."""
    return "depends on " + _choice_text(choices, depends)


def _undecided_text(choices: list, undecided: list) -> str:
    """``inconclusive over σ: holds at 0.1 (default), inconclusive at 0.3``: a verdict that some
    value of a choice leaves undecided does not persist across its range."""
    return "inconclusive over " + _choice_text(choices, undecided)


def least_slack_over_choices(claim: Claim, res: Result, part_v: dict, seed: int, quick: bool) -> dict:
    """Each holding inequality part of the principal reading: its least slack over the defaults and every
    choice value, where, and the call that recomputes it (:func:`slack_at`)."""
    runs = [(None, None, part_slack(claim, res.evidence, res.slack))]
    runs += [(r["choice"], r["value"], r.get("slack") or {}) for r in res.choice_runs]
    out = {}
    for pid in claim.principal.parts:
        if part_v.get(pid) != "holds":
            continue
        found = [(rec[pid]["value"], ch, v, rec[pid]) for ch, v, rec in runs if pid in rec]
        if not found:
            continue
        value, ch, v, rec = min(found, key=lambda t: t[0])
        choices = {} if ch is None else {ch: v}
        out[pid] = {"value": value, "choice": ch, "choice_value": _json_value(v) if ch is not None else None,
                    "instance": rec["instance"], "source": rec["source"],
                    "call": f"import spectheory.sims.runner; spectheory.sims.runner.slack_at({claim.id!r}, {pid!r}, {choices!r}, "
                            f"quick={bool(quick)}, seed={int(seed)})"}
    return out


def slack_at(claim_id: str, part: str, choices: dict | None = None, *, quick: bool = False, seed: int = 0) -> float:
    """A part's least slack with the claim's choices at ``choices`` (the others at their defaults):
    the subject's check re-run as the sweep runs it (:func:`part_slack`). The call a report prints
    beside a hold's least slack over the choices."""
    from .registry import load_all
    claim = load_all()[claim_id]
    r = _run_subject(claim, claim.subject, "subject", seed, quick, 0.01, choices=dict(choices or {}), shrink=False,
                     rerun=True)
    return part_slack(claim, r.evidence, r.slack)[part]["value"]


def _degenerate(scope_findings: list) -> list[dict]:
    """The scope findings that are degenerate instances (the non-degeneracy rule), each with its
    case and whether the comparison there is a tie (claimed = measured)."""
    from spectheory.judge.degeneracy import case_of
    out = []
    for f in scope_findings:
        case = case_of(f.get("reason"))
        if case is None:
            continue
        c, m = f.get("claimed"), f.get("measured")
        tie = TIE_THERE in (f.get("reason") or "") or (
            isinstance(c, (int, float)) and isinstance(m, (int, float)) and abs(c - m) <= 1e-9 * max(1.0, abs(c)))
        out.append({"case": case, "part": f.get("part"), "instance": f.get("instance"), "tie": bool(tie)})
    return out


def _claim_entry(claim: Claim, results, user: bool = False, seed: int = 0, quick: bool = False) -> dict:
    """One claim of the report: parts and their verdicts, readings and their verdicts (the
    principal one is the headline, over every value of the open choices), what each verdict rests
    on (evidence, an identity, the reconstructed model), scope findings and the degenerate
    instances among them, the open choices with the verdict at each value, a hold's least slack over
    them, the evidence, every control's verdict per part per mode, and the real pair's own
    verdict. ``user``: a user-pairs run, where a part no user pair fits is not checkable and
    controls are required only where the subject was graded (its choices are not swept)."""
    res = results[(claim.id, None)]
    evidence, cex, secs, slack = res.evidence, res.counterexample, res.seconds, res.slack
    part_v, impl = part_verdicts(claim, evidence)
    reasons = {p.id: p.reason for p in claim.parts}
    if user:
        for p in claim.checkable_parts:
            if not _graded_modes(verdicts.synthetic(evidence), p.id):
                part_v[p.id] = verdicts.NOT_CHECKABLE
                reasons[p.id] = "no user pair fits this part's comparisons (see the notes)"
    part_notes: dict[str, list] = {p.id: [] for p in claim.parts}
    notes, controls = list(res.notes), []
    errors = []
    for pid, iv in impl.items():
        if iv == "fails":  # a proved identity whose code disagrees: our bug, not the paper's
            note = (f"IMPLEMENTATION ERROR in identity part {pid!r}: its numerical check (the implementation test) "
                    "fails although the identity is proved; the code disagrees with the model, so this part's verdict "
                    "is withheld (inconclusive) until it is fixed")
            errors.append(note)
            notes.append(note)
            part_notes[pid].append(note)
            if part_v[pid] != "fails":
                part_v[pid] = "inconclusive"
    res.demoted = set()
    one = len(claim.parts) == 1
    for ctl in claim.controls:
        cres = results[(claim.id, ctl.name)]
        cev, ccex, csecs, cslack = cres.evidence, cres.counterexample, cres.seconds, cres.slack
        need = claim.control_requirements(ctl)
        if user:  # on the user's pairs a control is required only where the subject was graded
            need = {p: tuple(m for m in ms if m in _graded_modes(evidence, p)) for p, ms in need.items()}
            need = {p: ms for p, ms in need.items() if ms}
        tag_parts(claim, cev, f"control:{ctl.name}")
        cv, per_mode, per_part = (verdicts.control_verdict(need, cev, _relations(claim)) if need
                                  else (verdicts.NOT_CHECKABLE, verdicts.mode_verdicts(cev), {}))
        entry = {"name": ctl.name, "description": ctl.description, "verdict": cv,
                 "modes": per_mode, "required_modes": list(claim.control_modes(ctl)),
                 "parts": per_part, "required": {p: list(m) for p, m in need.items()},
                 "evidence": [e.to_json() for e in cev], "counterexample": (_counterexamples(ccex) or [None])[0],
                 "seconds": round(csecs, 3)}
        if cslack:
            entry["least_slack"] = cslack
        controls.append(entry)
        if cv == "fails":
            continue
        for pid, modes in need.items():
            missed = [m for m in modes if m != "logits" and per_part.get(pid, {}).get(m) != "fails"]
            if not missed:
                continue
            res.demoted.add(pid)  # at every choice value too: the controls run at the defaults only
            if part_v[pid] in ("fails", verdicts.NOT_CHECKABLE):
                continue
            part_v[pid] = "inconclusive"
            where = "" if one else f" in part {pid!r}"
            note = (f"negative control {ctl.name!r} did not fail{where} in mode(s) {missed} "
                    f"(per mode: {per_part.get(pid) if not one else per_mode}): the check cannot tell a broken "
                    "algorithm from a correct one there")
            notes.append(note)
            part_notes[pid].append(note)
    by_part: dict = {}
    kept = []
    for x in _counterexamples(cex):  # each counterexample on the part it names (else the first failing one)
        pid = _failing_part(claim, evidence, x)
        if pid is not None and part_v.get(pid) != "fails":   # a failing instance of an undecided part
            part_notes[pid].append(f"a failing instance was found ({settings_line(x)}), but the part is "
                                   f"{part_v[pid]}: not a counterexample")
            continue
        by_part.setdefault(pid, x)
        kept.append(x)
    cex = kept or None   # the claim shows the shrink's first counterexample of a failing part
    syn = verdicts.synthetic(evidence)
    classes = {p.id: p.verdict_class for p in claim.parts}
    parts = []
    for p in claim.parts:
        used = [e for e in syn if e.part == p.id and (e.mode == "proof") == p.identity]
        entry = {"id": p.id, "statement": p.statement, "relation": p.relation, "checkable": p.checkable,
                 "reason": reasons[p.id], "modes": list(claim.part_modes(p)) + (["proof"] if p.identity else []),
                 "verdict": part_v[p.id], "failure": verdicts.failure_kind(used) if part_v[p.id] == "fails" else None,
                 "identity": bool(p.identity), "reading": claim.reading_of(p.id).id,
                 "evidence": sum(e.part == p.id for e in evidence),
                 "counterexample": by_part.get(p.id),
                 "least_slack": slack.get(p.id), "notes": part_notes[p.id],
                 "class": classes[p.id], "strict": p.is_strict}
        if p.identity:
            entry["implementation_test"] = impl.get(p.id)
            entry["proved_for"] = p.proved_for
        if p.reconstructed:
            entry["reconstructed"] = p.reconstructed
        parts.append(entry)
    readings = []
    for r in claim.readings:
        rv = {pid: part_v[pid] for pid in r.parts}
        readings.append({"id": r.id, "role": r.role, "kind": r.kind, "statement": r.statement, "quote": r.quote,
                         "why": r.why, "parts": list(r.parts), "verdict": verdicts.reading_verdict(part_v, r.parts),
                         "class": verdicts.reading_class(part_v, classes, r.parts),
                         "summary": _reading_summary(claim, r.parts, rv, parts)})
    principal = next(r for r in readings if r["role"] == "principal")
    choices, head = _choices_entry(claim, res, part_v)
    verdict, summary = head["verdict"], principal["summary"]
    if head["depends_on"]:
        summary = _depends_text(choices, head["depends_on"])
    elif head["undecided_on"]:
        summary = _undecided_text(choices, head["undecided_on"])
    # robust: the headline persists at every value of every choice (vacuously with none); null when the
    # choices were not swept (a user-pairs run)
    robust = None if user else (not head["depends_on"] and not head["undecided_on"])
    found_outside = _scope_findings(claim, evidence, res)
    scope = {"statement": claim.scope.statement if claim.scope is not None else None,
             "out_of_scope": found_outside,
             "degenerate_cases": list(claim.scope.degenerate or ()) if claim.scope is not None else [],
             "checked": len(res.scope_checked)}
    real = verdicts.real_pair_verdict(evidence)
    keys = papers.keys_of(claim.paper)
    entry = {"id": claim.id, "verdict": verdict, "summary": summary,
             "class": principal["class"] if verdict == principal["verdict"] else "evidence",
             "relation": claim.relation_label, "statement": claim.statement,
             "paper": papers.cite(claim.paper), "papers": [papers.PAPERS[k].to_json() for k in keys],
             "reference": claim.reference, "interpretation": claim.interpretation,
             "readings": readings, "scope": scope, "degenerate": _degenerate(found_outside),
             "choices": choices, "robust": robust, "depends_on": head["depends_on"],
             "undecided_on": head["undecided_on"],
             "least_slack_over_choices": (least_slack_over_choices(claim, res, part_v, seed, quick)
                                          if head["swept"] and verdict == "holds" else {}),
             "sources": {"synthetic": verdict, "real": real}, "parts": parts,
             "evidence": [e.to_json() for e in evidence], "counterexample": (_counterexamples(cex) or [None])[0],
             "controls": controls, "notes": notes, "implementation_errors": errors, "seconds": round(secs, 3),
             "choice_seconds": round(sum(r["seconds"] for r in res.choice_runs), 3)}
    return entry


def _reading_summary(claim: Claim, pids, rv: dict, parts: list) -> str:
    """A reading's verdict in words: ``fails (1 of 3 parts)``, ``fails by equality (tie)``,
    ``holds (identity)`` (every holding part a proved identity), ``holds in the reconstructed
    model`` (every holding part a property of a model this project reconstructed), ``holds (3 of 3
    parts; 1 identity, 1 in the reconstructed model)`` (what the holding parts that are not evidence
    rest on)."""
    text = verdicts.summary(rv)
    v = verdicts.claim_verdict(rv)
    mine = [p for p in parts if p["id"] in pids]
    head, _, rest = text.partition(" (")
    rest = rest[:-1] if rest.endswith(")") else rest
    if v == "fails" and all(p["failure"] == "tie" for p in mine if p["verdict"] == "fails"):
        return "fails by equality (tie" + (f"; {rest})" if rest else ")")
    if v != "holds":
        return text
    held = [p for p in mine if p["verdict"] == "holds"]
    n_id = sum(p.get("class") == "identity" for p in held)
    n_rec = sum(p.get("class") == "reconstructed" for p in held)
    if held and n_id == len(held):
        return "holds (identity" + (f"; {rest})" if rest else ")")
    if held and n_id + n_rec == len(held):
        extra = "; ".join(x for x in (rest, f"{n_id} identity" if n_id else "") if x)
        return "holds in the reconstructed model" + (f" ({extra})" if extra else "")
    extra = ", ".join(x for x in (f"{n_id} identity" if n_id else "",
                                  f"{n_rec} in the reconstructed model" if n_rec else "") if x)
    if not extra:
        return text
    return f"{head} ({rest}; {extra})" if rest else f"{head} ({extra})"
