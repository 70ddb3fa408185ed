"""The protocol a kind of sampler implements: a layout of inputs and outputs (a block verifier, a
decoding step, a multi-draft or tree verifier, a batched sampler in the serving layout, a whole
generation stack), as scipy's ``rv_continuous`` is a distribution — a subclass implements a few
hooks and the shared core does the rest: the trial call (:mod:`.trial`), the runs and what they
record (:mod:`.runs`), the checks (:mod:`.checks`), the group-sequential plan (:mod:`.sequential`),
the probes (:mod:`.probes`), the negative controls, severity (:mod:`.severity`), rerunnable calls
(:mod:`.replay`) and the report (:mod:`.report`), all driven by :func:`.driver.run`.

A kind is one module in :mod:`.kinds` and one line of its registry (:data:`.kinds.KINDS`). Its
hooks:

=====================  ================================================================================
``wrap``               the user's function with the kind's options → the sampler object the runs call
                       (it owns ``fn``, ``name``, ``sources`` and ``options()``)
``checks``             the checks of its two verdicts (:class:`.checks.Check`)
``blocks``             the blocks (instance, γ, …) the checks run on, each with the checks it runs
``runner``             the runs on one block (:class:`.runs.Runs` or any object with its interface)
``controls``           the negative controls (:class:`Control`), each in the subject's layout
``probe_call``         one probe (:class:`.probes.Probe`) as a call in this layout (None: no probes)
``trial``              the trial call (usage errors with a hint, :mod:`.trial`)
``rerun_call``         one call on explicit inputs (:func:`.replay.rerun`)
``settings``           the options the report states
=====================  ================================================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import instances as inst
from ..rng import derive_seed


@dataclass(frozen=True)
class Block:
    """One cell of the plan: an instance and a draft length (and, end to end, a processor
    setting); ``checks``: the ids of the checks run on it (None: every check of the kind)."""

    instance: str
    gamma: int
    setting: object = None
    checks: tuple | None = None
    title: str = ""

    @property
    def label(self) -> str:
        return self.title or f"{self.instance} γ={self.gamma}"

    def runs(self, check_id: str) -> bool:
        return self.checks is None or check_id in self.checks


@dataclass(frozen=True)
class Control:
    """A negative control: ``fn`` in the kind's user layout, what it must fail (``roles``:
    ``"checks"`` — the statistical checks that name it —, ``"support probes"``, ``"standard
    probes"``), and ``applies(block)`` where its bug is active (None: every block)."""

    name: str
    fn: object
    description: str
    roles: tuple = ("checks",)
    applies: object = field(default=None, compare=False)


class Kind:
    """Base of every kind (see the module docstring). Class attributes give the defaults."""

    #: registry key, the command line's ``--kind``
    name = ""
    #: what the report calls the sampler (``run.kind``)
    title = ""
    #: the tag of the seed of every block (``derive_seed(seed, seed_tag, instance, γ)``)
    seed_tag = "conformance"
    INSTANCES: tuple = ()
    GAMMAS: tuple = (1, 3)
    DEFAULT_N = 10_000
    MIN_GAMMA, MAX_GAMMA = 1, 4
    paper = "Leviathan et al. 2023; Chen et al. 2023"
    interpretation = "Black-box check of the sampler under test on the built-in instances; see docs/conformance.md."
    #: end to end: a check needs, on every block a control applies to, a control that fails it there
    controls_per_block = False
    #: whether the probes are graded against Alg. 1 too (a "standard_probes" claim)
    standard_probes = False

    def __init__(self, fn, *, name: str | None = None, **options):
        self.target = name
        self.sampler = self.wrap(fn, name=name or "", **options)
        #: the draft lengths of the run (set by the driver)
        self.run_gammas = self.GAMMAS

    # --- hooks -----------------------------------------------------------------------------------
    def wrap(self, fn, *, name: str = "", **options):
        raise NotImplementedError

    def checks(self) -> tuple:
        raise NotImplementedError

    def blocks(self, instances, gammas) -> list[Block]:
        return [Block(i, g) for i in instances for g in gammas]

    def pair(self, block: Block):
        """The pair the checks compare with on ``block`` (end to end: the processed law)."""
        return inst.get(block.instance)

    def runner(self, sampler, block: Block, seed):
        raise NotImplementedError

    def seed_of(self, block: Block, seed: int):
        return derive_seed(seed, self.seed_tag, block.instance, str(block.gamma))

    def controls(self) -> list[Control]:
        return []

    def control_sampler(self, control: Control, for_probes: bool = False):
        """The control's sampler object, in the subject's layout (``for_probes``: in the
        subject's dtype, as the probes are built for it)."""
        return self.wrap(control.fn, name=control.name)

    def probes(self, sampler) -> list:
        """The probes run on ``sampler`` (:mod:`.probes`; they depend on its dtype); empty: none."""
        return []

    def probe_call(self, sampler, probe, rng):
        raise NotImplementedError

    def probe_rerun(self, probe) -> dict:
        """Keyword arguments of :func:`.replay.rerun` that repeat a probe call."""
        return {}

    def trial(self, gammas) -> dict | None:
        """The trial call (:func:`.trial.trial` with the ``trial_*`` hooks), or None."""
        return None

    def rerun_call(self, sampler, inputs: dict, rng):
        raise NotImplementedError

    def settings(self) -> dict:
        return dict(self.sampler.options())

    #: the options' defaults: a rerunnable call writes only the options that differ from them
    OPTION_DEFAULTS: dict = {}

    def rerun_options(self) -> dict:
        """Options a rerunnable call states (those that differ from the defaults)."""
        return {k: v for k, v in self.sampler.options().items() if self.OPTION_DEFAULTS.get(k, object()) != v}

    def layout(self, block_info: dict | None = None) -> dict:
        """Extra keyword arguments of :func:`.replay.replay_check` for this kind (on a block of
        the report's ``run.blocks``)."""
        return {"kind": self.name}

    def block_info_of(self, block_info: dict) -> dict:
        """What a counterexample says of its block beyond instance and γ."""
        return {}

    def replay_block(self, instance: str, gamma: int, setting=None) -> Block:
        """The block a :func:`.replay.replay_check` call names."""
        return Block(instance, gamma)

    def titles(self) -> dict:
        return {"lossless": "lossless",
                "standard": "matches standard speculative sampling (Leviathan et al. 2023, Alg. 1)"}

    def check_gammas(self, gammas) -> tuple:
        from ..checks import check_int
        if isinstance(gammas, str) or not hasattr(gammas, "__iter__"):
            raise TypeError(f"gammas must be a sequence of draft lengths, e.g. {self.GAMMAS}, got {gammas!r}")
        out = tuple(check_int(g, "gamma", min=self.MIN_GAMMA, max=self.MAX_GAMMA) for g in gammas)
        if not out:
            raise ValueError("gammas must name at least one draft length")
        return out

    def check_instances(self, instances) -> tuple:
        if isinstance(instances, str):
            raise TypeError(f"instances must be a sequence of instance names, e.g. ({instances!r},), got a str")
        out = tuple(instances)  # may be empty: probes only
        for name in out:
            inst.get(name)  # KeyError with the known names
        return out

    def block_info(self, block: Block) -> dict:
        """What the report's ``run.blocks`` says of a block beyond its instance and γ."""
        return {}

    def finish(self, report: dict, runners: dict) -> None:
        """Add what only this kind reports to the finished report (``runners``: block → runner)."""

    @property
    def uses_torch(self) -> bool:
        return getattr(self.sampler, "framework", "numpy") == "torch"

    @property
    def sources(self):
        return self.sampler.sources
