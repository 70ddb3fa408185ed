"""End-to-end conformance of a generation stack: assisted (speculative) generation with sampling
processors, e.g. Hugging Face ``transformers``' ``generate(assistant_model=..., do_sample=True)``.

The stack under test is a function

    ``generate(target, draft, prompt, *, max_new_tokens, num_assistant_tokens, temperature,
    top_k, top_p) -> tokens``

called with two Markov sources dressed as language models (:func:`.fake_lm.fake_lm`; by default
``lm="hf"``: ``transformers`` models with ``generate`` and a real cache, :mod:`.hf_models`) over
one shared vocabulary. It returns the ``max_new_tokens`` = L new token ids (or the prompt
followed by them). Whatever it does inside — drafting, verification, logits processors, cache
rollback after a rejection — a lossless stack emits L tokens with the law of the **target alone
sampling with the same processors**: position by position, a draw from the processed row
``process(p(·|s))`` in the state s reached. That law is exact and small (V^L sequences), so the
check is a goodness-of-fit test against it:

* :func:`process_row` — the processors in ``transformers``' order (``GenerationMixin.
  _get_logits_processor``: temperature, then top-k, then top-p), written here in NumPy from their
  definitions, independently of ``transformers``: temperature p^{1/T} (normalised), top-k keeps
  the tokens whose probability is at least the k-th largest (ties at the k-th kept), top-p removes
  the tokens whose cumulative probability, summed in ascending order, is ≤ 1 − top_p (the most
  likely token always kept). A row whose result would depend on rounding or on the order of tied
  values raises :class:`AmbiguousProcessing` (the instance is not used there);
* :func:`processed_source` — the target with every row processed: the reference law is its
  :meth:`~spectheory.markov.MarkovSource.sequence_probs` from the prompt's state;
* the checks are the lossless checks of every other kind (:mod:`..checks`): no token of processed
  probability 0 (a top-k or top-p cut that the stack does not apply emits one: a proof), ``first_tokens`` (the
  joint law of the L tokens, chi-square on V^L cells merged to ≥ 5 expected) and
  ``token_law_by_state`` (the law of each position given the state it is drawn in: per-position
  laws, Anderson–Goodman stratified chi-square), run in the group-sequential design of
  :mod:`.sequential` at the Bonferroni level of the report (every test over every block
  (instance, setting, γ));
* one *run* is one call of the stack from the prompt ``[0] * max(order, 1)`` (state 0), in the
  runner of decoding steps (:class:`.step.StepRuns`): the checker's random source is routed
  into torch's, NumPy's and Python's global generators for the call (:mod:`.sources`), so a run
  is reproducible from ``seed`` and a draw that escapes is reported;
* negative controls (:data:`CONTROLS`) are generation stacks with the bugs that live where draft
  and target are wired together, run through the same runner and checks on every block where
  their bug is active: ``target-unprocessed`` (the processors applied to the draft, the target
  verified unprocessed), ``cache-not-cropped`` (the target's cache keeps the rejected drafted
  tokens; order ≥ 2 sources) and ``residual=norm(p)`` (the correction drawn from p instead of the
  residual). Every check needs, on every block, a control that fails it, else it is
  ``inconclusive`` (a control is listed ``fails`` when it failed on some block; the blocks it
  failed on are in the JSON).

The check is :func:`check_assisted_generation` (the kind :class:`AssistedKind`). Verdicts and severity as for every kind (:mod:`.severity`): ``lossless`` holds, or fails
[``law``] with its effect size, or [``crash``] where the stack raised or returned something that is
not L tokens. ``standard`` is not checkable here (the drafts and blocks are not seen).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ... import instances as inst
from ...markov import MarkovPair, MarkovSource
from ...rng import derive_seed
from ..adapters import VerifierOutputError, tokens_of
from ..checks import CHECKS, IMPOSSIBLE_ID, Check
from ..kind import Block, Control, Kind
from .step import StepRuns, StepSampler

#: Default processor settings: no processing, temperature with top-k, nucleus (top-p).
SETTINGS = ("T=1", "T=0.7,top_k=2", "top_p=0.9")
GAMMAS = (1, 3)
#: an order-2 target (a cache that is not rolled back shows) with an order-1 n-gram draft, V = 3:
#: rejections are frequent enough that every control's bug shows at a few hundred runs
INSTANCES = ("markov2-V3-ngram1",)
DEFAULT_N = 6000
#: L: 27 joint cells for V = 3
DEFAULT_NEW_TOKENS = 3
STACK_SIGNATURE = ("generate(target, draft, prompt, *, max_new_tokens, num_assistant_tokens, temperature, top_k, "
                   "top_p) -> the max_new_tokens new token ids (or the prompt followed by them)")
#: rows closer than this to a processor's threshold (or ties straddling it) are ambiguous
AMBIGUITY = 1e-6


class AmbiguousProcessing(ValueError):
    """A processor's result on a row depends on rounding or on the order of tied values."""


