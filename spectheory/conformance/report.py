"""The conformance report: the claims (one per check, then the probes) with their negative controls,
the two verdicts (lossless first, with the kind of failure: :mod:`.severity`), the warnings, the
run's accounting (the sampler's time and the checker's apart), and the terminal table — lossless
first, then whether it is standard speculative sampling / the named rule, warnings and crashes,
one rerunnable call per distinct bug, then one line per check with its group, verdict, the
smallest p-value, the power statement and the controls' verdicts, then one line per probe.
JSON: :func:`spectheory.judge.format.write_json`; schema ``spectheory.report/1``."""
from __future__ import annotations

import os
import platform
import time

from ..judge.evidence import combine
from ..judge.format import fmt
from ..judge.stats import POWER
from .checks import GROUPS

SUPPORT_PROBES_ID = "conformance.support_probes"
STANDARD_PROBES_ID = "conformance.standard_probes"

COLOUR = {"holds": "green", "fails": "red", "inconclusive": "yellow", "not-checkable": "dim"}

SUPPORT_STATEMENT = ("At the extremes of its random source (u = 0, u = 1−ulp, exact ratio ties) the verifier "
                     "never emits a token with p = 0, never crashes or returns NaN on a zero-mass residual "
                     "(on rows where every token is possible and on rows with restricted support), and returns a "
                     "block of valid ids (disjoint supports, a one-token vocabulary included).")
STANDARD_STATEMENT = ("At the extremes of its random source the verifier does what Alg. 1 does: it emits the "
                      "drafted prefix, rejects a drafted token with p = 0 at u = 0, accepts at u = 1−ulp where "
                      "p ≥ q, and on a one-token vocabulary emits the γ + 1 tokens.")


def _group_verdict(claims, group):
    vs = [c["verdict"] for c in claims if c["group"] == group]
    if not vs:
        return "not-checkable"
    if "fails" in vs:
        return "fails"
    if all(v == "not-checkable" for v in vs):
        return "not-checkable"
    if "inconclusive" in vs:
        return "inconclusive"
    return "holds"


def verdicts(claims, crashes, warnings, titles, findings=()) -> dict:
    """Per group: verdict and a one-line summary (failed checks, crashes, why inconclusive); the
    lossless verdict also has its ``severity`` and its ``failures``, one per distinct bug."""
    from .severity import distinct, failures, severity_of, summary
    out = {}
    for g in GROUPS:
        v = _group_verdict(claims, g)
        mine = [c for c in claims if c["group"] == g]
        failed = [c["id"].removeprefix("conformance.") for c in mine if c["verdict"] == "fails"]
        unsure = [c["id"].removeprefix("conformance.") for c in mine if c["verdict"] == "inconclusive"]
        if v == "fails":
            why = f"{len(failed)} of {len(mine)} checks fail: {', '.join(failed)}"
            if crashes:
                c0 = crashes[0]
                where = f" at {c0['location']}" if c0.get("location") else ""
                why += (f"; the sampler {'crashed' if c0['kind'] == 'exception' else 'returned an invalid block'} "
                        f"on {len(crashes)} instance×γ ({c0['exception']}{where})")
        elif v == "inconclusive":
            why = f"{len(unsure)} of {len(mine)} checks inconclusive: {', '.join(unsure)}"
            if any(c["id"].endswith("probes") and c["verdict"] == "inconclusive" for c in mine) and warnings:
                why += " (the probes could not force the sampler's random source)"
        elif v == "holds":
            nc = [c for c in mine if c["verdict"] == "not-checkable"]
            why = f"{len(mine) - len(nc)} of {len(mine)} checks hold" + (f"; {len(nc)} not checkable" if nc else "")
        else:
            why = "no check of this group ran"
        events = [f for f in findings if f["what"] == "crash"] if g == "lossless" else []
        if events:  # crashes the runs went past: an event of stated probability triggered each
            f0 = events[0]
            said = (f"the sampler crashed {sum(f.get('times', 1) for f in events)} time(s) in the statistical runs, "
                    f"each after an extreme uniform ({f0['exception']} at {f0['location']})")
            why = said if v != "fails" else f"{why}; {said}"
            v = "fails"
        out[g] = {"verdict": v, "title": titles[g], "summary": why, "checks": [c["id"] for c in mine]}
        if g == "lossless":
            found = distinct(failures(claims, crashes, findings)) if v == "fails" else []
            out[g]["severity"] = severity_of(found)
            out[g]["failures"] = found
            if found:
                out[g]["summary"] = summary(found, claims) + f" ({why})"
    return out


