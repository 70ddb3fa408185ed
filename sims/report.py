"""Render a report: terminal table (rich) and Markdown (schema ``spectheory.report/2``; the JSON
is written by :func:`spectheory.judge.format.write_json`). Also renders conformance reports,
which have no parts."""
from __future__ import annotations

from spectheory.judge.format import fmt, interval

#: one line under every summary table: what its columns mean
LEGEND = ("relation: = value equality, law two distributions equal, ≤ ≥ < > bounds, ordering a ranking "
          "of methods, monotone in a parameter, scaling a growth rate, exists some setting achieves it · "
          "verdict: holds / fails / inconclusive / not-checkable, derived from the claim's parts "
          "(`fails (1 of 3 parts)`: one part fails) · claimed, measured, interval, p: the first failing "
          "evidence, else the first Monte Carlo one · negative controls: broken variants the check must "
          "call fails")

#: counterexample keys that are not settings of the instance
_CEX_META = ("source", "claimed", "measured", "call", "part", "what")
_SYMBOL = {"gamma": "γ"}


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


def _summary(claim) -> str:
    return claim.get("summary") or claim["verdict"]


def print_table(report: dict, console=None) -> None:
    from rich.console import Console
    from rich.table import Table
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=160)
    colour = {"holds": "green", "fails": "red", "inconclusive": "yellow", "not-checkable": "dim"}
    t = Table(title=f"spectheory verify ({'quick' if report['run']['quick'] else 'default'} tier, "
                    f"seed {report['run']['seed']}, {report['run']['duration_s']} s)", caption=LEGEND)
    for col in ("claim", "relation", "verdict", "modes", "claimed", "measured", "interval", "p", "negative controls"):
        t.add_column(col)
    for c in report["claims"]:
        e = primary_evidence(c)
        t.add_row(c["id"], c.get("relation", "–"), f"[{colour[c['verdict']]}]{_summary(c)}[/]", _modes(c),
                  fmt(e and e["claimed"]), fmt(e and e["measured"]), interval(e),
                  fmt(e and e["p_value"], 3), _controls(c))
    console.print(t)


def _evidence_table(evidence: list[dict], parts: bool = False) -> list[str]:
    head = "| part " if parts else ""
    rows = [head + "| mode | instance | claimed | measured | interval | p | n | detectable | tolerance | outcome | test |",
            ("|---" if parts else "") + "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in evidence:
        rows.append("| " + " | ".join(([e.get("part") or "–"] if parts else []) + [
            e["mode"], e["instance"], fmt(e["claimed"]), fmt(e["measured"]), interval(e),
            fmt(e["p_value"], 3), fmt(e["n"]), fmt(e["detectable"], 3), fmt(e["tolerance"], 3),
            e["outcome"], (e["test"] + (f"; {e['note']}" if e["note"] else "")).replace("|", "\\|")]) + " |")
    return rows


def _setting(k, v) -> str:
    return f"{_SYMBOL.get(k, k)}={v}"


def cex_line(cex) -> str:
    """One line: the settings that apply, where the instance comes from, claimed and measured,
    and the one-line call that recomputes them (when the shrinker gives one)."""
    if not cex:
        return ""
    settings = ", ".join(_setting(k, v) for k, v in cex.items() if k not in _CEX_META)
    text = (f"smallest counterexample: {settings}" + (f" (`{cex['source']}`)" if cex.get("source") else "")
            + f": claimed {fmt(cex.get('claimed'))}, measured {fmt(cex.get('measured'))}")
    if cex.get("what"):
        text += f" ({cex['what']})"
    if cex.get("call"):
        text += f"; recompute: `{cex['call']}`"
    return text


def _slack_line(rec) -> str:
    return (f"least slack {fmt(rec.get('value'))} ({rec.get('search', '')})"
            + (f" at `{rec['call']}`" if rec.get("call") else ""))


def _parts_lines(c) -> list[str]:
    parts = c.get("parts") or []
    if len(parts) <= 1 and not any(p.get("least_slack") for p in parts):
        return []
    out = ["Parts:", ""]
    for p in parts:
        v = p["verdict"] + (f": {p['reason']}" if not p["checkable"] and p.get("reason") else "")
        out.append(f"- `{p['id']}` ({p['relation']}) **{v}**: {p['statement']}")
        if p.get("least_slack"):
            out.append(f"  - {_slack_line(p['least_slack'])}")
    return out + [""]


def to_markdown(report: dict) -> str:
    run = report["run"]
    lines = ["# spectheory verification report", "",
             f"Schema `{report['schema']}` · {run['started_at']} · seed {run['seed']} · "
             f"{'quick' if run['quick'] else 'default'} tier · {run['duration_s']} s · "
             f"family-wise α = {run['alpha_family']} ({run['correction']}; "
             f"{run['mc_tests_in_registry']} tests, α per test = {run['alpha_per_test']:.3g}, power {run['power']})",
             "", "| claim | relation | verdict | modes | claimed | measured | interval | p | negative controls |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in report["claims"]:
        e = primary_evidence(c)
        lines.append(f"| `{c['id']}` | {c.get('relation', '–')} | **{_summary(c)}** | {_modes(c)} | "
                     f"{fmt(e and e['claimed'])} | {fmt(e and e['measured'])} | {interval(e)} | "
                     f"{fmt(e and e['p_value'], 3)} | {_controls(c)} |")
    lines += ["", f"*{LEGEND}.*"]
    for c in report["claims"]:
        multi = len(c.get("parts") or []) > 1
        lines += ["", f"## `{c['id']}` — {_summary(c)}", "", f"> {c['statement']}", "",
                  f"*{c['paper']}, {c['reference']}.* {c['interpretation']}", ""]
        lines += _parts_lines(c)
        lines += [f"- {n}" for n in c["notes"]]
        if c["counterexample"]:
            where = next((p["id"] for p in c.get("parts") or [] if p.get("counterexample")), None)
            lines += [f"- {cex_line(c['counterexample'])}" + (f" (part `{where}`)" if multi and where else ""), ""]
        lines += _evidence_table(c["evidence"], parts=multi)
        for ctl in c["controls"]:
            per_mode = ", ".join(f"{m} {v}" for m, v in ctl.get("modes", {}).items())
            lines += ["", f"**Negative control `{ctl['name']}`** ({ctl['description']}): **{ctl['verdict']}**"
                      + (f" (per mode: {per_mode}; must fail in {', '.join(ctl['required_modes'])})"
                         if per_mode and ctl.get("required_modes") else "")]
            if multi and ctl.get("parts"):
                lines += ["", "Per part: " + "; ".join(
                    f"`{p}` " + ", ".join(f"{m} {v}" for m, v in pm.items()) for p, pm in ctl["parts"].items())]
            if ctl["counterexample"]:
                lines += ["", f"- {cex_line(ctl['counterexample'])}"]
            lines += [""] + _evidence_table(ctl["evidence"], parts=multi)
    return "\n".join(lines) + "\n"
