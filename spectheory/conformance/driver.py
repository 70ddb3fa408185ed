"""The conformance run of any kind (:mod:`.kind`): trial call, the subject's runs on every block in
the group-sequential plan, the probes, the negative controls through the same pipeline, then the
report (:mod:`.report`) with its two verdicts, severity and rerunnable calls.

**Plan and error control.** Each verdict's family-wise ``alpha`` is split (Bonferroni) over its
Monte Carlo tests (its checks × the blocks that run them), and each test's level is spent over
the looks of the sequential design (:mod:`.sequential`, Bonferroni over looks), so a correct
sampler is called ``fails`` on either verdict by noise with probability ≤ alpha. Exact checks
(impossible tokens, structure) cannot fail a correct sampler and take no share. Controls run at
the subject's per-test levels, at most ``control_n`` runs, and stop only when they fail.

**Time.** The report gives the sampler's own time (``run.sampler_s``: inside its calls on the
statistical runs) and the checker's (``run.checker_s``: everything else) apart, in wall seconds,
with the CPU seconds of the whole run (``run.cpu_s``) and the machine's load.
"""
from __future__ import annotations

import contextlib
import time
from datetime import datetime, timezone

from ..judge.evidence import Evidence
from .checks import GROUPS
from .sequential import annotate, decided, design as sequential_design

SCHEMA = "spectheory.report/1"


class Plan:
    """The tests of one report: checks, the blocks they run on, the per-test level of each group.
    A test on a one-token vocabulary is exact (every draw in its one cell: a correct sampler cannot
    fail it) and takes no share of the level."""

    def __init__(self, checks, blocks, alpha, design):
        from .. import instances as inst
        self.checks, self.blocks, self.alpha, self.design = tuple(checks), tuple(blocks), alpha, design
        graded = [b for b in self.blocks if inst.get(b.instance).V > 1]
        self.n_tests = {g: sum(c.mc_tests for b in graded for c in self.checks if c.group == g and b.runs(c.id))
                        for g in GROUPS}

    def alpha_test(self, group: str) -> float:
        return self.alpha / max(1, self.n_tests[group])

    def checks_of(self, block) -> list:
        return [c for c in self.checks if block.runs(c.id)]


class Bar:
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


def crash_evidence(crash, label: str) -> Evidence:
    """A crash of the sampler on one block: a failed run, not a statistical test."""
    return Evidence("mc", label, None, None, p_value=None, test="run of the sampler: crashed (not a statistical "
                    "test)" if crash.kind == "exception" else "run of the sampler: invalid output (not a statistical "
                    "test)", outcome="fail", note=str(crash))