@dataclasses.dataclass(frozen=True)
class Processing:
    """Sampling processors as ``generate`` takes them: temperature, top_k (None: off), top_p."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float = 1.0

    def __post_init__(self):
        from ...checks import check_int, check_real
        check_real(self.temperature, "temperature", lo=0.0, lo_open=True)
        if self.top_k is not None:
            check_int(self.top_k, "top_k", min=1)
        check_real(self.top_p, "top_p", lo=0.0, hi=1.0, lo_open=True)

    @property
    def label(self) -> str:
        parts = [f"T={self.temperature:g}"] if self.temperature != 1.0 or (self.top_k is None and self.top_p == 1.0) \
            else []
        if self.top_k is not None:
            parts.append(f"top_k={self.top_k}")
        if self.top_p < 1.0:
            parts.append(f"top_p={self.top_p:g}")
        return ",".join(parts)

    def kwargs(self) -> dict:
        return {"temperature": float(self.temperature), "top_k": self.top_k, "top_p": float(self.top_p)}


def parse_setting(text) -> Processing:
    """``"T=0.7,top_k=2"`` (keys ``T``/``temperature``, ``top_k``, ``top_p``) or a
    :class:`Processing` or a dict of its fields."""
    if isinstance(text, Processing):
        return text
    if isinstance(text, dict):
        return Processing(**text)
    if not isinstance(text, str):
        raise TypeError(f"a setting must be a string like 'T=0.7,top_k=2', got {type(text).__name__}")
    kw: dict = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = {"T": "temperature", "temperature": "temperature", "top_k": "top_k", "top_p": "top_p"}.get(key.strip())
        if not sep or key is None:
            raise ValueError(f"cannot read setting {text!r}: expected items T=…, top_k=…, top_p=… separated by commas")
        try:
            kw[key] = int(value) if key == "top_k" else float(value)
        except ValueError:
            raise ValueError(f"cannot read {item!r} in setting {text!r}: not a number") from None
    return Processing(**kw)


def process_row(p, proc: Processing) -> np.ndarray:
    """The processed next-token law of one row of probabilities ``p`` (module docstring)."""
    p = np.asarray(p, dtype=np.float64)
    out = p.copy()
    if proc.temperature != 1.0:
        with np.errstate(divide="ignore"):
            z = np.log(out) / proc.temperature
        z -= z.max()
        out = np.exp(z)
        out /= out.sum()
    if proc.top_k is not None and proc.top_k < out.size:
        kth = np.sort(out)[::-1][proc.top_k - 1]
        near = (np.abs(out - kth) <= AMBIGUITY * max(kth, 1e-300)) & (out != kth)
        if kth > 0 and near.any():
            raise AmbiguousProcessing(f"top_k={proc.top_k}: row {np.round(p, 6).tolist()} has values within "
                                      f"{AMBIGUITY:g} of its k-th largest, {kth!r}")
        out = np.where(out >= kth, out, 0.0)
        out /= out.sum()
    if proc.top_p < 1.0:
        order = np.argsort(out, kind="stable")
        cum = np.cumsum(out[order])
        threshold = 1.0 - proc.top_p
        remove = cum <= threshold
        remove[-1] = False
        if np.any(np.abs(cum[:-1] - threshold) <= AMBIGUITY):
            raise AmbiguousProcessing(f"top_p={proc.top_p:g}: row {np.round(p, 6).tolist()} has a cumulative "
                                      f"probability within {AMBIGUITY:g} of 1 − top_p")
        vals = out[order]
        for i in range(len(vals) - 1):  # tied values on both sides of the cut: the sort order decides
            if remove[i] != remove[i + 1] and abs(vals[i] - vals[i + 1]) <= AMBIGUITY * max(vals[i + 1], 1e-300):
                raise AmbiguousProcessing(f"top_p={proc.top_p:g}: tied values straddle the cut in row "
                                          f"{np.round(p, 6).tolist()}")
        kept = np.ones_like(out, dtype=bool)
        kept[order[remove]] = False
        out = np.where(kept, out, 0.0)
        out /= out.sum()
    return out


def processed_source(source: MarkovSource, proc) -> MarkovSource:
    """``source`` with every row processed (:func:`process_row`): the law a lossless stack
    samples from, and the law of the target alone sampling with the processors."""
    if not isinstance(source, MarkovSource):
        raise TypeError(f"source must be a MarkovSource, got {type(source).__name__}")
    proc = parse_setting(proc)
    rows = np.array([process_row(r, proc) for r in source.rows])
    return MarkovSource(rows, source.order, source.row_of_state)


def prompt_of(source: MarkovSource) -> list[int]:
    """The prompt every run starts from: ``[0] * max(order, 1)`` (state 0)."""
    return [0] * max(source.order, 1)


def reference_law(source: MarkovSource, proc, length: int) -> np.ndarray:
    """Exact law of the first ``length`` tokens generated from :func:`prompt_of` by the target
    alone with the processors: (V**length,) probabilities, first token most significant."""
    ps = processed_source(source, proc)
    return ps.sequence_probs(length, ps.state_of_context(prompt_of(source)))


# ----------------------------------------------------------------- a reference generation stack

def _probs(logits) -> np.ndarray:
    z = np.asarray(logits.detach().cpu().double().numpy() if hasattr(logits, "detach") else logits, np.float64)
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def assisted_reference(target, draft, prompt, *, max_new_tokens: int, num_assistant_tokens: int,
                       temperature: float = 1.0, top_k=None, top_p: float = 1.0, verifier=None,
                       process_target: bool = True, crop_cache: bool = True):
    """Speculative generation written plainly over ``transformers`` models with a cache (the
    fake LMs of ``lm="hf"``): draft γ = ``num_assistant_tokens`` tokens from the processed draft
    (fewer at the end, so that the block never passes L), compute the target's γ + 1 rows in one
    forward pass, process them, verify with a block verifier (default
    :func:`.references.reference_verifier`, Leviathan et al. 2023, Alg. 1), then crop both
    caches back to the accepted prefix. The random source is ``np.random.default_rng()``,
    which the checker routes. The switches insert the controls' bugs: ``process_target=False``
    verifies against the unprocessed target, ``crop_cache=False`` leaves the rejected drafted
    tokens in the target's cache."""
    import torch
    from transformers import DynamicCache
    from ..forced import inverse_cdf
    from ..references import reference_verifier
    verifier = verifier or reference_verifier
    proc = Processing(temperature, top_k, top_p)
    rng = np.random.default_rng()
    L, gamma = int(max_new_tokens), int(num_assistant_tokens)
    ids = [int(t) for t in prompt]
    out: list[int] = []
    caches = {"t": DynamicCache(), "d": DynamicCache()}
    pos = {"t": 0, "d": 0}  # tokens each model has been fed (its logical cache length)

    def feed(model, key, seq):
        new = seq[pos[key]:]
        logits = model(input_ids=torch.tensor([new]), cache=caches[key], use_cache=True).logits[0]
        pos[key] = len(seq)
        return logits

    while len(out) < L:
        g = min(gamma, L - len(out) - 1)
        drafted, q_rows = [], []
        for _ in range(g):
            q = process_row(_probs(feed(draft, "d", ids + drafted)[-1]), proc)
            q_rows.append(q)
            drafted.append(inverse_cdf(q, rng.random()))
        logits = feed(target, "t", ids + drafted)[-(g + 1):]
        p_rows = [_probs(row) for row in logits]
        if process_target:
            p_rows = [process_row(r, proc) for r in p_rows]
        V = len(p_rows[0])
        emitted = [int(t) for t in verifier(np.array(p_rows), np.array(q_rows).reshape(g, V), drafted, rng)]
        keep = len(ids) + len(emitted) - 1  # the accepted prefix is cached; the last token is not yet
        for key in ("t", "d"):
            extra = pos[key] - keep
            if extra > 0 and (crop_cache or key == "d"):
                caches[key].crop(-extra)
            pos[key] = min(pos[key], keep)
        ids += emitted
        out += emitted
    return out[:L]


