"""The multi-draft and tree entry point of the conformance checker:
:func:`check_multidraft_verifier` runs a user's verifier of K independent drafts or of a static
token tree through the checks and probes of :mod:`.multidraft` with the group-sequential plan of
:mod:`.api` (kept apart from :mod:`.multidraft` so that the checks, the trial call and the
report assembly import one another in one direction only)."""
from __future__ import annotations

import time
from datetime import datetime, timezone

from .. import instances as inst
from ..rng import derive_seed
from ..rules.multidraft import MultiDraftRule
from .sequential import design as sequential_design
from .api import (SCHEMA, SUPPORT_STATEMENT, Plan, _Bar, _check_args, _CPU0, _torch_one_thread, assemble, blockers,
                  compiled_matters, probe_claim, reuse_of, run_controls, run_info, run_subject, target_name, verdicts,
                  warnings_of)
from .checks import first_n
from .multidraft import (CONTROLS, GAMMAS, INSTANCES, RULES, MultiDraftVerifier, MultiRunner, _rule_checks,
                         lossless_checks, probe_inputs, run_multi_probes)
from .trial import trial_multidraft


def check_multidraft_verifier(fn, *, K: int = 2, tree=None, rule: str | None = None, adapter: str = "probs",
                              dtype: str = "float64", batched: bool = False, framework: str = "numpy",
                              n: int = 10_000, gammas=GAMMAS, instances=INSTANCES, seed: int = 0,
                              alpha: float = 0.01, controls: bool = True, control_n: int | None = None,
                              probes: bool = True, progress: bool = False, name: str | None = None,
                              trial: bool = True) -> dict:
    """Test a multi-draft verifier ``fn(p, q, drafts, rng)`` (K independent drafts) or a tree
    verifier ``fn(p, q, tokens, parents, rng)`` (``tree``: branching factors per depth, e.g.
    ``(2, 2)``) for losslessness and, with ``rule`` (``"kseq"``, ``"gbv"``, ``"spectr-gbv"``,
    ``"specinfer"``), for matching that rule's exact engine. See the module docstring."""
    verifier = fn if isinstance(fn, MultiDraftVerifier) else MultiDraftVerifier(
        fn, adapter=adapter, dtype=dtype, batched=batched, framework=framework, name=name or "", K=K, tree=tree)
    if rule is not None:
        if isinstance(rule, MultiDraftRule):
            rule = next((k for k, v in RULES.items() if v == rule), rule.name)
        if rule not in RULES:
            raise ValueError(f"rule must be one of {tuple(RULES)} (or None: losslessness only), got {rule!r}")
        if verifier.tree is not None and rule != "specinfer":
            raise ValueError(f"rule {rule!r} verifies K independent drafts: a tree verifier can be matched with "
                             "rule='specinfer' only")
        if rule == "gbv" and verifier.K != 1:
            raise ValueError(f"GBV verifies a single draft: use K=1 (got K={verifier.K}), or rule='spectr-gbv'")
    if verifier.tree is not None:
        gammas = (len(verifier.tree),)
    n, gammas, instances = _check_args(n, gammas, instances, alpha, seed, control_n, max_gamma=3)
    for nm in instances:
        if inst.get(nm).V > 4:
            raise ValueError(f"instance {nm!r} has V = {inst.get(nm).V}: the exact engines need V ≤ 4")
    _CPU0[0] = time.process_time()
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    with _torch_one_thread(verifier.framework == "torch"):
        trial_info = trial_multidraft(verifier, min(gammas)) if trial else None
    checks = lossless_checks(verifier.tree) + (_rule_checks(rule, verifier.K, verifier.tree) if rule else ())
    plan = Plan(checks, [(i, g) for i in instances for g in gammas], alpha, sequential_design(n))
    cn = control_n or max(n // 4, 1000)
    cplan = Plan(checks, plan.blocks, alpha, sequential_design(cn))
    cplan.n_tests = plan.n_tests
    bar = _Bar(len(plan.blocks) * n) if progress else None

    def seed_of(name_, g):
        return derive_seed(seed, "conformance-multidraft", name_, str(g))

    def make_runner(pair, g):
        return MultiRunner(verifier, pair, g, first_n(pair.V), seed_of(pair.name, g), pair.name)

    def control(cfn, cname):
        cv = MultiDraftVerifier(cfn, name=cname, K=verifier.K, tree=verifier.tree)
        return lambda pair, g: MultiRunner(cv, pair, g, first_n(pair.V), seed_of(pair.name, g), pair.name)

    layout = verifier.layout
    from .compiled import compiled_in
    compiled = compiled_in(verifier.fn)
    try:
        with _torch_one_thread(verifier.framework == "torch"):
            verifier.sources.scan()
            subject, crashes, blocks = run_subject(plan, make_runner, verifier.name, bar)
            verifier.sources.scan()
            reuse = reuse_of(blocks)
            sp = run_multi_probes(verifier, min(gammas), blockers(reuse, compiled, verifier.sources)) \
                if probes else None
    finally:
        if bar:
            bar.stop()
    mine = [c for c in CONTROLS if c[1] == layout and (verifier.tree is not None or verifier.K >= c[5])]
    ctl = run_controls(cplan, [(c[0], c[3], control(c[2], c[0])) for c in mine if c[4] != "probes"]) \
        if controls else {}
    probe_claims = []
    if sp is not None:
        cps = [(c[0], c[3], run_multi_probes(MultiDraftVerifier(c[2], name=c[0], K=verifier.K, tree=verifier.tree),
                                             min(gammas))) for c in mine if c[4] == "probes"] if controls else []
        probe_claims = [probe_claim("conformance.support_probes", "lossless", SUPPORT_STATEMENT, sp, cps)]
    warnings = warnings_of(verifier.sources, trial_info,
                           compiled if compiled_matters(compiled, verifier.sources, sp) else (), reuse)
    what = f"{verifier.K} independent drafts" if verifier.tree is None else f"the static tree {verifier.tree}"
    claims = assemble(plan, subject, ctl, probe_claims, crashes=crashes, warnings=warnings,
                      paper="Miao et al. 2024; Sun et al. 2023; Lin et al. 2026",
                      interpretation=f"Black-box check of a verifier of {what} on the built-in instances; see "
                                     "docs/conformance.md.")
    from .replay import attach
    attach(claims, crashes, blocks, target=target_name(name, verifier.fn), options=verifier.options(), seed=seed,
           probes=probe_inputs(verifier, min(gammas)) if probes else None, kind="multidraft",
           layout={"K": verifier.K if verifier.tree is None else None,
                   "tree": list(verifier.tree) if verifier.tree else None, "rule": rule})
    titles = {"lossless": "lossless",
              "standard": f"matches {rule} (spectheory's exact engine)" if rule else
              "matches a named rule (not checked: pass rule=kseq|gbv|spectr-gbv|specinfer)"}
    settings = {"adapter": verifier.adapter, "dtype": verifier.dtype, "batched": verifier.batched,
                "framework": verifier.framework, "layout": layout, "K": verifier.K if verifier.tree is None else None,
                "tree": list(verifier.tree) if verifier.tree else None, "rule": rule, "n": n,
                "control_n": cn if controls else None, "gammas": list(gammas), "instances": list(instances),
                "seed": seed}
    return {"schema": SCHEMA, "verdicts": verdicts(claims, crashes, warnings, titles), "warnings": warnings,
            "crashes": crashes, "claims": claims,
            "run": run_info("multi-draft verifier" if verifier.tree is None else "tree verifier", verifier.name,
                            settings, plan, started, t0, blocks, trial_info, verifier.sources)}
