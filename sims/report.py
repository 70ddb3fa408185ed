"""Render a report (schema ``spectheory.report/3``; older ``/2`` reports render too) for people: the terminal table (rich), the
Markdown report and its evidence file, and the words every rendering shares (relations,
findings, counterexample lines). The HTML report is :mod:`spectheory.sims.report_html`; the JSON is written
by :func:`spectheory.judge.format.write_json`. Also renders conformance reports, which have no
parts.

The summary states each claim's relation and its verdict in those terms (``bound holds: least
slack 0.013 at V=2``, ``equality fails: claimed 1.065, measured 1.641``); each claim then gets a
short section (statement, reading, parts, counterexample with its one-line call, key evidence);
every evidence table goes to the evidence file (:func:`evidence_markdown`)."""
from __future__ import annotations

import re

from spectheory.judge.format import fmt, interval

#: what each relation of the registry's vocabulary is called in a finding
RELATION_NOUN = {"=": "equality", "law": "equality in law", "≤": "upper bound", "≥": "lower bound",
                 "<": "strict upper bound", ">": "strict lower bound", "ordering": "ordering",
                 "monotone": "monotonicity", "scaling": "scaling", "exists": "existence"}
_VERB = {"holds": "holds", "fails": "fails", "inconclusive": "undecided", "not-checkable": "not checked",
         "depends": "depends on a choice"}

#: the legend printed under every summary (terminal, Markdown, HTML), one entry per line
LEGEND = (
    ("relation", "what the claim asserts: = a value equality; law two distributions are equal; ≤ ≥ < > a "
                 "bound; ordering a ranking of methods; monotone in a parameter; scaling a growth rate; exists "
                 "some setting achieves it (a multi-part claim lists its parts' relations, `/`-joined)"),
    ("verdict", "the principal reading's (the paper's words, quoted in the report): holds / fails / inconclusive / "
                "not-checkable from its parts (any part fails → fails; `fails (1 of 3 parts)` says how many), "
                "persisting at every value of every choice the paper leaves open (each re-run, whatever the verdict "
                "at the defaults); `depends on k_max: holds at 2, fails at 4 (default)` when two values of a choice "
                "give different verdicts, in either direction; `inconclusive over σ: ...` when a value decides "
                "nothing; `fails by equality (tie)` when a strict inequality is only met with equality; "
                "`holds (identity)` when it rests on proved identities of the paper's algebra and `holds in the "
                "reconstructed model` on a model or formula this project reconstructed — neither counts as support "
                "for the paper; after `·`, every other reading with its own verdict, ties on degenerate instances "
                "(outside the scope by the non-degeneracy rule), and the real pair's (logits) verdict, never folded "
                "into the headline"),
    ("what was found", "the verdict in the relation's terms: for a bound its least slack (≥ 0 while it holds) "
                       "and where; for an equality or law the largest exact deviation or the smallest Monte Carlo "
                       "p-value; for a failure the claimed and measured numbers where it fails"),
    ("controls", "negative controls, deliberately broken variants the same check must reject: `2/2 rejected` "
                 "means each failed in every part and mode it is required in"),
)

#: counterexample keys that are not settings of the instance
_CEX_META = ("source", "claimed", "measured", "call", "part", "what")
_SYMBOL = {"gamma": "γ", "lam": "λ", "mu": "μ", "alpha": "α", "beta": "β", "eps": "ε"}


# --- words shared by every rendering --------------------------------------------------------------

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


def anchor(claim_id: str) -> str:
    """The HTML/Markdown anchor of a claim's section (``sd.lossless`` → ``sd-lossless``)."""
    return re.sub(r"[^a-z0-9]+", "-", claim_id.lower()).strip("-")


def _num(x) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if x == "inf":
        return float("inf")
    if x == "-inf":
        return float("-inf")
    return None


def short_fmt(x) -> str:
    """A number for prose: 4 significant digits (``fmt`` keeps 6 for tables)."""
    v = _num(x)
    if v is None:
        return fmt(x)
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
        return f"{v:.2e}"
    return f"{v:.4g}"


def _value_text(v, depth: int = 0) -> str:
    """A setting's value for prose: floats to 4 digits, long or nested lists shortened."""
    if isinstance(v, float):
        return short_fmt(v)
    if isinstance(v, (list, tuple)):
        if depth >= 2:
            return "[…]"
        items = [_value_text(x, depth + 1) for x in v[:6]]
        return "[" + ", ".join(items) + (", …" if len(v) > 6 else "") + "]"
    return str(v)


def _setting(k, v) -> str:
    return f"{_SYMBOL.get(k, k)}={_value_text(v)}"


