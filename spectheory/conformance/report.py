"""Print a conformance report: the two verdicts first (lossless? then: is it standard
speculative sampling / the named rule?), warnings and crashes, then one line per check with its
group, verdict, the smallest p-value, the power statement (largest detectable deviation vs the
tolerance) and the negative controls' verdicts, then one line per boundary probe.
JSON: :func:`spectheory.judge.format.write_json`."""
from __future__ import annotations

from ..judge.format import fmt

COLOUR = {"holds": "green", "fails": "red", "inconclusive": "yellow", "not-checkable": "dim"}


def _check_report(report, need_run: bool = False) -> None:
    keys = "'claims' and 'run'" if need_run else "'claims'"
    if not isinstance(report, dict) or not isinstance(report.get("claims"), list) \
            or (need_run and not isinstance(report.get("run"), dict)):
        raise ValueError(f"report must be a conformance report dict (schema spectheory.report/1, with {keys}) "
                         f"as returned by check_block_verifier, got {type(report).__name__}")


def summary_rows(report: dict) -> list[dict]:
    """Per check: group, verdict, tests, smallest p, sample sizes, worst detectable vs tolerance."""
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
        rows.append({"id": c["id"], "group": c.get("group", "standard"), "verdict": c["verdict"],
                     "tests": len(graded), "min_p": min(ps) if ps else None, "n": (min(ns), max(ns)) if ns else None,
                     "detectable": worst, "failed_on": fails,
                     "controls": [(k["name"], k["verdict"]) for k in c["controls"]]})
    return rows


def tag(verdict: dict) -> str:
    """`` [law]``, `` [boundary]``, `` [crash]`` after a failed lossless verdict (see
    :mod:`.severity`), else nothing."""
    return f" [{verdict['severity']}]" if verdict.get("severity") else ""


def verdict_lines(report: dict) -> list[str]:
    """The report's top lines (plain text): lossless first, then the standard verdict,
    warnings, crashes."""
    _check_report(report)
    out = []
    for g, v in (report.get("verdicts") or {}).items():
        head = "LOSSLESS" if g == "lossless" else v["title"]
        out.append(f"{head}: {v['verdict']}{tag(v)} — {v['summary']}")
    for w in report.get("warnings", []):
        out.append(f"warning: {w}")
    for c in report.get("crashes", []):
        where = f" at {c['location']}" if c.get("location") else ""
        out.append(f"crash on {c['instance']} γ={c['gamma']}: {c['exception']}{where} ({c['context']})"
                   + (f"; rerun: {c['call']}" if c.get("call") else ""))
    return out


def print_report(report: dict, console=None, probes: bool = True) -> None:
    """Terminal table of a conformance report (rich)."""
    _check_report(report, need_run=True)
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=200)
    run = report["run"]
    for g, v in (report.get("verdicts") or {}).items():
        head = "LOSSLESS" if g == "lossless" else escape(v["title"])
        console.print(f"[bold]{head}[/]: [bold {COLOUR[v['verdict']]}]{v['verdict']}{escape(tag(v))}[/] — "
                      f"{escape(v['summary'])}")
    for w in report.get("warnings", []):
        console.print(f"[bold yellow]warning[/]: {escape(w)}")
    for c in report.get("crashes", []):
        where = f" at {c['location']}" if c.get("location") else ""
        console.print(f"[bold red]crash[/] on {c['instance']} γ={c['gamma']}: {escape(c['exception'] + where)} "
                      f"({escape(c['context'])})")
        if c.get("call"):
            console.print(f"  rerun: {escape(c['call'])}", soft_wrap=True)
    for c in report["claims"]:
        cx = c.get("counterexample")
        if c["verdict"] == "fails" and cx and cx.get("call"):
            console.print(f"[bold]{escape(c['id'].removeprefix('conformance.'))}[/] fails; rerun: {escape(cx['call'])}",
                          soft_wrap=True)
    levels = run.get("alpha_per_test_per_verdict") or {"lossless": run.get("alpha_per_test", 0.0)}
    alphas = ", ".join(f"{g} {a:.2g}" for g, a in levels.items())
    used = sum(b.get("runs", 0) for b in run.get("blocks", []))
    t = Table(title=f"spectheory conformance: {escape(str(run['subject']))} ({run['kind']}, ≤ {run['n']} runs per "
                    f"instance×γ ({used} used, sequential), γ={run['gammas']}, α per test {alphas}, power "
                    f"{run['power']}, {run['duration_s']} s"
                    + (f": sampler {run['sampler_s']} s, checker {run['checker_s']} s" if "sampler_s" in run else "")
                    + ")")
    for col in ("verdict group", "check", "verdict", "tests", "min p", "n", "power: detectable ≤ tolerance",
                "failed on", "negative controls"):
        t.add_column(col)
    for r in summary_rows(report):
        det = r["detectable"]
        t.add_row(r["group"], r["id"].removeprefix("conformance."), f"[{COLOUR[r['verdict']]}]{r['verdict']}[/]",
                  str(r["tests"]), fmt(r["min_p"], 3),
                  "–" if not r["n"] else (f"{r['n'][0]}" if r["n"][0] == r["n"][1] else f"{r['n'][0]}..{r['n'][1]}"),
                  "–" if not det else f"{fmt(det[0], 3)} ≤ {fmt(det[1], 3)}" if det[0] <= det[1]
                  else f"{fmt(det[0], 3)} > {fmt(det[1], 3)}",
                  escape(", ".join(r["failed_on"][:2]) + (" …" if len(r["failed_on"]) > 2 else "")) or "–",
                  escape(", ".join(f"{n}: {v}" for n, v in r["controls"])) or "–")
    console.print(t)
    support = next((c for c in report["claims"] if c["id"].endswith("support_probes")), None)
    standard = next((c for c in report["claims"] if c["id"].endswith("standard_probes")), None)
    if probes and support:
        t = Table(title="boundary probes (every uniform forced; 'not applied' where the forced value did not reach "
                        "the sampler)")
        for col in ("probe", "support (lossless)", "standard", "detail"):
            t.add_column(col)
        std = {e["instance"]: e for e in standard["evidence"]} if standard else {}

        def cell(e):
            if e is None:
                return "–"
            o = e["outcome"]
            word = "not applied" if o == "info" else o
            return f"[{'red' if o == 'fail' else 'green' if o == 'pass' else 'yellow'}]{word}[/]"

        for e in support["evidence"]:
            detail = e["note"].split("Output: ", 1)[-1]
            t.add_row(escape(e["instance"]), cell(e), cell(std.get(e["instance"])), escape(detail))
        console.print(t)
