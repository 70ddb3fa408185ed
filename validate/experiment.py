"""A validation run on disk: capture traces and real speculative decoding, resumable.

Layout of ``RUN_DIR`` (docs/validate.md)::

    run.json                          configuration (models, sampling, γs, prompts, device)
    traces/<category>/<prompt>.npz    CompactTrace of the target's own text (spectheory.trace/2)
    sd/g<γ>/<category>/<prompt>.npz   SDRun of real speculative decoding (spectheory.sdrun/1)

Each file is written atomically when its prompt is done, so an interrupted run resumes
where it stopped (existing files are skipped).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .specdec import SDRun
from .trace import CompactTrace

RUN_FORMAT = "spectheory.validate-run/1"


@dataclass
class Run:
    """A loaded run directory."""

    path: Path
    config: dict
    traces: list = field(default_factory=list)        # CompactTrace
    sd: dict = field(default_factory=dict)             # γ → list[SDRun]

    @property
    def categories(self) -> list[str]:
        cats = {t.category for t in self.traces} | {r.meta.get("category", "") for rs in self.sd.values() for r in rs}
        return sorted(cats)


def check_run(run) -> Run:
    """``run`` must be a loaded run directory (:func:`load_run`)."""
    if not isinstance(run, Run):
        raise TypeError(f"run must be a validate.experiment.Run (load one with load_run(run_dir)), "
                        f"got {type(run).__name__}")
    return run


def load_run(run_dir) -> Run:
    """Read every trace and SD run under ``run_dir`` (a clear error if it is not a run)."""
    d = Path(run_dir)
    cfg_path = d / "run.json"
    if not cfg_path.exists():
        raise FileNotFoundError(f"{d}: not a validate run directory (no run.json); "
                                "create one with `spectheory validate`")
    cfg = json.loads(cfg_path.read_text())
    if cfg.get("format") != RUN_FORMAT:
        raise ValueError(f"{cfg_path}: format {cfg.get('format')!r}, this spectheory reads {RUN_FORMAT}")
    traces = [CompactTrace.load(p) for p in sorted((d / "traces").glob("*/*.npz"))]
    sd: dict = {}
    for g in sorted((d / "sd").glob("g*")):
        runs = [SDRun.load(p) for p in sorted(g.glob("*/*.npz"))]
        if runs:
            sd[int(g.name[1:])] = runs
    return Run(d, cfg, traces, sd)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def run_experiment(run_dir, target_model, draft_model, prompts: list, encode, *, gammas=(1, 2, 3, 4, 6),
                   max_new_tokens: int = 64, temperature: float = 1.0, top_k=None, top_p=None, seed: int = 0,
                   stop_ids=(), slice_k: int = 256, device: str | None = None, sd: bool = True,
                   config: dict | None = None, progress: bool = True, vocab_size: int | None = None,
                   probe_every: int = 4) -> Path:
    """Capture every prompt, then run real SD for every γ; skip what is already on disk.

    prompts: :class:`validate.prompts.Prompt` list; encode(prompt) → token ids (chat template
    applied). config: extra entries for run.json (model names...). Seeds: prompt i uses
    ``seed + i`` for capture and for SD at every γ. probe_every: the autoregressive probe
    (:func:`validate.specdec.speculative_decode`) times every k-th SD iteration.
    """
    from spectheory.checks import check_int

    from .capture import capture_trace
    from .prompts import Prompt
    from .specdec import speculative_decode
    from .trace import check_sampling
    # every argument is checked before the run directory or run.json is written
    if isinstance(gammas, (str, bytes)) or np.ndim(gammas) != 1 or len(gammas) == 0:
        raise ValueError(f"gammas must be a non-empty sequence of draft lengths, got {gammas!r}")
    for g in gammas:
        check_int(g, "gamma", min=1)
    check_int(max_new_tokens, "max_new_tokens", min=1)
    check_sampling(temperature, top_k, top_p)
    check_int(seed, "seed", min=0)
    check_int(slice_k, "slice_k", min=1)
    check_int(probe_every, "probe_every", min=1)
    if not isinstance(prompts, (list, tuple)) or not all(isinstance(p, Prompt) for p in prompts):
        raise TypeError("prompts must be a list of validate.prompts.Prompt (load them with load_prompts)")
    if not callable(encode):
        raise TypeError(f"encode must be callable prompt -> token ids, got {type(encode).__name__}")
    d = Path(run_dir)
    d.mkdir(parents=True, exist_ok=True)
    cfg = dict(format=RUN_FORMAT, gammas=list(gammas), max_new_tokens=int(max_new_tokens),
               temperature=float(temperature), top_k=top_k, top_p=top_p, seed=int(seed),
               stop_ids=list(stop_ids), slice_k=int(slice_k), device=device, probe_every=int(probe_every),
               prompts=[dict(name=p.name, category=p.category) for p in prompts], **(config or {}))
    old = d / "run.json"
    if old.exists():
        prev = json.loads(old.read_text())
        for k in ("temperature", "top_k", "top_p", "seed", "max_new_tokens", "slice_k"):
            if prev.get(k) != cfg.get(k):
                raise ValueError(f"{d} holds a run with {k}={prev.get(k)!r}, asked for {cfg.get(k)!r}: "
                                 "use another directory (or delete it) to change the sampling setup")
        cfg["gammas"] = sorted(set(prev.get("gammas", [])) | set(cfg["gammas"]))
        names = {p["name"] for p in prev.get("prompts", [])}
        cfg["prompts"] = prev.get("prompts", []) + [p for p in cfg["prompts"] if p["name"] not in names]
    old.write_text(json.dumps(cfg, indent=1, default=str))

    jobs = []  # (path, kind, γ, i, prompt)
    for i, p in enumerate(prompts):
        jobs.append((d / "traces" / _safe(p.category) / f"{_safe(p.name)}.npz", "capture", None, i, p))
    if sd:
        for g in gammas:
            for i, p in enumerate(prompts):
                jobs.append((d / "sd" / f"g{int(g)}" / _safe(p.category) / f"{_safe(p.name)}.npz", "sd", int(g), i, p))
    todo = [j for j in jobs if not j[0].exists()]
    bar = task = None
    if progress and todo:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        bar = Progress(TextColumn("{task.description:<44}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("tokens"), TimeElapsedColumn())
        bar.start()
        task = bar.add_task("", total=len(todo) * max_new_tokens)
    try:
        for n, (path, kind, g, i, p) in enumerate(todo):
            ids = encode(p)
            label = f"[{n + 1}/{len(todo)}] {kind}{'' if g is None else f' γ={g}'} {p.name}"
            if bar:
                bar.update(task, description=label[:44])
            done = [0]

            def tick(k=1):
                done[0] += k
                if bar:
                    bar.advance(task, k)
            common = dict(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed + i, stop_ids=stop_ids,
                          device=device, name=p.name, category=p.category, vocab_size=vocab_size)
            if kind == "capture":
                obj = capture_trace(target_model, draft_model, ids, max_new_tokens, slice_k=slice_k,
                                    on_token=lambda t: tick(), **common)
            else:
                obj = speculative_decode(target_model, draft_model, ids, g, max_new_tokens,
                                         on_tokens=tick, probe_every=probe_every, **common)
            if bar:
                bar.advance(task, max_new_tokens - done[0])  # early stop: count the rest as done
            path.parent.mkdir(parents=True, exist_ok=True)
            obj.save(path)
    finally:
        if bar:
            bar.stop()
    return d
