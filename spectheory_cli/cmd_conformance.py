"""``spectheory conformance MODULE:FUNCTION``: test a user's speculative sampler for
losslessness (spectheory.conformance; docs/conformance.md)."""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import typer

from .app import app


def load_target(target: str):
    """``package.module:function`` or ``path/to/file.py:function`` (attribute paths allowed)."""
    if ":" not in target:
        raise typer.BadParameter("expected MODULE:FUNCTION (e.g. mypkg.sampling:verify)", param_hint="TARGET")
    mod_name, attr = target.rsplit(":", 1)
    try:
        if mod_name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(mod_name).stem, mod_name)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {mod_name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(mod_name)
    except (ImportError, FileNotFoundError) as err:
        raise typer.BadParameter(f"cannot import {mod_name!r}: {err}", param_hint="TARGET") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise typer.BadParameter(f"{mod_name!r} has no attribute {attr!r}", param_hint="TARGET")
        obj = getattr(obj, part)
    if not callable(obj):
        raise typer.BadParameter(f"{target} is not callable", param_hint="TARGET")
    return obj


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}", param_hint=what) from None


@app.command()
def conformance(
    target: str = typer.Argument(..., help="MODULE:FUNCTION (or path/file.py:FUNCTION) of the sampler under test."),
    kind: str = typer.Option("block", "--kind", help="'block': fn(p, q, draft_tokens, rng) -> tokens; "
                             "'step': make_step(target_lm, draft_lm, gamma, rng) -> step(context) -> tokens."),
    adapter: str = typer.Option("probs", "--adapter", help="Block verifiers: inputs as 'probs', 'logprobs' or 'logits' (-inf masked)."),
    dtype: str = typer.Option("float64", "--dtype", help="float64, float32 or float16 inputs (fake LM logits for steps)."),
    batched: bool = typer.Option(False, "--batched/--unbatched", help="Inputs with a leading batch axis of size 1."),
    framework: str = typer.Option("numpy", "--framework", help="'numpy' arrays or 'torch' tensors."),
    lm: str = typer.Option("callable", "--lm", help="Steps: fake LMs as 'callable' or 'torch' (nn.Module with .logits)."),
    n: int = typer.Option(10_000, "--n", help="Independent runs per instance and γ."),
    gammas: str = typer.Option("1,3", "--gammas", help="Draft lengths, comma-separated (1..4)."),
    instances: str = typer.Option("", "--instances", help="Built-in instances, comma-separated (default: Markov pairs and edge cases)."),
    seed: int = typer.Option(0, "--seed"),
    alpha: float = typer.Option(0.01, "--alpha", help="Family-wise error rate over the sampler's tests."),
    controls: bool = typer.Option(True, "--controls/--no-controls", help="Run the broken rules through the same checks."),
    probes: bool = typer.Option(True, "--probes/--no-probes", help="Block verifiers: boundary probes with forced uniforms."),
    json_path: Path = typer.Option(Path("reports/conformance.json"), "--json", help="Where to write the JSON report."),
    md_path: Path = typer.Option(Path("reports/conformance.md"), "--markdown", help="Where to write the Markdown report."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    strict: bool = typer.Option(False, "--strict", help="Exit with status 1 unless every check holds."),
):
    """Test a speculative-sampling implementation for losslessness against the exact theory."""
    from spectheory import conformance as sc

    from sims.report import to_markdown
    from spectheory.judge.format import write_json
    fn = load_target(target)
    g = _ints(gammas, "--gammas")
    inst = tuple(s.strip() for s in instances.split(",") if s.strip()) or sc.INSTANCES
    try:
        if kind == "block":
            report = sc.check_block_verifier(fn, adapter=adapter, dtype=dtype, batched=batched, framework=framework,
                                             n=n, gammas=g, instances=inst, seed=seed, alpha=alpha,
                                             controls=controls, probes=probes, progress=progress, name=target)
        elif kind == "step":
            report = sc.check_decoding_step(fn, lm=lm, dtype=dtype, n=n, gammas=g, instances=inst, seed=seed,
                                            alpha=alpha, controls=controls, progress=progress, name=target)
        else:
            raise typer.BadParameter("kind must be 'block' or 'step'", param_hint="--kind")
    except (ValueError, TypeError, KeyError) as err:
        raise typer.BadParameter(str(err.args[0] if err.args else err)) from None
    except ImportError as err:
        raise typer.BadParameter(f"{err} (torch is needed for --framework torch / --lm torch)") from None
    sc.print_report(report)
    write_json(report, json_path)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text(to_markdown(report).replace("# spectheory verification report",
                                                   f"# spectheory conformance report: `{target}`", 1))
    typer.echo(f"wrote {json_path} and {md_path}")
    if strict and any(c["verdict"] != "holds" for c in report["claims"]):
        raise typer.Exit(1)
