"""Print a conformance report: one line per check with its verdict, the smallest p-value, the
power statement (largest detectable deviation vs the tolerance) and the negative controls'
verdicts, then one line per boundary probe. JSON: :func:`spectheory.judge.format.write_json`."""
from __future__ import annotations

from ..judge.format import fmt


def _check_report(report, need_run: bool = False) -> None:
    keys = "'claims' and 'run'" if need_run else "'claims'"
    if not isinstance(report, dict) or not isinstance(report.get("claims"), list) \
            or (need_run and not isinstance(report.get("run"), dict)):
        raise ValueError(f"report must be a conformance report dict (schema spectheory.report/1, with {keys}) "
                         f"as returned by check_block_verifier, got {type(report).__name__}")


def summary_rows(report: dict) -> list[dict]:
    """Per check: verdict, tests, smallest p, sample sizes, worst detectable vs tolerance."""
    _check_report(report)
    rows = []
    for c in report["claims"]:
        graded = [e for e in c["evidence"] if e["outcome"] != "info"]
        ps = [e["p_value"] for e in graded if e["p_value"] is not None]
        ns = [e["n"] for e in graded if e["n"] is not None]
        det = [(e["detectable"], e["tolerance"]) for e in graded
               if isinstance(e["detectable"], float) and e["tolerance"] is not None and e["mode"] == "mc"
               and "single-outcome" not in e["test"]]
        worst = max(det, key=lambda dt: dt[0] / dt[1]) if det else None
        fails = [e["instance"] for e in graded if e["outcome"] == "fail"]
        rows.append({"id": c["id"], "verdict": c["verdict"], "tests": len(graded),
                     "min_p": min(ps) if ps else None, "n": (min(ns), max(ns)) if ns else None,
                     "detectable": worst, "failed_on": fails,
                     "controls": [(k["name"], k["verdict"]) for k in c["controls"]]})
    return rows


def print_report(report: dict, console=None, probes: bool = True) -> None:
    """Terminal table of a conformance report (rich)."""
    _check_report(report, need_run=True)
    from rich.console import Console
    from rich.table import Table
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=200)
    run = report["run"]
    colour = {"holds": "green", "fails": "red", "inconclusive": "yellow", "not-checkable": "dim"}
    t = Table(title=f"spectheory conformance: {run['subject']} ({run['kind']}, n={run['n']} runs per "
                    f"instance×γ, γ={run['gammas']}, α per test {run['alpha_per_test']:.2g}, power {run['power']}, "
                    f"{run['duration_s']} s)")
    for col in ("check", "verdict", "tests", "min p", "n", "power: detectable ≤ tolerance", "failed on",
                "negative controls"):
        t.add_column(col)
    for r in summary_rows(report):
        det = r["detectable"]
        t.add_row(r["id"].removeprefix("conformance."), f"[{colour[r['verdict']]}]{r['verdict']}[/]",
                  str(r["tests"]), fmt(r["min_p"], 3),
                  "–" if not r["n"] else (f"{r['n'][0]}" if r["n"][0] == r["n"][1] else f"{r['n'][0]}..{r['n'][1]}"),
                  "–" if not det else f"{fmt(det[0], 3)} ≤ {fmt(det[1], 3)}" if det[0] <= det[1]
                  else f"{fmt(det[0], 3)} > {fmt(det[1], 3)}",
                  ", ".join(r["failed_on"][:2]) + (" …" if len(r["failed_on"]) > 2 else "") or "–",
                  ", ".join(f"{n}: {v}" for n, v in r["controls"]) or "–")
    console.print(t)
    pr = next((c for c in report["claims"] if c["id"] == "conformance.probes"), None)
    if probes and pr:
        t = Table(title="boundary probes (every uniform forced)")
        for col in ("probe", "outcome", "detail"):
            t.add_column(col)
        for e in pr["evidence"]:
            detail = e["note"].split("Output: ", 1)[-1]
            t.add_row(e["instance"], f"[{'red' if e['outcome'] == 'fail' else 'green' if e['outcome'] == 'pass' else 'yellow'}]"
                                     f"{e['outcome']}[/]", detail)
        console.print(t)
