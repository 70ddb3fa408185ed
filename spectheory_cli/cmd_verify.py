"""``spectheory verify`` runs the registered claim checks and writes the report; ``spectheory list``
lists them."""
from __future__ import annotations

from pathlib import Path

import typer

from .app import app, check_writable


@app.command()
def verify(
    claims: str = typer.Option("*", "--claims", "-c", help="Claim ids or globs, comma-separated (e.g. 'sd.*')."),
    quick: bool = typer.Option(False, "--quick", help="Fast tier (seconds): Monte Carlo samples 10× smaller, power still stated."),
    seed: int = typer.Option(0, "--seed", min=0, help="Run seed (≥ 0); the report is reproducible from it."),
    alpha: float = typer.Option(0.01, "--alpha", help="Family-wise error rate of the whole report."),
    json_path: Path = typer.Option(Path("reports/verify.json"), "--json", help="Where to write the JSON report."),
    md_path: Path = typer.Option(Path("reports/verify.md"), "--markdown", help="Where to write the Markdown report."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    strict: bool = typer.Option(False, "--strict", help="Exit with status 1 unless every claim holds."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Worker processes, one family per worker (same report as serial; timing evidence aside). 0 = one per CPU, 1 = serial."),
    logits: Path = typer.Option(None, "--logits", help="A `spectheory validate` run directory: add its real-model (logits) evidence."),
):
    """Run every registered claim check on its default instances and write the report."""
    if not 0 < alpha < 1:
        raise typer.BadParameter(f"alpha must lie in (0, 1), got {alpha!r}", param_hint="--alpha")
    if jobs < 0:
        raise typer.BadParameter("jobs must be ≥ 0 (0 = one per CPU)", param_hint="--jobs")
    from sims import runner
    from sims.registry import UnknownClaimError, select
    from sims.report import print_table, to_markdown
    from spectheory.judge.format import write_json
    try:
        chosen = [c.id for c in select(claims)]  # every pattern must match before anything runs
    except UnknownClaimError as err:
        raise typer.BadParameter(str(err), param_hint="--claims") from None
    if json_path.resolve() == md_path.resolve():
        raise typer.BadParameter("--json and --markdown name the same file", param_hint="--markdown")
    check_writable(json_path, "--json")
    check_writable(md_path, "--markdown")
    if logits is not None and not (logits / "run.json").is_file():
        raise typer.BadParameter(f"{logits} is not a `spectheory validate` run directory (no run.json)",
                                 param_hint="--logits")
    extra = real_logits_evidence(logits, alpha, chosen)
    report = runner.run_claims(claims, quick=quick, seed=seed, alpha=alpha, progress=progress, jobs=jobs,
                               extra_evidence=extra, extra_source=None if logits is None else str(logits))
    print_table(report)
    try:
        write_json(report, json_path)
        md_path.write_text(to_markdown(report))
    except OSError as err:
        typer.echo(f"Error: could not write the report: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {json_path} and {md_path}")
    if strict and any(c["verdict"] != "holds" for c in report["claims"]):
        raise typer.Exit(1)


@app.command("list")
def list_claims(claims: str = typer.Option("*", "--claims", "-c")):
    """List the registered claims."""
    from sims.registry import UnknownClaimError, select
    try:
        chosen = select(claims)
    except UnknownClaimError as err:
        raise typer.BadParameter(str(err), param_hint="--claims") from None
    for c in chosen:
        parts = f", {len(c.parts)} parts" if len(c.parts) > 1 else ""
        typer.echo(f"{c.id:<26} {c.relation_label:<9} {c.reference}  [{c.n_mc_tests} MC tests, "
                   f"{len(c.controls)} controls{parts}]")


#: environment variable naming a captured ERSD LogitTrace (.npz) whose replay adds ``logits``
#: evidence to ``ersd.lemma3_1`` and ``zero_order.underestimates`` (docs/ersd.md)
TRACE_ENV = "SPECTHEORY_TRACE"
TRACE_CLAIMS = ("ersd.lemma3_1", "zero_order.underestimates")


def real_logits_evidence(logits: Path | None, alpha: float, claim_ids=TRACE_CLAIMS) -> dict:
    """Real-model evidence for the runner (``sims`` never imports ``validate``): the ``logits``
    evidence of a `spectheory validate` run directory (tested at the report's per-test level),
    plus the replay of the ERSD trace named by $SPECTHEORY_TRACE (at the family-wise level, as
    that replay states) when one of those claims is among ``claim_ids``. Returns
    ``{claim_id: [Evidence, ...]}``."""
    import os

    from sims.registry import total_mc_tests
    extra: dict = {}
    if logits is not None:
        from validate.evidence import logits_evidence
        for cid, evs in logits_evidence(logits, alpha=alpha / max(1, total_mc_tests())).items():
            extra.setdefault(cid, []).extend(evs)
    trace = os.environ.get(TRACE_ENV)
    if trace and set(TRACE_CLAIMS) & set(claim_ids):
        from validate import LogitTrace
        from validate.replay_ersd import evidence_ersd, replay_ersd
        rep = evidence_ersd(replay_ersd(LogitTrace.load(trace), k=16, m=16, n_mc=400, seed=0), alpha=alpha)
        for cid in TRACE_CLAIMS:
            extra.setdefault(cid, []).extend(rep[cid])
    return extra
