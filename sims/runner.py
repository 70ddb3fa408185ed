"""Run registered claim checks and assemble a report (schema ``spectheory.report/1``)."""
from __future__ import annotations

import platform
import time
from datetime import datetime, timezone

from spectheory.judge import verdicts
from spectheory.judge.evidence import combine
from spectheory.judge.format import versions

from .registry import Claim, Context, select, total_mc_tests

SCHEMA = "spectheory.report/1"


def control_verdict(claim: Claim, control, evidence) -> tuple[str, dict[str, str]]:
    """The judge's control verdict for ``control`` of ``claim`` (the modes it is registered for)."""
    return verdicts.control_verdict(claim.control_modes(control), evidence)


def _run_subject(claim: Claim, subject, subject_name: str, seed: int, quick: bool, alpha: float):
    ctx = Context(seed=seed, quick=quick, alpha_family=alpha, claim_id=claim.id, subject_name=subject_name)
    t0 = time.perf_counter()
    evidence = claim.check(ctx, subject)
    if ctx.mc_tests_run != claim.mc_tests:
        raise RuntimeError(f"{claim.id}: check ran {ctx.mc_tests_run} Monte Carlo tests but registered "
                           f"mc_tests={claim.mc_tests}; the Bonferroni split would be wrong")
    if subject_name == "subject":
        graded = {e.mode for e in evidence if e.outcome != "info"}
        missing = [m for m in claim.modes if m != "logits" and m not in graded]
        if missing:
            raise RuntimeError(f"{claim.id}: registered modes {claim.modes} but the check graded no "
                               f"evidence in {missing}")
    verdict = combine(evidence)
    counterexample = claim.shrink(ctx, subject) if verdict == "fails" and claim.shrink else None
    return verdict, evidence, counterexample, time.perf_counter() - t0


def _run_task(claim_id: str, control: str | None, seed: int, quick: bool, alpha: float):
    """One (claim, control) check by name, so a worker process can run it."""
    from .registry import load_all
    claim = load_all()[claim_id]
    ctl = None if control is None else next(c for c in claim.controls if c.name == control)
    subject = claim.subject if ctl is None else ctl.subject
    return _run_subject(claim, subject, "subject" if ctl is None else f"control:{ctl.name}",
                        seed, quick, alpha)


def _run_group(items, seed: int, quick: bool, alpha: float):
    """Several (claim id, control name) checks in one worker, in order: a family's checks share
    its compiled kernels, so keeping them in one process compiles each kernel once."""
    return [_run_task(cid, ctl, seed, quick, alpha) for cid, ctl in items]


def _family_groups(tasks) -> list[list[tuple[str, str | None]]]:
    """Tasks grouped by the claim module that registered them (one family each), largest first."""
    groups: dict[str, list] = {}
    for c, k in tasks:
        groups.setdefault(c.check.__module__, []).append((c.id, None if k is None else k.name))
    return sorted(groups.values(), key=len, reverse=True)


