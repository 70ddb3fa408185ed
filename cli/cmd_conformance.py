"""``spectheory conformance MODULE:FUNCTION``: test a user's speculative sampler for
losslessness (spectheory.conformance; docs/conformance.md).

Exit status (like a linter or a test runner, a failure is not 0): 1 when the sampler is not
lossless in law (its output distribution is wrong), 4 when it crashed on ordinary inputs, 3 when
it is lossless in law but fails on boundary events of stated probability (spectheory.conformance.
severity); 2 for a usage error (bad option, a sampler that cannot be run as configured: the
message names the problem and a hint); 0 otherwise. ``--strict``: also 1 when lossless is not
shown (inconclusive); ``--strict-standard``: also 1 unless standard speculative sampling / the
named rule holds; ``--report-only``: 0 after any report (2 still for a usage error)."""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Optional

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
                             "'step': make_step(target_lm, draft_lm, gamma, rng) -> step(context) -> tokens; "
                             "'multidraft': fn(p, q, drafts, rng) (K drafts) or, with --tree, "
                             "fn(p, q, tokens, parents, rng); 'assisted': an end-to-end generation stack "
                             "generate(target, draft, prompt, *, max_new_tokens, num_assistant_tokens, temperature, "
                             "top_k, top_p) -> tokens (e.g. spectheory.conformance.examples:transformers_assisted); "
                             "'ragged': a batched sampler in the serving layout, "
                             "fn(draft_token_ids, cu_num_draft_tokens, draft_probs, target_probs, bonus_token_ids, "
                             "rng) -> (B, max γ_b + 1) padded with -1."),
    offsets: str = typer.Option("cu", "--offsets", help="Ragged: the second argument holds the cumulative draft "
                                "lengths ('cu') or each request's ('counts')."),
    bonus: str = typer.Option("given", "--bonus", help="Ragged: 'given' (target_probs (T, V) and bonus_token_ids "
                              "(B,)) or 'inside' (target_probs (T + B, V), the sampler draws the bonus; no "
                              "bonus_token_ids)."),
    k_drafts: int = typer.Option(2, "--K", help="Multi-draft: number of independent drafts (1..4)."),
    tree: str = typer.Option("", "--tree", help="Multi-draft: a static token tree, branching factors per depth "
                             "(e.g. 2,2)."),
    rule: str = typer.Option("", "--rule", help="Multi-draft: also match this rule's exact engine: kseq, gbv, "
                             "spectr-gbv or specinfer."),
    adapter: str = typer.Option("probs", "--adapter", help="Block verifiers: inputs as 'probs', 'logprobs' or 'logits' (-inf masked)."),
    dtype: str = typer.Option("float64", "--dtype", help="float64, float32 or float16 inputs (fake LM logits for steps)."),
    batched: bool = typer.Option(False, "--batched/--unbatched", help="Inputs with a leading batch axis of size 1."),
    framework: str = typer.Option("numpy", "--framework", help="'numpy' arrays or 'torch' tensors."),
    lm: str = typer.Option("", "--lm", help="Steps: fake LMs as 'callable' (default) or 'torch' (nn.Module with "
                           ".logits); assisted: 'hf' (default: transformers models with generate and a cache), "
                           "'torch' or 'callable'."),
    settings: str = typer.Option("", "--settings", help="Assisted: processor settings separated by ';' (default "
                                 "'T=1;T=0.7,top_k=2;top_p=0.9')."),
    max_new_tokens: int = typer.Option(3, "--max-new-tokens", help="Assisted: tokens generated per run (L)."),
    n: Optional[int] = typer.Option(None, "--n", help="Independent runs per instance and γ (default 10,000; assisted 6,000)."),
    gammas: str = typer.Option("", "--gammas", help="Draft lengths, comma-separated (default 1,3; multi-draft 1,2; "
                               "ragged 0,1,3: the requests of every call)."),
    instances: str = typer.Option("", "--instances", help="Built-in instances, comma-separated (default: Markov pairs and edge cases)."),
    seed: int = typer.Option(0, "--seed"),
    alpha: float = typer.Option(0.01, "--alpha", help="Family-wise error rate over the sampler's tests."),
    controls: bool = typer.Option(True, "--controls/--no-controls", help="Run the broken rules through the same checks."),
    probes: bool = typer.Option(True, "--probes/--no-probes", help="Block verifiers: boundary probes with forced uniforms."),
    json_path: Path = typer.Option(None, "--json", help="Where to write the JSON report (default: "
                                   "reports/conformance-<target>.json, named after the sampler tested; the Markdown "
                                   "goes beside it)."),
    md_path: Path = typer.Option(None, "--markdown", help="Where to write the Markdown report (default: beside the "
                                 "JSON)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    strict: bool = typer.Option(False, "--strict", help="Also exit with status 1 when lossless is inconclusive."),
    strict_standard: bool = typer.Option(False, "--strict-standard", help="Exit with status 1 unless it is shown "
                                         "lossless and standard speculative sampling (or the --rule)."),
    report_only: bool = typer.Option(False, "--report-only", help="Exit with status 0 after a report whatever its "
                                     "verdicts (a failure otherwise exits 1 law, 3 boundary, 4 crash)."),
):
    """Test a speculative-sampling implementation for losslessness against the exact theory."""
    from spectheory import conformance as sc
    from spectheory.conformance.kinds import KINDS, get_kind, spelled

    from spectheory.sims.report import to_markdown
    from spectheory.judge.format import write_json
    fn = load_target(target)
    if kind not in KINDS:
        raise typer.BadParameter(f"kind must be {spelled()}", param_hint="--kind")
    defaults = get_kind(kind)
    g = _ints(gammas, "--gammas") or defaults.GAMMAS
    inst = tuple(s.strip() for s in instances.split(",") if s.strip()) or defaults.INSTANCES
    if n is None:
        n = defaults.DEFAULT_N
    try:
        if kind == "assisted":
            report = sc.check_assisted_generation(
                fn, lm=lm or "hf", dtype=dtype, n=n, gammas=g, instances=inst,
                settings=tuple(x.strip() for x in settings.split(";") if x.strip()) or defaults.SETTINGS,
                max_new_tokens=max_new_tokens, seed=seed, alpha=alpha, controls=controls, progress=progress,
                name=target)
        elif kind == "block":
            report = sc.check_block_verifier(fn, adapter=adapter, dtype=dtype, batched=batched, framework=framework,
                                             n=n, gammas=g, instances=inst, seed=seed, alpha=alpha,
                                             controls=controls, probes=probes, progress=progress, name=target)
        elif kind == "step":
            report = sc.check_decoding_step(fn, lm=lm or "callable", dtype=dtype, n=n, gammas=g, instances=inst, seed=seed,
                                            alpha=alpha, controls=controls, progress=progress, name=target)
        elif kind == "ragged":
            if batched:
                raise ValueError("--batched does not apply to --kind ragged: its inputs are a batch already")
            report = sc.check_ragged_sampler(fn, offsets=offsets, bonus=bonus, adapter=adapter, dtype=dtype,
                                             framework=framework, n=n, gammas=g, instances=inst, seed=seed,
                                             alpha=alpha, controls=controls, probes=probes, progress=progress,
                                             name=target)
        else:
            report = sc.check_multidraft_verifier(
                fn, K=k_drafts, tree=_ints(tree, "--tree") or None, rule=rule or None, adapter=adapter, dtype=dtype,
                batched=batched, framework=framework, n=n, gammas=g, instances=inst, seed=seed, alpha=alpha,
                controls=controls, probes=probes, progress=progress, name=target)
    except sc.ConformanceUsageError as err:
        typer.echo(f"usage error: {err.problem}", err=True)
        if err.hint:
            typer.echo(f"hint: {err.hint}", err=True)
        raise typer.Exit(2) from None
    except (ValueError, TypeError, KeyError) as err:
        raise typer.BadParameter(str(err.args[0] if err.args else err)) from None
    except ImportError as err:
        raise typer.BadParameter(f"{err} (torch is needed for --framework torch / --lm torch)") from None
    sc.print_report(report)
    json_path, md_path = report_paths(target, json_path, md_path, kind=kind, seed=seed, alpha=alpha)
    from .runs import _target_where
    report["run"].update(target=_target_where(target), kind_option=kind)  # what its name stands for
    json_path.parent.mkdir(parents=True, exist_ok=True)
    write_json(report, json_path)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    top = "\n".join(f"- **{line}**" if i < 2 else f"- {line}" for i, line in enumerate(sc.verdict_lines(report)))
    md_path.write_text(to_markdown(report).replace("# spectheory verification report",
                                                   f"# spectheory conformance report: `{target}`\n\n{top}", 1))
    from .report_index import write_index
    from .runs import REPORTS
    index = write_index(REPORTS) if json_path.parent.resolve() == REPORTS.resolve() else None
    typer.echo(f"wrote {json_path} and {md_path}" + (f"; every report is listed in {index}" if index else ""))
    code = exit_status(report["verdicts"], strict=strict, strict_standard=strict_standard)
    if code and not report_only:
        raise typer.Exit(code)


