"""Run registered claim checks and assemble a report (schema ``spectheory.report/1``)."""
from __future__ import annotations

import platform
import time
from datetime import datetime, timezone

from .evidence import combine
from .registry import Claim, Context, select, total_mc_tests

SCHEMA = "spectheory.report/1"


def _versions() -> dict:
    import numba
    import numpy
    import scipy

    from spectheory import __version__
    return {"spectheory": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "numba": numba.__version__}


def _run_subject(claim: Claim, subject, subject_name: str, seed: int, quick: bool, alpha: float):
    ctx = Context(seed=seed, quick=quick, alpha_family=alpha, claim_id=claim.id, subject_name=subject_name)
    t0 = time.perf_counter()
    evidence = claim.check(ctx, subject)
    if ctx.mc_tests_run != claim.mc_tests:
        raise RuntimeError(f"{claim.id}: check ran {ctx.mc_tests_run} Monte Carlo tests but registered "
                           f"mc_tests={claim.mc_tests}; the Bonferroni split would be wrong")
    verdict = combine(evidence)
    counterexample = claim.shrink(ctx, subject) if verdict == "fails" and claim.shrink else None
    return verdict, evidence, counterexample, time.perf_counter() - t0


def run_claims(pattern: str = "*", *, quick: bool = False, seed: int = 0, alpha: float = 0.01,
               progress: bool = True) -> dict:
    """Run every claim matching ``pattern`` and its negative controls; return the report."""
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
    try:
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

    out = []
    for claim in claims:
        verdict, evidence, cex, secs = results[(claim.id, None)]
        notes = []
        controls = []
        for ctl in claim.controls:
            cv, cev, ccex, csecs = results[(claim.id, ctl.name)]
            controls.append({"name": ctl.name, "description": ctl.description, "verdict": cv,
                             "evidence": [e.to_json() for e in cev], "counterexample": ccex,
                             "seconds": round(csecs, 3)})
            if cv != "fails" and verdict != "fails":
                verdict = "inconclusive"
                notes.append(f"negative control {ctl.name!r} came out {cv}, not fails: "
                             "the check cannot tell a broken algorithm from a correct one")
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
                "power": 0.9, "started_at": started.isoformat(timespec="seconds"),
                "duration_s": round(time.perf_counter() - t0, 2), "versions": _versions(),
                "platform": platform.platform()},
    }