def claim(check_id, statement, reference, group, evidence, controls, notes, paper, interpretation):
    return {"id": check_id, "group": group, "verdict": None, "statement": statement, "paper": paper,
            "reference": reference, "interpretation": interpretation, "evidence": [e.to_json() for e in evidence],
            "counterexample": None, "controls": controls, "notes": notes}


def assemble(kind, plan, subject: dict, control_results: dict, probe_claims: list) -> list:
    """Claims of the report: one per check (evidence over blocks, controls), then the probes.
    ``subject``: {check id: [Evidence]}; ``control_results``: {check id: [(name, description,
    [(block label, [Evidence])])]}. A check whose controls do not fail it is ``inconclusive``: on
    every block, end to end (:attr:`.kind.Kind.controls_per_block`); anywhere, otherwise."""
    claims = []
    for check in plan.checks if plan.blocks else ():  # no instances: probes only
        ev = subject.get(check.id, [])
        verdict = combine(ev)
        controls, notes = [], []
        covered = set()
        for cname, desc, per_block in control_results.get(check.id, []):
            if not per_block:  # its bug is active on none of these blocks
                continue
            cev = [e for _, es in per_block for e in es]
            cv = combine(cev) if cev else "not-checkable"
            entry = {"name": cname, "description": desc, "verdict": cv, "modes": {"mc": cv},
                     "required_modes": ["mc"], "evidence": [e.to_json() for e in cev], "counterexample": None}
            failed_on = [b for b, es in per_block if combine(es) == "fails"]
            covered.update(failed_on)
            if kind.controls_per_block:
                entry.update(failed_on=failed_on, active_on=[b for b, _ in per_block])
            elif cv != "fails" and verdict != "fails":
                verdict = "inconclusive"
                notes.append(f"negative control {cname!r} came out {cv}: the check cannot tell it from "
                             "a correct sampler here")
            controls.append(entry)
        if kind.controls_per_block and control_results and verdict != "fails":
            graded = [b for b in plan.blocks if b.runs(check.id) and any(
                e.outcome != "info" and (e.instance == b.label or e.instance.startswith(b.label + " ")) for e in ev)]
            bare = [b.label for b in graded if b.label not in covered]
            if bare:
                verdict = "inconclusive"
                notes.append("no negative control failed this check on " + "; ".join(bare)
                             + ": it is not shown able to fail there")
        if ev and all(e.outcome == "info" for e in ev) and check.mc_tests == 0:
            # an exact check with nothing to test on these instances (no token has p = 0): neutral
            verdict, notes = "not-checkable", [e.note for e in ev[:1]]
        c = claim(check.id, check.statement, check.reference, check.group, ev, controls, notes, kind.paper,
                  kind.interpretation)
        c["verdict"] = verdict
        claims.append(c)
    claims.extend(probe_claims)
    return claims


def probe_claim(claim_id, group, statement, evidence, control_probes):
    """A probe claim fails on any violation; it holds only if every probe was applied (its forced
    values decided every step that needed a random value) and passed: a probe not applied makes
    the claim inconclusive, never a pass."""
    verdict = combine(evidence)
    if verdict == "holds" and any(e.outcome == "info" for e in evidence):
        verdict = "inconclusive"
    controls, notes = [], []
    for cname, desc, cev in control_probes:
        cv = combine(cev)
        controls.append({"name": cname, "description": desc, "verdict": cv, "modes": {"exact": cv},
                         "required_modes": ["exact"], "evidence": [e.to_json() for e in cev],
                         "counterexample": None})
        if cv != "fails" and verdict != "fails":
            verdict = "inconclusive"
            notes.append(f"negative control {cname!r} passed every probe")
    if evidence and all(e.outcome == "info" for e in evidence) and verdict != "fails":
        notes.append("no probe could be applied: the forced values never reached the sampler (see the probe rows)")
    return {"id": claim_id, "group": group, "verdict": verdict, "statement": statement,
            "paper": "float-robustness of Leviathan et al. 2023, Alg. 1", "reference": "probes",
            "interpretation": "One deterministic call per probe with every uniform forced (routed through every "
                              "global random source); graded on its output (claimed: no violation); a probe "
                              "whose forced values did not decide every step of the call is not applied.",
            "evidence": [e.to_json() for e in evidence], "counterexample": None, "controls": controls,
            "notes": notes}