def report_paths(target: str, json_path: Path | None = None, md_path: Path | None = None, *, kind: str = "block",
                 seed: int = 0, alpha: float = 0.01) -> tuple[Path, Path]:
    """Where a conformance report goes: the paths given, the other beside the one given, else
    ``reports/conformance-<target>.{json,md}`` (:func:`spectheory.cli.runs.conformance_base`)."""
    from .runs import NameTaken, conformance_base
    if json_path is None and md_path is None:
        try:
            base = conformance_base(target, kind=kind, seed=seed, alpha=alpha)
        except NameTaken as err:
            raise typer.BadParameter(str(err), param_hint="--json") from None
        return Path(f"{base}.json"), Path(f"{base}.md")
    if json_path is None:
        return md_path.with_suffix(".json"), md_path
    return json_path, (md_path if md_path is not None else json_path.with_suffix(".md"))


def exit_status(verdicts: dict, *, strict: bool = False, strict_standard: bool = False) -> int:
    """The command's exit status for a report's verdicts (see the module docstring)."""
    from spectheory.conformance.severity import EXIT_CODES
    lossless = verdicts["lossless"]
    if lossless["verdict"] == "fails":
        return EXIT_CODES.get(lossless.get("severity") or "law", 1)
    if (strict or strict_standard) and lossless["verdict"] != "holds":
        return 1
    if strict_standard and verdicts["standard"]["verdict"] != "holds":
        return 1
    return 0
