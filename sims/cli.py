"""``spectheory`` command line: ``spectheory verify`` runs the registered claim checks."""
from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Check the theory of speculative decoding claim by claim.")


def check_writable(path: Path, option: str) -> None:
    """Fail before the run (not after it) if the report cannot be written to ``path``:
    its folder is created if missing; an existing directory, a parent that is a file or an
    unwritable location is a clean usage error."""
    if path.is_dir():
        raise typer.BadParameter(f"{path} is a directory, not a file", param_hint=option)
    for parent in (path.parent, *path.parent.parents):
        if parent.exists() and not parent.is_dir():
            raise typer.BadParameter(f"cannot write {path}: {parent} is a file, not a folder", param_hint=option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise typer.BadParameter(f"cannot create the folder {path.parent}: {err.strerror or err}",
                                 param_hint=option) from None
    existed = path.exists()
    try:
        with open(path, "a"):
            pass
    except OSError as err:
        raise typer.BadParameter(f"cannot write {path}: {err.strerror or err}", param_hint=option) from None
    if not existed:
        path.unlink()


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
    from .registry import UnknownClaimError, select
    from .report import print_table, to_markdown, write_json
    from .runner import run_claims
    try:
        select(claims)  # every pattern must match before anything runs
    except UnknownClaimError as err:
        raise typer.BadParameter(str(err), param_hint="--claims") from None
    if json_path.resolve() == md_path.resolve():
        raise typer.BadParameter("--json and --markdown name the same file", param_hint="--markdown")
    check_writable(json_path, "--json")
    check_writable(md_path, "--markdown")
    if logits is not None and not (logits / "run.json").is_file():
        raise typer.BadParameter(f"{logits} is not a `spectheory validate` run directory (no run.json)",
                                 param_hint="--logits")
    report = run_claims(claims, quick=quick, seed=seed, alpha=alpha, progress=progress, jobs=jobs, logits=logits)
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
    from .registry import UnknownClaimError, select
    try:
        chosen = select(claims)
    except UnknownClaimError as err:
        raise typer.BadParameter(str(err), param_hint="--claims") from None
    for c in chosen:
        typer.echo(f"{c.id:<24} {c.reference}  [{c.n_mc_tests} MC tests, {len(c.controls)} controls]")


from . import cli_conformance  # noqa: E402,F401  (registers `spectheory conformance`)
from . import cli_sweep  # noqa: E402,F401  (defines `spectheory sweep` on app)
from . import cli_validate  # noqa: E402,F401  (registers `spectheory validate`)


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