def settings_text(cex: dict) -> str:
    """The settings of a counterexample that apply, ``V=2, order=0, γ=1``."""
    return ", ".join(_setting(k, v) for k, v in cex.items() if k not in _CEX_META)


def cex_line(cex) -> str:
    """One line: the settings that apply, where the instance comes from, claimed and measured,
    and the one-line call that recomputes them (when the shrinker gives one)."""
    if not cex:
        return ""
    text = (f"smallest counterexample: {settings_text(cex)}" + (f" (`{cex['source']}`)" if cex.get("source") else "")
            + f": claimed {fmt(cex.get('claimed'))}, measured {fmt(cex.get('measured'))}")
    if cex.get("what"):
        text += f" ({cex['what']})"
    if cex.get("call"):
        text += f"; recompute: `{cex['call']}`"
    return text


def _parts(claim) -> list[dict]:
    """The claim's parts (a conformance report or an old report has none: one part from the claim)."""
    parts = claim.get("parts")
    if parts:
        return parts
    return [{"id": "main", "statement": claim.get("statement", ""), "relation": claim.get("relation") or "=",
             "checkable": True, "reason": "", "verdict": claim["verdict"], "counterexample": claim.get("counterexample"),
             "least_slack": None, "notes": []}]


def _part_evidence(claim, part) -> list[dict]:
    ev = claim["evidence"]
    if len(_parts(claim)) == 1:
        return ev
    return [e for e in ev if e.get("part") == part["id"]]


def bound_slack(e) -> float | None:
    """The slack of an exact bound comparison (``spectheory.judge.stats.exact_bound``: claimed =
    the bound, measured = the value; ≥ 0 while it holds), else None (another encoding)."""
    c, m, test = _num(e.get("claimed")), _num(e.get("measured")), e.get("test") or ""
    if c is None or m is None or "bound" not in test:
        return None
    if "≥ bound" in test:
        return m - c
    if "≤ bound" in test:
        return c - m
    return None


def part_finding(claim: dict, part: dict) -> str:
    """What was found for one part, in its relation's terms (no relation word in front)."""
    v, rel = part["verdict"], part["relation"]
    ev = _part_evidence(claim, part)
    graded = [e for e in ev if e["outcome"] != "info"]
    if v == "not-checkable":
        return part.get("reason") or "not checkable"
    cex = part.get("counterexample")
    if v == "fails":
        if cex:
            where = settings_text(cex)
            return (f"claimed {short_fmt(cex.get('claimed'))}, measured {short_fmt(cex.get('measured'))}"
                    + (f" at {where}" if where else ""))
        bad = next((e for e in graded if e["outcome"] == "fail"), None)
        if bad:
            return f"claimed {short_fmt(bad['claimed'])}, measured {short_fmt(bad['measured'])} ({bad['instance']})"
        return "fails"
    bits = []
    if v == "inconclusive":
        notes = part.get("notes") or []
        under = [e for e in graded if e["outcome"] == "underpowered"]
        if notes:
            bits.append(notes[0].split(":")[0])
        elif under:
            need = samples_needed(under[0])
            bits.append(f"{len(under)} test(s) underpowered, e.g. {under[0]['instance']}"
                        + (f" (n = {int(_num(under[0]['n'])):,}; n = {need:,} would decide it)" if need else ""))
    slack = part.get("least_slack")
    exact = [e for e in graded if e["mode"] == "exact"]
    mc = [e for e in graded if e["mode"] == "mc" and _num(e.get("p_value")) is not None]
    real = [e for e in graded if e["mode"] == "logits" and _num(e.get("p_value")) is not None]
    bounds = [(s, e) for e in exact if (s := bound_slack(e)) is not None]
    if slack and _num(slack.get("value")) is not None:
        inst = slack.get("instance")
        where = ", ".join(_setting(k, v) for k, v in inst.items()) if isinstance(inst, dict) else inst
        bits.append(f"least slack {short_fmt(slack['value'])} at {where or 'the searched instance'}")
    elif bounds:
        s, e = min(bounds, key=lambda r: r[0])
        bits.append(f"least slack {short_fmt(s)} at {e['instance']} (exact, {len(bounds)} comparison"
                    f"{'s' * (len(bounds) != 1)})")
    elif exact:
        devs = [abs(_num(e["measured"]) - _num(e["claimed"])) for e in exact
                if _num(e.get("claimed")) is not None and _num(e.get("measured")) is not None]
        n = f"{len(exact)} exact comparison{'s' * (len(exact) != 1)}"
        if rel == "=" and devs:
            bits.append(f"largest |claimed − measured| {short_fmt(max(devs))} over {n}")
        elif rel == "law" and devs:
            bits.append(f"largest distance {short_fmt(max(devs))} over {n}")
        else:
            bits.append(f"all {n} {'hold' if v == 'holds' else 'graded'}")
    for label, rows in (("Monte Carlo", mc), ("real pair", real)):   # never one label for both sources
        if rows:
            p = min(_num(e["p_value"]) for e in rows)
            bits.append(f"{label}: smallest p {short_fmt(p)} over {len(rows)} test{'s' * (len(rows) != 1)}")
    if not bits and graded:
        e = graded[0]
        bits.append(f"claimed {short_fmt(e['claimed'])}, measured {short_fmt(e['measured'])} ({e['instance']})")
    return "; ".join(bits) or v


