"""``spectheory`` command line: ``spectheory verify`` runs the registered claim checks."""
from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Check the theory of speculative decoding claim by claim.")


@app.command()
def verify(
    claims: str = typer.Option("*", "--claims", "-c", help="Claim ids or globs, comma-separated (e.g. 'sd.*')."),
    quick: bool = typer.Option(False, "--quick", help="Fast tier (seconds): Monte Carlo samples 10× smaller, power still stated."),
    seed: int = typer.Option(0, "--seed", help="Run seed; the report is reproducible from it."),
    alpha: float = typer.Option(0.01, "--alpha", help="Family-wise error rate of the whole report."),
    json_path: Path = typer.Option(Path("reports/verify.json"), "--json", help="Where to write the JSON report."),
    md_path: Path = typer.Option(Path("reports/verify.md"), "--markdown", help="Where to write the Markdown report."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    strict: bool = typer.Option(False, "--strict", help="Exit with status 1 unless every claim holds."),
    logits: Path = typer.Option(None, "--logits", help="A `spectheory validate` run directory: add its real-model (logits) evidence."),
):
    """Run every registered claim check on its default instances and write the report."""
    if not 0 < alpha < 1:
        raise typer.BadParameter("alpha must lie in (0, 1)", param_hint="--alpha")
    if logits is not None and not (logits / "run.json").is_file():
        raise typer.BadParameter(f"{logits} is not a `spectheory validate` run directory (no run.json)",
                                 param_hint="--logits")
    from .report import print_table, to_markdown, write_json
    from .runner import run_claims
    try:
        report = run_claims(claims, quick=quick, seed=seed, alpha=alpha, progress=progress, logits=logits)
    except KeyError as err:
        raise typer.BadParameter(str(err.args[0]), param_hint="--claims") from None
    print_table(report)
    write_json(report, json_path)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(to_markdown(report))
    typer.echo(f"wrote {json_path} and {md_path}")
    if strict and any(c["verdict"] != "holds" for c in report["claims"]):
        raise typer.Exit(1)


@app.command("list")
def list_claims(claims: str = typer.Option("*", "--claims", "-c")):
    """List the registered claims."""
    from .registry import select
    for c in select(claims):
        typer.echo(f"{c.id:<24} {c.reference}  [{c.n_mc_tests} MC tests, {len(c.controls)} controls]")


from . import cli_validate  # noqa: E402,F401  (registers `spectheory validate`)


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
