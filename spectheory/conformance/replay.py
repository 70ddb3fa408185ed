"""Rerunnable calls: every failure in a conformance report comes with one line of Python that
reproduces it.

* :func:`rerun` calls the sampler once on explicit inputs — exact probability rows ``p`` and
  ``q`` (converted with the report's adapter options, as the checker did), the drafted tokens
  (``draft``; ``drafts`` for K drafts; ``tokens`` and ``parents`` for a tree), and its random
  source: ``rng_state`` (the state of the run's generator before the failing call, a PCG64
  state dict) or ``forced`` (a probe's forced value: ``"zero"``, ``"max"`` or a float) — with
  the global random sources routed as during the check. It returns the emitted tokens (or
  raises what the sampler raised). Crashes, invalid outputs, structure failures (paths off
  the drafts or the tree) and probe violations use it.
* :func:`replay_check` reruns one statistical check on one (instance, γ) from the report's
  seed for the number of runs of the look that decided it, and returns its evidence (law
  failures use it: the statistic and p-value are recomputed exactly).

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
    fn = getattr(fn, "fn", fn)  # a BlockVerifier
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


def _verifier(fn, kind, options, K, tree):
    from .adapters import BlockVerifier
    if kind == "block":
        return BlockVerifier(fn, **options)
    from .multidraft import MultiDraftVerifier
    return MultiDraftVerifier(fn, **options, K=K, tree=tree)


def rerun(target, *, p=None, q=None, draft=None, drafts=None, tokens=None, parents=None, requests=None,
          rng_state=None, forced=None, logits: bool = False, adapter: str = "probs", dtype: str = "float64",
          batched: bool = False, framework: str = "numpy", offsets: str = "cu", bonus: str = "given",
          arg_order=None):
    """Call the sampler once on these inputs (see the module docstring) and return the emitted
    tokens. ``logits=True``: ``p``/``q`` are raw logits (the zero-mass probes), fed through the
    adapter as the probe did. ``requests`` (a ragged sampler, :mod:`.ragged`): one dict per
    request with its exact ``p`` (γ_b+1, V) and ``q`` (γ_b, V) rows, ``draft`` and, with
    ``bonus="given"``, its ``bonus`` token; returns each request's emitted tokens."""
    fn = load(target) if isinstance(target, str) else target
    if (rng_state is None) == (forced is None):
        raise ValueError("give exactly one random source: rng_state (a PCG64 state dict) or forced")
    if requests is not None:
        return _rerun_ragged(fn, requests, rng_state, forced, logits,
                             {"adapter": adapter, "dtype": dtype, "framework": framework, "offsets": offsets,
                              "bonus": bonus}, arg_order)
    if p is None or q is None:
        raise ValueError("give p and q (the exact rows of the call), or requests (a ragged sampler)")
    kind = "block" if draft is not None else "multidraft"
    tree = None
    K = 2
    if kind == "multidraft":
        if drafts is not None:
            K = len(drafts)
        elif tokens is not None and parents is not None:
            tree = _tree_of(parents)
        else:
            raise ValueError("give draft (a block verifier), drafts (K drafts) or tokens and parents (a tree)")
    options = {"adapter": adapter, "dtype": dtype, "batched": batched, "framework": framework}
    v = _verifier(fn, kind, options, K, tree)
    if arg_order is not None:
        v.arg_order = tuple(arg_order)
    rng = _replay_rng(rng_state, forced)
    conv = v.from_logits if logits else None
    P = conv(p) if conv else v.represent(p, "target")
    Q = conv(q) if conv else v.represent(q, "draft")
    with v.sources.active("rerun"):
        v.sources.current = rng
        if kind == "block":
            return v(P, Q, list(draft), rng)
        if tree is None:
            return v.call_drafts(P, Q, drafts, rng)
        return v.call_tree(P, Q, tokens, np.asarray(parents), rng)


def _replay_rng(rng_state, forced):
    """The source a recorded call drew from: its forced uniforms, else a PCG64 generator at its
    recorded state."""
    from .forced import ForcedUniforms
    if forced is not None:
        return ForcedUniforms(forced)
    bg = np.random.PCG64()
    bg.state = rng_state
    return np.random.Generator(bg)


def _rerun_ragged(fn, requests, rng_state, forced, logits, options, arg_order) -> list:
    from .ragged import RaggedSampler, Request
    v = RaggedSampler(fn, **options)
    if arg_order is not None:
        v.arg_order = tuple(arg_order)
    rng = _replay_rng(rng_state, forced)
    V = len(requests[0]["p"][0])
    reqs = [Request(np.asarray(r["p"], np.float64).reshape(-1, V), np.asarray(r["q"], np.float64).reshape(-1, V),
                    r["draft"], r.get("bonus")) for r in requests]
    conv = v.from_logits if logits else None
    p_rep, q_rep = [], []
    for r in reqs:
        P = conv(r.p) if conv else v.represent(r.p, "target")
        p_rep.append(P[:len(r.draft)] if v.bonus == "given" else P)
        q_rep.append((conv(r.q) if conv else v.represent(r.q, "draft")) if len(r.draft) else r.q)
    with v.sources.active("rerun"):
        v.sources.current = rng
        return v.call_batch(reqs, rng, np.concatenate(p_rep), np.concatenate(q_rep), V)


def _tree_of(parents) -> tuple:
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