def samples_needed(e: dict) -> int | None:
    """How many samples would decide an underpowered test: ``n·(detectable/tolerance)²`` (the
    deviation a test detects at its stated power shrinks as 1/√n: exactly so for the chi-square
    (noncentrality n·w²) and z tests); None when the row does not say."""
    n, det, tol = _num(e.get("n")), _num(e.get("detectable")), _num(e.get("tolerance"))
    if e.get("outcome") != "underpowered" or not n or not det or not tol or tol <= 0 or det == float("inf"):
        return None
    import math
    return int(math.ceil(n * (det / tol) ** 2))


def outcome_text(e: dict) -> str:
    """A row's outcome; an underpowered one says how many samples would decide it."""
    need = samples_needed(e)
    return e["outcome"] if need is None else f"underpowered: n = {need:,} would decide it"


def part_phrase(claim: dict, part: dict) -> str:
    """``bound holds: least slack 0.013 at …``: the relation, the verdict in its terms, the finding."""
    noun = RELATION_NOUN.get(part["relation"], part["relation"])
    return f"{noun} {_VERB.get(part['verdict'], part['verdict'])}: {part_finding(claim, part)}"


def finding(claim: dict) -> str:
    """The one-line finding of a claim for the summary: its deciding part's phrase (the first
    failing part, else the first undecided one, else the first that holds), prefixed with the
    part's id when the claim has several."""
    parts = _parts(claim)
    principal = next((r for r in claim.get("readings") or [] if r.get("role") == "principal"), None)
    if principal is not None:  # the headline's parts decide what is shown
        parts = [p for p in parts if p["id"] in principal["parts"]] or parts
    for v in ("fails", "inconclusive", "holds", "not-checkable"):
        p = next((p for p in parts if p["verdict"] == v), None)
        if p is not None:
            text = (f"{p['id']}: " if len(parts) > 1 else "") + part_phrase(claim, p)
            slack = slack_over_choices_text(claim) if claim.get("verdict") == "holds" else ""
            return text + (f"; {slack}" if slack else "")
    return claim["verdict"]


def controls_cell(claim) -> str:
    """``2/2 rejected`` (every control failed where it must), or which did not."""
    ctls = claim.get("controls") or []
    if not ctls:
        return "–"
    ok = sum(c["verdict"] == "fails" for c in ctls)
    if ok == len(ctls):
        return f"{ok}/{len(ctls)} rejected"
    missed = ", ".join(c["name"] for c in ctls if c["verdict"] != "fails")
    return f"{ok}/{len(ctls)} rejected (not: {missed})"


def _summary(claim) -> str:
    """The headline in words (the principal reading's, or ``depends on ...``)."""
    return claim.get("summary") or claim["verdict"]


def alternatives(claim) -> list[dict]:
    """The readings beside the headline (every reading but the principal one)."""
    return [r for r in claim.get("readings") or [] if r.get("role") != "principal"]


def real_pair_text(claim) -> str:
    """``real pair: holds (n 8,992 ≥ 6,244)``, ``real pair: underpowered (n 1,536 of 6,600 needed)``,
    ``real pair: fails``; a one-sided improvement test that passed on significance with fewer trials
    than its power statement sizes says so; '' without graded logits evidence."""
    real = (claim.get("sources") or {}).get("real")
    if not real:
        return ""
    v, n, need = real["verdict"], real.get("n"), real.get("n_needed")
    ctl = real.get("controls")
    tail = f"; controls {ctl['rejected']}/{ctl['total']} rejected" if ctl else ""
    if n is None or need is None:
        return f"real pair: {v}" + (f" ({tail[2:]})" if tail else "")
    if v == "underpowered":
        return f"real pair: underpowered (n {n:,} of {need:,} needed{tail})"
    if v == "holds" and n < need:
        # a one-sided test of an improvement ("better than") passes on significance: its power
        # statement only decides when a non-significant result may read "fails"
        return f"real pair: holds (n {n:,}, significant before the {need:,} its power statement sizes{tail})"
    if v == "holds":
        return f"real pair: holds (n {n:,} ≥ {need:,}{tail})"
    return f"real pair: {v} (n {n:,}; {need:,} needed{tail})"