def target_unprocessed_stack(target, draft, prompt, **kw):
    """Control: the processors wired into the drafter only; the target's rows are verified
    unprocessed (lossy wherever the processors change the target's rows)."""
    return assisted_reference(target, draft, prompt, **kw, process_target=False)


def cache_not_cropped_stack(target, draft, prompt, **kw):
    """Control: the target's cache is not rolled back after a rejection, so the rejected drafted
    tokens stay in its history (lossy on sources of order ≥ 2)."""
    return assisted_reference(target, draft, prompt, **kw, crop_cache=False)


def residual_p_stack(target, draft, prompt, **kw):
    """Control: the correction after a rejection drawn from p instead of norm(max(p − q, 0))
    (the block verifiers' ``residual=norm(p)`` control in the reference stack)."""
    from ..references import CONTROLS as BLOCK_CONTROLS
    verifier = next(f for c, f, _ in BLOCK_CONTROLS if c == "residual=norm(p)")
    return assisted_reference(target, draft, prompt, **kw, verifier=verifier)


def _processing_matters(pair: MarkovPair, proc: Processing) -> bool:
    return bool(np.abs(processed_source(pair.target, proc).rows - pair.target.rows).max() > 1e-12)


#: Negative controls: (name, description, stack, applies(pair, processing) -> bool)
CONTROLS = (
    ("target-unprocessed", "the processors applied to the draft only; the target's rows verified unprocessed "
     "(lossy wherever the processors change the target's rows)", target_unprocessed_stack, _processing_matters),
    ("cache-not-cropped", "the target's cache is not rolled back after a rejection: the rejected drafted tokens "
     "stay in its history (lossy on sources of order ≥ 2)", cache_not_cropped_stack,
     lambda pair, proc: pair.order >= 2),
    ("residual=norm(p)", "the correction after a rejection drawn from p instead of norm(max(p − q, 0))",
     residual_p_stack, lambda pair, proc: True),
)


