"""Conformance report for a user's speculative sampler (schema ``spectheory.report/1``).

:func:`check_block_verifier` and :func:`check_decoding_step` first make a trial call
(:mod:`.trial`: a usage error stops the run with a hint), then run the user's code on the
built-in instances (:mod:`spectheory.instances`: Markov pairs, where a bonus token drawn from the
wrong row shows, and edge cases), grade every check of :mod:`.checks` with the statistical
method of :mod:`spectheory.judge.stats` in a group-sequential design (:mod:`.sequential`: a check stops
as soon as it is decided), run the boundary probes (:mod:`.probes`, block verifiers only), and
run spectheory's broken rules (:mod:`.references`) through the same pipeline as negative
controls: a check whose relevant control does not fail is ``inconclusive`` for the subject too.

Two verdicts (``report["verdicts"]``): **lossless** — the checks any lossless verifier must
hold whatever its rule (first-N law, token law by position and state, support probes) — and
**standard** — whether it is standard speculative sampling (Leviathan et al. 2023, Alg. 1:
block law, bonus law, acceptance, E[τ], tokens per call, Alg. 1 probes).

Error control: each verdict's family-wise ``alpha`` is split (Bonferroni) over its Monte Carlo
tests (its checks × instances × γ), and each test's level is spent over the looks of the
sequential design (Bonferroni over looks), so a correct sampler is called ``fails`` on either
verdict by noise with probability ≤ alpha. Controls are run with the same per-test levels.

Every random source the sampler draws from is routed or flagged (:mod:`.sources`): escaped
draws give the report a warning (statistics not reproducible from the seed), and a probe whose
forced value did not reach the sampler is not applied. A crash inside the sampler is reported
with its location (file:line) and counted as a crash, not as a p-value.
"""
from __future__ import annotations

import contextlib
import platform
import time
from datetime import datetime, timezone

import numpy as np

from .. import instances as inst
from ..judge.evidence import Evidence, combine
from ..judge.stats import POWER

from ..rng import derive_seed
from .sequential import annotate, decided, design as sequential_design
from .adapters import BlockVerifier
from .checks import CHECKS, GROUPS, first_n
from .driver import BlockRunner, StepRunner, VerifierCrash
from .references import CONTROLS

SCHEMA = "spectheory.report/1"
#: Default instances: Markov pairs (β varies with the state) and the edge cases.
INSTANCES = ("markov1-V3-mix0.4", "markov1-V4-topk2", "iid-V4-strong", "iid-V3-disjoint",
             "iid-V3-equal", "iid-V1")
GAMMAS = (1, 3)
DEFAULT_N = 10_000
SUPPORT_PROBES_ID = "conformance.support_probes"
STANDARD_PROBES_ID = "conformance.standard_probes"
#: controls of the probes: those of the support probes must emit a p = 0 token or crash; that
#: of the Alg. 1 probes is a lossless verifier with another rule
SUPPORT_PROBE_CONTROLS = ("accept-u≤ratio", "unguarded-residual")
STANDARD_PROBE_CONTROLS = ("lossless:accept=p(x)",)
STAT_CONTROLS = tuple(c for c in CONTROLS if any(c[0] in chk.controls for chk in CHECKS))
GROUP_TITLES = {"lossless": "lossless", "standard": "matches standard speculative sampling (Leviathan et al. "
                                                    "2023, Alg. 1)"}


