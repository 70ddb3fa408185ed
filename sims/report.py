"""Render a report: terminal table (rich), Markdown, JSON (schema ``spectheory.report/1``)."""
from __future__ import annotations

from spectheory.judge.format import fmt, interval


def primary_evidence(claim: dict) -> dict | None:
    """The evidence shown in one-line summaries: the first failing one, else the first Monte
    Carlo one, else the first graded one."""
    ev = claim["evidence"]
    for pick in (lambda e: e["outcome"] == "fail", lambda e: e["mode"] == "mc",
                 lambda e: e["outcome"] != "info"):
        for e in ev:
            if pick(e):
                return e
    return ev[0] if ev else None


def _modes(claim) -> str:
    return "+".join(sorted({e["mode"] for e in claim["evidence"] if e["outcome"] != "info"}))


def _controls(claim) -> str:
    return ", ".join(f"{c['name']}: {c['verdict']}" for c in claim["controls"]) or "–"


def print_table(report: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=160)
    colour = {"holds": "green", "fails": "red", "inconclusive": "yellow", "not-checkable": "dim"}
    t = Table(title=f"spectheory verify ({'quick' if report['run']['quick'] else 'default'} tier, "
                    f"seed {report['run']['seed']}, {report['run']['duration_s']} s)")
    for col in ("claim", "verdict", "modes", "claimed", "measured", "interval", "p", "negative controls"):
        t.add_column(col)
    for c in report["claims"]:
        e = primary_evidence(c)
        t.add_row(c["id"], f"[{colour[c['verdict']]}]{c['verdict']}[/]", _modes(c),
                  fmt(e and e["claimed"]), fmt(e and e["measured"]), interval(e),
                  fmt(e and e["p_value"], 3), _controls(c))
    console.print(t)


def _evidence_table(evidence: list[dict]) -> list[str]:
    rows = ["| mode | instance | claimed | measured | interval | p | n | detectable | tolerance | outcome | test |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in evidence:
        rows.append("| " + " | ".join([
            e["mode"], e["instance"], fmt(e["claimed"]), fmt(e["measured"]), interval(e),
            fmt(e["p_value"], 3), fmt(e["n"]), fmt(e["detectable"], 3), fmt(e["tolerance"], 3),
            e["outcome"], (e["test"] + (f"; {e['note']}" if e["note"] else "")).replace("|", "\\|")]) + " |")
    return rows


def _cex(cex) -> str:
    if not cex:
        return ""
    return (f"smallest counterexample: V={cex['V']}, order={cex['order']}, γ={cex['gamma']}, "
            f"K={cex['K']}, seed={cex['seed']} (`{cex['source']}`): claimed {fmt(cex['claimed'])}, "
            f"measured {fmt(cex['measured'])}")


def to_markdown(report: dict) -> str:
    run = report["run"]
    lines = ["# spectheory verification report", "",
             f"Schema `{report['schema']}` · {run['started_at']} · seed {run['seed']} · "
             f"{'quick' if run['quick'] else 'default'} tier · {run['duration_s']} s · "
             f"family-wise α = {run['alpha_family']} ({run['correction']}; "
             f"{run['mc_tests_in_registry']} tests, α per test = {run['alpha_per_test']:.3g}, power {run['power']})",
             "", "| claim | verdict | modes | claimed | measured | interval | p | negative controls |",
             "|---|---|---|---|---|---|---|---|"]
    for c in report["claims"]:
        e = primary_evidence(c)
        lines.append(f"| `{c['id']}` | **{c['verdict']}** | {_modes(c)} | {fmt(e and e['claimed'])} | "
                     f"{fmt(e and e['measured'])} | {interval(e)} | {fmt(e and e['p_value'], 3)} | {_controls(c)} |")
    for c in report["claims"]:
        lines += ["", f"## `{c['id']}` — {c['verdict']}", "", f"> {c['statement']}", "",
                  f"*{c['paper']}, {c['reference']}.* {c['interpretation']}", ""]
        lines += [f"- {n}" for n in c["notes"]]
        if c["counterexample"]:
            lines += [f"- {_cex(c['counterexample'])}", ""]
        lines += _evidence_table(c["evidence"])
        for ctl in c["controls"]:
            per_mode = ", ".join(f"{m} {v}" for m, v in ctl.get("modes", {}).items())
            lines += ["", f"**Negative control `{ctl['name']}`** ({ctl['description']}): **{ctl['verdict']}**"
                      + (f" (per mode: {per_mode}; must fail in {', '.join(ctl['required_modes'])})"
                         if per_mode and ctl.get("required_modes") else "")]
            if ctl["counterexample"]:
                lines += ["", f"- {_cex(ctl['counterexample'])}"]
            lines += [""] + _evidence_table(ctl["evidence"])
    return "\n".join(lines) + "\n"