# ------------------------------------------------------------------------------- the runs

def _make_step(fn, gamma: int, proc: Processing, L: int, prompt: list[int]):
    """``make_step`` for :class:`.step.StepRuns`: one step is one whole generation of L tokens
    from the prompt; its output is normalised to the L new tokens."""
    kw = dict(max_new_tokens=L, num_assistant_tokens=gamma, **proc.kwargs())

    def make_step(target, draft, _block_len, _rng):
        def step(context):
            raw = fn(target, draft, list(context), **kw)
            out = list(tokens_of(raw, batched=True))
            if len(out) == len(prompt) + L and out[:len(prompt)] == prompt:
                out = out[len(prompt):]
            if len(out) != L:
                raise VerifierOutputError(f"the stack returned {len(out)} tokens {out}; expected the {L} new tokens "
                                          f"(max_new_tokens), or the prompt {prompt} followed by them")
            return out
        return step
    return make_step


class AssistedRuns(StepRuns):
    """One run is one call of the stack from the prompt; its evidence rows are labelled with the
    block's title (instance, setting, γ, L)."""

    def __init__(self, sampler, pair, gamma, n_tokens, seed, name="", sources=None, models=None, title=""):
        self.title = title
        super().__init__(sampler, pair, gamma, n_tokens, seed, name, sources, models)

    def _kwargs(self) -> dict:
        return {**super()._kwargs(), "title": self.title}

    def trace(self):
        t = super().trace()
        t.title = self.title
        return t


class Stack:
    """A user's generation stack with the fake models it gets (``lm``, ``dtype``)."""

    def __init__(self, fn, *, name: str = "", lm: str = "hf", dtype: str = "float32"):
        from ..sources import RandomSources
        if lm not in ("hf", "torch", "callable"):
            raise ValueError(f"lm must be 'hf', 'torch' or 'callable', got {lm!r}")
        self.fn, self.lm, self.dtype = fn, lm, dtype
        self.name = name or getattr(fn, "__qualname__", "generation stack")
        self.sources = RandomSources(fn)

    def options(self) -> dict:
        return {"lm": self.lm, "dtype": self.dtype}


