"""Conformance report for a user's speculative sampler (schema ``spectheory.report/1``).

:func:`check_block_verifier` and :func:`check_decoding_step` run the user's code on the
built-in instances (:mod:`spectheory.instances`: Markov pairs, where a bonus token drawn from
the wrong row shows, and edge cases), grade every check of :mod:`.checks` with the statistical
method of :mod:`spectheory.judge.stats`, run the boundary probes (:mod:`.probes`, block
verifiers only), and run spectheory's broken rules (:mod:`.references`) through the same
pipeline as negative controls: a check whose relevant control does not fail is
``inconclusive`` for the subject too.

Error control: the family-wise ``alpha`` is split (Bonferroni) over the subject's Monte Carlo
tests (checks × instances × γ), so a correct sampler is called ``fails`` by noise with
probability ≤ alpha. Controls are run with the same per-test level.
"""
from __future__ import annotations

import contextlib
import platform
import time
from datetime import datetime, timezone

import numpy as np

from .. import instances as inst
from ..judge.evidence import Evidence, combine
from ..judge.stats import POWER

from ..rng import derive_seed
from .adapters import BlockVerifier
from .checks import CHECKS, first_n
from .driver import VerifierCrash, run_block_verifier, run_decoding_step
from .references import CONTROLS

SCHEMA = "spectheory.report/1"
#: Default instances: Markov pairs (β varies with the state) and the edge cases.
INSTANCES = ("markov1-V3-mix0.4", "markov1-V4-topk2", "iid-V4-strong", "iid-V3-disjoint",
             "iid-V3-equal", "iid-V1")
GAMMAS = (1, 3)
DEFAULT_N = 10_000
PROBES_ID = "conformance.probes"
#: controls relevant to some statistical check (the others are caught by the probes only)
PROBE_CONTROLS = ("accept=min(1,q/p)", "accept-u≤ratio", "unguarded-residual")
STAT_CONTROLS = tuple(c for c in CONTROLS if any(c[0] in chk.controls for chk in CHECKS))


