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
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .specdec import SDRun
from .trace import CompactTrace

RUN_FORMAT = "spectheory.validate-run/2"
#: Formats :func:`load_run` reads (2 adds the weights, the batch size and the models' identities).
RUN_FORMATS = ("spectheory.validate-run/1", RUN_FORMAT)
#: Sampling keys a resumed run must share with the run on disk.
SAMPLING_KEYS = ("temperature", "top_k", "top_p", "seed", "max_new_tokens", "slice_k")


@dataclass
class Run:
    """A loaded run directory."""

    path: Path
    config: dict
    traces: list = field(default_factory=list)        # CompactTrace
    sd: dict = field(default_factory=dict)             # γ → list[SDRun]
    families: dict = field(default_factory=dict)       # loop name → list[spectheory.validate.loops.LoopRun]
    controls: dict = field(default_factory=dict)       # γ → list[SDRun] of a broken verifier (negative control)

    @property
    def categories(self) -> list[str]:
        cats = {t.category for t in self.traces} | {r.meta.get("category", "") for rs in self.sd.values() for r in rs}
        return sorted(cats)


def check_run(run) -> Run:
    """``run`` must be a loaded run directory (:func:`load_run`)."""
    if not isinstance(run, Run):
        raise TypeError(f"run must be a spectheory.validate.experiment.Run (load one with load_run(run_dir)), "
                        f"got {type(run).__name__}")
    return run


