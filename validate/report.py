"""Report of a validation run: terminal table, ``report.md``, ``report.json`` and plots of
predicted against measured tokens per iteration (and speedup) over γ, per prompt category."""
from __future__ import annotations

import json
import math
from pathlib import Path

from .analysis import summarize
from .experiment import Run, load_run

REPORT_FORMAT = "spectheory.validate-report/2"  # 2: adds alpha_per_test, power, loops

COLUMNS = [  # (key, header, format)
    ("category", "category", "{}"), ("gamma", "γ", "{}"), ("n_prompts", "prompts", "{}"),
    ("alpha_capture", "α̂ (captured)", "{:.3f}"), ("alpha_on_policy", "α on-policy", "{:.3f}"),
    ("accept_first_measured", "1st accept", "{:.3f}"),
    ("tokens_closed_form", "tok/it formula", "{:.3f}"), ("tokens_trace_exact", "tok/it trace", "{:.3f}"),
    ("tokens_given_drafts", "tok/it given drafts", "{:.3f}"), ("tokens_measured", "tok/it measured", "{:.3f}"),
    ("tokens_measured_se", "± se", "{:.3f}"), ("n_iterations", "iters", "{}"),
    ("c", "c", "{:.3f}"), ("verify_cost_ratio", "t_T(γ+1)/t_T(1)", "{:.2f}"),
    ("speedup_paper", "speedup Thm3.8", "{:.2f}"), ("speedup_profile", "speedup profile", "{:.2f}"),
    ("speedup_measured", "speedup measured", "{:.2f}"),
]


def _fmt(v, f):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f.format(v)


def plot(rows, out_dir: Path) -> list[Path]:
    """One PNG per category: tokens per iteration and speedup over γ, predicted vs measured."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    for cat in sorted({r["category"] for r in rows}):
        rs = sorted((r for r in rows if r["category"] == cat), key=lambda r: r["gamma"])
        g = [r["gamma"] for r in rs]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        ax1.plot(g, [r["tokens_closed_form"] for r in rs], "o-", label="closed form at captured α̂")
        ax1.plot(g, [r["tokens_trace_exact"] for r in rs], "s--", label="trace-exact replay")
        ax1.plot(g, [r["tokens_closed_form_on_policy"] for r in rs], ":", label="closed form at on-policy α")
        ax1.errorbar(g, [r["tokens_measured"] for r in rs], yerr=[1.96 * r["tokens_measured_se"] for r in rs],
                     fmt="kD", capsize=3, label="measured (real SD, 95% CI)")
        ax1.set(xlabel="γ (draft tokens)", ylabel="tokens per iteration", title=f"{cat}: tokens per iteration")
        ax1.legend(fontsize=8)
        ax2.plot(g, [r["speedup_paper"] for r in rs], "o-", label="Thm 3.8 (verify = 1 call)")
        ax2.plot(g, [r["speedup_profile"] for r in rs], "s--", label="measured cost profile")
        ax2.plot(g, [r["speedup_measured"] for r in rs], "kD", label="measured")
        ax2.axhline(1.0, color="grey", lw=0.8)
        ax2.set(xlabel="γ (draft tokens)", ylabel="speedup over autoregressive", title=f"{cat}: speedup")
        ax2.legend(fontsize=8)
        ax1.set_xticks(g)
        ax2.set_xticks(g)
        fig.tight_layout()
        p = out_dir / f"tokens_per_iteration_{cat}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def to_markdown(run: Run, rows) -> str:
    c = run.config
    lines = [f"# Speculative decoding on real models: theory vs measurement", "",
             f"target `{c.get('target', '?')}`, draft `{c.get('draft', '?')}`, temperature {c.get('temperature')}, "
             f"top_k {c.get('top_k')}, top_p {c.get('top_p')}, max_new_tokens {c.get('max_new_tokens')}, "
             f"seed {c.get('seed')}, device {c.get('device') or 'cpu'}, torch threads {c.get('threads', '?')}.", "",
             "Columns: prompts = captured texts the row's theory uses (in a row with SD records, those of the prompts SD "
             "ran on; every captured one otherwise); α̂ captured = mean Σmin(p,q) along the target's own text (exact "
             "per position); α on-policy = "
             "the same at the first draft position of real SD iterations; 1st accept = measured first-draft "
             "acceptance rate; tok/it formula = (1−α̂^(γ+1))/(1−α̂); tok/it trace = trace-exact replay; "
             "tok/it given drafts = mean E[τ+1 given the drafted tokens] (exact); measured = real SD; c = t_draft/t_target(1); "
             "speedup Thm3.8 = formula/(γc+1); speedup profile = formula·t_T(1)/(γ·t_D + t_T(γ+1) + t_verify); "
             "measured = autoregressive s/token (one-token target forwards timed beside the SD calls) ÷ SD s/token. Timings are wall-clock on the machine as it was "
             "(shared machines: other load inflates and scatters them).", "",
             "| " + " | ".join(h for _, h, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(k), f) for k, _, f in COLUMNS) + " |")
    lines += ["", "Plots: " + ", ".join(f"`tokens_per_iteration_{cat}.png`" for cat in sorted({r['category'] for r in rows})), ""]
    return "\n".join(lines)


def default_alpha(family: float = 0.01) -> float:
    """The per-test level ``spectheory verify`` uses by default: the family level over every
    Monte Carlo test in the registry (Bonferroni)."""
    from spectheory.sims.registry import total_mc_tests
    return family / max(1, total_mc_tests())


def power_section(run: Run, alpha: float) -> tuple[list, list]:
    """(Markdown lines, JSON rows): every graded martingale test of the run with its power."""
    from .evidence import power_rows
    rows = power_rows(run, alpha)
    lines = ["## Power of the graded logits tests", "",
             f"Per-test α = {alpha:.3g} (the default `spectheory verify`: 0.01 over every Monte Carlo test of the "
             "registry); n needed = ((z_(1−α/2) + z_power)/tolerance)² × mean per-trial variance.", "",
             "| claim | test | trials | n had | n needed (power 0.8) | n needed (power 0.9, graded) | "
             "detectable at n had | tolerance | outcome |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.claim} | {r.test} | {r.trials} | {r.n_had} | {r.n_needed_08} | {r.n_needed_report} | "
                     f"{r.detectable:.4f} | {r.tolerance:g} | {r.outcome} |")
    return lines + [""], [r.to_json() for r in rows]


def loops_section(run: Run, alpha: float) -> tuple[list, list]:
    """(Markdown lines, JSON rows): each family loop and control, its graded tests' outcomes."""
    from .replay_loops import logits_evidence
    if not run.families:
        return [], []
    ev = logits_evidence(run, alpha)
    lines = ["## Family loops on the real pair", "",
             "| claim | test | claimed | measured | n | p | outcome |", "|---|---|---|---|---|---|---|"]
    out = []
    for cid, evs in sorted(ev.items()):
        for e in evs:
            p = "–" if e.p_value is None else f"{e.p_value:.3g}"
            lines.append(f"| {cid} | {e.instance} | {_fmt(e.claimed, '{:.4f}')} | {_fmt(e.measured, '{:.4f}')} | "
                         f"{e.n} | {p} | {e.outcome} |")
            out.append(dict(claim=cid, **e.to_json()))
    loops = ", ".join(f"{k}: {len(v)} prompts, {sum(r.n_iterations for r in v)} iterations, "
                      f"{sum(len(r.tokens) for r in v)} tokens" for k, v in sorted(run.families.items()))
    return lines + ["", f"Loops: {loops}.", ""], out


