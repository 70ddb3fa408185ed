"""One table of theory against measurement, per family and setting (``spectheory validate table``).

For every run directory given (one real decoding setting each, :mod:`spectheory.validate.settings`) and every
claim its logits evidence touches, one row per **graded** test (pass, fail, underpowered): what the
theory predicts from the recorded logits of the same contexts (``claimed``), what the real loop
measured, the interval at the per-test level, n against the n its power statement needs, and the
verdict; one row per logits-mode **negative control** (a broken rule through the same loop and
test: rejected or not); one row ``does not apply: <why>`` per claim the setting rules out. Beside
every row, the command that regenerates it from the shipped run (``spectheory validate table RUN
--claims CLAIM``: the replays that claim needs, nothing else).

A second table, :func:`assumption_rows`, puts the closed forms' modelling assumptions against the
real SD records of each setting: the constant-α closed form (Leviathan et al. 2023, Eq. 1) at the
on-policy α against the measured tokens per iteration and against the exact E[τ + 1 | drafts], and
the acceptance at each draft depth given the earlier drafts were accepted (constant for i.i.d.
positions).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

#: verdict text of the rows that are not graded tests
DOES_NOT_APPLY = "does not apply"


@dataclass
class TableRow:
    setting: str
    run: str
    family: str
    claim: str
    test: str
    role: str                   # "test", "control" or "n/a"
    predicted: float | None
    measured: float | None
    ci_low: float | None
    ci_high: float | None
    n: int | None
    n_needed: int | None        # power 0.9 at the tolerance; 0 for an exact comparison
    verdict: str
    why: str
    command: str

    def to_json(self) -> dict:
        return asdict(self)


def command(run_path, claim: str) -> str:
    return f"spectheory validate table {run_path} --claims {claim}"


def rows_from_evidence(evidence: dict, config: dict, run_path, claims=None) -> list[TableRow]:
    """Table rows of one run's logits evidence (``{claim: [Evidence]}``, as
    :func:`spectheory.validate.evidence.logits_evidence` returns it; ``config``: the run's run.json;
    ``claims``: the claims asked for, each of which gets a row (default: every logits claim))."""
    from spectheory.judge.verdicts import n_needed

    from .settings import Setting, family_of
    label = Setting.of(config).label()
    rows = []
    for claim in sorted(evidence):
        for e in evidence[claim]:
            ctl = getattr(e, "control", "") or ""
            na = (e.test or "").startswith(DOES_NOT_APPLY)
            if not (na or ctl or e.outcome != "info"):
                continue
            exact = e.p_value is None or (e.detectable == 0)
            if na:
                role, verdict, why = "n/a", DOES_NOT_APPLY, e.test[len(DOES_NOT_APPLY) + 2:]
            elif ctl:
                role, verdict, why = "control", f"control {ctl}", (e.test or "").split("; ")[0]
            else:
                role, verdict, why = "test", e.outcome, e.test or ""
            need = None if na or ctl else (0 if exact and e.p_value is None else n_needed(e))
            rows.append(TableRow(label, str(run_path), family_of(claim), claim, e.instance, role,
                                 _f(e.claimed), _f(e.measured), _f(e.ci_low), _f(e.ci_high),
                                 None if e.n is None else int(e.n), need, verdict, why,
                                 command(run_path, claim)))
    # a claim with no row above: said so (its evidence was information only, or there was none)
    from .settings import FAMILIES
    covered = {r.claim for r in rows}
    for claim in (c for cs in FAMILIES.values() for c in cs):
        if claim in covered or (claims is not None and claim not in claims):
            continue
        evs = evidence.get(claim, [])
        why = next((e.test for e in evs if (e.test or "").startswith("not ")), None)
        rows.append(TableRow(label, str(run_path), family_of(claim), claim, "–", "none", None, None, None, None,
                             None, None, "no graded test" if evs else "not run",
                             why or ("information rows only (no test graded on this run's records)" if evs else
                                     "this run holds no records that feed it"),
                             command(run_path, claim)))
    rows.sort(key=lambda r: (r.family, r.claim))   # stable: a claim's rows keep their order
    return rows


def _f(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def table_rows(run_dirs, alpha: float, claims=None, progress=None) -> list[TableRow]:
    """The rows of every run directory (module docstring); ``alpha``: the per-test level."""
    from .evidence import logits_evidence
    from .experiment import Run, load_run
    rows = []
    for d in run_dirs:
        run = d if isinstance(d, Run) else load_run(d)
        ev = logits_evidence(run, alpha=alpha, claims=claims, progress=progress)
        rows += rows_from_evidence(ev, run.config, run.path, claims)
    return rows


def _num(x, digits=4):
    if x is None:
        return "–"
    return f"{x:.{digits}g}" if abs(x) < 1e4 else f"{x:,.0f}"


def _need(r: TableRow) -> str:
    if r.role in ("n/a", "none"):
        return "–"
    if r.n_needed == 0:
        return f"{r.n:,} (exact)" if r.n is not None else "exact"
    if r.n is None:
        return "–"
    return f"{r.n:,} / {r.n_needed:,}" if r.n_needed is not None else f"{r.n:,}"


def format_table(rows: list[TableRow]) -> str:
    """Markdown: one row per test, control and inapplicable claim, the regenerating command beside."""
    out = ["| setting | family | claim | test | predicted | measured | interval | n / n needed | verdict | "
           "regenerate |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ci = f"[{_num(r.ci_low)}, {_num(r.ci_high)}]" if r.ci_low is not None and r.ci_high is not None else "–"
        verdict = f"**{r.verdict}**" if r.role == "test" else r.verdict
        if r.role in ("n/a", "none"):
            verdict = f"{r.verdict}: {r.why}"
        test = "–" if r.role == "n/a" else r.test.replace("|", "/")
        out.append(f"| {r.setting} | {r.family} | {r.claim} | {test} | {_num(r.predicted)} | "
                   f"{_num(r.measured)} | {ci} | {_need(r)} | {verdict} | `{r.command}` |")
    return "\n".join(out)


# --- the closed forms' assumptions against the real SD records --------------------------------

def assumption_rows(run) -> list[dict]:
    """Per γ and prompt category (and ``all``) of a run's real SD records: the on-policy α (mean β at the first draft
    of the iterations that drafted), the constant-α closed form there, the exact mean
    E[τ + 1 | drafts], the measured tokens per iteration ± se, the closed form's error in se, and
    the acceptance at each depth j given drafts 1..j−1 were accepted (± se)."""
    from spectheory.closed_forms.sd import expected_tokens
    out = []
    cats = sorted({r.meta.get("category", "") for rs in run.sd.values() for r in rs})
    groups = [(g, c, [r for r in rs if c == "all" or r.meta.get("category", "") == c])
              for g, rs in sorted(run.sd.items()) for c in (cats + ["all"] if len(cats) > 1 else cats)]
    for g, cat, runs in groups:
        if not runs:
            continue
        tau = np.concatenate([r.tau for r in runs]).astype(float)
        k = np.concatenate([r.drafted for r in runs])
        beta1 = np.concatenate([r.beta[:, 0] for r in runs])
        drew = k >= 1
        alpha = float(np.mean(beta1[drew])) if drew.any() else float("nan")
        closed = float(expected_tokens(alpha, g)) if np.isfinite(alpha) else float("nan")
        # the closed form for the drafts each iteration had (a drafter may draft fewer than γ)
        closed_k = float(np.mean([expected_tokens(alpha, int(j)) if j else 1.0 for j in k])) \
            if np.isfinite(alpha) else float("nan")
        cond = np.concatenate([r.conditional_tokens()[0] for r in runs])
        meas = tau + 1
        se = float(meas.std(ddof=1) / math.sqrt(meas.size)) if meas.size > 1 else float("nan")
        depth = []
        for j in range(g):
            reach = (tau >= j) & (k > j)                 # drafts 1..j accepted, a draft at depth j + 1
            acc = tau[reach] >= j + 1
            m = int(reach.sum())
            rate = float(acc.mean()) if m else float("nan")
            depth.append(dict(depth=j + 1, n=m, rate=rate,
                              se=math.sqrt(rate * (1 - rate) / m) if m else float("nan")))
        out.append(dict(gamma=g, category=cat, iterations=int(tau.size), drafted=float(drew.mean()), alpha=alpha,
                        closed_form=closed, closed_form_drafted=closed_k, given_drafts=float(cond.mean()),
                        measured=float(meas.mean()), se=se,
                        z=(float(meas.mean()) - closed_k) / se if se and np.isfinite(se) else float("nan"),
                        depth=depth))
    return out


def format_assumptions(per_run: list[tuple[str, str, list[dict]]]) -> str:
    """Markdown of :func:`assumption_rows` for several runs ((label, path, rows))."""
    out = ["| setting | category | γ | iterations | drafted | α on-policy | closed form | E[τ+1 \\| drafts] (exact) | "
           "measured ± se | (measured − closed)/se | acceptance at depth 1, 2, … given the earlier drafts accepted |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, _, rows in per_run:
        for r in rows:
            dep = ", ".join(f"{d['rate']:.3f}±{d['se']:.3f}" if d["n"] else "–" for d in r["depth"])
            out.append(f"| {label} | {r['category']} | {r['gamma']} | {r['iterations']:,} | {r['drafted']:.2f} | {r['alpha']:.4f} | "
                       f"{r['closed_form_drafted']:.3f} | {r['given_drafts']:.3f} | {r['measured']:.3f} ± "
                       f"{r['se']:.3f} | {r['z']:+.1f} | {dep} |")
    return "\n".join(out)


# --- the plot -----------------------------------------------------------------------------------

def plot_table(rows: list[TableRow], path) -> Path:
    """Predicted against measured per setting: one column per setting; top, every graded test's
    measured value against its prediction (the diagonal: theory = measurement), with its interval;
    bottom, measured − predicted with the interval, per test."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tests = [r for r in rows if r.role == "test" and r.predicted is not None and r.measured is not None]
    settings = list(dict.fromkeys(r.setting for r in tests)) or ["(no graded tests)"]
    fig, axes = plt.subplots(2, len(settings), figsize=(4.2 * len(settings), 7.5), squeeze=False)
    colors = {"pass": "#2ca02c", "fail": "#c62828", "underpowered": "#ff7f0e"}
    for c, s in enumerate(settings):
        mine = [r for r in tests if r.setting == s]
        top, bot = axes[0, c], axes[1, c]
        for i, r in enumerate(mine):
            col = colors.get(r.verdict, "#555555")
            lo = r.ci_low if r.ci_low is not None else r.measured
            hi = r.ci_high if r.ci_high is not None else r.measured
            top.errorbar(r.predicted, r.measured, yerr=[[r.measured - lo], [hi - r.measured]], fmt="o", color=col,
                         ms=4, capsize=2)
            bot.errorbar(i, r.measured - r.predicted, yerr=[[r.measured - lo], [hi - r.measured]], fmt="o",
                         color=col, ms=4, capsize=2)
        vals = [v for r in mine for v in (r.predicted, r.measured)] or [0, 1]
        a, b = min(vals), max(vals)
        pad = 0.05 * (b - a or 1)
        top.plot([a - pad, b + pad], [a - pad, b + pad], "k--", lw=0.8)
        top.set_title(s, fontsize=9)
        top.set_xlabel("predicted (theory on the recorded logits)")
        top.set_ylabel("measured (real loop)")
        bot.axhline(0, color="k", lw=0.8, ls="--")
        bot.set_xticks(range(len(mine)))
        bot.set_xticklabels([r.claim for r in mine], rotation=70, fontsize=6)
        bot.set_ylabel("measured − predicted (interval at the per-test level)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