def run_sequential(runner, pair, checks, plan: Plan, label: str, bar=None, stop_on_pass: bool = True,
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
            ev = crash_evidence(runner.crash, label)
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


@contextlib.contextmanager
def torch_one_thread(active: bool):
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


def run_subject(kind, plan: Plan, seed: int, bar=None):
    """The subject on every block (sequentially). Returns ({check: [Evidence]}, crashes, blocks
    summary, findings, {block: runner})."""
    subject: dict = {c.id: [] for c in plan.checks}
    crashes, blocks, findings, runners = [], [], [], {}
    for block in plan.blocks:
        pair = kind.pair(block)
        if bar is not None:
            bar.update(bar.job, description=f"{kind.sampler.name}: {block.label}")
        runner = kind.runner(kind.sampler, block, kind.seed_of(block, seed))
        runners[block] = runner
        at: dict = {}
        ev, crash, used, k = run_sequential(runner, pair, plan.checks_of(block), plan, block.label, bar,
                                            decided_at=at)
        for cid, e in ev.items():
            subject[cid].extend(e)
        if hasattr(runner, "finalize"):
            runner.finalize()
        if crash is not None:
            crashes.append({"instance": block.label if block.setting is not None else block.instance,
                            "gamma": block.gamma, **crash.to_json()})
        info = {"instance": block.instance, "gamma": block.gamma, "label": block.label, "runs": used, "looks": k + 1,
                "calls": int(getattr(runner, "calls", 0)), "sampler_s": round(float(getattr(runner, "sampler_s", 0.0)), 4),
                "decided_at": at}
        info.update(kind.block_info(block))
        ledger = getattr(runner, "ledger", None)
        if ledger is not None:
            info["draws"] = ledger.to_json()
            ex = ledger.structure_example
            if ex is not None and "call_index" in ex:  # its inputs by replay from the seed
                ex.update(runner.inputs_of_call(ex.pop("call_index")) or {})
            if ex is not None:
                info["structure_example"] = ex
        for f in getattr(runner, "findings", []):
            findings.append({**f, "block": block.label})
        if getattr(runner, "impossible", 0):
            info["impossible_tokens"] = int(runner.impossible)
        blocks.append(info)
    return subject, crashes, blocks, findings, runners


def run_controls(kind, plan: Plan, seed: int, bar=None) -> dict:
    """Each control of the statistical checks through the same runs. Returns {check id:
    [(name, description, [(block label, [Evidence])])]}: every block a control applies to
    (end to end, :attr:`.kind.Kind.controls_per_block`), else block by block until it has failed
    every check it is a control of (a check it already failed is not run for it again)."""
    out: dict = {c.id: [] for c in plan.checks}
    for control in kind.controls():
        if "checks" not in control.roles:
            continue
        relevant = [c for c in plan.checks if control.name in c.controls]
        if not relevant:
            continue
        sampler = kind.control_sampler(control)
        per_check: dict = {c.id: [] for c in relevant}
        for block in plan.blocks:
            if control.applies is not None and not control.applies(block):
                continue
            mine = [c for c in relevant if block.runs(c.id)]
            todo = mine if kind.controls_per_block else \
                [c for c in mine if not any(e.outcome == "fail" for _, es in per_check[c.id] for e in es)]
            if not todo:
                if not kind.controls_per_block and all(any(e.outcome == "fail" for _, es in per_check[c.id]
                                                           for e in es) for c in relevant):
                    break
                continue
            if bar is not None:
                bar.update(bar.job, description=f"{control.name}: {block.label}")
            runner = kind.runner(sampler, block, kind.seed_of(block, seed))
            runner.trace_failures = False
            ev, _, _, _ = run_sequential(runner, kind.pair(block), todo, plan, block.label, None, stop_on_pass=False)
            for cid, e in ev.items():
                per_check[cid].append((block.label, e))
        for c in relevant:
            out[c.id].append((control.name, control.description, per_check[c.id]))
    return out


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


def check_run_args(n, alpha, seed, control_n) -> int:
    from ..checks import check_int, check_real
    n = check_int(n, "n", min=50)
    check_real(alpha, "alpha", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    check_int(seed, "seed", min=0)
    if control_n is not None:
        check_int(control_n, "control_n", min=1)
    return n


def globals_seed(seed: int) -> int:
    """The seed of the global generators during a run of seed ``seed`` (:func:`run`)."""
    from ..rng import derive_seed
    return int(derive_seed(seed, "global generators").generate_state(1)[0])


def run(kind, *, seed: int = 0, **options) -> dict:
    """The conformance report of ``kind``'s sampler (see the module docstring; ``options``: those
    of :func:`report_of`). torch's, NumPy's, Python's and Numba's global generators start the run
    at a state derived from ``seed`` (:func:`.sources.fixed_globals`; restored after), so draws
    that escape the routing (TorchScript, ``@njit``) give the same report from the same seed,
    whatever ran before in the process."""
    from ..checks import check_int
    from .sources import fixed_globals
    with fixed_globals(globals_seed(check_int(seed, "seed", min=0))):
        return report_of(kind, seed=seed, **options)


def report_of(kind, *, n: int | None = None, gammas=None, instances=None, seed: int = 0, alpha: float = 0.01,
              controls: bool = True, control_n: int | None = None, probes: bool = True, progress: bool = False,
              trial: bool = True) -> dict:
    """The conformance report of ``kind``'s sampler, with the global generators as they are
    (:func:`run` seeds them)."""
    from .report import assemble, probe_claims, run_info, verdicts as verdicts_of, warnings_of
    from .compiled import compiled_in
    from .probes import run_probes
    n = check_run_args(kind.DEFAULT_N if n is None else n, alpha, seed, control_n)
    gammas = kind.check_gammas(kind.GAMMAS if gammas is None else gammas)
    instances = kind.check_instances(kind.INSTANCES if instances is None else instances)
    cpu0, started, t0 = time.process_time(), datetime.now(timezone.utc), time.perf_counter()
    sampler, sources = kind.sampler, kind.sources
    kind.run_gammas = gammas
    with torch_one_thread(kind.uses_torch):
        trial_info = kind.trial(gammas) if trial else None
    plan = Plan(kind.checks(), kind.blocks(instances, gammas), alpha, sequential_design(n))
    cn = control_n or max(n // 4, 1000)
    cplan = Plan(plan.checks, plan.blocks, alpha, sequential_design(cn))
    cplan.n_tests = plan.n_tests  # controls run at the subject's per-test levels
    bar = Bar(len(plan.blocks) * n) if progress else None
    compiled = compiled_in(sampler.fn)
    sp = None
    try:
        with torch_one_thread(kind.uses_torch):
            sources.scan()  # generators alive after the trial call (lazily made ones included)
            subject, crashes, blocks, findings, runners = run_subject(kind, plan, seed, bar)
            sources.scan()
            reuse = reuse_of(blocks)
            if probes and kind.probes(sampler):
                sp = run_probes(kind, sampler, blockers(reuse, compiled, sources))
            ctl = run_controls(kind, cplan, seed, bar) if controls else {}
    finally:
        if bar:
            bar.stop()
    pclaims = probe_claims(kind, sp, controls) if sp is not None else []
    warnings = warnings_of(sources, trial_info, compiled if compiled_matters(compiled, sources, sp) else (), reuse)
    claims = assemble(kind, plan, subject, ctl, pclaims)
    target = target_name(kind.target, sampler.fn)
    from .replay import attach
    attach(kind, claims, crashes, blocks, findings, target=target, seed=seed, probes=probes)
    settings = {**kind.settings(), "n": n, "control_n": cn if controls else None, "gammas": list(gammas),
                "instances": list(instances), "seed": seed}
    report = {"schema": SCHEMA, "verdicts": verdicts_of(claims, crashes, warnings, kind.titles(), findings),
              "warnings": warnings, "crashes": crashes, "findings": findings, "claims": claims,
              "run": run_info(kind.title, sampler.name, settings, plan, started, t0, cpu0, blocks, trial_info,
                                 sources)}
    kind.finish(report, runners)
    return report
