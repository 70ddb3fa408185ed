"""``logits`` evidence from a validation run, for ``spectheory verify --logits RUN_DIR``.

SD claims (this module):

* sd.acceptance — on-policy, graded: in real speculative decoding, given the context before
  an iteration, the first draft is accepted with probability β_1 = Σ min(p_1, q_1). Test:
  acceptance indicators against their β_1 (two-sided z-test, null se sqrt(Σβ(1−β))/n:
  the indicators are a martingale-difference sequence given the past). Info: α̂ of the
  captured text (off-policy) beside the on-policy acceptance.
* sd.expected_tokens — graded: given the drafted tokens, τ has the law P(τ ≥ k) = Π_{j≤k} a_j
  with a_j the acceptance probability of draft j (Leviathan Alg. 1), so mean(τ + 1) is
  tested against mean E[τ + 1 | drafts] with the exact conditional variance. Info: the
  constant-α closed form at α̂ (captured) and the trace-exact replay against the measured
  tokens per iteration (the formula's modelling error on real text, not a test).
* sd.walltime — info: Thm 3.8 at c = t_draft/t_target(1) and the measured-profile cost model
  (:mod:`validate.analysis`) against the measured speedup.

Families add theirs in ``validate/replay_<family>.py`` with a function
``logits_evidence(run, alpha) -> dict[claim_id, list[Evidence]]``; :func:`logits_evidence`
discovers and merges them.
"""
from __future__ import annotations

import importlib
import math
import pkgutil

import numpy as np

from spectheory.judge import stats
from spectheory.judge.evidence import Evidence
from spectheory.checks import check_level, check_real

from .analysis import summarize
from .experiment import Run, check_run, load_run


def _ctx(run: Run, g) -> str:
    c = run.config
    return (f"γ={g}, temperature={c.get('temperature')}, models: target {c.get('target', '?')}, "
            f"draft {c.get('draft', '?')}; device {c.get('device') or 'cpu'}")


def sd_evidence(run: Run, alpha: float = 1e-3, tolerance: float = 0.01) -> dict[str, list[Evidence]]:
    check_run(run)
    check_level(alpha)
    check_real(tolerance, "tolerance", lo=0.0, lo_open=True)
    out: dict[str, list[Evidence]] = {"sd.acceptance": [], "sd.expected_tokens": [], "sd.walltime": []}
    for g, runs in sorted(run.sd.items()):
        ctx = _ctx(run, g)
        ind = np.concatenate([r.tau >= 1 for r in runs]).astype(np.float64)
        b1 = np.concatenate([r.beta[:, 0] for r in runs])
        n = ind.size
        se = math.sqrt(float(np.sum(b1 * (1 - b1)))) / n
        out["sd.acceptance"].append(stats.z_test_mean(
            f"real SD γ={g}", float(b1.mean()), mean=float(ind.mean()), se=se, n=n, alpha=alpha,
            tolerance=tolerance, what="first-draft acceptance frequency", mode="logits",
            note=f"{ctx}; {n} iterations; claimed = mean of β_1 = Σmin(p,q) at each iteration's first "
                 "draft position (on-policy); se under the claim"))
        tpi = np.concatenate([r.tokens_per_iteration for r in runs])
        cm, cv = zip(*(r.conditional_tokens() for r in runs))
        cm, cv = np.concatenate(cm), np.concatenate(cv)
        out["sd.expected_tokens"].append(stats.z_test_mean(
            f"real SD γ={g}", float(cm.mean()), mean=float(tpi.mean()), se=math.sqrt(float(cv.sum())) / tpi.size,
            n=tpi.size, alpha=alpha, tolerance=tolerance * g, what="tokens per iteration", mode="logits",
            note=f"{ctx}; claimed = mean of E[τ+1 | drafts] = 1 + Σ_k Π_(j≤k) min(1, p_j/q_j)(x_j) "
                 "(exact given the drafts), se = sqrt(Σ Var[τ | drafts])/n"))
    for row in summarize(run):
        if row["category"] == "all" or not row["n_iterations"]:
            continue
        g, cat = row["gamma"], row["category"]
        ctx = _ctx(run, g) + f"; category {cat}"
        name = f"{cat} γ={g}"
        se = row["tokens_measured_se"]
        ci = (row["tokens_measured"] - 1.96 * se, row["tokens_measured"] + 1.96 * se) if np.isfinite(se) else (None, None)
        out["sd.acceptance"].append(stats.info(
            "logits", name, row["alpha_capture"], row["accept_first_measured"], n=row["n_iterations"],
            test="α̂ of the target's captured text (mean Σmin(p,q), exact per position) vs the real SD first-draft "
                 "acceptance rate (on-policy contexts differ)", note=ctx))
        out["sd.expected_tokens"].append(stats.info(
            "logits", name, row["tokens_closed_form"], row["tokens_measured"], n=row["n_iterations"], ci=ci,
            test="constant-α closed form (1−α̂^(γ+1))/(1−α̂) at the captured α̂ vs measured tokens per iteration "
                 "(95% CI)", note=f"{ctx}; trace-exact replay {row['tokens_trace_exact']:.4f}"))
        out["sd.walltime"].append(stats.info(
            "logits", f"{name} c={row['c']:.3f}", row["speedup_paper"], row["speedup_measured"],
            n=row["sd_tokens"], test="Thm 3.8 at α̂ with c = t_draft/t_target(1) (verify = one call) vs "
                                     "measured speedup over autoregressive decoding", note=ctx))
        out["sd.walltime"].append(stats.info(
            "logits", f"{name} profile", row["speedup_profile"], row["speedup_measured"], n=row["sd_tokens"],
            test="measured cost profile: E[tokens]·t_T(1)/(γ·t_D + t_T(γ+1) + t_verify) at α̂ vs measured speedup",
            note=f"{ctx}; t_T(1)={row['t_target_1']:.4f}s, t_D={row['t_draft']:.4f}s, "
                 f"t_T(γ+1)={row['t_target_verify']:.4f}s (×{row['verify_cost_ratio']:.2f} of one call)"))
    for e in out["sd.expected_tokens"]:  # the claim's parts (sims/claims/sd.py)
        e.part = "formula-on-markov" if e.outcome == "info" else "chain"
    return {k: v for k, v in out.items() if v}


def family_modules():
    """``validate.replay_<family>`` modules that define ``logits_evidence(run, alpha)``."""
    import validate
    mods = []
    for m in pkgutil.iter_modules(validate.__path__):
        if m.name.startswith("replay_"):
            mod = importlib.import_module(f"validate.{m.name}")
            if callable(getattr(mod, "logits_evidence", None)):
                mods.append(mod)
    return mods


def logits_evidence(run_dir, alpha: float = 1e-3) -> dict[str, list[Evidence]]:
    """All ``logits`` evidence for a run directory, keyed by claim id (SD plus every family's)."""
    check_level(alpha)
    run = run_dir if isinstance(run_dir, Run) else load_run(run_dir)
    out = sd_evidence(run, alpha)
    for mod in family_modules():
        for cid, evs in mod.logits_evidence(run, alpha).items():
            out.setdefault(cid, []).extend(evs)
    return out