def replay_check(target, *, check: str, instance: str, gamma: int, runs: int, seed: int = 0, alpha: float,
                 kind: str = "block", adapter: str = "probs", dtype: str = "float64", batched: bool = False,
                 framework: str = "numpy", K: int = 2, tree=None, rule: str | None = None, setting=None,
                 max_new_tokens: int = 3, lm: str = "hf", gammas=None, offsets: str = "cu",
                 bonus: str = "given") -> dict:
    """The evidence (as JSON) of ``check`` on (``instance``, ``gamma``) after ``runs`` runs from
    the report's ``seed``, graded at level ``alpha`` (the look's level the report states).
    ``kind="assisted"``: a generation stack (:mod:`.assisted`) at the processor ``setting``
    (e.g. ``"T=0.7,top_k=2"``) with ``max_new_tokens`` (and ``lm``, ``dtype`` of its models)."""
    from .. import instances as inst
    from ..rng import derive_seed
    from .checks import CHECKS, first_n
    fn = load(target) if isinstance(target, str) else target
    options = {"adapter": adapter, "dtype": dtype, "batched": batched, "framework": framework}
    pair = inst.get(instance)
    if kind == "assisted":
        from .assisted import replay_runner
        runner, pair, found = replay_runner(fn, instance=instance, setting=setting or "T=1", gamma=gamma,
                                            max_new_tokens=max_new_tokens, seed=seed, lm=lm,
                                            dtype=dtype)
        checks = {c.id: c for c in found}
        if check not in checks:
            raise ValueError(f"unknown check {check!r}; known: {sorted(checks)}")
        runner.extend(runs)
        if runner.crash is not None:
            raise runner.crash
        return [e.to_json() for e in checks[check].run(runner.trace(), pair, alpha)][0]
    if kind == "block":
        from .driver import BlockRunner
        v = _verifier(fn, "block", options, K, None)
        checks = {c.id: c for c in CHECKS}
        runner = BlockRunner(v, pair, gamma, first_n(pair.V), derive_seed(seed, "conformance", instance, str(gamma)),
                             instance)
    elif kind == "multidraft":
        from .multidraft import MultiRunner, _rule_checks, lossless_checks
        tree = tuple(tree) if tree else None
        v = _verifier(fn, "multidraft", options, K, tree)
        checks = {c.id: c for c in lossless_checks(tree) + (_rule_checks(rule, K, tree) if rule else ())}
        runner = MultiRunner(v, pair, gamma, first_n(pair.V),
                             derive_seed(seed, "conformance-multidraft", instance, str(gamma)), instance)
    elif kind == "ragged":
        from .ragged import RaggedEngine, RaggedSampler, LaneView, engine_seed, ragged_checks
        if gammas is None:
            raise ValueError("a ragged sampler's replay needs the report's gammas (the draft lengths of every call)")
        v = RaggedSampler(fn, adapter=adapter, dtype=dtype, framework=framework, offsets=offsets, bonus=bonus)
        checks = {c.id: c for c in ragged_checks()}
        runner = LaneView(RaggedEngine(v, pair, tuple(gammas), first_n(pair.V), engine_seed(seed, instance), instance),
                          gamma)
    else:
        raise ValueError(f"kind must be 'block', 'multidraft', 'assisted' or 'ragged', got {kind!r}")
    if check not in checks:
        raise ValueError(f"unknown check {check!r}; known: {sorted(checks)}")
    runner.extend(runs)
    if runner.crash is not None:
        raise runner.crash
    return [e.to_json() for e in checks[check].run(runner.trace(), pair, alpha)][0]


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


_DEFAULTS = {"adapter": "probs", "dtype": "float64", "batched": False, "framework": "numpy", "offsets": "cu",
             "bonus": "given"}
_LABEL = re.compile(r"^(\S+) γ=(\d+)")


def _options(options: dict) -> dict:
    return {k: v for k, v in options.items() if k in _DEFAULTS and v != _DEFAULTS[k]}


def attach(report_claims: list, crashes: list, blocks: list, *, target: str | None, options: dict, seed: int,
           probes: dict | None = None, kind: str = "block", layout: dict | None = None) -> None:
    """Give every failing claim a ``counterexample`` (inputs, output, ``call``) and every crash
    a ``call`` (see the module docstring). ``probes``: {probe name: rerun keyword arguments};
    ``layout``: for multi-draft verifiers, {"K", "tree", "rule"}."""
    opts = _options(options)
    by_block = {(b["instance"], b["gamma"]): b for b in blocks}
    for cr in crashes:
        if cr.get("inputs"):
            cr["call"] = call_line("rerun", target, **cr["inputs"], **opts)
    for c in report_claims:
        if c.get("verdict") != "fails":
            continue
        failing = [e for e in c["evidence"] if e["outcome"] == "fail"]
        if not failing:
            continue
        e0 = failing[0]
        if c["id"].endswith("probes"):
            kw = (probes or {}).get(e0["instance"])
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
                                   "call": call_line("rerun", target, **inputs, **opts)}
            continue
        at = block.get("decided_at", {}).get(c["id"])
        if at is None:
            continue
        extra = {"kind": kind, **(layout or {})} if kind != "block" else {}
        c["counterexample"] = {
            "instance": block["instance"], "gamma": block["gamma"], "runs": at["runs"], "level": at["level"],
            "seed": seed, "measured": e0.get("measured"), "p_value": e0.get("p_value"),
            "call": call_line("replay_check", target, check=c["id"], instance=block["instance"], gamma=block["gamma"],
                              runs=at["runs"], seed=seed, alpha=at["level"], **extra, **opts)}