def degenerate_text(claim) -> str:
    """``tie at q = p outside the scope (degenerate: markov1-V3-equal)``: the ties found on degenerate
    instances (the non-degeneracy rule keeps them out of the headline), '' when there are none."""
    ties = [d for d in claim.get("degenerate") or [] if d.get("tie")]
    if not ties:
        return ""
    cases: dict = {}
    for d in ties:
        cases.setdefault(d["case"], []).append(str(d.get("instance") or "").split(" ")[0])
    bits = [f"{case} ({', '.join(dict.fromkeys(x for x in names if x)) or 'an instance'})"
            for case, names in cases.items()]
    return "tie outside the scope, degenerate: " + "; ".join(bits)


def beside(claim) -> list[str]:
    """What is shown beside the headline: each other reading with its verdict (``integer:
    fails``), the ties on degenerate instances, then the real pair's verdict."""
    out = [f"{r['id']}: {r.get('summary') or r['verdict']}" for r in alternatives(claim)]
    deg = degenerate_text(claim)
    real = real_pair_text(claim)
    return out + ([deg] if deg else []) + ([real] if real else [])


def verdict_text(claim) -> str:
    """The headline followed by what is beside it: ``holds · integer: fails · real pair: holds (...)``."""
    return " · ".join([_summary(claim)] + beside(claim))


def readings_differ(claim) -> int:
    """How many other readings have a verdict different from the principal reading's."""
    readings = claim.get("readings") or []
    principal = next((r for r in readings if r.get("role") == "principal"), None)
    if principal is None:
        return 0
    return sum(r["verdict"] != principal["verdict"] for r in alternatives(claim))


def _cite_short(claim) -> str:
    """``Leviathan et al. 2023`` from the claim's paper records (the first paper), else ''."""
    recs = claim.get("papers") or []
    if not recs:
        return ""
    r = recs[0]
    names = [a.strip() for a in r["authors"].replace(" & ", ", ").split(",") if a.strip()]
    lead = names[0] if len(names) == 1 else (f"{names[0]} & {names[1]}" if len(names) == 2 else f"{names[0]} et al.")
    return f"{lead} {r['year']}" + (" +" if len(recs) > 1 else "")


def claim_class(claim) -> str:
    """What a claim's headline rests on: ``evidence``, ``identity`` or ``reconstructed`` (reports
    before issue 34 have no class: ``holds (identity)`` summaries read as identities)."""
    if claim.get("class"):
        return claim["class"]
    return "identity" if claim["verdict"] == "holds" and "(identity" in (claim.get("summary") or "") else "evidence"


def verdict_counts(report) -> str:
    """``46 claims: 22 hold, 4 hold as identities, 3 hold in the reconstructed model, 14 fail, ...``:
    holds that cannot fail are counted apart (never as support for the paper)."""
    from collections import Counter
    n = Counter(c["verdict"] if c["verdict"] != "holds" or claim_class(c) == "evidence"
                else f"holds:{claim_class(c)}" for c in report["claims"])
    words = [f"{n[v]} {w}" for v, w in (("holds", "hold"), ("holds:identity", "hold as identities"),
                                          ("holds:reconstructed", "hold in the reconstructed model"),
                                          ("fails", "fail"), ("depends", "depend on a choice"),
                                          ("inconclusive", "inconclusive"), ("not-checkable", "not checkable"))
             if n[v]]
    ctl = [k for c in report["claims"] for k in c.get("controls") or []]
    rej = sum(k["verdict"] == "fails" for k in ctl)
    n_claims = len(report["claims"])
    return (f"{n_claims} claim{'s' * (n_claims != 1)}: {', '.join(words)}"
            + (f"; negative controls rejected: {rej} of {len(ctl)}" if ctl else ""))


def _title(report) -> str:
    run = report["run"]
    return (f"spectheory verify ({'quick' if run.get('quick') else 'default'} tier, seed {run['seed']}, "
            f"{run['duration_s']} s)")


def _escape_markup(text: str) -> str:
    from rich.markup import escape
    return escape(text)


# --- terminal --------------------------------------------------------------------------------------

_COLOUR = {"holds": "green", "fails": "red", "inconclusive": "yellow", "not-checkable": "dim", "depends": "magenta"}


def verdict_cell(verdict: str, summary: str, beside_: list[str]) -> str:
    """The summary table's verdict cell: the coloured headline, then every other reading's verdict
    (and the real pair's) after `·`."""
    return f"[{_COLOUR.get(verdict, 'white')}]{_escape_markup(summary)}[/]" + "".join(
        f" · {_escape_markup(b)}" for b in beside_)