def _load_config(d: Path) -> dict:
    cfg_path = d / "run.json"
    if not cfg_path.exists():
        raise FileNotFoundError(f"{d}: not a validate run directory (no run.json); "
                                "create one with `spectheory validate`")
    try:
        cfg = json.loads(cfg_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{cfg_path}: not valid JSON ({e}); a damaged run.json (restore it, or start a new "
                         "run directory)") from None
    if not isinstance(cfg, dict) or cfg.get("format") not in RUN_FORMATS:
        got = cfg.get("format") if isinstance(cfg, dict) else type(cfg).__name__
        raise ValueError(f"{cfg_path}: format {got!r}, this spectheory reads {', '.join(RUN_FORMATS)}")
    return cfg


def load_run(run_dir) -> Run:
    """Read every trace, SD run and family loop under ``run_dir`` (a clear error naming the file if
    one is damaged or truncated, or if it is not a run directory)."""
    from .loops import LoopRun
    d = Path(run_dir)
    cfg = _load_config(d)
    traces = [CompactTrace.load(p) for p in sorted((d / "traces").glob("*/*.npz"))]
    sd: dict = {}
    for g in sorted((d / "sd").glob("g*")):
        runs = [SDRun.load(p) for p in sorted(g.glob("*/*.npz"))]
        if runs:
            sd[int(g.name[1:])] = runs
    fam: dict = {}
    for f in sorted((d / "families").glob("*")):
        runs = [LoopRun.load(p) for p in sorted(f.glob("*/*.npz"))]
        if runs:
            fam[f.name] = runs
    ctl: dict = {}
    for g in sorted((d / "controls").glob("sd-g*")):
        runs = [SDRun.load(p) for p in sorted(g.glob("*/*.npz"))]
        if runs:
            ctl[int(g.name[4:])] = runs
    return Run(d, cfg, traces, sd, fam, ctl)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def check_same_pair(prev: dict, cfg: dict, where) -> None:
    """A resumed run must use the same model pair and weights as the run on disk."""
    for side in ("target", "draft"):
        a, b = prev.get(f"{side}_id"), cfg.get(f"{side}_id")
        if a is None or b is None:
            continue
        diff = [k for k in ("name", "arch", "params", "embedding_sha", "outputs") if a.get(k) != b.get(k)]
        if diff:
            raise ValueError(f"{where} holds a run of another model pair: its {side} is {a.get('name')!r} "
                             f"({', '.join(f'{k}={a.get(k)!r}' for k in diff)}), this one {b.get('name')!r} "
                             f"({', '.join(f'{k}={b.get(k)!r}' for k in diff)}). Nothing was changed; use another "
                             "--out directory for this pair")
        if a.get("weights") != b.get("weights"):
            raise ValueError(f"{where} holds a run with {side} weights {a.get('weights')!r}, asked for "
                             f"{b.get('weights')!r}: theory and measurement must share the weights. Nothing was "
                             "changed; resume with the same --dtype or use another --out directory")


def run_experiment(run_dir, target_model, draft_model, prompts: list, encode, *, gammas=(1, 2, 3, 4, 6),
                   max_new_tokens: int = 64, temperature: float = 1.0, top_k=None, top_p=None, seed: int = 0,
                   stop_ids=(), slice_k: int = 256, device: str | None = None, sd: bool = True,
                   config: dict | None = None, progress: bool = True, vocab_size: int | None = None,
                   probe_every: int = 4, batch: int = 1, capture: list | None = None, hidden=None,
                   families=(), family_prompts: list | None = None, control_prompts: list | None = None,
                   family_options: dict | None = None, sd_prompts: list | None = None) -> Path:
    """Capture the prompts, run real SD for every γ, then the family loops; skip what is on disk.

    prompts: :class:`spectheory.validate.prompts.Prompt` list; encode(prompt) → token ids (chat template
    applied). capture: the prompts to capture (default: all; a subset keeps a shipped run
    small — the SD tests need only the SD records). config: extra entries for run.json (model
    names, identities, weights...). Seeds: the prompt at place i of the run directory's prompt list
    (run.json, which a resumed run only appends to) uses ``seed + i`` for capture, SD at every γ
    and every family loop. probe_every: the autoregressive probe times every k-th batch step.
    batch: prompts decoded at once (1: one prompt at a time, still through the batched code).
    hidden: :class:`spectheory.validate.capture.HiddenSpec` to capture hidden-state projections.
    families: loop names of :mod:`spectheory.validate.loops` to run on ``family_prompts`` (default: all
    prompts); control_prompts: prompts for the negative controls (a broken verifier through the
    same real loops; default: none). Each prompt's record is saved when that prompt finishes.
    """
    from spectheory.checks import check_int

    from .batch import PrefixCache
    from .capture import HiddenSpec, capture_batch
    from .loops import LOOPS, LoopRun, run_loop
    from .prompts import Prompt
    from .specdec import speculative_decode_batch
    from .trace import check_sampling
    from spectheory.rules.sd import BROKEN_SWAPPED_RATIO
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
    check_int(batch, "batch", min=1)
    if hidden is not None and not isinstance(hidden, HiddenSpec):
        raise TypeError(f"hidden must be a spectheory.validate.capture.HiddenSpec or None, got {type(hidden).__name__}")
    if not isinstance(prompts, (list, tuple)) or not all(isinstance(p, Prompt) for p in prompts):
        raise TypeError("prompts must be a list of spectheory.validate.prompts.Prompt (load them with load_prompts)")
    # family_prompts / control_prompts: one list for every loop, or {loop name (control_prompts also
    # "sd"): list} so that each loop gets the prompts its power statement asks for (spectheory.validate.plan)
    subs = [("capture", capture), ("sd_prompts", sd_prompts)]
    for nm, sub in (("family_prompts", family_prompts), ("control_prompts", control_prompts)):
        if isinstance(sub, dict):
            bad = sorted(set(sub) - set(LOOPS) - ({"sd"} if nm == "control_prompts" else set()))
            if bad:
                raise ValueError(f"{nm}: unknown loops {bad}; known: {sorted(LOOPS)}"
                                 + (" and sd" if nm == "control_prompts" else ""))
            subs += [(f"{nm}[{k}]", v) for k, v in sub.items()]
        else:
            subs.append((nm, sub))
    for nm, sub in subs:
        if sub is not None and (not isinstance(sub, (list, tuple)) or not all(p in prompts for p in sub)):
            raise ValueError(f"{nm} must be a sub-list of prompts")
    unknown = [f for f in families if f not in LOOPS]
    if unknown:
        raise ValueError(f"unknown family loops {unknown}; known: {sorted(LOOPS)}")
    if not callable(encode):
        raise TypeError(f"encode must be callable prompt -> token ids, got {type(encode).__name__}")
    d = Path(run_dir)
    cfg = dict(format=RUN_FORMAT, gammas=list(gammas), max_new_tokens=int(max_new_tokens),
               temperature=float(temperature), top_k=top_k, top_p=top_p, seed=int(seed),
               stop_ids=list(stop_ids), slice_k=int(slice_k), device=device, probe_every=int(probe_every),
               batch=int(batch), prompts=[dict(name=p.name, category=p.category) for p in prompts],
               families=list(families), **(config or {}))
    old = d / "run.json"
    if old.exists():
        prev = _load_config(d)
        check_same_pair(prev, cfg, d)
        for k in SAMPLING_KEYS:
            if prev.get(k) != cfg.get(k):
                raise ValueError(f"{d} holds a run with {k}={prev.get(k)!r}, asked for {cfg.get(k)!r}: "
                                 "use another directory (or delete it) to change the sampling setup")
        cfg["gammas"] = sorted(set(prev.get("gammas", [])) | set(cfg["gammas"]))
        cfg["families"] = sorted(set(prev.get("families", [])) | set(cfg["families"]))
        names = {p["name"] for p in prev.get("prompts", [])}
        cfg["prompts"] = prev.get("prompts", []) + [p for p in cfg["prompts"] if p["name"] not in names]
    # a prompt's seed is seed + its place in the run directory's prompt list, which a resumed run
    # only appends to: the same prompt gets the same seed however many prompts an invocation names
    place = {q["name"]: i for i, q in enumerate(cfg["prompts"])}
    index = {id(p): place[p.name] for p in prompts}

    def path_of(kind, p, g=None, fam=None):
        cat, nm = _safe(p.category), f"{_safe(p.name)}.npz"
        if kind == "capture":
            return d / "traces" / cat / nm
        if kind == "sd":
            return d / "sd" / f"g{int(g)}" / cat / nm
        if kind == "control":
            return d / "controls" / f"sd-g{int(g)}" / cat / nm
        return d / "families" / fam / cat / nm

    # work list: (kind, γ or family, prompts still to do)
    cap = list(prompts if capture is None else capture)
    def for_loop(sub, name, default):
        if isinstance(sub, dict):
            return list(sub.get(name) or [])
        return list(default if sub is None else sub)

    plan = [("capture", None, cap)]
    if sd:
        plan += [("sd", int(g), list(prompts if sd_prompts is None else sd_prompts)) for g in gammas]
        ctl_sd = for_loop(control_prompts, "sd", [])
        plan += [("control", int(max(gammas)), ctl_sd)] if ctl_sd else []
    for f in families:
        plan.append(("family", f, for_loop(family_prompts, f, prompts)))
        ctls = for_loop(control_prompts, f, [])
        if ctls and LOOPS[f].control is not None:
            plan.append(("family", f + "-control", ctls))
    loaders = {"capture": CompactTrace.load, "sd": SDRun.load, "control": SDRun.load, "family": LoopRun.load}
    # a damaged file from an earlier, interrupted run: say so before anything is computed or written
    for kind, g, ps in plan:
        for p in ps:
            f = path_of(kind, p, g, g)
            if f.exists():
                loaders[kind](f)
    d.mkdir(parents=True, exist_ok=True)
    old.write_text(json.dumps(cfg, indent=1, default=str))

    todo = [(kind, g, [p for p in ps if not path_of(kind, p, g, g).exists()]) for kind, g, ps in plan]
    todo = [t for t in todo if t[2]]
    bar = task = None
    total = sum(len(ps) for _, _, ps in todo) * max_new_tokens
    if progress and todo:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        bar = Progress(TextColumn("{task.description:<44}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("tokens"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        bar.start()
        task = bar.add_task("", total=total)
    log_lines = bar is not None and not bar.console.is_terminal   # a log file: one line per finished prompt
    t_start = time.perf_counter()
    done_prompts = [0]
    n_prompts = sum(len(ps) for _, _, ps in todo)

    def tick(k=1):
        if bar:
            bar.advance(task, k)

    def saver(kind, g, ps, counted):
        def done(j, obj):
            f = path_of(kind, ps[j], g, g)
            f.parent.mkdir(parents=True, exist_ok=True)
            obj.save(f)
            tick(max_new_tokens - counted.get(j, 0))  # early stop: count the rest as done
            done_prompts[0] += 1
            if log_lines:
                t = bar.tasks[0]
                el = time.perf_counter() - t_start
                eta = el * (t.total - t.completed) / t.completed if t.completed else float("nan")
                print(f"[{time.strftime('%H:%M:%S')}] {kind} {g}: {ps[j].name} done; {done_prompts[0]}/{n_prompts} "
                      f"prompts, {int(t.completed)}/{int(t.total)} tokens, elapsed {el / 60:.1f} min, ETA "
                      f"{eta / 60:.1f} min", flush=True)
        return done

    pcache = PrefixCache()  # every prompt's prefix runs through each model once, whatever phases use it
    try:
        for kind, g, ps in todo:
            label = {"capture": "capture", "sd": f"SD γ={g}", "control": f"control SD γ={g} (broken verifier)",
                     "family": f"loop {g}"}[kind]
            if bar:
                bar.update(task, description=f"{label}: {len(ps)} prompts"[:44])
            ids = [encode(p) for p in ps]
            seeds = [seed + index[id(p)] for p in ps]
            common = dict(temperature=temperature, top_k=top_k, top_p=top_p, seeds=seeds, stop_ids=stop_ids,
                          device=device, names=[p.name for p in ps], categories=[p.category for p in ps],
                          vocab_size=vocab_size, batch=batch, prefix_cache=pcache)
            counted: dict = {}
            done = saver(kind, g, ps, counted)
            if kind == "capture":
                def on_token(j, counted=counted):
                    counted[j] = counted.get(j, 0) + 1
                    tick()
                capture_batch(target_model, draft_model, ids, max_new_tokens, slice_k=slice_k, hidden=hidden,
                              on_token=on_token, on_done=done, **common)
            elif kind in ("sd", "control"):
                rule = {} if kind == "sd" else dict(rule=BROKEN_SWAPPED_RATIO)
                speculative_decode_batch(target_model, draft_model, ids, g, max_new_tokens, on_tokens=tick,
                                         on_done=done, probe_every=probe_every, **rule, **common)
            else:
                run_loop(g, target_model, draft_model, ids, max_new_tokens, on_tokens=tick, on_done=done,
                         options=(family_options or {}).get(g.replace("-control", ""), {}), **common)
    finally:
        if bar:
            bar.stop()
    return d
