"""``logits`` evidence from a validation run, for ``spectheory verify --logits RUN_DIR``.

SD claims (this module), from real speculative decoding (every SD record of the run, every γ):

* sd.acceptance — graded, **drafting law**: at every verified draft position j (iteration i
  verifies drafts 1..min(τ_i + 1, γ)), given the context and the earlier trials, the draft x_j is
  drawn from q_j and accepted with probability E[a_j | past] = β_j = Σ min(p_j, q_j) (Leviathan
  Def. 3.1 at that context). Martingale CLT test of Σ (a_j − β_j), every verified position of
  every γ pooled (pooling is valid: each position's conditional law is the claim, whatever γ).
* sd.expected_tokens — graded, **verifier law**: given also the drafted token, a_j is accepted
  with probability r_j = min(1, p_j(x_j)/q_j(x_j)), and τ counts the leading acceptances, so
  P(τ ≥ k | drafts) = Π_{j≤k} r_j: the law behind E[τ + 1] (Eq. 1 at constant α). Martingale CLT
  test of Σ (a_j − r_j) over the same positions; plus an exact check that every iteration's
  verifier returned τ + 1 tokens (the correction or bonus; format-2 records). Info per γ: mean
  τ + 1 against mean E[τ + 1 | drafts], and the constant-α closed form at α̂.
* sd.walltime — info: Thm 3.8 at c = t_draft/t_target(1) and the measured-profile cost model
  (:mod:`spectheory.validate.analysis`) against the measured speedup.

Each graded test states its power (:mod:`spectheory.validate.power`): n needed at power 0.8 and at the
report's 0.9 for its tolerance and per-test α, and n had. A broken verifier run through the same
real loop (``run.controls``, min(1, q/p)) is tested the same way and must fail: reported as info
rows beside the subject's tests.

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


def _ctx(run: Run, g) -> str:  # noqa: D103
    c = run.config
    return (f"γ={g}, temperature={c.get('temperature')}, models: target {c.get('target', '?')}, "
            f"draft {c.get('draft', '?')}, weights {c.get('weights', 'float32')}; device {c.get('device') or 'cpu'}")


from .power import TOLERANCE, control_row  # noqa: E402  (0.02: the deviation in an acceptance probability that matters)


def _pool(runs_by_gamma: dict):
    acc, r, b = [], [], []
    for g, runs in sorted(runs_by_gamma.items()):
        for x in runs:
            a_, r_, b_ = x.verified()
            acc.append(a_)
            r.append(r_)
            b.append(b_)
    cat = lambda v: np.concatenate(v) if v else np.zeros(0)  # noqa: E731
    return cat(acc), cat(r), cat(b)


def sd_tests(runs_by_gamma: dict, alpha: float, tolerance: float, label: str) -> tuple[list, list, list]:
    """The two graded martingale tests on every verified draft position of ``runs_by_gamma``
    (γ → list[SDRun]): (sd.acceptance evidence, sd.expected_tokens evidence, power rows)."""
    from .power import martingale_test
    A, R, Bt = _pool(runs_by_gamma)
    gs = ", ".join(str(g) for g in sorted(runs_by_gamma))
    n_it = sum(r.n_iterations for rs in runs_by_gamma.values() for r in rs)
    trials = (f"every verified draft position (drafts 1..min(τ+1, γ) of each of {n_it} iterations), γ ∈ {{{gs}}} "
              "pooled, all prompts")
    if A.size == 0:
        return [], [], []
    e1, p1 = martingale_test("sd.acceptance", f"{label}: drafting law, γ ∈ {{{gs}}} pooled", A, Bt, alpha=alpha,
                             tolerance=tolerance, what="acceptance frequency of verified drafts", trials=trials,
                             note="claimed = mean β_j = Σ min(p_j, q_j) at each verified position's context (x_j ~ q_j)")
    e2, p2 = martingale_test("sd.expected_tokens", f"{label}: verifier law, γ ∈ {{{gs}}} pooled", A, R, alpha=alpha,
                             tolerance=tolerance, what="acceptance frequency given the drafted tokens", trials=trials,
                             note="claimed = mean r_j = min(1, p_j(x_j)/q_j(x_j)) of the drafted tokens: P(τ ≥ k | "
                                  "drafts) = Π_(j≤k) r_j, the law behind E[τ + 1]")
    return [e1], [e2], [p1, p2]


def sd_evidence(run: Run, alpha: float = 1e-3, tolerance: float = TOLERANCE) -> dict[str, list[Evidence]]:
    check_run(run)
    check_level(alpha)
    check_real(tolerance, "tolerance", lo=0.0, lo_open=True)
    out: dict[str, list[Evidence]] = {"sd.acceptance": [], "sd.expected_tokens": [], "sd.walltime": []}
    if run.sd:
        ctx = _ctx(run, ",".join(str(g) for g in sorted(run.sd)))
        acc, tok, _ = sd_tests(run.sd, alpha, tolerance, "real SD")
        for e in acc + tok:
            e.note = f"{ctx}; {e.note}"
        out["sd.acceptance"] += acc
        out["sd.expected_tokens"] += tok
        recorded = [r for rs in run.sd.values() for r in rs if r.n_out is not None]
        if recorded:
            n_out = np.concatenate([r.n_out for r in recorded])
            want = np.concatenate([r.tau + 1 for r in recorded])
            bad = int((n_out != want).sum())
            out["sd.expected_tokens"].append(Evidence(
                "logits", "real SD: tokens per iteration = τ + 1 (correction or bonus)", float(want.mean()),
                float(n_out.mean()), n=int(n_out.size), tolerance=0.0, outcome="fail" if bad else "pass",
                test="exact per iteration: the verifier returns the τ accepted drafts plus one token",
                note=f"{ctx}; {bad} of {n_out.size} iterations differ"))
        else:
            out["sd.expected_tokens"].append(stats.info(
                "logits", "real SD: tokens per iteration = τ + 1", None, None,
                test="not recorded (format-1 SD records hold τ, not the verifier's output length)", note=ctx))
    for g, runs in sorted(run.sd.items()):
        from .power import martingale_test
        ctx = _ctx(run, g)
        A, R, Bt = _pool({g: runs})
        for claim, mu, what in (("sd.acceptance", Bt, "drafting law"), ("sd.expected_tokens", R, "verifier law")):
            ev, _ = martingale_test(claim, f"real SD γ={g}: {what}", A, mu, alpha=alpha, tolerance=tolerance,
                                    what="acceptance frequency", trials=f"verified draft positions at γ={g}")
            out[claim].append(stats.info("logits", ev.instance, ev.claimed, ev.measured, n=ev.n,
                                         ci=(ev.ci_low, ev.ci_high),
                                         test=f"{ev.test} — this γ alone (p = {ev.p_value:.3g}, outcome alone: "
                                              f"{ev.outcome}); graded pooled over γ above", note=f"{ctx}; {ev.note}"))
        tpi = np.concatenate([r.tokens_per_iteration for r in runs])
        cm, cv = zip(*(r.conditional_tokens() for r in runs))
        cm, cv = np.concatenate(cm), np.concatenate(cv)
        ev = stats.z_test_mean(
            f"real SD γ={g}", float(cm.mean()), mean=float(tpi.mean()), se=math.sqrt(float(cv.sum())) / tpi.size,
            n=tpi.size, alpha=alpha, tolerance=tolerance * g, what="tokens per iteration", mode="logits")
        out["sd.expected_tokens"].append(stats.info(
            "logits", f"real SD γ={g}: tokens per iteration", ev.claimed, ev.measured, n=ev.n,
            ci=(ev.ci_low, ev.ci_high),
            test=f"mean τ+1 vs mean E[τ+1 | drafts] = 1 + Σ_k Π_(j≤k) r_j (exact given the drafts), se = sqrt(Σ "
                 f"Var[τ | drafts])/n; p = {ev.p_value:.3g}, detectable {ev.detectable:.3g} at tolerance "
                 f"{tolerance * g:g} (outcome alone: {ev.outcome}); the per-position verifier law above is the "
                 "graded form of this", note=ctx))
    for g, runs in sorted(run.controls.items()):
        ctx = _ctx(run, g)
        rule = runs[0].meta.get("rule", "?")
        acc, tok, _ = sd_tests({g: runs}, alpha, tolerance, f"negative control {rule}")
        for e in acc + tok:
            claim = "sd.acceptance" if e in acc else "sd.expected_tokens"
            e.note = f"{ctx}; {e.note}"
            out[claim].append(control_row(e, e.outcome == "fail", "a broken verifier through the same real SD loop, "
                                                                  "the same test"))
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
        out["sd.expected_tokens"][-1].part = "formula-on-markov"  # outside the constant-α assumption: info
        out["sd.walltime"].append(stats.info(
            "logits", f"{name} c={row['c']:.3f}", row["speedup_paper"], row["speedup_measured"],
            n=row["sd_tokens"], test="Thm 3.8 at α̂ with c = t_draft/t_target(1) (verify = one call) vs "
                                     "measured speedup over autoregressive decoding", note=ctx))
        out["sd.walltime"].append(stats.info(
            "logits", f"{name} profile", row["speedup_profile"], row["speedup_measured"], n=row["sd_tokens"],
            test="measured cost profile: E[tokens]·t_T(1)/(γ·t_D + t_T(γ+1) + t_verify) at α̂ vs measured speedup",
            note=f"{ctx}; t_T(1)={row['t_target_1']:.4f}s, t_D={row['t_draft']:.4f}s, "
                 f"t_T(γ+1)={row['t_target_verify']:.4f}s (×{row['verify_cost_ratio']:.2f} of one call)"))
    for e in out["sd.expected_tokens"]:  # the claim's parts (sims/claims/sd.py): the real pair is a Markov source
        if e.part is None:                # whose state is the context; its law given the drafts is the chain's
            e.part = "chain"
    return {k: v for k, v in out.items() if v}


def power_rows(run: Run, alpha: float = 1e-3, tolerance: float = TOLERANCE) -> list:
    """The power statement (:class:`spectheory.validate.power.PowerRow`) of every graded martingale test of
    the run: SD's two, then every family loop's."""
    from .replay_loops import power_rows as loop_power_rows
    check_run(run)
    rows = sd_tests(run.sd, alpha, tolerance, "real SD")[2] if run.sd else []
    return rows + loop_power_rows(run, alpha, tolerance)


def _first_part(claim: str):
    """The first part of a registered claim (None for a one-part or unknown claim)."""
    from spectheory.sims.registry import UnknownClaimError, select
    try:
        (c,) = select(claim)
    except (UnknownClaimError, ValueError):
        return None
    return c.parts[0].id if len(c.parts) > 1 else None


def family_modules():
    """``validate.replay_<family>`` modules that define ``logits_evidence(run, alpha)``."""
    import spectheory.validate as validate
    mods = []
    for m in pkgutil.iter_modules(validate.__path__):
        if m.name.startswith("replay_"):
            mod = importlib.import_module(f"spectheory.validate.{m.name}")
            if callable(getattr(mod, "logits_evidence", None)):
                mods.append(mod)
    return mods


#: the claims each logits replay gives evidence to: SD's (this module) and each family's
#: (``validate.replay_<name>``), so that a run for some claims replays only what they need
#: (``verify --logits RUN --claims 'sd.*'``: the SD replay alone). A replay module missing here is
#: always run.
REPLAY_CLAIMS = {
    "sd": ("sd.acceptance", "sd.expected_tokens", "sd.walltime"),
    "ecsv": ("ecsv.falsification", "ecsv.majority"),
    "ersd": ("ersd.lemma3_1", "zero_order.underestimates"),
    "loops": ("se.acceptance", "ersd.lemma3_1", "kseq.rho", "gbv.optimal", "spectr_gbv.attains"),
    "multidraft": ("gbv.optimal", "spectr_gbv.upper_bound", "spectr_gbv.attains"),
    "sb": ("sb.trunc_geom", "sb.rollback", "sb.speedup", "sb.hrad"),
    "se": ("se.acceptance", "se.thm3_1", "se.thm3_2"),
}


def replay_name(mod) -> str:
    """``spectheory.validate.replay_ecsv`` → ``ecsv``."""
    return mod.__name__.rsplit(".", 1)[-1].removeprefix("replay_")


def replays_for(claims=None, skip=()) -> list[str]:
    """The replays (``sd``, then the family modules in discovery order) that give evidence to any
    of ``claims`` (claim ids; None: every replay) other than those in ``skip`` (claims that do not
    apply to the run's setting: a replay that feeds only those is not run)."""
    names = ["sd"] + [replay_name(m) for m in family_modules()]
    skip = set(skip)
    live = {n: set(REPLAY_CLAIMS[n]) - skip for n in names if n in REPLAY_CLAIMS}
    if claims is None:
        return [n for n in names if n not in live or live[n]]
    wanted = set(claims)
    return [n for n in names if n not in REPLAY_CLAIMS or wanted & live[n]]


def logits_evidence(run_dir, alpha: float = 1e-3, progress=None, claims=None, starting=None) -> dict[str, list[Evidence]]:
    """The ``logits`` evidence for a run directory, keyed by claim id (SD plus every family's);
    ``claims``: only these claim ids' evidence, from only the replays they need
    (:data:`REPLAY_CLAIMS`; None: every claim, every replay). A claim that does not apply to the run's decoding setting (:mod:`spectheory.validate.settings`)
    gets one info row ``does not apply: <why>`` instead of its replays' rows.
    ``starting(i, total, name)`` before and ``progress(done, total, name, seconds)`` after each
    replay, so a long replay shows where it is (``spectheory verify --logits`` prints a line each)."""
    import time

    from .settings import FAMILIES, Setting, not_applicable
    check_level(alpha)
    run = run_dir if isinstance(run_dir, Run) else load_run(run_dir)
    skip = {c: why for cs in FAMILIES.values() for c in cs if (why := not_applicable(run.config, c))}
    names = replays_for(claims, skip)
    if not run.sd:
        names = [n for n in names if n != "sd"]
    mods = {replay_name(m): m for m in family_modules()}
    out: dict[str, list[Evidence]] = {}
    for i, name in enumerate(names):
        if starting is not None:
            starting(i + 1, len(names), name)
        t0 = time.perf_counter()
        got = sd_evidence(run, alpha) if name == "sd" else mods[name].logits_evidence(run, alpha)
        for cid, evs in got.items():
            if cid not in skip:
                out.setdefault(cid, []).extend(evs)
        if progress is not None:
            progress(i + 1, len(names), name, time.perf_counter() - t0)
    label = Setting.of(run.config).label()
    for cid, why in skip.items():
        e = stats.info("logits", f"does not apply: {label}", None, None, test=f"does not apply: {why}",
                       note=f"setting of {run.path}: {label}")
        e.part = _first_part(cid)   # an info row of the claim (a multi-part claim's evidence names a part)
        out[cid] = [e]
    if claims is not None:
        wanted = set(claims)
        out = {c: v for c, v in out.items() if c in wanted}
    return out
