"""``spectheory verify`` runs the registered claim checks and writes the report; ``spectheory
list`` lists the claims (statements and parts); ``spectheory show CLAIM`` prints one claim of
the last report in full.

Where the report goes (docs/report_schema.md, "Files"): a run over every claim writes
``reports/verify.{json,md,html}`` and ``reports/verify-evidence.md``; any other run writes
``reports/verify-<what was run>.*`` (``reports/verify-sd+quick.*``): every option that changes the
numbers (claims, claim files, pairs, logits run, tier, seed, α) is in the name, and a report of
another run is never overwritten (:func:`spectheory.cli.runs.default_base`) unless you name that
file yourself. Naming one output (``--json r.json``) puts the others beside it (``r.md``,
``r-evidence.md``, ``r.html``)."""
from __future__ import annotations

from typing import List, Optional
from pathlib import Path

import typer

from .app import app, check_writable
from .runs import (REPORTS, TRACE_CLAIMS, TRACE_ENV, NameTaken, check_trace_env, output_paths,  # noqa: F401
                   real_logits_evidence, report_base, slug)

@app.command()
def verify(
    claims: str = typer.Option("*", "--claims", "-c", help="Claim ids or globs, comma-separated (e.g. 'sd.*'). A "
                               "subset writes reports/verify-<slug>.* (never the full report) unless you name files."),
    quick: bool = typer.Option(False, "--quick", help="Fast tier (seconds): Monte Carlo samples 10× smaller, power still stated."),
    seed: int = typer.Option(0, "--seed", min=0, help="Run seed (≥ 0); the report is reproducible from it."),
    alpha: float = typer.Option(0.01, "--alpha", help="Family-wise error rate of the whole report."),
    json_path: Path = typer.Option(None, "--json", help="Where to write the JSON report (default: reports/verify.json, "
                                   "or reports/verify-<slug>.json for a subset; other outputs go beside it)."),
    md_path: Path = typer.Option(None, "--markdown", help="Where to write the Markdown report (its evidence tables go "
                                 "to <name>-evidence.md beside it)."),
    html_path: Path = typer.Option(None, "--html", help="Where to write the HTML report (one self-contained file)."),
    html: bool = typer.Option(True, "--html-report/--no-html", help="Write the HTML report (with plots)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar with an ETA on a terminal; "
                                  "without one (or with --no-progress) a line per finished family."),
    strict: bool = typer.Option(False, "--strict", help="Exit with status 1 unless every claim holds."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Worker processes, one family per worker (same report as serial; timing evidence aside). 0 = one per CPU, 1 = serial."),
    logits: Path = typer.Option(None, "--logits", help="A `spectheory validate` run directory: add its real-model (logits) evidence."),
    instances: Path = typer.Option(None, "--instances", help="A TOML or JSON file of your own Markov pairs "
                                   "(docs/instances.md): run every claim that takes pairs on them."),
    claims_from: Optional[List[str]] = typer.Option(None, "--claims-from", help="Your own claims: a .py file, an "
                                                    "importable module, or 'entry-points' (installed packages' "
                                                    "spectheory.claims group); repeatable (docs/your_claims.md). "
                                                    "Runs only them unless --with-builtin."),
    with_builtin: bool = typer.Option(False, "--with-builtin", help="With --claims-from: run your claims beside the "
                                      "built-in ones --claims selects (default: yours only)."),
):
    """Run every registered claim check on its default instances (or on your pairs) and write the report."""
    if not 0 < alpha < 1:
        raise typer.BadParameter(f"alpha must lie in (0, 1), got {alpha!r}", param_hint="--alpha")
    if jobs < 0:
        raise typer.BadParameter("jobs must be ≥ 0 (0 = one per CPU)", param_hint="--jobs")
    from spectheory.sims import user_claims
    from spectheory.sims.report import print_table

    from .api import SelectionError, run_selection, select_run, write_report
    sources = tuple(claims_from or ())
    typer.echo(f"spectheory verify: selecting {claims!r}" + (f" from {', '.join(sources)}" if sources else "")
               + f" ({'quick' if quick else 'default'} tier, seed {seed}, α = {alpha:g})", err=True)
    try:  # every setting checked before anything runs or any file is written
        sel = select_run(claims, claims_from=sources, with_builtin=with_builtin, instances=instances, logits=logits)
    except SelectionError as err:
        raise typer.BadParameter(str(err), param_hint=err.option) from None
    try:
        paths = output_paths(claims, instances, json_path, md_path, html_path, sources, quick=quick, logits=logits,
                             seed=seed, alpha=alpha, builtin=with_builtin)
    except NameTaken as err:
        raise typer.BadParameter(str(err), param_hint="--json") from None
    stale = None if html else paths.pop("html")  # a run writes all its formats, or removes the stale one
    named = {"json": "--json", "md": "--markdown", "html": "--html", "evidence": "--markdown"}
    seen: dict = {}
    for key, path in paths.items():
        if path.resolve() in seen:
            raise typer.BadParameter(f"{named[key]} and {named[seen[path.resolve()]]} name the same file ({path})",
                                     param_hint=named[key])
        seen[path.resolve()] = key
        check_writable(path, named[key])
    try:
        report = run_selection(sel, quick=quick, seed=seed, alpha=alpha, logits=logits, jobs=jobs, progress=progress,
                               log=lambda line: typer.echo(line, err=True))
    except user_claims.UserClaimsError as err:  # a declaration problem only a run shows: no report is written
        raise typer.BadParameter(str(err), param_hint="--claims-from") from None
    print_table(report)
    try:
        index = write_report(report, paths, jobs=jobs, stale=stale if html_path is None else None).get("index")
    except OSError as err:
        typer.echo(f"Error: could not write the report: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo("wrote " + ", ".join(str(paths[k]) for k in ("md", "evidence", "html", "json") if k in paths)
               + (f"; every report is listed in {index}" if index else ""))
    if strict and any(c["verdict"] != "holds" for c in report["claims"]):
        raise typer.Exit(1)


@app.command("list")
def list_claims(claims: str = typer.Option("*", "--claims", "-c", help="Claim ids or globs, comma-separated."),
                takes_pairs: bool = typer.Option(False, "--takes-pairs", help="Only the claims that run on your own "
                                                 "pairs (verify --instances)."),
                brief: bool = typer.Option(False, "--brief", help="One line per claim, no statements."),
                claims_from: Optional[List[str]] = typer.Option(None, "--claims-from", help="Also list the claims "
                                                                "of your file or module (docs/your_claims.md).")):
    """List the registered claims: id, relation, paper and where in it, statement, parts, readings, scope and
    open choices."""
    import textwrap

    from spectheory.sims import papers, user_claims
    from spectheory.sims.registry import UnknownClaimError, select
    try:
        user_claims.load_many(claims_from or ())
    except user_claims.UserClaimsError as err:
        raise typer.BadParameter(str(err), param_hint="--claims-from") from None
    try:
        chosen = select(claims)
    except UnknownClaimError as err:
        raise typer.BadParameter(str(err), param_hint="--claims") from None
    if takes_pairs:
        chosen = [c for c in chosen if c.user_pairs is not None]
    wrap = lambda text, indent: textwrap.fill(text, 100, initial_indent=indent, subsequent_indent=indent)  # noqa: E731
    for c in chosen:
        cite = "; ".join(papers.PAPERS[k].short() for k in papers.keys_of(c.paper))
        extra = [f"{len(c.parts)} parts"] if len(c.parts) > 1 else []
        n_ctl = len(c.controls)
        extra += [f"{c.n_mc_tests} MC tests", f"{n_ctl} control{'s' * (n_ctl != 1)}"]
        if c.user_pairs is not None:
            extra.append("takes your pairs")
        typer.echo(f"{c.id:<26} {c.relation_label:<9} {c.reference}")
        if brief:
            continue
        typer.echo(wrap(f"{cite} · {', '.join(extra)}", "    "))
        typer.echo(wrap(c.statement, "    "))
        if len(c.parts) > 1:
            for p in c.parts:
                tag = f"{p.relation}{'' if p.checkable else ', not checkable'}"
                typer.echo(wrap(f"- {p.id} ({tag}): {p.statement}", "      ").replace("      - ", "    - ", 1))
        if len(c.readings) > 1 or c.principal.quote:  # the reading that decides the headline, and the others
            for r in c.readings:
                role = "principal" if r.role == "principal" else (r.kind or "alternative")
                typer.echo(wrap(f"reading {r.id} ({role}; parts {', '.join(r.parts)}): {r.statement}", "    "))
        if c.scope is not None:
            typer.echo(wrap(f"scope: {c.scope.statement}", "    "))
        for ch in c.choices:
            typer.echo(wrap(f"choice {ch.name}{' (invented)' if ch.invented else ''}: default {ch.default!r}, values "
                            f"{', '.join(repr(v) for v in ch.values)}", "    "))
        typer.echo("")


def _reports_with(claim_id: str) -> list[Path]:
    """Report files under reports/ that contain ``claim_id``: the default run's report
    (``reports/verify.json``) first when it has the claim, then the others, newest first."""
    import json
    found = []
    for path in sorted(REPORTS.glob("verify*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if any(c.get("id") == claim_id for c in data.get("claims", [])):
            found.append(path)
    return sorted(found, key=lambda p: p.name != "verify.json")  # stable: newest first among the rest


@app.command()
def show(claim_id: str = typer.Argument(..., help="A claim id (spectheory list shows them)."),
         report: Path = typer.Option(None, "--report", help="A report JSON (default: the newest reports/verify*.json "
                                     "that contains the claim)."),
         evidence: bool = typer.Option(True, "--evidence/--no-evidence", help="Also print every evidence table."),
         markdown: str = typer.Option("auto", "--markdown", help="auto: render the Markdown on a terminal, print it "
                                      "raw into a pipe or file; 'render' or 'raw' to choose.")):
    """Print one claim of the last report in full (statement, reading, parts, counterexample, evidence)."""
    import difflib
    import json

    from spectheory.sims.registry import load_all
    from spectheory.sims.report import claim_section
    from spectheory.sims.report import _evidence_blocks as evidence_blocks
    if markdown not in ("auto", "render", "raw"):
        raise typer.BadParameter(f"--markdown must be auto, render or raw, got {markdown!r}", param_hint="--markdown")
    known = list(load_all())
    report_given = report is not None
    paths: list = []
    if report is None:
        paths = _reports_with(claim_id)
        if not paths:
            if claim_id not in known:
                close = difflib.get_close_matches(claim_id, known, n=1)
                raise typer.BadParameter(f"no claim {claim_id!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                                         + "; `spectheory list` shows every claim", param_hint="CLAIM_ID")
            raise typer.BadParameter(f"no report under {REPORTS}/ contains {claim_id}: run `spectheory verify` "
                                     f"(or `spectheory verify --claims {claim_id}`) first, or give --report FILE",
                                     param_hint="CLAIM_ID")
        report = paths[0]
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError) as err:
        raise typer.BadParameter(f"cannot read {report}: {err}", param_hint="--report") from None
    claims = {c.get("id"): c for c in data.get("claims", [])}
    if claim_id not in claims:
        close = difflib.get_close_matches(claim_id, list(claims), n=1)
        raise typer.BadParameter(f"{report} has no claim {claim_id!r}" + (f" (did you mean {close[0]!r}?)" if close
                                                                            else ""), param_hint="CLAIM_ID")
    c = claims[claim_id]
    run = data.get("run", {})
    what = [f"{'quick' if run.get('quick') else 'default'} tier", f"seed {run.get('seed')}"]
    if (run.get("instances") or {}).get("source"):
        what.append(f"your pairs from {run['instances']['source']}")
    if run.get("logits_run"):
        what.append(f"logits from {run['logits_run']}")
    what.append(str(run.get("started_at", "")))
    others = [] if report_given else [str(p) for p in paths[1:]]
    header = f"From {report} ({', '.join(what)})" + (f"; also in {', '.join(others)} (--report FILE)" if others else "")
    text = "\n".join(claim_section(c, anchor_tag=False))
    if evidence:
        text += "\n" + "\n".join(["Every evidence item:"] + evidence_blocks({"claims": [c]}, headings=False))
    typer.echo(header + "\n")
    if markdown == "raw" or (markdown == "auto" and not _is_tty()):
        typer.echo(text)
    else:
        from rich.console import Console
        from rich.markdown import Markdown
        Console().print(Markdown(text))


def _is_tty() -> bool:
    import sys
    return sys.stdout.isatty()