def blocks_of(instances, settings, gammas, L: int):
    """Every block (instance, processing, γ) where the reference is unambiguous; and the
    (instance, setting, reason) of those skipped."""
    blocks, skipped = [], []
    for name in instances:
        pair = inst.get(name)
        for s in settings:
            proc = parse_setting(s)
            try:
                processed_source(pair.target, proc)
                processed_source(pair.draft, proc)
            except AmbiguousProcessing as err:
                skipped.append({"instance": name, "setting": proc.label, "reason": str(err)})
                continue
            if pair.V ** L > 4096:
                raise ValueError(f"V**max_new_tokens = {pair.V}**{L} sequences is too many cells for the joint test "
                                 "(at most 4096): use fewer new tokens")
            for g in gammas:
                blocks.append((name, proc, g))
    return blocks, skipped


def _check_stack(fn, label: str) -> None:
    import inspect
    from ..trial import ConformanceUsageError
    if not callable(fn):
        raise TypeError(f"the generation stack must be callable: {STACK_SIGNATURE}")
    try:
        inspect.signature(fn).bind(None, None, [0], max_new_tokens=1, num_assistant_tokens=1, temperature=1.0,
                                   top_k=None, top_p=1.0)
    except TypeError as err:
        raise ConformanceUsageError(f"{label} cannot be called as a generation stack: {err}",
                                    f"spectheory calls {STACK_SIGNATURE}; wrap your function to take these "
                                    "arguments") from None
    except ValueError:  # no signature (a builtin): let the runs find out
        pass


CONTROL_IDS = tuple(c[0] for c in CONTROLS)


