"""The serving-layout entry point of the conformance checker: :func:`check_ragged_sampler` runs
a batched rejection sampler with ragged draft lengths per request (:mod:`.ragged`) through the
block kind's checks, controls and probes with the group-sequential plan of :mod:`.api` (kept
apart from :mod:`.ragged` so that the runs, the trial and the report assembly import one
another in one direction only)."""
from __future__ import annotations

import time
from datetime import datetime, timezone

from .api import (INSTANCES, SCHEMA, STANDARD_STATEMENT, SUPPORT_STATEMENT, Plan, _Bar, _check_args, _CPU0,
                  _torch_one_thread, assemble, blockers, compiled_matters, probe_claim, reuse_of, run_controls,
                  run_info, run_subject, target_name, verdicts, warnings_of, STANDARD_PROBES_ID, SUPPORT_PROBES_ID,
                  SUPPORT_PROBE_CONTROLS, STANDARD_PROBE_CONTROLS)
from .checks import first_n
from .ragged import (GAMMAS, MAX_GAMMA, LaneView, RaggedEngine, RaggedSampler, controls as ragged_controls,
                     engine_seed, probe_inputs, ragged_checks, run_ragged_probes)
from .sequential import design as sequential_design
from .trial import trial_ragged

def check_ragged_sampler(fn, *, offsets: str = "cu", bonus: str = "given", adapter: str = "probs",
                         dtype: str = "float64", framework: str = "numpy", n: int = 10_000, gammas=GAMMAS,
                         instances=INSTANCES, seed: int = 0, alpha: float = 0.01, controls: bool = True,
                         control_n: int | None = None, probes: bool = True, progress: bool = False,
                         name: str | None = None, trial: bool = True) -> dict:
    """Test a batched rejection sampler in the serving layout (``fn(draft_token_ids,
    cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, rng) -> output_token_ids``
    (B, max γ_b + 1) padded with −1; ``bonus="inside"``: no ``bonus_token_ids``, ``target_probs``
    (T + B, V); ``offsets="counts"``: ``num_draft_tokens`` in place of the cumulative counts) for
    losslessness and standard speculative sampling. ``gammas``: the draft lengths of the
    requests of every call (0 allowed: a request with its bonus only); each call verifies one
    request of every lane of every γ. The checks of :func:`check_block_verifier` per (instance,
    γ), plus the independence of the requests of a call; probes as batches of three requests.
    See :mod:`.ragged`."""
    sampler = fn if isinstance(fn, RaggedSampler) else RaggedSampler(
        fn, adapter=adapter, dtype=dtype, framework=framework, name=name or "", offsets=offsets, bonus=bonus)
    from ..checks import check_int
    if isinstance(gammas, str) or not hasattr(gammas, "__iter__"):
        raise TypeError(f"gammas must be a sequence of draft lengths, e.g. (0, 1, 3), got {gammas!r}")
    gammas = tuple(sorted({check_int(g, "gamma", min=0, max=MAX_GAMMA) for g in gammas}))
    if not gammas:
        raise ValueError("gammas must name at least one draft length")
    n, _, instances = _check_args(n, (1,), instances, alpha, seed, control_n)
    _CPU0[0] = time.process_time()
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    with _torch_one_thread(sampler.framework == "torch"):
        trial_info = trial_ragged(sampler) if trial else None
    checks = ragged_checks()
    plan = Plan(checks, [(i, g) for i in instances for g in gammas], alpha, sequential_design(n))
    cn = control_n or max(n // 4, 1000)
    cplan = Plan(checks, plan.blocks, alpha, sequential_design(cn))
    cplan.n_tests = plan.n_tests
    bar = _Bar(len(plan.blocks) * n) if progress else None
    engines: dict = {}

    def view(s, cname, pair, g):
        key = (cname, pair.name)
        if key not in engines:
            engines[key] = RaggedEngine(s, pair, gammas, first_n(pair.V), engine_seed(seed, pair.name), pair.name)
        return LaneView(engines[key], g)

    def make_runner(pair, g):
        return view(sampler, None, pair, g)

    def control(cfn, cname):
        cs = RaggedSampler(cfn, name=cname, bonus=sampler.bonus)
        return lambda pair, g: view(cs, cname, pair, g)

    from .compiled import compiled_in
    compiled = compiled_in(sampler.fn)
    sp = None
    try:
        with _torch_one_thread(sampler.framework == "torch"):
            sampler.sources.scan()
            subject, crashes, blocks = run_subject(plan, make_runner, sampler.name, bar)
            sampler.sources.scan()
            reuse = reuse_of(blocks)
            sp = run_ragged_probes(sampler, blockers(reuse, compiled, sampler.sources)) if probes else None
    finally:
        if bar:
            bar.stop()
    ctl_list = ragged_controls(sampler.bonus)
    stat_names = {c for chk in checks for c in chk.controls}
    ctl = run_controls(cplan, [(c, d, control(f, c)) for c, f, d in ctl_list if c in stat_names]) if controls else {}
    probe_claims = []
    if sp is not None:
        desc = {c: d for c, _, d in ctl_list}
        cps = {c: run_ragged_probes(RaggedSampler(f, name=c, dtype=sampler.dtype, bonus=sampler.bonus))
               for c, f, _ in ctl_list if c in SUPPORT_PROBE_CONTROLS + STANDARD_PROBE_CONTROLS} if controls else {}
        probe_claims = [
            probe_claim(SUPPORT_PROBES_ID, "lossless", SUPPORT_STATEMENT, sp[0],
                        [(c, desc[c], cps[c][0]) for c in SUPPORT_PROBE_CONTROLS if c in cps]),
            probe_claim(STANDARD_PROBES_ID, "standard", STANDARD_STATEMENT, sp[1],
                        [(c, desc[c], cps[c][1]) for c in STANDARD_PROBE_CONTROLS if c in cps])]
    warnings = warnings_of(sampler.sources, trial_info,
                           compiled if compiled_matters(compiled, sampler.sources, sp) else (), reuse)
    claims = assemble(plan, subject, ctl, probe_claims, crashes=crashes, warnings=warnings,
                      paper="Leviathan et al. 2023; Chen et al. 2023",
                      interpretation="Black-box check of a batched sampler with ragged draft lengths (the serving "
                                     "layout) on the built-in instances; see docs/conformance.md.")
    from .replay import attach
    attach(claims, crashes, blocks, target=target_name(name, sampler.fn), options=sampler.options(), seed=seed,
           probes=probe_inputs(sampler) if probes else None, kind="ragged", layout={"gammas": list(gammas)})
    settings = {**sampler.options(), "n": n, "control_n": cn if controls else None, "gammas": list(gammas),
                "instances": list(instances), "seed": seed,
                "requests_per_call": {e[1]: len(eng.lanes) for e, eng in engines.items() if e[0] is None},
                "calls": {e[1]: eng.batch_calls for e, eng in engines.items() if e[0] is None}}
    return {"schema": SCHEMA, "verdicts": verdicts(claims, crashes, warnings), "warnings": warnings,
            "crashes": crashes, "claims": claims,
            "run": run_info("ragged sampler", sampler.name, settings, plan, started, t0, blocks, trial_info,
                            sampler.sources)}