def summary_table(rows, title: str, caption: str):
    """The rich Table ``spectheory verify`` prints: rows of (claim, relation, verdict cell,
    finding, controls); the README quotes the same table (:mod:`spectheory.sims.readme_outputs`)."""
    from rich.table import Table
    t = Table(title=title, caption=caption, show_lines=False)
    t.add_column("claim", no_wrap=True)
    t.add_column("relation")
    t.add_column("verdict", max_width=34)
    t.add_column("what was found", ratio=1)
    t.add_column("controls", no_wrap=True)
    for row in rows:
        t.add_row(*row)
    return t


def print_table(report: dict, console=None) -> None:
    """The summary table: claim, relation, verdict, what was found, controls; legend below."""
    from rich.console import Console
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=160)
    rows = []
    for c in report["claims"]:
        rows.append((c["id"], c.get("relation") or "–", verdict_cell(c["verdict"], _summary(c), beside(c)),
                     finding(c), controls_cell(c)))
    console.print(summary_table(rows, _title(report), verdict_counts(report)))
    errors = (report.get("run") or {}).get("implementation_errors") or []
    for err in errors:
        console.print(f"[bold red]{_escape_markup(err)}[/]", highlight=False)
    for k, text in LEGEND:
        console.print(f"[bold]{k}[/]: {text}", highlight=False)


# --- Markdown ------------------------------------------------------------------------------------