#: the terminal's two tables (key, short header, format): each fits 100 columns; report.md has every column
TERMINAL_TABLES = (
    ("tokens per iteration: predicted vs measured", (
        ("category", "category", "{}"), ("gamma", "γ", "{}"), ("n_prompts", "prompts", "{}"),
        ("alpha_capture", "α̂", "{:.3f}"), ("alpha_on_policy", "α on-pol.", "{:.3f}"),
        ("tokens_closed_form", "formula", "{:.3f}"), ("tokens_trace_exact", "trace", "{:.3f}"),
        ("tokens_given_drafts", "given drafts", "{:.3f}"), ("tokens_measured", "measured", "{:.3f}"),
        ("tokens_measured_se", "± se", "{:.3f}"))),
    ("speedup over autoregressive decoding: predicted vs measured", (
        ("category", "category", "{}"), ("gamma", "γ", "{}"), ("n_iterations", "iterations", "{}"),
        ("c", "c = t_D/t_T", "{:.3f}"), ("verify_cost_ratio", "t_T(γ+1)/t_T(1)", "{:.2f}"),
        ("speedup_paper", "Thm 3.8", "{:.2f}"), ("speedup_profile", "cost profile", "{:.2f}"),
        ("speedup_measured", "measured", "{:.2f}"))),
)


def print_table(rows, width: int = 100) -> None:
    """The run's summary as two tables that fit ``width`` columns (every column is in report.md)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    console = Console(width=width)
    for title, cols in TERMINAL_TABLES:
        t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
        for _, h, _ in cols:
            t.add_column(h, justify="right")
        for r in rows:
            t.add_row(*[_fmt(r.get(k), f) for k, _, f in cols])
        console.print(t)
    console.print("Every column, with what it means: report.md in the run directory.")


def _clean(x):
    """NaN/inf → None, numpy scalars → Python (strict JSON)."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_report(run_dir, *, show: bool = True, plots: bool = True, alpha: float | None = None) -> dict:
    """Summarise a run directory; write report.md, report.json and the plots beside it."""
    run = load_run(run_dir)
    rows = summarize(run)
    d = Path(run_dir)
    alpha = default_alpha() if alpha is None else alpha
    pw_md, pw = power_section(run, alpha)
    lp_md, lp = loops_section(run, alpha)
    (d / "report.md").write_text(to_markdown(run, rows) + "\n" + "\n".join(pw_md + lp_md))
    out = {"format": REPORT_FORMAT, "config": run.config, "rows": rows, "alpha_per_test": alpha, "power": pw,
           "loops": lp}
    (d / "report.json").write_text(json.dumps(_clean(out), indent=1, default=str))
    if plots and rows:
        out["plots"] = [str(p) for p in plot(rows, d)]
    if show:
        print_table(rows)
        for ln in pw_md:
            print(ln)
    return out
