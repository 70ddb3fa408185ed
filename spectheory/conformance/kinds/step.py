"""The decoding-step kind: code that drafts by itself. ``make_step(target_lm, draft_lm, gamma, rng)``
returns ``step(context) -> emitted tokens``; the LMs are Markov sources dressed as language models
(:mod:`..fake_lm`: ``lm="callable"``, ``lm(contexts) -> (B, V)`` logits; ``lm="torch"``, an
``nn.Module`` with ``.logits`` of shape (B, T, V)). The checks that need no drafts (the drafts
are the code's own), no probes (its random source is reached only through the routed globals),
the block kind's broken rules as controls (:func:`step_from_block_verifier`).
"""
from __future__ import annotations

import numpy as np

from ..adapters import tokens_of
from ..checks import CHECKS, first_n
from ..kind import Control, Kind
from ..runs import Runs, crash_from
from ..trial import SANITY_CALLS, SANITY_TOKEN, SANITY_V, check_arity, torch_available


class StepSampler:
    """A user's ``make_step`` with the fake LMs it gets (``lm``, ``dtype``) and its random sources."""

    def __init__(self, make_step, *, lm: str = "callable", dtype: str = "float32", name: str = ""):
        from ..sources import RandomSources
        if not callable(make_step):
            raise TypeError("make_step must be callable: make_step(target_lm, draft_lm, gamma, rng) -> step")
        if lm not in ("callable", "torch", "hf"):
            raise ValueError(f"lm must be 'callable' or 'torch', got {lm!r}")
        self.fn, self.lm, self.dtype = make_step, lm, dtype
        self.name = name or getattr(make_step, "__qualname__", "decoding step")
        self.sources = RandomSources(make_step)
        self.arg_order = None

    @property
    def framework(self) -> str:
        return "torch" if self.lm in ("torch", "hf") else "numpy"

    def options(self) -> dict:
        return {"lm": self.lm, "dtype": self.dtype}

    def with_options(self, **options):
        out = type(self)(self.fn, **{**self.options(), **options}, name=self.name)
        out.sources = self.sources
        return out

    def models(self, pair):
        from ..fake_lm import fake_lm
        return fake_lm(pair.target, lm=self.lm, dtype=self.dtype), fake_lm(pair.draft, lm=self.lm, dtype=self.dtype)


class StepRuns(Runs):
    """Runs of a decoding step: each call is ``step(context)`` on the run's context (a list of
    token ids, starting as ``[0] * max(order, 1)``, i.e. state 0). ``models``: the (target,
    draft) LMs handed to ``make_step`` when they are not the fake LMs of ``pair`` (end to end:
    the raw sources, ``pair`` the processed law the checks compare with)."""

    with_draft = False

    def __init__(self, sampler, pair, gamma, n_tokens, seed, name="", sources=None, models=None):
        self._models = models
        super().__init__(sampler, pair, gamma, n_tokens, seed, name, sources)

    def _kwargs(self) -> dict:
        return {"sources": self.sources, "models": self._models}

    def streams(self, seed) -> tuple:
        from ..runs import spawn
        step_ss, completion_ss = spawn(seed, 2)  # a step drafts by itself: no drafting stream of ours
        return step_ss, step_ss, completion_ss

    def setup(self):
        self.prefix = [0] * max(self.pair.target.order, 1)
        target_lm, draft_lm = self._models if self._models is not None else self.sampler.models(self.pair)
        self.sources.current = self.rng
        try:
            with self.sources.active(self.label()):
                self.step = self.sampler.fn(target_lm, draft_lm, self.gamma, self.rng)
        except Exception as err:  # noqa: BLE001
            self.crash = crash_from(err, self.label(), "make_step(target_lm, draft_lm, gamma, rng)")

    def start_context(self) -> list:
        return list(self.prefix)

    def prepare(self, s, context):
        return list(context)

    def invoke(self, prepared, rng):
        return self.step(list(prepared))

    def read(self, raw):
        return tokens_of(raw, batched=True)

    def inputs(self, prepared, rng_state) -> dict:
        return {"context": list(prepared), "rng_state": rng_state}

    def context_of(self, prepared, s) -> str:
        return f"context {prepared}"

    def trigger(self, prepared, still_fails, extremes_drawn):
        return None  # a step keeps its own state: a call cannot be replayed alone

    def inputs_of_call(self, call):
        return None


def step_from_block_verifier(fn, *, name: str = ""):
    """A decoding step built from a probability-input block verifier: drafts γ tokens from the
    draft LM (softmax of its logits), asks the target LM for the γ+1 rows, verifies. Used to run
    the reference rules (and the controls) through :func:`check_decoding_step`."""
    from ..adapters import softmax_in
    from ..forced import inverse_cdf
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