def _check_args(n, gammas, instances, alpha, seed=0, control_n=None, max_gamma=4):
    from ..checks import check_int, check_real
    n = check_int(n, "n", min=50)
    if isinstance(gammas, str) or np.ndim(gammas) != 1:
        raise TypeError(f"gammas must be a sequence of draft lengths, e.g. (1, 3), got {gammas!r}")
    gammas = tuple(check_int(g, "gamma", min=1, max=max_gamma) for g in gammas)
    if not gammas:
        raise ValueError("gammas must name at least one draft length")
    if isinstance(instances, str):
        raise TypeError(f"instances must be a sequence of instance names, e.g. ({instances!r},), got a str")
    instances = tuple(instances)  # may be empty: probes only
    for name in instances:
        inst.get(name)  # KeyError with the known names
    check_real(alpha, "alpha", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    check_int(seed, "seed", min=0)
    if control_n is not None:
        check_int(control_n, "control_n", min=1)
    return n, gammas, instances


class _Bar:
    def __init__(self, total):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
        self.p = Progress(TextColumn("{task.description:<48}"), BarColumn(),
                          TextColumn("{task.completed}/{task.total} runs (at most)"), TimeElapsedColumn(),
                          transient=True)
        self.p.start()
        self.job = self.p.add_task("conformance", total=total)

    def update(self, job, **kw):
        self.p.update(job, **kw)

    def advance(self, job, k=1):
        self.p.advance(job, k)

    def stop(self):
        self.p.stop()


def crash_evidence(crash: VerifierCrash, instance: str) -> Evidence:
    """A crash of the sampler on one (instance, γ): a failed run, not a statistical test."""
    return Evidence("mc", instance, None, None, p_value=None, test="run of the sampler: crashed (not a statistical "
                    "test)" if crash.kind == "exception" else "run of the sampler: invalid output (not a statistical "
                    "test)", outcome="fail", note=str(crash))


class Plan:
    """The tests of one report: checks, their groups, the per-test level of each group."""

    def __init__(self, checks, blocks, alpha, design):
        self.checks, self.blocks, self.alpha, self.design = tuple(checks), tuple(blocks), alpha, design
        self.n_tests = {g: sum(c.mc_tests for c in self.checks if c.group == g) * len(self.blocks) for g in GROUPS}

    def alpha_test(self, group: str) -> float:
        return self.alpha / max(1, self.n_tests[group])


def run_sequential(runner, pair, checks, plan: Plan, instance_label: str, bar=None, stop_on_pass: bool = True,
                   decided_at: dict | None = None):
    """Extend ``runner`` look by look until every check in ``checks`` is decided on it
    (``stop_on_pass=False``, for the negative controls: only a failure decides, so a control
    that the check could still reject with more runs is run to the last look).
    Returns ({check id: evidence list}, crash or None, runs used, look index reached);
    ``decided_at`` (a dict) receives {check id: {"runs", "level"}} of the look each check's
    evidence comes from (what :func:`.replay.replay_check` needs)."""
    design = plan.design
    final: dict = {}
    latest: dict = {}
    k_used = 0
    for k, n_k in enumerate(design.looks):
        before = runner.n_runs
        runner.extend(n_k)
        if bar is not None:
            bar.advance(bar.job, runner.n_runs - before)
        if runner.crash is not None:
            ev = crash_evidence(runner.crash, instance_label)
            return {c.id: [ev] for c in checks}, runner.crash, runner.n_runs, k
        trace = runner.trace()
        k_used = k
        for c in checks:
            if c.id in final:
                continue
            a_k = design.alpha(k, plan.alpha_test(c.group))
            ev = annotate(c.run(trace, pair, a_k), design, k, runner.n_runs, a_k)
            if decided_at is not None:
                decided_at[c.id] = {"runs": runner.n_runs, "level": a_k}
            if decided(ev) and (stop_on_pass or any(e.outcome == "fail" for e in ev)):
                final[c.id] = ev
            else:
                latest[c.id] = ev
        if len(final) == len(checks):
            break
    for c in checks:
        final.setdefault(c.id, latest.get(c.id, []))
    return final, None, runner.n_runs, k_used


def _group_verdict(claims, group):
    vs = [c["verdict"] for c in claims if c["group"] == group]
    if not vs:
        return "not-checkable"
    if "fails" in vs:
        return "fails"
    if all(v == "not-checkable" for v in vs):
        return "not-checkable"
    if "inconclusive" in vs:
        return "inconclusive"
    return "holds"


def verdicts(claims, crashes, warnings, titles=GROUP_TITLES) -> dict:
    """Per group: verdict and a one-line summary (failed checks, crashes, why inconclusive)."""
    out = {}
    for g in GROUPS:
        v = _group_verdict(claims, g)
        mine = [c for c in claims if c["group"] == g]
        failed = [c["id"].removeprefix("conformance.") for c in mine if c["verdict"] == "fails"]
        unsure = [c["id"].removeprefix("conformance.") for c in mine if c["verdict"] == "inconclusive"]
        if v == "fails":
            why = f"{len(failed)} of {len(mine)} checks fail: {', '.join(failed)}"
            if crashes:
                c0 = crashes[0]
                where = f" at {c0['location']}" if c0.get("location") else ""
                why += (f"; the sampler {'crashed' if c0['kind'] == 'exception' else 'returned an invalid block'} "
                        f"on {len(crashes)} instance×γ ({c0['exception']}{where})")
        elif v == "inconclusive":
            why = f"{len(unsure)} of {len(mine)} checks inconclusive: {', '.join(unsure)}"
            if any(c["id"].endswith("probes") and c["verdict"] == "inconclusive" for c in mine) and warnings:
                why += " (the probes could not force the sampler's random source)"
        elif v == "holds":
            nc = [c for c in mine if c["verdict"] == "not-checkable"]
            why = f"{len(mine) - len(nc)} of {len(mine)} checks hold" + (f"; {len(nc)} not checkable" if nc else "")
        else:
            why = "no check of this group ran"
        out[g] = {"verdict": v, "title": titles[g], "summary": why,
                  "checks": [c["id"] for c in mine]}
        if g == "lossless":
            from .severity import failures, severity_of, summary
            found = failures(claims, crashes) if v == "fails" else []
            out[g]["severity"] = severity_of(found)
            out[g]["failures"] = found
            if found:
                out[g]["summary"] = summary(found, claims) + f" ({why})"
    return out


def _claim(check_id, statement, reference, group, evidence, controls, notes, paper, interpretation):
    return {"id": check_id, "group": group, "verdict": None, "statement": statement, "paper": paper,
            "reference": reference, "interpretation": interpretation, "evidence": [e.to_json() for e in evidence],
            "counterexample": None, "controls": controls, "notes": notes}


def assemble(plan: Plan, subject: dict, control_results: dict, probe_claims: list, *, crashes, warnings,
             interpretation: str, paper: str) -> list:
    """Claims of the report: one per check (evidence over blocks, controls), then the probes.
    ``subject``: {check id: [Evidence]}; ``control_results``: {check id: [(name, description,
    [Evidence])]}."""
    claims = []
    for check in plan.checks if plan.blocks else ():  # no instances: probes only
        ev = subject.get(check.id, [])
        verdict = combine(ev)
        controls, notes = [], []
        for cname, desc, cev in control_results.get(check.id, []):
            cv = combine(cev)
            controls.append({"name": cname, "description": desc, "verdict": cv, "modes": {"mc": cv},
                             "required_modes": ["mc"], "evidence": [e.to_json() for e in cev],
                             "counterexample": None})
            if cv != "fails" and verdict != "fails":
                verdict = "inconclusive"
                notes.append(f"negative control {cname!r} came out {cv}: the check cannot tell it from "
                             "a correct sampler here")
        c = _claim(check.id, check.statement, check.reference, check.group, ev, controls, notes, paper,
                   interpretation)
        c["verdict"] = verdict
        claims.append(c)
    claims.extend(probe_claims)
    return claims


def probe_claim(claim_id, group, statement, evidence, control_probes):
    verdict = combine(evidence)
    controls, notes = [], []
    for cname, desc, cev in control_probes:
        cv = combine(cev)
        controls.append({"name": cname, "description": desc, "verdict": cv, "modes": {"exact": cv},
                         "required_modes": ["exact"], "evidence": [e.to_json() for e in cev],
                         "counterexample": None})
        if cv != "fails" and verdict != "fails":
            verdict = "inconclusive"
            notes.append(f"negative control {cname!r} passed every probe")
    if evidence and all(e.outcome == "info" for e in evidence) and verdict != "fails":
        notes.append("no probe could be applied: the forced values never reached the sampler (see the probe rows)")
    return {"id": claim_id, "group": group, "verdict": verdict, "statement": statement,
            "paper": "float-robustness of Leviathan et al. 2023, Alg. 1", "reference": "probes",
            "interpretation": "One deterministic call per probe with every uniform forced (routed through every "
                              "global random source); graded on its number of violations (claimed 0); a probe "
                              "whose forced value did not reach the sampler is not applied.",
            "evidence": [e.to_json() for e in evidence], "counterexample": None, "controls": controls,
            "notes": notes}


SUPPORT_STATEMENT = ("At the extremes of its random source (u = 0, u = 1−ulp, exact ratio ties) the verifier "
                     "never emits a token with p = 0, never crashes or returns NaN on a zero-mass residual, "
                     "and returns a block of valid ids (disjoint supports, a one-token vocabulary included).")
STANDARD_STATEMENT = ("At the extremes of its random source the verifier does what Alg. 1 does: it emits the "
                      "drafted prefix, rejects a drafted token with p = 0 at u = 0, accepts at u = 1−ulp where "
                      "p ≥ q, and on a one-token vocabulary emits the γ + 1 tokens.")


def warnings_of(sources, trial: dict | None = None, compiled=(), reuse: str | None = None) -> list[str]:
    """The report's warnings: escaped random draws (statistics not reproducible from the seed),
    named as compiled code bypassing the routing where the sampler runs some (``compiled``:
    :func:`.compiled.compiled_in`), and uniforms reused across calls (``reuse``)."""
    escaped = sorted({src for _, src in sources.escapes})
    out = []
    if compiled:
        from .compiled import bypass_reason
        out.append("compiled code: " + bypass_reason(list(compiled)) + ".")
    if escaped:
        blocks = sorted({lab for lab, _ in sources.escapes})
        fix = ("The cause named above: compiled code calls the generators directly." if compiled else
               "Draw from the rng argument (or torch's/NumPy's/Python's global functions, which the checker routes) "
               "instead.")
        out.append("uncontrolled randomness: the sampler drew from " + "; ".join(escaped) + " (in "
                   + str(len(blocks)) + " block(s) of calls, e.g. " + blocks[0] + "), not through the random source "
                   "the checker routes: its statistics are not reproducible from --seed, and a probe in which "
                   "this happened is not applied. " + fix)
    if reuse:
        out.append(reuse)
    return out


def blockers(reuse: str | None, compiled, sources) -> list[str]:
    """Reasons found in the runs why no probe can be applied: uniforms reused across calls;
    compiled code in the sampler when the runs saw draws escape (its draws bypass the routing)."""
    out = [reuse] if reuse else []
    if compiled and sources.escapes:
        from .compiled import bypass_reason
        out.append(bypass_reason(list(compiled)))
    return out


def compiled_matters(compiled, sources, probe_rows) -> bool:
    """Name the compiled code in the warnings when draws escaped or some probe was not applied."""
    if not compiled:
        return False
    if sources.escapes:
        return True
    rows = (probe_rows[0] if isinstance(probe_rows, tuple) else probe_rows) or []
    return any(e.outcome == "info" for e in rows)


def target_name(name: str | None, fn) -> str | None:
    """The sampler's rerunnable name: ``name`` when it is a ``file.py:function`` or
    ``module:function`` target (the command line passes it), else its source file."""
    from .replay import target_of
    if name and ":" in name and not name.startswith("<"):
        return name
    return target_of(fn)


def reuse_of(blocks) -> str | None:
    """The warning (and the reason no probe is applied) when some call of the runs made more
    acceptance decisions that needed a random value than it drew uniforms from the checker's
    source: uniforms kept from earlier calls (or drawn where the checker cannot see them)."""
    short = sum(b.get("draws", {}).get("short_calls", 0) for b in blocks)
    if not short:
        return None
    needing = sum(b.get("draws", {}).get("calls_needing_a_uniform", 0) for b in blocks)
    ex = next(b["draws"]["short_example"] for b in blocks if b.get("draws", {}).get("short_example"))
    return (f"uniforms reused across calls, or none drawn: in {short} of {needing} calls whose acceptance decisions "
            f"needed a random value (0 < p(x) < q(x) at a tested draft) the sampler drew fewer uniforms from the "
            f"checker's source than it made such decisions (e.g. {ex['context']}: "
            f"{ex['decisions_needing_a_uniform']} decision(s), {ex['uniforms_drawn']} uniform(s)). It keeps uniforms "
            "from earlier calls, draws them where the checker cannot see, or decides without a random value where a "
            "lossless sampler needs one: a forced value cannot be shown to decide a step, so no probe is applied")


def run_info(kind, subject_name, settings, plan: Plan, started, t0, blocks, trial, sources) -> dict:
    from ..judge.format import versions as _versions
    return {"subject": subject_name, "kind": kind, **settings, "quick": False,
            "alpha_family": plan.alpha, "alpha_family_per_verdict": plan.alpha,
            "mc_tests_in_registry": sum(plan.n_tests.values()), "mc_tests_per_verdict": dict(plan.n_tests),
            "alpha_per_test": plan.alpha_test("lossless"),
            "alpha_per_test_per_verdict": {g: plan.alpha_test(g) for g in GROUPS},
            "correction": "Bonferroni within each verdict over its Monte Carlo tests (checks × instances × γ); "
                          "each test's level spent over the looks of the sequential design",
            "sequential": plan.design.to_json(), "blocks": blocks, "trial": trial,
            "routed_names": sources.routed_names() if sources is not None else [],
            "power": POWER, "started_at": started.isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - t0, 2), "cpu_s": round(time.process_time() - _CPU0[0], 2),
            **timing(blocks, time.perf_counter() - t0),
            "versions": _versions(), "platform": platform.platform()}