def _esc(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _evidence_table(evidence: list[dict], parts: bool = False) -> list[str]:
    head = "| part " if parts else ""
    rows = [head + "| mode | instance | claimed | measured | interval | p | n | detectable | tolerance | outcome | test |",
            ("|---" if parts else "") + "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in evidence:
        rows.append("| " + " | ".join(([e.get("part") or "–"] if parts else []) + [
            e["mode"], _esc(e["instance"]), fmt(e["claimed"]), fmt(e["measured"]), interval(e),
            fmt(e["p_value"], 3), fmt(e["n"]), fmt(e["detectable"], 3), fmt(e["tolerance"], 3),
            outcome_text(e), _esc(e["test"] + (f"; {e['note']}" if e["note"] else ""))]) + " |")
    return rows


def key_evidence(claim: dict, limit: int = 6) -> list[dict]:
    """The evidence worth showing in a claim's section: every failure first, then per (part,
    mode) the comparison closest to failing (largest exact deviation, smallest p), up to
    ``limit`` items."""
    ev = [e for e in claim["evidence"] if e["outcome"] != "info"]
    chosen = [e for e in ev if e["outcome"] == "fail"][:limit]
    groups: dict = {}
    for e in ev:
        groups.setdefault((e.get("part"), e["mode"]), []).append(e)

    def closeness(e):
        p = _num(e.get("p_value"))
        if p is not None:
            return p
        c, m = _num(e.get("claimed")), _num(e.get("measured"))
        return -abs(m - c) if c is not None and m is not None and abs(m - c) != float("inf") else 0.0
    for key in groups:
        if len(chosen) >= limit:
            break
        best = min(groups[key], key=closeness)
        if best not in chosen:
            chosen.append(best)
    return chosen


def _short_table(evidence, parts: bool) -> list[str]:
    rows = [("| part " if parts else "") + "| mode | instance | claimed | measured | p | outcome |",
            ("|---" if parts else "") + "|---|---|---|---|---|---|"]
    for e in evidence:
        inst = e["instance"] if len(e["instance"]) <= 90 else e["instance"][:87] + "…"
        rows.append("| " + " | ".join(([f"`{e.get('part')}`"] if parts else []) + [
            e["mode"], _esc(inst), fmt(e["claimed"]), fmt(e["measured"]), fmt(e["p_value"], 3),
            outcome_text(e)]) + " |")
    return rows


def _header_lines(report, evidence_name: str | None) -> list[str]:
    run = report["run"]
    head = [f"Seed {run['seed']} · {'quick' if run.get('quick') else 'default'} tier · {run['duration_s']} s · "
            f"{run.get('started_at', '')} · schema `{report['schema']}` · family-wise α = {run['alpha_family']} "
            f"({run.get('correction', '')}; {run.get('mc_tests_in_registry', '–')} tests, α per test = "
            f"{run.get('alpha_per_test', 0):.3g}, power {run.get('power', '–')})"]
    if isinstance(run.get("instances"), dict):  # a user-pairs run (a conformance run lists instance names)
        inst = run["instances"]
        head.append(f"On the user's pairs from `{inst.get('source') or 'the given pairs'}`: "
                    + ", ".join(f"{p['name']} (V={p['V']}, order {p['order']})" for p in inst["pairs"]))
    if run.get("logits_run"):
        head.append(f"Real-logits evidence from `{run['logits_run']}`.")
    if evidence_name:
        head.append(f"Every evidence table: [{evidence_name}]({evidence_name}).")
    return head


def to_markdown(report: dict, evidence_name: str | None = None) -> str:
    """The Markdown report: summary table with legend, then one short section per claim.
    ``evidence_name``: the evidence file's name (linked from each section); without it the
    evidence tables stay in this file (conformance reports)."""
    lines = ["# spectheory verification report", ""]
    lines += [" · ".join(_header_lines(report, evidence_name)), "", f"**{verdict_counts(report)}.**", "",
              "| claim | paper | relation | verdict | what was found | controls |",
              "|---|---|---|---|---|---|"]
    for c in report["claims"]:
        side = "".join(f" · {_esc(b)}" for b in beside(c))
        lines.append(f"| [`{c['id']}`](#{anchor(c['id'])}) | {_esc(_cite_short(c)) or '–'} | {c.get('relation') or '–'} "
                     f"| **{_esc(_summary(c))}**{side} | {_esc(finding(c))} | {_esc(controls_cell(c))} |")
    errors = (report.get("run") or {}).get("implementation_errors") or []
    if errors:
        lines += [""] + [f"> **{_esc(e)}**" for e in errors]
    lines += ["", "**Legend.**", ""] + [f"- *{k}*: {text}" for k, text in LEGEND]
    for c in report["claims"]:
        lines += [""] + claim_section(c, evidence_name)
    if evidence_name is None:
        lines += ["", "# Evidence", ""] + _evidence_blocks(report)
    return "\n".join(lines) + "\n"


def claim_section(c: dict, evidence_name: str | None = None, anchor_tag: bool = True) -> list[str]:
    """One claim's section: statement, reading, parts, counterexample and call, key evidence,
    controls and notes (``anchor_tag``: start with the HTML anchor the summary links to)."""
    parts = _parts(c)
    multi = len(parts) > 1
    cite = c.get("paper") or ""
    lines = ([f'<a id="{anchor(c["id"])}"></a>', ""] if anchor_tag else []) + [f"## `{c['id']}`: {_summary(c)}", "",
             f"*{cite}*" + (f" · {c['reference']}" if c.get("reference") else ""), "",
             f"> {c['statement']}", ""]
    if c.get("instances_used"):
        lines += [f"**Instances.** {c['instances_used']}", ""]
    if c.get("interpretation"):
        lines += [f"**Reading.** {c['interpretation']}", ""]
    lines += readings_lines(c)
    if multi:
        lines += ["| part | relation | verdict | what it says | what was found |", "|---|---|---|---|---|"]
        for p in parts:
            lines.append(f"| `{p['id']}` | {p['relation']} | **{part_verdict_text(p)}** | {_esc(p['statement'])} | "
                         f"{_esc(part_finding(c, p))} |")
        lines.append("")
    else:
        lines += [f"**Verdict.** {part_verdict_text(parts[0]) + ' · ' if parts[0].get('identity') else ''}"
                  f"{part_phrase(c, parts[0])}.", ""]
    lines += scope_lines(c) + choices_lines(c)
    real = real_pair_text(c)
    if real:
        lines += [f"**Real pair** (logits evidence, its own verdict beside the paper-level one): {real[len('real pair: '):]}.",
                  ""]
    for p in parts:
        if p.get("least_slack") and p["least_slack"].get("call"):
            rec, of = p["least_slack"], f" of `{p['id']}`" if multi else ""
            lines += [f"Least slack{of}: {short_fmt(rec.get('value'))} "
                      f"({rec.get('search', '')}); recompute:", "", "```python", rec["call"], "```", ""]
    on_parts = [(p["id"], p["counterexample"]) for p in parts if p.get("counterexample")]
    if not on_parts and c.get("counterexample"):
        on_parts = [(None, c["counterexample"])]
    for where, cex in on_parts:  # one per failing part that has one
        lines += [f"**Counterexample**: {settings_text(cex) or 'the instance'}"
                  + (f", pair `{cex['source']}`" if cex.get("source") else "")
                  + f": claimed {fmt(cex.get('claimed'))}, measured {fmt(cex.get('measured'))}"
                  + (f" ({cex['what']})" if cex.get("what") else "")
                  + (f" (part `{where}`)" if multi and where else "") + "."]
        if cex.get("call"):
            lines += ["", "Recompute both numbers:", "", "```python", cex["call"], "```"]
        lines.append("")
    key = key_evidence(c)
    if key:
        more = len(c["evidence"])
        link = f"; all {more} in [{evidence_name}]({evidence_name}#{anchor(c['id'])})" if evidence_name else ""
        lines += [f"**Key evidence** ({len(key)} of {more}{link}):", ""] + _short_table(key, multi) + [""]
    if c.get("controls"):
        lines.append("**Negative controls**:")
        for k in c["controls"]:
            per = ", ".join(f"{m} {v}" for m, v in (k.get("modes") or {}).items())
            lines.append(f"- `{k['name']}` **{'rejected' if k['verdict'] == 'fails' else k['verdict']}**"
                         f"{f' ({per})' if per else ''}: {k['description']}")
        lines.append("")
    for n in c.get("notes") or []:
        lines.append(f"- Note: {n}")
    return lines


def claim_text(c: dict, width: int = 100) -> str:
    """A claim as plain text (a notebook's or a terminal's display of one claim): headline with
    every other reading's verdict, statement, parts, counterexample with the call that recomputes
    it, controls, and where the evidence and plot are."""
    import textwrap

    def wrap(text, indent="  "):
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent + "  ")
    parts = _parts(c)
    lines = [f"{c['id']}: {verdict_text(c)}"]
    cite = (c.get("paper") or "") + (f" · {c['reference']}" if c.get("reference") else "")
    if cite:
        lines.append(wrap(cite))
    lines.append(wrap(f"“{c.get('statement', '')}”"))
    for r in c.get("readings") or []:
        if len(c.get("readings") or []) > 1 or r.get("quote"):
            role = "principal" if r.get("role") == "principal" else (r.get("kind") or "alternative")
            lines.append(wrap(f"reading {r['id']} ({role}): {r.get('summary') or r['verdict']}"))
    if len(parts) > 1:
        for p in parts:
            lines.append(wrap(f"part {p['id']} ({p['relation']}): {part_verdict_text(p)}: {part_finding(c, p)}"))
    else:
        lines.append(wrap(part_phrase(c, parts[0])))
    on_parts = [(p["id"], p["counterexample"]) for p in parts if p.get("counterexample")] or \
        ([(None, c["counterexample"])] if c.get("counterexample") else [])
    for where, cex in on_parts:
        lines.append(wrap(f"counterexample{f' (part {where})' if where and len(parts) > 1 else ''}: "
                          f"{settings_text(cex) or 'the instance'}: claimed {fmt(cex.get('claimed'))}, measured "
                          f"{fmt(cex.get('measured'))}"))
        if cex.get("call"):
            lines.append(f"    recompute both numbers: {cex['call']}")
    ctls = c.get("controls") or []
    if ctls:
        lines.append(wrap(f"controls: {controls_cell(c)} — " + "; ".join(
            f"{k['name']}: {'rejected' if k['verdict'] == 'fails' else k['verdict']}" for k in ctls)))
    for n in c.get("notes") or []:
        lines.append(wrap(f"note: {n}"))
    lines.append(wrap(f"{len(c.get('evidence') or [])} evidence items (.evidence, .to_frame()); the plot: .plot()"))
    return "\n".join(lines)


def part_verdict_text(p: dict) -> str:
    """A part's verdict with its kind: ``fails by equality (tie)``, ``holds: identity (proved for B = 3)``,
    ``holds in the reconstructed model``."""
    v = p["verdict"]
    if v == "fails" and p.get("failure") == "tie":
        v = "fails by equality (tie)"
    if p.get("class") == "reconstructed":
        v = f"{v} in the reconstructed model"
    if p.get("identity"):
        proved = "proved" + (f" for {p['proved_for']}" if p.get("proved_for") else "")
        v = f"{v}: identity ({proved if p['verdict'] == 'holds' else 'proof ' + p['verdict']})"
        if p.get("implementation_test"):
            v += f"; implementation test {p['implementation_test']}"
    return v


def slack_over_choices_text(c: dict) -> str:
    """``least slack over the choices: accuracy 0.01723 at accuracy margin = 0.01 (mix-weak-V6 γ=4)``: a
    hold's least slack over the defaults and every choice value, per inequality part, '' when none."""
    bits = []
    multi = len(_parts(c)) > 1
    for pid, rec in (c.get("least_slack_over_choices") or {}).items():
        at = "the defaults" if rec.get("choice") is None else f"{rec['choice']} = {_value_text(rec['choice_value'])}"
        bits.append((f"{pid} " if multi else "") + f"{short_fmt(rec['value'])} at {at}"
                    + (f" ({rec['instance']})" if rec.get("instance") else ""))
    return ("least slack over the choices: " + "; ".join(bits)) if bits else ""


def readings_lines(c: dict) -> list[str]:
    """The principal reading (quoted, with why) and every other reading with its own verdict."""
    readings = c.get("readings") or []
    if not readings or (len(readings) == 1 and not readings[0].get("quote")):
        return []
    out = []
    for r in readings:
        head = "Principal reading" if r["role"] == "principal" else f"Other reading ({r.get('kind') or 'alternative'})"
        out.append(f"- **{head} `{r['id']}`: {_esc(r.get('summary') or r['verdict'])}** "
                   f"(parts {', '.join(f'`{p}`' for p in r['parts'])}). {r['statement']}"
                   + (f" Paper: {r['quote']}" if r.get("quote") else "") + (f" Why: {r['why']}" if r.get("why") else ""))
    return out + [""]


def scope_lines(c: dict) -> list[str]:
    """The claim's scope and what was found outside it ("outside the claim's scope: ...")."""
    scope = c.get("scope") or {}
    out = []
    if scope.get("statement"):
        out.append(f"**Scope.** {scope['statement']}")
    for f in scope.get("out_of_scope") or []:
        where = f" (part `{f['part']}`)" if f.get("part") and len(_parts(c)) > 1 else ""
        nums = (f": claimed {short_fmt(f.get('claimed'))}, measured {short_fmt(f.get('measured'))}"
                if f.get("claimed") is not None or f.get("measured") is not None else "")
        out.append(f"- outside the claim's scope{where}: {f.get('instance', '')} — {f.get('reason', '')}{nums}"
                   + (f"; recompute: `{f['call']}`" if f.get("call") else ""))
    return out + ([""] if out else [])


def choices_lines(c: dict) -> list[str]:
    """The open choices (invented ones marked), the principal reading's verdict at each value swept
    (every claim's, whatever its verdict at the defaults), whether the headline persists, and a
    hold's least slack over them."""
    out = []
    for ch in c.get("choices") or []:
        vals = ", ".join(str(v) for v in ch["values"])
        swept = "; principal verdict at each value: " + ", ".join(f"{k} {v}" for k, v in ch["verdicts"].items()) \
            if ch.get("verdicts") else ""
        out.append(f"- Choice `{ch['name']}`{' (invented by this project)' if ch.get('invented') else ''}: default "
                   f"{ch['default']}, values {vals}. {ch.get('why', '')}{swept}")
    if c.get("choices") and c.get("robust") is not None:
        out.append(f"- The headline persists: {c['verdict']} at every value of every open choice."
                   if c["robust"] else f"- The headline does not persist across the choices: {_summary(c)}.")
    slack = slack_over_choices_text(c)
    if slack:
        out.append(f"- {slack[0].upper()}{slack[1:]}; recompute: "
                   + "; ".join(f"`{r['call']}`" for r in c["least_slack_over_choices"].values() if r.get("call")))
    return (["**Open choices.**", ""] + out + [""]) if out else []


def _evidence_blocks(report, headings: bool = True) -> list[str]:
    lines = []
    for c in report["claims"]:
        multi = len(_parts(c)) > 1
        if headings:
            lines += [f'<a id="{anchor(c["id"])}"></a>', "", f"## `{c['id']}`: {_summary(c)}", ""]
        lines += _evidence_table(c["evidence"], parts=multi)
        for ctl in c.get("controls") or []:
            per_mode = ", ".join(f"{m} {v}" for m, v in (ctl.get("modes") or {}).items())
            lines += ["", f"**Negative control `{ctl['name']}`** ({ctl['description']}): **{ctl['verdict']}**"
                      + (f" (per mode: {per_mode}; must fail in {', '.join(ctl['required_modes'])})"
                         if per_mode and ctl.get("required_modes") else "")]
            if multi and ctl.get("parts"):
                lines += ["", "Per part: " + "; ".join(
                    f"`{p}` " + ", ".join(f"{m} {v}" for m, v in pm.items()) for p, pm in ctl["parts"].items())]
            if ctl.get("counterexample"):
                lines += ["", f"- {cex_line(ctl['counterexample'])}"]
            lines += [""] + _evidence_table(ctl["evidence"], parts=multi)
        lines.append("")
    return lines


def evidence_markdown(report: dict, report_name: str | None = None) -> str:
    """The evidence file: every comparison of every claim and control, with its test, sample
    size, error rate and power (what the report's sections summarise)."""
    back = f" (the report: [{report_name}]({report_name}))" if report_name else ""
    lines = ["# spectheory verification report: evidence", "",
             f"{_title(report)}{back}. Columns: mode (exact, mc = Monte Carlo, logits = real models), instance "
             "and its settings, claimed and measured values, the confidence interval and p-value of a Monte "
             "Carlo test, its sample size n, the deviation it detects with the stated power, the deviation that "
             "matters (tolerance), the outcome, and the test.", ""]
    return "\n".join(lines + _evidence_blocks(report)) + "\n"
