"""Run registered claim checks and assemble a report (schema ``spectheory.report/2``,
docs/report_schema.md; the JSON Schema is ``sims/schemas/report-2.json``)."""
from __future__ import annotations

import platform
import time
from datetime import datetime, timezone

from spectheory.judge import verdicts
from spectheory.judge.evidence import combine
from spectheory.judge.format import versions

from . import papers
from .registry import Claim, Context, select, total_mc_tests

SCHEMA = "spectheory.report/2"


def control_verdict(claim: Claim, control, evidence):
    """The judge's verdict of ``control`` of ``claim``: ``fails`` only if it fails in every
    (part, mode) it is required in. Returns (verdict, per mode, per part per mode)."""
    tag_parts(claim, evidence, f"control:{control.name}")
    return verdicts.control_verdict(claim.control_requirements(control), evidence)


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


def _run_subject(claim: Claim, subject, subject_name: str, seed: int, quick: bool, alpha: float):
    ctx = Context(seed=seed, quick=quick, alpha_family=alpha, claim_id=claim.id, subject_name=subject_name,
                  parts=claim.parts)
    t0 = time.perf_counter()
    evidence = claim.check(ctx, subject)
    if ctx.mc_tests_run != claim.mc_tests:
        raise RuntimeError(f"{claim.id}: check ran {ctx.mc_tests_run} Monte Carlo tests but registered "
                           f"mc_tests={claim.mc_tests}; the Bonferroni split would be wrong")
    tag_parts(claim, evidence, subject_name)
    if subject_name == "subject":
        for part in claim.checkable_parts:
            graded = {e.mode for e in evidence if e.outcome != "info" and e.part == part.id}
            missing = [m for m in claim.part_modes(part) if m != "logits" and m not in graded]
            if missing:
                where = "" if len(claim.parts) == 1 else f" part {part.id!r}"
                raise RuntimeError(f"{claim.id}:{where} registered modes {claim.part_modes(part)} but the check "
                                   f"graded no evidence in {missing} (a part that cannot be graded is declared "
                                   "checkable=False with a reason)")
    verdict = combine(evidence)
    counterexample = claim.shrink(ctx, subject) if verdict == "fails" and claim.shrink else None
    return verdict, evidence, counterexample, time.perf_counter() - t0, ctx.slack


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
    by_id = {c.id: c for c in claims}
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
            v, ev, cex, secs, slack = results[(cid, None)]
            evs = list(evs)
            tag_parts(by_id[cid], evs, "extra evidence")
            results[(cid, None)] = (v, list(ev) + evs, cex, secs, slack)

    out = [_claim_entry(claim, results) for claim in claims]
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


def _failing_part(claim: Claim, evidence, cex) -> str | None:
    """The part a counterexample belongs to: the one it names, else the first failing part."""
    if cex and cex.get("part") in {p.id for p in claim.parts}:
        return cex["part"]
    for p in claim.checkable_parts:
        if verdicts.part_verdict(evidence, p.id) == "fails":
            return p.id
    return None


def _claim_entry(claim: Claim, results) -> dict:
    """One claim of the report: parts and their verdicts, the claim's verdict and summary, the
    evidence, and every control's verdict per part per mode."""
    _, evidence, cex, secs, slack = results[(claim.id, None)]
    part_v = {p.id: verdicts.part_verdict(evidence, p.id, p.checkable) for p in claim.parts}
    part_notes: dict[str, list] = {p.id: [] for p in claim.parts}
    notes, controls = [], []
    one = len(claim.parts) == 1
    for ctl in claim.controls:
        _, cev, ccex, csecs, cslack = results[(claim.id, ctl.name)]
        need = claim.control_requirements(ctl)
        cv, per_mode, per_part = control_verdict(claim, ctl, cev)
        entry = {"name": ctl.name, "description": ctl.description, "verdict": cv,
                 "modes": per_mode, "required_modes": list(claim.control_modes(ctl)),
                 "parts": per_part, "required": {p: list(m) for p, m in need.items()},
                 "evidence": [e.to_json() for e in cev], "counterexample": ccex,
                 "seconds": round(csecs, 3)}
        if cslack:
            entry["least_slack"] = cslack
        controls.append(entry)
        if cv == "fails":
            continue
        for pid, modes in need.items():
            missed = [m for m in modes if m != "logits" and per_part[pid].get(m) != "fails"]
            if not missed or part_v[pid] in ("fails", verdicts.NOT_CHECKABLE):
                continue
            part_v[pid] = "inconclusive"
            where = "" if one else f" in part {pid!r}"
            note = (f"negative control {ctl.name!r} did not fail{where} in mode(s) {missed} "
                    f"(per mode: {per_part[pid] if not one else per_mode}): the check cannot tell a broken "
                    "algorithm from a correct one there")
            notes.append(note)
            part_notes[pid].append(note)
    failing = _failing_part(claim, evidence, cex) if cex else None
    parts = []
    for p in claim.parts:
        parts.append({"id": p.id, "statement": p.statement, "relation": p.relation, "checkable": p.checkable,
                      "reason": p.reason, "modes": list(claim.part_modes(p)), "verdict": part_v[p.id],
                      "evidence": sum(e.part == p.id for e in evidence),
                      "counterexample": cex if p.id == failing else None,
                      "least_slack": slack.get(p.id), "notes": part_notes[p.id]})
    keys = papers.keys_of(claim.paper)
    return {"id": claim.id, "verdict": verdicts.claim_verdict(part_v), "summary": verdicts.summary(part_v),
            "relation": claim.relation_label, "statement": claim.statement,
            "paper": papers.cite(claim.paper), "papers": [papers.PAPERS[k].to_json() for k in keys],
            "reference": claim.reference, "interpretation": claim.interpretation, "parts": parts,
            "evidence": [e.to_json() for e in evidence], "counterexample": cex,
            "controls": controls, "notes": notes, "seconds": round(secs, 3)}