_CPU0 = [0.0]


def timing(blocks, wall: float) -> dict:
    """The sampler's own time (inside its calls on the statistical runs) and the checker's
    (everything else: drafting, checks, controls, probes, trial), with the machine's load."""
    import os
    own = sum(b.get("sampler_s", 0.0) for b in blocks)
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:  # not available on this platform
        load = None
    return {"sampler_s": round(own, 2), "checker_s": round(wall - own, 2), "load_average_1m": load}


@contextlib.contextmanager
def _torch_one_thread(active: bool):
    """One torch thread while the sampler runs (tiny tensors: thread hand-offs cost ~7× the
    work on a loaded 2-core machine); the caller's setting is restored afterwards."""
    if not active:
        yield
        return
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_subject(plan: Plan, make_runner, label, bar=None):
    """The subject on every block (sequentially). Returns ({check: [Evidence]}, crashes,
    blocks summary)."""
    subject: dict = {c.id: [] for c in plan.checks}
    crashes, blocks = [], []
    for name, g in plan.blocks:
        pair = inst.get(name)
        if bar is not None:
            bar.update(bar.job, description=f"{label}: {name} γ={g}")
        runner = make_runner(pair, g)
        at: dict = {}
        ev, crash, used, k = run_sequential(runner, pair, plan.checks, plan, f"{name} γ={g}", bar, decided_at=at)
        for cid, e in ev.items():
            subject[cid].extend(e)
        if crash is not None:
            crashes.append({"instance": name, "gamma": g, **crash.to_json()})
        block = {"instance": name, "gamma": g, "runs": used, "looks": k + 1, "calls": runner_calls(runner),
                 "sampler_s": round(float(getattr(runner, "sampler_s", 0.0)), 4), "decided_at": at}
        ledger = getattr(runner, "ledger", None)
        if ledger is not None:
            block["draws"] = ledger.to_json()
            ex = ledger.structure_example
            if ex is not None and "call_index" in ex:  # a block runner: its inputs by replay from the seed
                ex.update(runner.inputs_of_call(ex.pop("call_index")) or {})
            if ex is not None:
                block["structure_example"] = ex
        blocks.append(block)
    return subject, crashes, blocks


