"""Assertions for your own test suite: is my speculative sampler lossless? standard?

::

    from spectheory.testing import assert_lossless

    def test_my_sampler_is_lossless():
        assert_lossless(my_verify, kind="block", budget_s=60)

:func:`assert_lossless` runs :mod:`spectheory.conformance` on the sampler (seeded, so the same
code gives the same verdict on every machine) and raises ``AssertionError`` unless the lossless
verdict holds, with the one-paragraph summary (the kind of failure: law, boundary or crash, see
:mod:`spectheory.conformance.severity`) and a rerunnable call for each failure.
:func:`assert_standard` also requires standard speculative sampling (Leviathan et al. 2023,
Alg. 1) or, for multi-draft and tree verifiers, the ``rule=`` named. A usage error (a sampler
that cannot be run as configured) raises :class:`~spectheory.conformance.ConformanceUsageError`,
as from the check functions.

``budget_s`` is the time you allow; it never changes what is run (a verdict must not depend on
the machine's speed): a run over budget warns (:class:`ConformanceBudgetWarning`) with the
sampler's own time and the checker's, and the smaller ``n`` that would fit. Use ``instances``,
``gammas`` and ``n`` to choose the work; the report states the power of every test at the ``n``
used.
"""
from __future__ import annotations

import time
import warnings

KINDS = ("block", "multidraft", "step", "assisted", "ragged")


class ConformanceBudgetWarning(UserWarning):
    """A conformance run took longer than the ``budget_s`` its assertion allowed."""


def _check(fn, kind: str, seed: int, options: dict) -> dict:
    from . import conformance as sc
    from .conformance.replay import load
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    target = fn if isinstance(fn, str) else None
    if isinstance(fn, str):
        fn = load(fn)
    if not callable(fn):
        raise TypeError(f"fn must be the sampler (a callable) or 'file.py:function', got {type(fn).__name__}")
    options = dict(options)
    if target is not None:
        options.setdefault("name", target)
    run = {"block": sc.check_block_verifier, "multidraft": sc.check_multidraft_verifier,
           "step": sc.check_decoding_step, "assisted": sc.check_assisted_generation,
           "ragged": sc.check_ragged_sampler}[kind]
    return run(fn, seed=seed, **options)


def _calls(report: dict, group: str) -> list[str]:
    """One rerunnable call per distinct bug of the lossless verdict, then the failing checks'
    calls of ``group`` not said yet."""
    out = []
    if group == "lossless":
        out = [f["call"] for f in report["verdicts"]["lossless"].get("failures") or [] if f.get("call")]
        out += [c["call"] for c in report.get("crashes", []) if c.get("call") and c["call"] not in out]
    for c in report["claims"]:
        cx = c.get("counterexample") or {}
        if c["group"] == group and c["verdict"] == "fails" and cx.get("call") and cx["call"] not in out:
            out.append(cx["call"])
    return list(dict.fromkeys(out))


def failure_message(report: dict, groups=("lossless",)) -> str:
    """The paragraph an assertion raises with: subject, the verdicts asked for with their
    summaries (and kind), the warnings, then one rerunnable call per failure."""
    from .conformance.report import tag
    run = report["run"]
    lines = [f"{run['subject']} ({run['kind']}; seed {run['seed']}, ≤ {run['n']} runs per instance×γ, "
             f"{run['duration_s']} s):"]
    for g in groups:
        v = report["verdicts"][g]
        head = "LOSSLESS" if g == "lossless" else v["title"]
        lines.append(f"{head}: {v['verdict']}{tag(v)} — {v['summary']}.")
    lines += [f"warning: {w}" for w in report.get("warnings", [])]
    calls = [c for g in groups for c in _calls(report, g)]
    if calls:
        lines.append("rerun (import spectheory.conformance first):")
        lines += [f"  {c}" for c in calls[:8]] + ([f"  … and {len(calls) - 8} more in the report"] if len(calls) > 8
                                                  else [])
    return "\n".join(lines)


def _budget(report: dict, budget_s, t0: float) -> None:
    if budget_s is None:
        return
    wall = time.perf_counter() - t0
    if wall <= budget_s:
        return
    run = report["run"]
    own = run.get("sampler_s")
    used = max(1, sum(b.get("runs", 0) for b in run.get("blocks", [])))
    fit = max(50, int(run["n"] * budget_s / wall))
    warnings.warn(ConformanceBudgetWarning(
        f"the conformance run of {run['subject']} took {wall:.1f} s, over its budget of {budget_s} s"
        + (f" (the sampler's own calls {own:.1f} s, the checker {wall - own:.1f} s)" if own is not None else "")
        + f"; {used} runs. The verdict does not depend on it; n={fit} (or fewer instances) would fit, at the "
          "power the report states for that n"), stacklevel=3)


def assert_lossless(fn, *, kind: str = "block", budget_s: float | None = None, seed: int = 0, **options) -> dict:
    """Raise ``AssertionError`` unless the sampler ``fn`` (a callable or ``"file.py:function"``)
    is shown lossless; return the report. ``kind``: ``"block"`` (``fn(p, q, draft_tokens,
    rng)``), ``"multidraft"`` (``K=``/``tree=``), ``"step"`` (``make_step``), ``"assisted"``
    (a generation stack, :mod:`spectheory.conformance.kinds.assisted`) or ``"ragged"`` (a batched sampler in
    the serving layout, ``offsets=``/``bonus=``); ``options``: those
    of the check function (``adapter``, ``dtype``, ``batched``, ``framework``, ``n``, ``gammas``,
    ``instances``, ``alpha``, ``controls``, ...). Deterministic for a given ``seed``."""
    t0 = time.perf_counter()
    report = _check(fn, kind, seed, options)
    _budget(report, budget_s, t0)
    if report["verdicts"]["lossless"]["verdict"] != "holds":
        raise AssertionError(failure_message(report, ("lossless",)))
    return report


def assert_standard(fn, *, kind: str = "block", budget_s: float | None = None, seed: int = 0, **options) -> dict:
    """As :func:`assert_lossless`, and also standard speculative sampling (Leviathan et al.
    2023, Alg. 1) — or, with ``kind="multidraft"``, the ``rule=`` given."""
    t0 = time.perf_counter()
    report = _check(fn, kind, seed, options)
    _budget(report, budget_s, t0)
    v = report["verdicts"]
    if v["lossless"]["verdict"] != "holds" or v["standard"]["verdict"] != "holds":
        raise AssertionError(failure_message(report, ("lossless", "standard")))
    return report
