"""The end-to-end check of a generation stack (assisted generation with sampling processors):
:func:`check_assisted_generation` runs the stack on every block (instance, processor setting, γ)
in the runner of :mod:`.assisted`, grades the lossless checks of :mod:`.checks` in the
group-sequential design, runs the buggy stacks of :data:`.assisted.CONTROLS` through the same
checks, and assembles the report with :mod:`.api` (verdicts, severity, rerunnable calls). See
:mod:`.assisted` for the contract, the reference and the controls."""
from __future__ import annotations

import inspect
import sys
import time
from datetime import datetime, timezone

from .. import instances as inst
from ..markov import MarkovPair
from ..rng import derive_seed
from .assisted import (CONTROLS, DEFAULT_N, DEFAULT_NEW_TOKENS, GAMMAS, INSTANCES, SETTINGS, STACK_SIGNATURE,
                       Processing, _runner, blocks_of, parse_setting, processed_source)
from .checks import CHECKS
from .sequential import design as sequential_design


def _check_stack(fn, label: str) -> None:
    from .trial import ConformanceUsageError
    if not callable(fn):
        raise TypeError(f"the generation stack must be callable: {STACK_SIGNATURE}")
    try:
        inspect.signature(fn).bind(None, None, [0], max_new_tokens=1, num_assistant_tokens=1, temperature=1.0,
                                   top_k=None, top_p=1.0)
    except TypeError as err:
        raise ConformanceUsageError(f"{label} cannot be called as a generation stack: {err}",
                                    f"spectheory calls {STACK_SIGNATURE}; wrap your function to take these "
                                    "arguments") from None
    except ValueError:  # no signature (a builtin): let the runs find out
        pass