def _check_args(n, gammas, instances, alpha, seed=0, control_n=None):
    from ..checks import check_int, check_real
    n = check_int(n, "n", min=50)
    if isinstance(gammas, str) or np.ndim(gammas) != 1:
        raise TypeError(f"gammas must be a sequence of draft lengths, e.g. (1, 3), got {gammas!r}")
    gammas = tuple(check_int(g, "gamma", min=1, max=4) for g in gammas)
    if not gammas:
        raise ValueError("gammas must name at least one draft length")
    if isinstance(instances, str):
        raise TypeError(f"instances must be a sequence of instance names, e.g. ({instances!r},), got a str")
    instances = tuple(instances)  # may be empty: probes only
    for name in instances:
        inst.get(name)  # KeyError with the known names
    check_real(alpha, "alpha", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    check_int(seed, "seed", min=0)
    if control_n is not None:
        check_int(control_n, "control_n", min=1)
    return n, gammas, instances


def _traces(runner, instances, gammas, n, seed, label, bar):
    """{(instance, γ): Trace or VerifierCrash}."""
    out = {}
    for name in instances:
        pair = inst.get(name)
        for g in gammas:
            if bar:
                bar.update(bar.job, description=f"{label}: {name} γ={g}")
            ss = derive_seed(seed, "conformance", name, str(g))
            try:
                out[(name, g)] = runner(pair, g, n, first_n(pair.V), ss,
                                        advance=(lambda k: bar.advance(bar.job, k)) if bar else None)
            except VerifierCrash as err:
                out[(name, g)] = err
                if bar:
                    bar.advance(bar.job, n)
    return out


def _evidence(check, traces, alpha, for_steps):
    ev = []
    for (name, g), tr in traces.items():
        if isinstance(tr, VerifierCrash):
            ev.append(Evidence("mc", f"{name} γ={g}", None, None, p_value=0.0, test="run of the sampler",
                               outcome="fail", note=str(tr)))
            continue
        ev.extend(check.run(tr, inst.get(name), alpha))
    return ev


class _Bar:
    def __init__(self, total):
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
        self.p = Progress(TextColumn("{task.description:<48}"), BarColumn(),
                          TextColumn("{task.completed}/{task.total} runs"), TimeElapsedColumn(), transient=True)
        self.p.start()
        self.job = self.p.add_task("conformance", total=total)

    def update(self, job, **kw):
        self.p.update(job, **kw)

    def advance(self, job, k=1):
        self.p.advance(job, k)

    def stop(self):
        self.p.stop()


def _report(subject_name, kind, settings, subject_traces, control_traces, subject_probes, control_probes,
            alpha, n_tests, started, t0, for_steps):
    claims = []
    for check in CHECKS if subject_traces else ():  # no instances: probes only
        if for_steps and not check.for_steps:
            continue
        ev = _evidence(check, subject_traces, alpha, for_steps)
        verdict = combine(ev)
        controls, notes = [], []
        for cname, desc, traces in control_traces:
            if cname not in check.controls:
                continue
            cev = _evidence(check, traces, alpha, for_steps)
            cv = combine(cev)
            controls.append({"name": cname, "description": desc, "verdict": cv, "modes": {"mc": cv},
                             "required_modes": ["mc"], "evidence": [e.to_json() for e in cev],
                             "counterexample": None})
            if cv != "fails" and verdict != "fails":
                verdict = "inconclusive"
                notes.append(f"negative control {cname!r} came out {cv}: the check cannot tell it from "
                             "a correct sampler here")
        claims.append({"id": check.id, "verdict": verdict, "statement": check.statement,
                       "paper": "Leviathan et al. 2023; Chen et al. 2023", "reference": check.reference,
                       "interpretation": "Black-box check of the sampler under test on the built-in "
                                         "instances; see docs/conformance.md.",
                       "evidence": [e.to_json() for e in ev], "counterexample": None,
                       "controls": controls, "notes": notes})
    if subject_probes is not None:
        verdict = combine(subject_probes)
        controls, notes = [], []
        for cname, desc, cev in control_probes:
            cv = combine(cev)
            controls.append({"name": cname, "description": desc, "verdict": cv, "modes": {"exact": cv},
                             "required_modes": ["exact"], "evidence": [e.to_json() for e in cev],
                             "counterexample": None})
            if cv != "fails" and verdict != "fails":
                verdict = "inconclusive"
                notes.append(f"negative control {cname!r} passed every probe")
        claims.append({"id": PROBES_ID, "verdict": verdict,
                       "statement": "At the extremes of its random source (u = 0, u = 1−ulp, exact ratio "
                                    "ties) the verifier never emits a token with p = 0, never crashes or "
                                    "returns NaN on a zero-mass residual, handles disjoint supports and a "
                                    "one-token vocabulary.",
                       "paper": "float-robustness of Leviathan et al. 2023, Alg. 1", "reference": "probes",
                       "interpretation": "One deterministic call per probe with every uniform forced; "
                                         "graded on its number of violations (claimed 0).",
                       "evidence": [e.to_json() for e in subject_probes], "counterexample": None,
                       "controls": controls, "notes": notes})
    from ..judge.format import versions as _versions
    return {"schema": SCHEMA, "claims": claims,
            "run": {"subject": subject_name, "kind": kind, **settings, "quick": False,
                    "alpha_family": alpha * n_tests, "mc_tests_in_registry": n_tests, "alpha_per_test": alpha,
                    "correction": "Bonferroni over the subject's Monte Carlo tests (checks × instances × γ)",
                    "power": POWER, "started_at": started.isoformat(timespec="seconds"),
                    "duration_s": round(time.perf_counter() - t0, 2), "versions": _versions(),
                    "platform": platform.platform()}}


@contextlib.contextmanager
def _torch_one_thread(active: bool):
    """One torch thread while the sampler runs (tiny tensors: thread hand-offs cost ~7× the
    work on a loaded 2-core machine); the caller's setting is restored afterwards."""
    if not active:
        yield
        return
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _n_tests(gammas, instances, for_steps):
    return sum(c.mc_tests for c in CHECKS if c.for_steps or not for_steps) * len(gammas) * len(instances)


def check_block_verifier(fn, *, adapter: str = "probs", dtype: str = "float64", batched: bool = False,
                         framework: str = "numpy", n: int = DEFAULT_N, gammas=GAMMAS, instances=INSTANCES,
                         seed: int = 0, alpha: float = 0.01, controls: bool = True, control_n: int | None = None,
                         probes: bool = True, progress: bool = False, name: str | None = None) -> dict:
    """Test a block verifier ``fn(p, q, draft_tokens, rng) -> emitted tokens`` for losslessness.

    fn may also be a :class:`~spectheory.conformance.adapters.BlockVerifier` (then ``adapter``,
    ``dtype``, ``batched`` and ``framework`` are taken from it). ``n`` independent runs per
    (instance, γ); ``controls``: also run the broken reference rules (at ``control_n`` runs,
    default n // 4) so every check shows it can fail; ``probes``: the forced-uniform boundary
    probes. Returns a report dict (schema ``spectheory.report/1``); print it with
    :func:`print_report`, save it with :func:`spectheory.judge.format.write_json`.
    """
    verifier = fn if isinstance(fn, BlockVerifier) else BlockVerifier(
        fn, adapter=adapter, dtype=dtype, batched=batched, framework=framework, name=name or "")
    n, gammas, instances = _check_args(n, gammas, instances, alpha, seed, control_n)
    n_tests = _n_tests(gammas, instances, False)
    a = alpha / max(1, n_tests)
    cn = control_n or max(n // 4, 1000)
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    per = len(instances) * len(gammas)
    bar = _Bar(per * (n + (cn * len(STAT_CONTROLS) if controls else 0))) if progress else None
    one_thread = _torch_one_thread(verifier.framework == "torch")
    one_thread.__enter__()
    try:
        subj = _traces(lambda pair, g, nn, N, ss, advance=None: run_block_verifier(
            verifier, pair, g, nn, N, ss, pair.name, advance), instances, gammas, n, seed, verifier.name, bar)
        ctl = []
        if controls:
            for cname, cfn, desc in STAT_CONTROLS:
                cv = BlockVerifier(cfn, name=cname)
                ctl.append((cname, desc, _traces(lambda pair, g, nn, N, ss, advance=None, cv=cv: run_block_verifier(
                    cv, pair, g, nn, N, ss, pair.name, advance), instances, gammas, cn, seed, cname, bar)))
        from .probes import run_probes
        sp = run_probes(verifier) if probes else None
    finally:
        one_thread.__exit__(None, None, None)
        if bar:
            bar.stop()
    cp = [(cname, desc, run_probes(BlockVerifier(cfn, name=cname, dtype=verifier.dtype)))
          for cname, cfn, desc in CONTROLS if cname in PROBE_CONTROLS] if (probes and controls) else []
    settings = {"adapter": verifier.adapter, "dtype": verifier.dtype, "batched": verifier.batched,
                "framework": verifier.framework, "n": n, "control_n": cn if controls else None,
                "gammas": list(gammas), "instances": list(instances), "seed": seed}
    return _report(verifier.name, "block verifier", settings, subj, ctl, sp, cp, a, n_tests, started, t0, False)


def step_from_block_verifier(fn, *, name: str = ""):
    """A decoding step built from a probability-input block verifier: drafts γ tokens from the
    draft LM (softmax of its logits), asks the target LM for the γ+1 rows, verifies. Used to run
    the reference rules (and the controls) through :func:`check_decoding_step`."""
    from .adapters import softmax_in
    from .forced import inverse_cdf
    if not callable(fn):
        raise TypeError(f"fn must be a callable block verifier fn(p, q, draft, rng), got {type(fn).__name__}")

    def make_step(target_lm, draft_lm, gamma, rng):
        def step(context):
            ctx = list(context)
            draft, q_rows = [], []
            for _ in range(gamma):
                q = softmax_in(np.asarray(draft_lm([ctx + draft])[0], dtype=np.float64), np.float64)
                q_rows.append(q)
                draft.append(inverse_cdf(q, rng.random()))
            p_rows = [softmax_in(np.asarray(target_lm([ctx + draft[:i]])[0], dtype=np.float64), np.float64)
                      for i in range(gamma + 1)]
            return fn(np.array(p_rows), np.array(q_rows), draft, rng)
        return step

    make_step.__name__ = make_step.__qualname__ = name or f"step[{getattr(fn, '__name__', 'verifier')}]"
    return make_step


def check_decoding_step(make_step, *, lm: str = "callable", dtype: str = "float32", n: int = DEFAULT_N,
                        gammas=GAMMAS, instances=INSTANCES, seed: int = 0, alpha: float = 0.01,
                        controls: bool = True, control_n: int | None = None, progress: bool = False,
                        name: str | None = None) -> dict:
    """Test decoding code that drafts by itself: ``make_step(target_lm, draft_lm, gamma, rng)``
    returns ``step(context) -> emitted tokens``; the LMs are Markov sources as fake language
    models (``lm="callable"``: ``lm(contexts) -> (B, V)`` logits; ``lm="torch"``: an
    ``nn.Module`` with ``.logits`` of shape (B, T, V)). Same checks as block verifiers except
    those that need to see the drafts; no probes."""
    if not callable(make_step):
        raise TypeError("make_step must be callable: make_step(target_lm, draft_lm, gamma, rng) -> step")
    if lm not in ("callable", "torch"):
        raise ValueError(f"lm must be 'callable' or 'torch', got {lm!r}")
    n, gammas, instances = _check_args(n, gammas, instances, alpha, seed, control_n)
    n_tests = _n_tests(gammas, instances, True)
    a = alpha / max(1, n_tests)
    cn = control_n or max(n // 4, 1000)
    label = name or getattr(make_step, "__qualname__", "decoding step")
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    per = len(instances) * len(gammas)
    bar = _Bar(per * (n + (cn * len(STAT_CONTROLS) if controls else 0))) if progress else None
    one_thread = _torch_one_thread(lm == "torch")
    one_thread.__enter__()
    try:
        subj = _traces(lambda pair, g, nn, N, ss, advance=None: run_decoding_step(
            make_step, pair, g, nn, N, ss, pair.name, lm, dtype, advance), instances, gammas, n, seed, label, bar)
        ctl = []
        if controls:
            for cname, cfn, desc in STAT_CONTROLS:
                ms = step_from_block_verifier(cfn, name=cname)
                ctl.append((cname, desc, _traces(lambda pair, g, nn, N, ss, advance=None, ms=ms: run_decoding_step(
                    ms, pair, g, nn, N, ss, pair.name, "callable", "float64", advance),
                    instances, gammas, cn, seed, cname, bar)))
    finally:
        one_thread.__exit__(None, None, None)
        if bar:
            bar.stop()
    settings = {"lm": lm, "dtype": dtype, "n": n, "control_n": cn if controls else None,
                "gammas": list(gammas), "instances": list(instances), "seed": seed}
    return _report(label, "decoding step", settings, subj, ctl, None, None, a, n_tests, started, t0, True)