def probe_claims(kind, sp, controls: bool) -> list:
    """The probe claims: support (lossless), and standard where the kind grades Alg. 1's probes;
    each with its probe controls run through the same probes."""
    from .probes import run_probes
    support, standard, results = sp
    ctl = []
    if controls:
        for c in kind.controls():
            if "support probes" in c.roles or "standard probes" in c.roles:
                ctl.append((c, run_probes(kind, kind.control_sampler(c, for_probes=True))))
    out = [probe_claim(SUPPORT_PROBES_ID, "lossless", SUPPORT_STATEMENT, support,
                       [(c.name, c.description, rows[0]) for c, rows in ctl if "support probes" in c.roles])]
    out[0]["results"] = results
    if kind.standard_probes:
        out.append(probe_claim(STANDARD_PROBES_ID, "standard", STANDARD_STATEMENT, standard,
                               [(c.name, c.description, rows[1]) for c, rows in ctl if "standard probes" in c.roles]))
    return out


def warnings_of(sources, trial: dict | None = None, compiled=(), reuse: str | None = None) -> list[str]:
    """The report's warnings: escaped random draws (statistics not reproducible from the seed),
    named as compiled code bypassing the routing where the sampler runs some (``compiled``:
    :func:`.compiled.compiled_in`), and uniforms reused across calls (``reuse``)."""
    escaped = sorted({src for _, src in sources.escapes})
    out = []
    if compiled:
        from .compiled import bypass_reason
        out.append("compiled code: " + bypass_reason(list(compiled)) + ".")
    if escaped:
        blocks = sorted({lab for lab, _ in sources.escapes})
        fix = ("The cause named above: compiled code calls the generators directly." if compiled else
               "Draw from the rng argument (or torch's/NumPy's/Python's global functions, which the checker routes) "
               "instead.")
        out.append("uncontrolled randomness: the sampler drew from " + "; ".join(escaped) + " (in "
                   + str(len(blocks)) + " block(s) of calls, e.g. " + blocks[0] + "), not through the random source "
                   "the checker routes: its statistics are not reproducible from --seed, and a probe in which "
                   "this happened is not applied. " + fix)
    if reuse:
        out.append(reuse)
    return out


def timing(blocks, wall: float) -> dict:
    """The sampler's own time (inside its calls on the statistical runs) and the checker's
    (everything else: drafting, checks, controls, probes, trial), with the machine's load."""
    own = sum(b.get("sampler_s", 0.0) for b in blocks)
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:  # not available on this platform
        load = None
    return {"sampler_s": round(own, 2), "checker_s": round(wall - own, 2), "load_average_1m": load}


def run_info(kind_title, subject_name, settings, plan, started, t0, cpu0, blocks, trial, sources) -> dict:
    from ..judge.format import versions as _versions
    return {"subject": subject_name, "kind": kind_title, **settings, "quick": False,
            "alpha_family": plan.alpha, "alpha_family_per_verdict": plan.alpha,
            "mc_tests_in_registry": sum(plan.n_tests.values()), "mc_tests_per_verdict": dict(plan.n_tests),
            "alpha_per_test": plan.alpha_test("lossless"),
            "alpha_per_test_per_verdict": {g: plan.alpha_test(g) for g in GROUPS},
            "correction": "Bonferroni within each verdict over its Monte Carlo tests (checks × blocks); "
                          "each test's level spent over the looks of the sequential design",
            "sequential": plan.design.to_json(), "blocks": blocks, "trial": trial,
            "routed_names": sources.routed_names() if sources is not None else [],
            "power": POWER, "started_at": started.isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - t0, 2), "cpu_s": round(time.process_time() - cpu0, 2),
            **timing(blocks, time.perf_counter() - t0),
            "versions": _versions(), "platform": platform.platform()}


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


def rerun_calls(report: dict) -> list[tuple[str, str]]:
    """(what, call): one rerunnable call per distinct lossless bug (:func:`.severity.distinct`),
    then one per failing check of the other verdict whose call is not said yet."""
    out, seen = [], set()
    for f in (report.get("verdicts") or {}).get("lossless", {}).get("failures") or []:
        call = f.get("call")
        if call and call not in seen:
            seen.add(call)
            also = f" (and {f['also']} more failure(s) of the same bug)" if f.get("also") else ""
            out.append((f"bug [{f['kind']}]: {f.get('signature', '')}{also}", call))
    for c in report.get("claims", []):
        cx = c.get("counterexample") or {}
        if c.get("verdict") == "fails" and cx.get("call") and cx["call"] not in seen:
            seen.add(cx["call"])
            out.append((f"{c['id'].removeprefix('conformance.')} fails", cx["call"]))
    return out


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
    for what, call in rerun_calls(report):
        console.print(f"[bold]{escape(what)}[/]; rerun: {escape(call)}", soft_wrap=True)
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
