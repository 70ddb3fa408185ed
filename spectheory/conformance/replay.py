"""Rerunnable calls: every failure in a conformance report comes with one line of Python that
reproduces it — one per distinct bug (:func:`.severity.distinct`).

* :func:`rerun` calls the sampler once on explicit inputs — exact probability rows ``p`` and
  ``q`` (converted with the report's adapter options, as the checker did), the drafted tokens
  (``draft``; ``drafts`` for K drafts; ``tokens`` and ``parents`` for a tree; ``requests`` for
  a batch in the serving layout), and its random source: ``rng_state`` (the state of the run's
  generator before the failing call, a PCG64 state dict) or ``forced`` (a probe's forced value:
  ``"zero"``, ``"max"`` or a float) — with the global random sources routed as during the check.
  It returns the emitted tokens (or raises what the sampler raised). Crashes, invalid outputs,
  impossible tokens, structure failures and probe violations use it.
* :func:`replay_check` reruns one statistical check on one block from the report's seed for the
  number of runs of the look that decided it, and returns its evidence (law failures use it: the
  statistic and p-value are recomputed exactly).

The target is ``"path/to/file.py:function"`` or ``"package.module:function"`` (the report
writes it from the sampler's source file); a callable is accepted too. The output reproduces
when the sampler's randomness is routed (no *escaped* draws in the report) and it keeps no
state across calls.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
from pathlib import Path

import numpy as np


def load(target: str):
    """The callable named by ``"path.py:function"`` or ``"module:function"`` (attribute paths
    allowed: ``"mod:Class.method"``)."""
    if not isinstance(target, str) or ":" not in target:
        raise ValueError(f"target must be 'MODULE:FUNCTION' or 'path/file.py:FUNCTION', got {target!r}")
    mod_name, attr = target.rsplit(":", 1)
    if mod_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(mod_name).stem, mod_name)
        if spec is None or spec.loader is None or not os.path.exists(mod_name):
            raise ImportError(f"cannot load {mod_name}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(mod_name)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"{mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is not callable")
    return obj


def target_of(fn) -> str | None:
    """``"package.module:qualname"`` for a module-level function of a package module that
    imports by its name, else ``"file.py:qualname"`` (a path relative to the working directory
    when below it); None when the sampler cannot be named (a lambda, a local function, a
    callable object: the report then gives the inputs without a call)."""
    fn = getattr(fn, "fn", fn)  # a wrapped sampler
    qual = getattr(fn, "__qualname__", None)
    if not qual or "<" in qual:
        return None
    mod = getattr(fn, "__module__", None) or ""
    if "." in mod:
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and os.path.abspath(spec.origin) == os.path.abspath(
                inspect.getsourcefile(fn) or ""):
            return f"{mod}:{qual}"
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        return None
    if not path:
        return None
    rel = os.path.relpath(path)
    return f"{rel if not rel.startswith('..') else path}:{qual}"


def replay_rng(rng_state=None, forced=None):
    """The source a recorded call drew from: its forced uniforms, else a PCG64 generator at its
    recorded state."""
    from .forced import ForcedUniforms
    if (rng_state is None) == (forced is None):
        raise ValueError("give exactly one random source: rng_state (a PCG64 state dict) or forced")
    if forced is not None:
        return ForcedUniforms(forced)
    bg = np.random.PCG64()
    bg.state = rng_state
    return np.random.Generator(bg)


def tree_of(parents) -> tuple:
    """Branching factors of a breadth-first tree given by its parent array."""
    parents = [int(j) for j in parents]
    depth = []
    for par in parents:
        depth.append(0 if par < 0 else depth[par] + 1)
    levels = [depth.count(d) for d in range(max(depth) + 1)]
    out, prev = [], 1
    for n in levels:
        out.append(n // prev)
        prev = n
    return tuple(out)


def dense(rows):
    """Rows given as ``{"V": V, "rows": [{token: probability, ...}, ...]}`` (how a call line writes
    the rows of a large vocabulary: their non-zero entries) as a dense (n, V) array; other rows as
    they are."""
    if isinstance(rows, dict) and "V" in rows:
        out = np.zeros((len(rows["rows"]), int(rows["V"])))
        for i, row in enumerate(rows["rows"]):
            for k, v in row.items():
                out[i, int(k)] = v
        return out
    return rows


def compact(rows):
    """The inverse of :func:`dense` for rows of more than 64 tokens (exact values kept)."""
    arr = np.asarray(rows, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] <= 64:
        return rows
    return {"V": int(arr.shape[1]), "rows": [{int(k): float(r[k]) for k in np.flatnonzero(r)} for r in arr]}


def _compact_inputs(inputs: dict) -> dict:
    out = dict(inputs)
    for k in ("p", "q"):
        if k in out and out[k] is not None and not out.get("logits"):
            out[k] = compact(out[k])
    if "requests" in out:
        out["requests"] = [{**r, "p": compact(r["p"]), "q": compact(r["q"]) if len(r["q"]) else r["q"]}
                           if not out.get("logits") else r for r in out["requests"]]
    return out


def rerun(target, *, p=None, q=None, draft=None, drafts=None, tokens=None, parents=None, requests=None,
          rng_state=None, forced=None, logits: bool = False, arg_order=None, **options):
    """Call the sampler once on these inputs (see the module docstring) and return the emitted
    tokens. ``logits=True``: ``p``/``q`` are raw logits (the zero-mass probes), fed through the
    adapter as the probe did. ``options``: the report's adapter options (``adapter``, ``dtype``,
    ``batched``, ``framework``; ``offsets`` and ``bonus`` for a ragged sampler). ``requests``
    (a ragged sampler): one dict per request with its exact ``p`` (γ_b+1, V) and ``q`` (γ_b, V)
    rows, ``draft`` and, with ``bonus="given"``, its ``bonus`` token; returns each request's
    emitted tokens."""
    from .kinds import get_kind
    fn = load(target) if isinstance(target, str) else target
    rng = replay_rng(rng_state, forced)
    p, q = dense(p), dense(q)
    if requests is not None:
        requests = [{**r, "p": dense(r["p"]), "q": dense(r["q"])} for r in requests]
        name, inputs = "ragged", {"requests": requests}
    elif draft is not None:
        name, inputs = "block", {"p": p, "q": q, "draft": draft}
    elif drafts is not None:
        name, inputs = "multidraft", {"p": p, "q": q, "drafts": drafts}
        options.setdefault("K", len(drafts))
    elif tokens is not None and parents is not None:
        name, inputs = "multidraft", {"p": p, "q": q, "tokens": tokens, "parents": parents}
        options.setdefault("tree", tree_of(parents))
    else:
        raise ValueError("give draft (a block verifier), drafts (K drafts), tokens and parents (a tree) or requests "
                         "(a ragged sampler)")
    if requests is None and (p is None or q is None):
        raise ValueError("give p and q (the exact rows of the call)")
    kind = get_kind(name)(fn, **options)
    sampler = kind.sampler
    if arg_order is not None:
        sampler.arg_order = tuple(arg_order)
    with sampler.sources.active("rerun"):
        sampler.sources.current = rng
        return kind.rerun_call(sampler, {**inputs, "logits": logits}, rng)


def replay_check(target, *, check: str, instance: str, gamma: int, runs: int, seed: int = 0, alpha: float,
                 kind: str = "block", setting=None, **options) -> dict:
    """The evidence (as JSON) of ``check`` on (``instance``, ``gamma``) after ``runs`` runs from
    the report's ``seed``, graded at level ``alpha`` (the look's level the report states).
    ``kind``: the report's kind, with its options (``adapter``, ``dtype``, …; ``K``, ``tree``,
    ``rule`` for multi-draft; ``gammas``, ``offsets``, ``bonus`` for ragged; ``setting``,
    ``max_new_tokens``, ``lm`` for a generation stack, e.g. ``setting="T=0.7,top_k=2"``)."""
    from .kinds import get_kind
    fn = load(target) if isinstance(target, str) else target
    if isinstance(target, str):
        options.setdefault("name", target)
    k = get_kind(kind)(fn, **options)
    checks = {c.id: c for c in k.checks()}
    if check not in checks:
        raise ValueError(f"unknown check {check!r}; known: {sorted(checks)}")
    block = k.replay_block(instance, gamma, setting)
    runner = k.runner(k.sampler, block, k.seed_of(block, seed))
    runner.extend(runs)
    if runner.crash is not None:
        raise runner.crash
    return [e.to_json() for e in checks[check].run(runner.trace(), k.pair(block), alpha)][0]


def _lit(x) -> str:
    """A Python literal for a JSON-able value (floats by repr: exact round trip)."""
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_lit(v)}" for k, v in x.items()) + "}"
    return repr(x)


def call_line(func: str, target: str | None, **kwargs) -> str | None:
    """``spectheory.conformance.rerun('file.py:verify', p=[...], ...)`` as one line (None when
    the sampler has no importable name)."""
    if target is None:
        return None
    args = ", ".join([repr(target)] + [f"{k}={_lit(v)}" for k, v in kwargs.items() if v is not None])
    return f"spectheory.conformance.{func}({args})"


_LABEL = re.compile(r"^(\S+) γ=(\d+)")


def attach(kind, claims: list, crashes: list, blocks: list, findings: list, *, target: str | None, seed: int,
           probes: bool = True) -> None:
    """Give every crash, every traced finding (impossible tokens, crashes on an event) and every
    failing probe its ``call``, and every failing claim a ``counterexample`` (inputs, output,
    ``call``); see the module docstring."""
    opts = kind.rerun_options()
    for cr in crashes:
        if cr.get("inputs"):
            cr["call"] = call_line("rerun", target, **_compact_inputs(cr["inputs"]), **opts)
    for f in findings:
        if f.get("inputs"):
            f["call_line"] = call_line("rerun", target, **_compact_inputs(f["inputs"]), **opts)
    probe_kw = {pr.name: kind.probe_rerun(pr) for pr in kind.probes(kind.sampler)} if probes else {}
    for c in claims:
        for r in c.get("results", []):
            if (r["support"] or r["standard"]) and r["probe"] in probe_kw:
                r["call"] = call_line("rerun", target, **probe_kw[r["probe"]], **opts)
    by_block = {(b["instance"], b["gamma"]): b for b in blocks}
    for c in claims:
        if c.get("verdict") != "fails":
            continue
        failing = [e for e in c["evidence"] if e["outcome"] == "fail"]
        if not failing:
            continue
        e0 = failing[0]
        if c["id"].endswith("probes"):
            kw = probe_kw.get(e0["instance"])
            if kw is None:
                continue
            out = (e0.get("note") or "").split("Output: ", 1)[-1].split(";")[0]
            c["counterexample"] = {"probe": e0["instance"], "inputs": kw, "output": out,
                                   "call": call_line("rerun", target, **kw, **opts)}
            continue
        if (e0.get("test") or "").startswith("run of the sampler"):
            cr = next((x for x in crashes if x.get("call")), None)
            if cr is not None:
                c["counterexample"] = {"crash": cr["exception"], "inputs": cr.get("inputs"), "call": cr["call"]}
            continue
        if c["id"] == "conformance.impossible_tokens":
            f = next((x for x in findings if x["what"] == "impossible token" and x.get("call_line")), None)
            if f is not None:
                c["counterexample"] = {"instance": f["instance"], "gamma": f["gamma"], "context": f["context"],
                                       "inputs": f["inputs"], "output": f["output"], "call": f["call_line"]}
                continue  # else (a kind whose calls cannot be rerun alone): the check replayed from the seed
        block = next((b for b in blocks if e0["instance"] == b.get("label")
                      or e0["instance"].startswith(str(b.get("label")) + " ")), None)
        if block is None:
            m = _LABEL.match(e0["instance"])
            block = by_block.get((m.group(1), int(m.group(2)))) if m else None
        if block is None:
            continue
        structure = c["id"] in ("conformance.tokens_per_call", "multidraft.structure")
        ex = block.get("structure_example") if structure else None
        if ex is not None and ("p" in ex or "requests" in ex):
            inputs = {k: v for k, v in ex.items() if k not in ("output", "context")}
            c["counterexample"] = {"instance": block["instance"], "gamma": block["gamma"], "context": ex["context"],
                                   "inputs": inputs, "output": ex["output"],
                                   "call": call_line("rerun", target, **_compact_inputs(inputs), **opts)}
            continue
        at = block.get("decided_at", {}).get(c["id"])
        if at is None:
            continue
        layout = {k: v for k, v in kind.layout(block).items() if v is not None}
        c["counterexample"] = {
            "instance": block["instance"], "gamma": block["gamma"], "runs": at["runs"], "level": at["level"],
            "seed": seed, "measured": e0.get("measured"), "p_value": e0.get("p_value"), **kind.block_info_of(block),
            "call": call_line("replay_check", target, check=c["id"], instance=block["instance"], gamma=block["gamma"],
                              runs=at["runs"], seed=seed, alpha=at["level"], **layout, **opts)}