def run_controls(plan: Plan, control_runners, bar=None) -> dict:
    """Each control on the blocks in order, until it has failed every check it is a control of
    (a check it already failed on an earlier block is not run for it again). Returns
    {check id: [(name, description, [Evidence])]}."""
    out: dict = {c.id: [] for c in plan.checks}
    for cname, desc, make_control in control_runners:
        relevant = [c for c in plan.checks if cname in c.controls]
        evs: dict = {c.id: [] for c in relevant}
        for name, g in plan.blocks:
            todo = [c for c in relevant if not any(e.outcome == "fail" for e in evs[c.id])]
            if not todo:
                break
            pair = inst.get(name)
            if bar is not None:
                bar.update(bar.job, description=f"{cname}: {name} γ={g}")
            ev, _, _, _ = run_sequential(make_control(pair, g), pair, todo, plan, f"{name} γ={g}", bar,
                                         stop_on_pass=False)
            for cid, e in ev.items():
                evs[cid].extend(e)
        for c in relevant:
            out[c.id].append((cname, desc, evs[c.id]))
    return out


def runner_calls(runner) -> int:
    return int(getattr(runner, "calls", 0))


def check_block_verifier(fn, *, adapter: str = "probs", dtype: str = "float64", batched: bool = False,
                         framework: str = "numpy", n: int = DEFAULT_N, gammas=GAMMAS, instances=INSTANCES,
                         seed: int = 0, alpha: float = 0.01, controls: bool = True, control_n: int | None = None,
                         probes: bool = True, progress: bool = False, name: str | None = None,
                         trial: bool = True) -> dict:
    """Test a block verifier ``fn(p, q, draft_tokens, rng) -> emitted tokens`` for losslessness
    and for being standard speculative sampling.

    fn may also be a :class:`~spectheory.conformance.adapters.BlockVerifier` (then ``adapter``,
    ``dtype``, ``batched`` and ``framework`` are taken from it). At most ``n`` independent runs
    per (instance, γ), fewer where every check is decided earlier (:mod:`.sequential`);
    ``controls``: also run the broken reference rules (at most ``control_n`` runs, default
    max(n // 4, 1000)) so every check shows it can fail; ``probes``: the forced-uniform boundary
    probes; ``trial``: the trial call (:mod:`.trial`), which raises
    :class:`~spectheory.conformance.trial.ConformanceUsageError` when the sampler cannot be run
    as configured. Returns a report dict (schema ``spectheory.report/1``, with
    ``report["verdicts"]``); print it with :func:`print_report`, save it with
    :func:`spectheory.judge.format.write_json`.
    """
    verifier = fn if isinstance(fn, BlockVerifier) else BlockVerifier(
        fn, adapter=adapter, dtype=dtype, batched=batched, framework=framework, name=name or "")
    n, gammas, instances = _check_args(n, gammas, instances, alpha, seed, control_n)
    _CPU0[0] = time.process_time()
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    from .trial import trial_block_verifier
    with _torch_one_thread(verifier.framework == "torch"):
        trial_info = trial_block_verifier(verifier, min(gammas)) if trial else None
    plan = Plan(CHECKS, [(i, g) for i in instances for g in gammas], alpha, sequential_design(n))
    cn = control_n or max(n // 4, 1000)
    cplan = Plan(CHECKS, plan.blocks, alpha, sequential_design(cn))
    cplan.n_tests = plan.n_tests  # controls run at the subject's per-test levels
    bar = _Bar(len(plan.blocks) * n) if progress else None

    def seed_of(name_, g):
        return derive_seed(seed, "conformance", name_, str(g))

    def make_runner(pair, g):
        return BlockRunner(verifier, pair, g, first_n(pair.V), seed_of(pair.name, g), pair.name)

    def control(cfn, cname):
        cv = BlockVerifier(cfn, name=cname)
        return lambda pair, g: BlockRunner(cv, pair, g, first_n(pair.V), seed_of(pair.name, g), pair.name)

    from .compiled import compiled_in
    compiled = compiled_in(verifier.fn)
    try:
        with _torch_one_thread(verifier.framework == "torch"):
            verifier.sources.scan()  # generators alive after the trial call (lazily made ones included)
            subject, crashes, blocks = run_subject(plan, make_runner, verifier.name, bar)
            from .probes import run_probes
            verifier.sources.scan()
            reuse = reuse_of(blocks)
            sp = run_probes(verifier, blockers(reuse, compiled, verifier.sources)) if probes else None
    finally:
        if bar:
            bar.stop()
    ctl = run_controls(cplan, [(c, d, control(f, c)) for c, f, d in STAT_CONTROLS]) if controls else {}
    probe_claims = []
    if sp is not None:
        cps = {c: run_probes(BlockVerifier(f, name=c, dtype=verifier.dtype)) for c, f, _ in CONTROLS
               if c in SUPPORT_PROBE_CONTROLS + STANDARD_PROBE_CONTROLS} if controls else {}
        desc = {c: d for c, _, d in CONTROLS}
        probe_claims = [
            probe_claim(SUPPORT_PROBES_ID, "lossless", SUPPORT_STATEMENT, sp[0],
                        [(c, desc[c], cps[c][0]) for c in SUPPORT_PROBE_CONTROLS if c in cps]),
            probe_claim(STANDARD_PROBES_ID, "standard", STANDARD_STATEMENT, sp[1],
                        [(c, desc[c], cps[c][1]) for c in STANDARD_PROBE_CONTROLS if c in cps])]
    warnings = warnings_of(verifier.sources, trial_info, compiled if compiled_matters(compiled, verifier.sources, sp)
                           else (), reuse)
    claims = assemble(plan, subject, ctl, probe_claims, crashes=crashes, warnings=warnings,
                      paper="Leviathan et al. 2023; Chen et al. 2023",
                      interpretation="Black-box check of the sampler under test on the built-in instances; see "
                                     "docs/conformance.md.")
    from .probes import probe_list, rerun_inputs
    from .replay import attach
    attach(claims, crashes, blocks, target=target_name(name, verifier.fn), options=verifier.options(), seed=seed,
           probes={pr.name: rerun_inputs(pr) for pr in probe_list(verifier)} if probes else None)
    settings = {"adapter": verifier.adapter, "dtype": verifier.dtype, "batched": verifier.batched,
                "framework": verifier.framework, "n": n, "control_n": cn if controls else None,
                "gammas": list(gammas), "instances": list(instances), "seed": seed}
    return {"schema": SCHEMA, "verdicts": verdicts(claims, crashes, warnings), "warnings": warnings,
            "crashes": crashes, "claims": claims,
            "run": run_info("block verifier", verifier.name, settings, plan, started, t0, blocks, trial_info,
                            verifier.sources)}


def step_from_block_verifier(fn, *, name: str = ""):
    """A decoding step built from a probability-input block verifier: drafts γ tokens from the
    draft LM (softmax of its logits), asks the target LM for the γ+1 rows, verifies. Used to run
    the reference rules (and the controls) through :func:`check_decoding_step`."""
    from .adapters import softmax_in
    from .forced import inverse_cdf
    if not callable(fn):
        raise TypeError(f"fn must be a callable block verifier fn(p, q, draft, rng), got {type(fn).__name__}")

    def make_step(target_lm, draft_lm, gamma, rng):
        def step(context):
            ctx = list(context)
            draft, q_rows = [], []
            for _ in range(gamma):
                q = softmax_in(np.asarray(draft_lm([ctx + draft])[0], dtype=np.float64), np.float64)
                q_rows.append(q)
                draft.append(inverse_cdf(q, rng.random()))
            p_rows = [softmax_in(np.asarray(target_lm([ctx + draft[:i]])[0], dtype=np.float64), np.float64)
                      for i in range(gamma + 1)]
            return fn(np.array(p_rows), np.array(q_rows), draft, rng)
        return step

    make_step.__name__ = make_step.__qualname__ = name or f"step[{getattr(fn, '__name__', 'verifier')}]"
    return make_step


def check_decoding_step(make_step, *, lm: str = "callable", dtype: str = "float32", n: int = DEFAULT_N,
                        gammas=GAMMAS, instances=INSTANCES, seed: int = 0, alpha: float = 0.01,
                        controls: bool = True, control_n: int | None = None, progress: bool = False,
                        name: str | None = None, trial: bool = True) -> dict:
    """Test decoding code that drafts by itself: ``make_step(target_lm, draft_lm, gamma, rng)``
    returns ``step(context) -> emitted tokens``; the LMs are Markov sources as fake language
    models (``lm="callable"``: ``lm(contexts) -> (B, V)`` logits; ``lm="torch"``: an
    ``nn.Module`` with ``.logits`` of shape (B, T, V)). Same checks as block verifiers except
    those that need to see the drafts; no probes; a trial call first (usage errors)."""
    if not callable(make_step):
        raise TypeError("make_step must be callable: make_step(target_lm, draft_lm, gamma, rng) -> step")
    if lm not in ("callable", "torch"):
        raise ValueError(f"lm must be 'callable' or 'torch', got {lm!r}")
    n, gammas, instances = _check_args(n, gammas, instances, alpha, seed, control_n)
    label = name or getattr(make_step, "__qualname__", "decoding step")
    _CPU0[0] = time.process_time()
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    from .sources import RandomSources
    from .trial import trial_decoding_step
    sources = RandomSources(make_step)
    with _torch_one_thread(lm == "torch"):
        trial_info = trial_decoding_step(make_step, min(gammas), lm, dtype, sources) if trial else None
    checks = [c for c in CHECKS if c.for_steps]
    plan = Plan(checks, [(i, g) for i in instances for g in gammas], alpha, sequential_design(n))
    cn = control_n or max(n // 4, 1000)
    cplan = Plan(checks, plan.blocks, alpha, sequential_design(cn))
    cplan.n_tests = plan.n_tests
    bar = _Bar(len(plan.blocks) * n) if progress else None

    def seed_of(name_, g):
        return derive_seed(seed, "conformance", name_, str(g))

    def make_runner(pair, g):
        return StepRunner(make_step, pair, g, first_n(pair.V), seed_of(pair.name, g), pair.name, lm, dtype,
                          sources=sources)

    def control(cfn, cname):
        ms = step_from_block_verifier(cfn, name=cname)
        return lambda pair, g: StepRunner(ms, pair, g, first_n(pair.V), seed_of(pair.name, g), pair.name,
                                          "callable", "float64")

    try:
        with _torch_one_thread(lm == "torch"):
            sources.scan()
            subject, crashes, blocks = run_subject(plan, make_runner, label, bar)
    finally:
        if bar:
            bar.stop()
    ctl = run_controls(cplan, [(c, d, control(f, c)) for c, f, d in STAT_CONTROLS]) if controls else {}
    warnings = warnings_of(sources, trial_info)
    claims = assemble(plan, subject, ctl, [], crashes=crashes, warnings=warnings,
                      paper="Leviathan et al. 2023; Chen et al. 2023",
                      interpretation="Black-box check of the decoding step on fake Markov LMs; see "
                                     "docs/conformance.md.")
    settings = {"lm": lm, "dtype": dtype, "n": n, "control_n": cn if controls else None,
                "gammas": list(gammas), "instances": list(instances), "seed": seed}
    return {"schema": SCHEMA, "verdicts": verdicts(claims, crashes, warnings), "warnings": warnings,
            "crashes": crashes, "claims": claims,
            "run": run_info("decoding step", label, settings, plan, started, t0, blocks, trial_info, sources)}