class StepKind(Kind):
    name, title = "step", "decoding step"
    INSTANCES = ("markov1-V3-mix0.4", "markov1-V4-topk2", "iid-V4-strong", "iid-V3-disjoint", "iid-V3-equal",
                 "iid-V1")
    interpretation = "Black-box check of the decoding step on fake Markov LMs; see docs/conformance.md."
    OPTION_DEFAULTS = {"lm": "callable", "dtype": "float32"}
    what, call_text = "decoding step", "a decoding step's step(context)"

    def wrap(self, fn, *, name="", lm="callable", dtype="float32"):
        return fn if isinstance(fn, StepSampler) else StepSampler(fn, lm=lm, dtype=dtype, name=name)

    def checks(self):
        return tuple(c for c in CHECKS if c.for_steps)

    def blocks(self, instances, gammas):
        from .block import block_plan
        return block_plan(self.checks(), instances, gammas)

    def runner(self, sampler, block, seed):
        pair = self.pair(block)
        return StepRuns(sampler, pair, block.gamma, first_n(pair.V), seed, block.instance)

    def controls(self):
        from ..references import CONTROLS
        from .block import floor_shows
        return [Control(c, f, d, applies=(lambda b: floor_shows(b.instance)) if c == "residual-clamped-1e-5" else None)
                for c, f, d in CONTROLS if any(c in k.controls for k in self.checks())]

    def control_sampler(self, control, for_probes=False):
        return StepSampler(step_from_block_verifier(control.fn, name=control.name), lm="callable", dtype="float64",
                           name=control.name)

    @property
    def uses_torch(self) -> bool:
        return self.sampler.lm in ("torch", "hf")

    # --- the trial ---------------------------------------------------------------------------------
    def trial(self, gammas):
        from ..trial import trial
        return trial(self, min(gammas))

    def trial_arity(self):
        check_arity(self.sampler.fn, 4, "make_step(target_lm, draft_lm, gamma, rng)",
                    "a decoding step is given as make_step(target_lm, draft_lm, gamma, rng) returning step(context) -> "
                    "emitted tokens; a function fn(p, q, draft_tokens, rng) is a block verifier (--kind block)")

    def _step(self, sampler, pair, gamma, rng):
        from ..adapters import VerifierOutputError
        tl, dl = sampler.models(pair)
        step = sampler.fn(tl, dl, gamma, rng)
        if not callable(step):
            raise VerifierOutputError(f"make_step returned {type(step).__name__}, not a function step(context) -> "
                                      "tokens")
        return step

    def trial_call(self, sampler, pair, drng, rng, gamma):
        step = self._step(sampler, pair, gamma, rng)
        return [tokens_of(step([0] * max(pair.target.order, 1)), batched=True)], [gamma]

    def trial_point_mass(self, sampler, rng, gamma):
        from ...pairs import pair_from_tables
        point = np.zeros(SANITY_V)
        point[SANITY_TOKEN] = 1.0
        pair = pair_from_tables(point, np.full(SANITY_V, 1.0 / SANITY_V))
        out = tokens_of(self._step(sampler, pair, gamma, rng)([0]), batched=True)
        return [out if all(t == SANITY_TOKEN for t in out) else (-1,) + tuple(out)], [SANITY_TOKEN]

    def trial_point_mass_message(self, wrong) -> str:
        return (f"with a target that is a point mass at token {SANITY_TOKEN}, {len(wrong)} of {SANITY_CALLS} steps "
                f"emitted other tokens (e.g. {list(wrong[0][0][1:])})")

    def trial_first_tokens(self, sampler, pair, drng, rng):
        out = tokens_of(self._step(sampler, pair, 1, rng)([0] * max(pair.target.order, 1)), batched=True)
        return [out[0] if out else None]

    def trial_describe(self, sampler, gamma, V) -> str:
        return (f"with --lm {sampler.lm} the step gets a list of token ids and the fake LMs are "
                + ("callables lm(contexts) -> (B, V) logits" if sampler.lm == "callable" else
                   "torch modules: lm(input_ids).logits of shape (B, T, V)"))

    def option_choices(self):
        return {"lm": ("callable", "torch") if torch_available() else ("callable",)}

    def arg_orders(self):
        return None


def check_decoding_step(make_step, *, lm: str = "callable", dtype: str = "float32", n: int = StepKind.DEFAULT_N,
                        gammas=StepKind.GAMMAS, instances=StepKind.INSTANCES, seed: int = 0, alpha: float = 0.01,
                        controls: bool = True, control_n: int | None = None, progress: bool = False,
                        name: str | None = None, trial: bool = True) -> dict:
    """Test decoding code that drafts by itself: ``make_step(target_lm, draft_lm, gamma, rng)``
    returns ``step(context) -> emitted tokens``; the LMs are Markov sources as fake language
    models (``lm="callable"``: ``lm(contexts) -> (B, V)`` logits; ``lm="torch"``: an
    ``nn.Module`` with ``.logits`` of shape (B, T, V)). Same checks as block verifiers except
    those that need to see the drafts; no probes; a trial call first (usage errors)."""
    from ..driver import run
    if not callable(make_step):
        raise TypeError("make_step must be callable: make_step(target_lm, draft_lm, gamma, rng) -> step")
    if lm not in ("callable", "torch"):
        raise ValueError(f"lm must be 'callable' or 'torch', got {lm!r}")
    kind = StepKind(make_step, name=name, lm=lm, dtype=dtype)
    return run(kind, n=n, gammas=gammas, instances=instances, seed=seed, alpha=alpha, controls=controls,
               control_n=control_n, probes=False, progress=progress, trial=trial)