def check_assisted_generation(fn, *, lm: str = "hf", dtype: str = "float32", settings=SETTINGS, gammas=GAMMAS,
                              instances=INSTANCES, max_new_tokens: int = DEFAULT_NEW_TOKENS, n: int = DEFAULT_N,
                              seed: int = 0, alpha: float = 0.01, controls: bool = True,
                              control_n: int | None = None, progress: bool = False, name: str | None = None) -> dict:
    """Test a generation stack ``fn`` (module docstring; :data:`STACK_SIGNATURE`) for
    losslessness end to end: on each instance, processor setting (``"T=0.7,top_k=2"``, see
    :func:`parse_setting`) and γ (``num_assistant_tokens``), at most ``n`` calls of the stack
    from the prompt, the law of the ``max_new_tokens`` generated tokens against the target's own
    processed law (exact). Returns a conformance report (schema ``spectheory.report/1``) with the
    ``lossless`` verdict (``standard``: not checkable). ``controls``: run the buggy stacks of
    :data:`CONTROLS` through the same checks (at most ``control_n`` calls, default
    max(n // 4, 1000)); they need ``transformers``."""
    from .api import (SCHEMA, Plan, _Bar, _claim, _torch_one_thread, run_info, run_sequential, verdicts,
                      warnings_of, _check_args, _CPU0)
    from ..checks import check_int
    from ..judge.evidence import combine
    from .sources import RandomSources
    if lm not in ("hf", "torch", "callable"):
        raise ValueError(f"lm must be 'hf', 'torch' or 'callable', got {lm!r}")
    if isinstance(settings, (str, Processing, dict)):
        settings = (settings,)
    settings = tuple(parse_setting(s) for s in settings)
    if not settings:
        raise ValueError("settings must name at least one processor setting, e.g. ('T=1',)")
    L = check_int(max_new_tokens, "max_new_tokens", min=1, max=8)
    n, gammas, instances = _check_args(n, gammas, instances, alpha, seed, control_n, max_gamma=8)
    from .api import target_name
    from .replay import load
    if isinstance(fn, str):
        name, fn = name or fn, load(fn)
    label = name or getattr(fn, "__qualname__", "generation stack")
    _check_stack(fn, label)
    target = target_name(name, fn)
    _CPU0[0] = time.process_time()
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    blocks, skipped = blocks_of(instances, settings, gammas, L)
    checks = [c for c in CHECKS if c.group == "lossless" and c.for_steps]
    plan = Plan(checks, blocks, alpha, sequential_design(n))
    cn = control_n or max(n // 4, 1000)
    cplan = Plan(checks, blocks, alpha, sequential_design(cn))
    cplan.n_tests = plan.n_tests  # controls at the subject's per-test levels
    sources = RandomSources(fn)
    bar = _Bar(len(blocks) * n) if progress else None

    def seed_of(name_, proc, g):
        return derive_seed(seed, "conformance.assisted", name_, proc.label, str(g))

    def title(name_, proc, g):
        return f"{name_} {proc.label} γ={g} L={L}"

    subject = {c.id: [] for c in checks}
    crashes, block_info = [], []
    try:
        with _torch_one_thread(lm in ("hf", "torch")):
            sources.scan()  # generators alive before the runs (a stack's own seeded ones are then watched)
            for name_, proc, g in blocks:
                raw = inst.get(name_)
                processed = MarkovPair(processed_source(raw.target, proc), processed_source(raw.draft, proc),
                                       raw.name)
                t = title(name_, proc, g)
                if bar is not None:
                    bar.update(bar.job, description=f"{label}: {t}")
                runner = _runner(fn, raw, processed, g, proc, L, seed_of(name_, proc, g), t, lm, dtype, sources)
                at: dict = {}
                ev, crash, used, k = run_sequential(runner, processed, checks, plan, t, bar, decided_at=at)
                for cid, e in ev.items():
                    subject[cid].extend(e)
                if crash is not None:
                    crashes.append({"instance": t, "gamma": g, **crash.to_json()})
                block_info.append({"instance": name_, "setting": proc.label, **proc.kwargs(), "gamma": g,
                                   "max_new_tokens": L, "runs": used, "looks": k + 1, "calls": runner.calls,
                                   "sampler_s": round(runner.sampler_s, 4), "decided_at": at})
            ctl = _run_controls(controls, blocks, checks, cplan, L, seed_of, title, dtype)
    finally:
        if bar:
            bar.stop()
    warnings = warnings_of(sources)
    claims = []
    for check in checks:
        ev = subject[check.id]
        verdict = combine(ev)
        c = _claim(check.id, check.statement, check.reference, check.group, ev, [], [],
                   "Leviathan et al. 2023; Chen et al. 2023",
                   "End-to-end: the tokens generated by the stack from the prompt against the target's own "
                   "processed law (exact); see docs/conformance.md.")
        notes = c["notes"]
        for cname, desc, per_block in ctl.get(check.id, []):
            cev = [e for _, es in per_block for e in es]
            cv = combine(cev) if cev else "not-checkable"
            c["controls"].append({"name": cname, "description": desc, "verdict": cv, "modes": {"mc": cv},
                                  "required_modes": ["mc"], "evidence": [e.to_json() for e in cev],
                                  "counterexample": None,
                                  "failed_on": [b for b, es in per_block if combine(es) == "fails"],
                                  "active_on": [b for b, _ in per_block]})
        if controls and verdict != "fails":
            covered = {b for _, _, per_block in ctl.get(check.id, []) for b, es in per_block if combine(es) == "fails"}
            bare = [title(*b) for b in blocks if title(*b) not in covered]
            if bare:
                verdict = "inconclusive"
                notes.append("no negative control failed this check on " + "; ".join(bare)
                             + ": it is not shown able to fail there")
        c["verdict"] = verdict
        if verdict == "fails":
            c["counterexample"] = _counterexample(check.id, ev, blocks, block_info, title, target, seed, L, lm, dtype)
        claims.append(c)
    settings_json = {"lm": lm, "dtype": dtype, "n": n, "control_n": cn if controls else None,
                     "gammas": list(gammas), "instances": list(instances), "seed": seed,
                     "settings": [p.label for p in settings], "max_new_tokens": L, "skipped": skipped}
    report = {"schema": SCHEMA, "verdicts": verdicts(claims, crashes, warnings), "warnings": warnings,
              "crashes": crashes, "claims": claims,
              "run": run_info("assisted generation", label, settings_json, plan, started, t0, block_info, None,
                              sources)}
    versions = report["run"].setdefault("versions", {})
    for mod in ("torch", "transformers"):  # the stack's libraries, when loaded
        if mod in sys.modules:
            versions[mod] = getattr(sys.modules[mod], "__version__", "?")
    report["run"]["reference"] = ("the target alone sampling with the processors: process_row (temperature, top-k, "
                                  "top-p in transformers' order) on every row, exact law of the L tokens")
    return report


def _counterexample(check_id, ev, blocks, block_info, title, target, seed, L, lm, dtype) -> dict | None:
    """The first failing block of a check, and the call that recomputes its evidence there
    (:func:`.replay.replay_check` with ``kind="assisted"``, at the runs and level of the look that
    decided it)."""
    from .replay import call_line
    bad = next((e for e in ev if e.outcome == "fail"), None)
    if bad is None:
        return None
    for (name_, proc, g), info in zip(blocks, block_info):
        if not bad.instance.startswith(title(name_, proc, g)):
            continue
        at = info["decided_at"].get(check_id)
        out = {"instance": name_, "setting": proc.label, "gamma": g, "max_new_tokens": L,
               "measured": bad.measured, "p_value": bad.p_value, "n": bad.n}
        if at is not None:
            extra = {"lm": lm} if lm != "hf" else {}
            out["call"] = call_line("replay_check", target, check=check_id, kind="assisted", instance=name_,
                                    setting=proc.label, gamma=g, max_new_tokens=L, runs=at["runs"], seed=seed,
                                    alpha=at["level"], dtype=dtype, **extra)
        return out
    return None


def _run_controls(controls: bool, blocks, checks, cplan, L, seed_of, title, dtype) -> dict:
    """Each control on every block where its bug is active, until it fails every check there
    (or ``control_n`` calls). Returns {check id: [(name, description, [(block title, [Evidence])])]}."""
    from .api import run_sequential
    from .sources import RandomSources
    out: dict = {c.id: [] for c in checks}
    if not controls:
        return out
    for cname, desc, stack, applies in CONTROLS:
        per_check: dict = {c.id: [] for c in checks}
        sources = RandomSources(stack)
        for name_, proc, g in blocks:
            raw = inst.get(name_)
            if not applies(raw, proc):
                continue
            processed = MarkovPair(processed_source(raw.target, proc), processed_source(raw.draft, proc), raw.name)
            t = title(name_, proc, g)
            runner = _runner(stack, raw, processed, g, proc, L, seed_of(name_, proc, g), t, "hf", dtype, sources)
            ev, _, _, _ = run_sequential(runner, processed, checks, cplan, t, None, stop_on_pass=False)
            for cid, e in ev.items():
                per_check[cid].append((t, e))
        for c in checks:
            out[c.id].append((cname, desc, per_check[c.id]))
    return out