def run_claims(pattern: str = "*", *, quick: bool = False, seed: int = 0, alpha: float = 0.01,
               progress: bool = True, jobs: int = 1, executor=None, extra_evidence=None,
               extra_source: str | None = None) -> dict:
    """Run every claim matching ``pattern`` and its negative controls; return the report.
    ``jobs`` > 1 (or an ``executor``) runs the checks in parallel (a local process pool,
    :mod:`sims.sweep`), each family's checks in one worker so its kernels compile once;
    ``jobs=0`` means one worker per CPU (serial on one CPU). Every check is seeded from (seed,
    claim, subject), so the report is the one the serial run gives (timings aside).

    extra_evidence: ``{claim_id: [Evidence, ...]}`` computed elsewhere (real-model ``logits``
    evidence: the command line computes it with ``validate``, which this floor never imports);
    it joins the subject's evidence and verdict. extra_source: where it came from (the report's
    ``run.logits_run``)."""
    from spectheory.checks import check_int, check_real
    seed = check_int(seed, "seed", min=0)
    alpha = check_real(alpha, "alpha (family-wise error rate)", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    jobs = check_int(jobs, "jobs", min=0)
    if jobs == 0:
        import os
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    claims = select(pattern)
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    tasks = [(c, None) for c in claims] + [(c, ctl) for c in claims for ctl in c.controls]
    results: dict = {}
    bar = None
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
        bar = Progress(TextColumn("{task.description:<40}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                       TimeElapsedColumn(), transient=True)
        bar.start()
        job = bar.add_task("checks", total=len(tasks))
    extra = dict(extra_evidence or {})
    try:
        groups = _family_groups(tasks)
        if (jobs > 1 and len(groups) > 1) or executor is not None:
            import concurrent.futures as cf

            from .sweep import local_executor
            ex = executor or local_executor(min(jobs, len(groups)))
            try:
                futs = {ex.submit(_run_group, g, seed, quick, alpha): g for g in groups}
                for fut in cf.as_completed(futs):
                    for key, res in zip(futs[fut], fut.result()):
                        results[key] = res
                    if bar:
                        bar.update(job, description=f"{futs[fut][0][0].split('.')[0]}.* done ({jobs} jobs)")
                        bar.advance(job, len(futs[fut]))
            finally:
                if executor is None:
                    ex.shutdown(wait=True, cancel_futures=True)
            tasks = []
        for claim, ctl in tasks:
            label = claim.id if ctl is None else f"{claim.id} [control {ctl.name}]"
            if bar:
                bar.update(job, description=label)
            subject = claim.subject if ctl is None else ctl.subject
            name = "subject" if ctl is None else f"control:{ctl.name}"
            results[(claim.id, None if ctl is None else ctl.name)] = _run_subject(
                claim, subject, name, seed, quick, alpha)
            if bar:
                bar.advance(job)
    finally:
        if bar:
            bar.stop()
    for cid, evs in extra.items():  # real-logit evidence joins the claim's verdict (serial or parallel)
        if (cid, None) in results and evs:
            v, ev, cex, secs = results[(cid, None)]
            ev = list(ev) + evs
            results[(cid, None)] = (combine(ev) if v != "fails" else v, ev, cex, secs)

    out = []
    for claim in claims:
        verdict, evidence, cex, secs = results[(claim.id, None)]
        notes = []
        controls = []
        for ctl in claim.controls:
            _, cev, ccex, csecs = results[(claim.id, ctl.name)]
            cv, per_mode = control_verdict(claim, ctl, cev)
            controls.append({"name": ctl.name, "description": ctl.description, "verdict": cv,
                             "modes": per_mode, "required_modes": list(claim.control_modes(ctl)),
                             "evidence": [e.to_json() for e in cev], "counterexample": ccex,
                             "seconds": round(csecs, 3)})
            if cv != "fails" and verdict != "fails":
                verdict = "inconclusive"
                missed = [m for m in claim.control_modes(ctl) if m != "logits" and per_mode.get(m) != "fails"]
                notes.append(f"negative control {ctl.name!r} did not fail in mode(s) {missed} "
                             f"(per mode: {per_mode}): the check cannot tell a broken algorithm "
                             "from a correct one there")
        out.append({"id": claim.id, "verdict": verdict, "statement": claim.statement,
                    "paper": claim.paper, "reference": claim.reference,
                    "interpretation": claim.interpretation,
                    "evidence": [e.to_json() for e in evidence], "counterexample": cex,
                    "controls": controls, "notes": notes, "seconds": round(secs, 3)})
    m = total_mc_tests()
    return {
        "schema": SCHEMA,
        "claims": out,
        "run": {"claims_pattern": pattern, "seed": seed, "quick": quick, "alpha_family": alpha,
                "mc_tests_in_registry": m, "alpha_per_test": alpha / max(1, m),
                "correction": "Bonferroni over every Monte Carlo test in the registry (controls included)",
                "power": 0.9, "logits_run": extra_source, "started_at": started.isoformat(timespec="seconds"),
                "duration_s": round(time.perf_counter() - t0, 2), "versions": versions(),
                "platform": platform.platform()},
    }