class AssistedKind(Kind):
    """End-to-end generation stacks (module docstring): blocks (instance, processor setting, γ),
    each run one call of the stack, the lossless checks against the processed law; every check
    needs, on every block where it is graded, a control that fails it there."""

    name, title = "assisted", "assisted generation"
    seed_tag = "conformance.assisted"
    INSTANCES, GAMMAS, DEFAULT_N, SETTINGS = INSTANCES, GAMMAS, DEFAULT_N, SETTINGS
    MAX_GAMMA = 8
    interpretation = ("End-to-end: the tokens generated by the stack from the prompt against the target's own "
                      "processed law (exact); see docs/conformance.md.")
    controls_per_block = True
    OPTION_DEFAULTS = {"lm": "hf"}

    def __init__(self, fn, *, name=None, settings=SETTINGS, max_new_tokens: int = DEFAULT_NEW_TOKENS, **options):
        from ...checks import check_int
        from ..replay import load
        if isinstance(fn, str):
            name, fn = name or fn, load(fn)
        super().__init__(fn, name=name, **options)
        _check_stack(fn, self.sampler.name)
        if isinstance(settings, (str, Processing, dict)):
            settings = (settings,)
        self.settings_ = tuple(parse_setting(s) for s in settings)
        if not self.settings_:
            raise ValueError("settings must name at least one processor setting, e.g. ('T=1',)")
        self.L = check_int(max_new_tokens, "max_new_tokens", min=1, max=8)
        self.skipped: list = []
        self._pairs: dict = {}

    def wrap(self, fn, *, name="", lm="hf", dtype="float32"):
        return Stack(fn, name=name, lm=lm, dtype=dtype)

    @property
    def uses_torch(self) -> bool:
        return self.sampler.lm in ("hf", "torch")

    def checks(self):
        # the wiring bugs emit tokens a top-k/top-p cut removed (impossible tokens: a proof) and change the law
        return tuple(Check(c.id, c.statement, c.reference, c.run, c.mc_tests,
                           ("target-unprocessed", "cache-not-cropped") if c.id == IMPOSSIBLE_ID else CONTROL_IDS,
                           group="lossless")
                     for c in CHECKS if c.group == "lossless" and c.for_steps)

    def _title(self, name, proc, g):
        return f"{name} {proc.label} γ={g} L={self.L}"

    def blocks(self, instances, gammas):
        blocks, self.skipped = blocks_of(instances, self.settings_, gammas, self.L)
        return [Block(n, g, setting=proc, title=self._title(n, proc, g)) for n, proc, g in blocks]

    def replay_block(self, instance, gamma, setting=None):
        proc = parse_setting(setting or "T=1")
        return Block(instance, gamma, setting=proc, title=self._title(instance, proc, gamma))

    def pair(self, block):
        key = (block.instance, block.setting)
        if key not in self._pairs:
            raw = inst.get(block.instance)
            self._pairs[key] = MarkovPair(processed_source(raw.target, block.setting),
                                          processed_source(raw.draft, block.setting), raw.name)
        return self._pairs[key]

    def seed_of(self, block, seed):
        return derive_seed(seed, self.seed_tag, block.instance, block.setting.label, str(block.gamma))

    def runner(self, sampler, block, seed):
        from ..fake_lm import fake_lm
        raw = inst.get(block.instance)
        prompt = prompt_of(raw.target)
        models = (fake_lm(raw.target, lm=sampler.lm, dtype=sampler.dtype),
                  fake_lm(raw.draft, lm=sampler.lm, dtype=sampler.dtype))
        step = StepSampler(_make_step(sampler.fn, block.gamma, block.setting, self.L, prompt), lm=sampler.lm,
                           dtype=sampler.dtype, name=sampler.name)
        step.sources = sampler.sources
        return AssistedRuns(step, self.pair(block), self.L - 1, self.L, seed, block.label, sources=sampler.sources,
                            models=models, title=block.label)

    def controls(self):
        return [Control(cname, stack, desc, ("checks",), applies=(lambda b, f=applies: f(inst.get(b.instance),
                                                                                           b.setting)))
                for cname, desc, stack, applies in CONTROLS]

    def control_sampler(self, control, for_probes=False):
        return Stack(control.fn, name=control.name, lm="hf", dtype=self.sampler.dtype)

    def settings(self):
        return {**self.sampler.options(), "settings": [p.label for p in self.settings_], "max_new_tokens": self.L,
                "skipped": self.skipped}

    def block_info(self, block):
        return {"setting": block.setting.label, **block.setting.kwargs(), "max_new_tokens": self.L}

    def block_info_of(self, info):
        return {"setting": info.get("setting"), "max_new_tokens": self.L}

    def layout(self, block_info=None):
        return {"kind": "assisted", "setting": (block_info or {}).get("setting"), "max_new_tokens": self.L,
                "lm": self.sampler.lm if self.sampler.lm != "hf" else None, "dtype": self.sampler.dtype}

    def rerun_options(self):
        return {}

    def finish(self, report, runners):
        import sys
        versions = report["run"].setdefault("versions", {})
        for mod in ("torch", "transformers"):  # the stack's libraries, when loaded
            if mod in sys.modules:
                versions[mod] = getattr(sys.modules[mod], "__version__", "?")
        report["run"]["reference"] = ("the target alone sampling with the processors: process_row (temperature, "
                                      "top-k, top-p in transformers' order) on every row, exact law of the L tokens")


def check_assisted_generation(fn, *, lm: str = "hf", dtype: str = "float32", settings=SETTINGS, gammas=GAMMAS,
                              instances=INSTANCES, max_new_tokens: int = DEFAULT_NEW_TOKENS, n: int = DEFAULT_N,
                              seed: int = 0, alpha: float = 0.01, controls: bool = True,
                              control_n: int | None = None, progress: bool = False, name: str | None = None) -> dict:
    """Test a generation stack ``fn`` (module docstring; :data:`STACK_SIGNATURE`) for
    losslessness end to end: on each instance, processor setting (``"T=0.7,top_k=2"``, see
    :func:`parse_setting`) and γ (``num_assistant_tokens``), at most ``n`` calls of the stack
    from the prompt, the law of the ``max_new_tokens`` generated tokens against the target's own
    processed law (exact). Returns a conformance report (schema ``spectheory.report/1``) with the
    ``lossless`` verdict (``standard``: not checkable). ``controls``: run the buggy stacks of
    :data:`CONTROLS` through the same checks (at most ``control_n`` calls, default
    max(n // 4, 1000)); they need ``transformers``."""
    from ..driver import run
    kind = AssistedKind(fn, name=name, lm=lm, dtype=dtype, settings=settings, max_new_tokens=max_new_tokens)
    return run(kind, n=n, gammas=gammas, instances=instances, seed=seed, alpha=alpha, controls=controls,
               control_n=control_n, probes=False, progress=progress, trial=False)
