"""Real decoding settings and which family's claims apply to each, as data.

A setting is what a run directory's ``run.json`` fixes about decoding: the drafter (the draft
model, or a drafter without a model: prompt lookup), the temperature and the top-k/top-p
warpers (:mod:`spectheory.validate.processing`). Some claims are about objects a setting does not have:

* a **point-mass draft law** (greedy decoding, T = 0, or any deterministic drafter such as prompt
  lookup): K i.i.d. drafts are K copies of one draft, k alternatives drawn without replacement do
  not exist, B voting branches are one branch;
* **no draft model** (prompt lookup): no draft distribution q at all, so nothing to ensemble, to
  capture along the text, or to train a draft-acceptance classifier on.

:data:`RULES` lists, per such condition, the claims it rules out and why; :func:`not_applicable`
evaluates them for a run's configuration. ``spectheory validate`` skips those loops (and records
the reasons in ``run.json``), ``spectheory verify --logits`` and ``spectheory validate table``
report each as ``does not apply: <why>`` instead of a result.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

#: claim family (the claim id's prefix) → the claims a run's logits evidence can hold for it
FAMILIES = {
    "sd": ("sd.acceptance", "sd.expected_tokens", "sd.walltime"),
    "se": ("se.acceptance", "se.thm3_2", "se.thm3_1"),
    "gbv": ("gbv.optimal",),
    "spectr_gbv": ("spectr_gbv.upper_bound", "spectr_gbv.attains"),
    "kseq": ("kseq.rho",),
    "ersd": ("ersd.lemma3_1", "zero_order.underestimates"),
    "sb": ("sb.hrad", "sb.trunc_geom", "sb.rollback", "sb.speedup"),
    "ecsv": ("ecsv.majority", "ecsv.falsification"),
}
#: family loop of spectheory.validate.loops → its family
LOOP_FAMILY = {"se": "se", "gbv": "gbv", "spectr_gbv": "spectr_gbv", "kseq": "kseq", "ersd": "ersd"}


def family_of(claim: str) -> str:
    for fam, claims in FAMILIES.items():
        if claim in claims:
            return fam
    return claim.split(".")[0]


@dataclass(frozen=True)
class Setting:
    """The decoding setting of a run (``run.json``)."""

    drafter: str = "model"          # "model" or a spectheory.validate.drafters name ("prompt-lookup")
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    gammas: tuple = ()

    @classmethod
    def of(cls, config: dict) -> "Setting":
        d = (config.get("drafter") or {}).get("kind", "model")
        return cls(d, float(config.get("temperature", 1.0) or 0.0), config.get("top_k"), config.get("top_p"),
                   tuple(config.get("gammas") or ()))

    @property
    def draft_model(self) -> bool:
        return self.drafter == "model"

    @property
    def point_mass(self) -> bool:
        """The draft law is a point mass: greedy decoding or a deterministic drafter."""
        return self.temperature == 0 or not self.draft_model

    def label(self) -> str:
        who = "0.5B draft model" if self.draft_model else self.drafter
        if self.temperature == 0:
            how = "greedy (T = 0)"
        else:
            how = f"T = {self.temperature:g}" + (f", top-k {self.top_k}" if self.top_k else "") \
                + (f", top-p {self.top_p:g}" if self.top_p is not None and self.top_p < 1 else "")
        return f"{who}, {how}"


@dataclass(frozen=True)
class Rule:
    """Claims (fnmatch patterns) that do not apply when ``condition`` holds of a setting."""

    claims: tuple
    condition: str               # a boolean property of Setting: "point_mass", or "no_draft_model"
    why: str

    def holds(self, s: Setting) -> bool:
        return (not s.draft_model) if self.condition == "no_draft_model" else bool(getattr(s, self.condition))


RULES = (
    Rule(("spectr_gbv.*", "kseq.*"), "point_mass",
         "K i.i.d. drafts from a point-mass draft law are K copies of one draft: the K-draft claims reduce to "
         "one draft (the sd.* and gbv.optimal tests)"),
    Rule(("ersd.*", "zero_order.*"), "point_mass",
         "batch drafting needs k distinct alternatives drawn from q (GSD, without replacement) and a race over "
         "q's support; a point-mass q has one token"),
    Rule(("ecsv.*",), "point_mass",
         "branch voting over B drafts from a point-mass draft law: the B branches are one draft, there is "
         "nothing to vote on"),
    Rule(("se.*",), "no_draft_model",
         "the speculative ensemble mixes the draft model's distribution q with p; a drafter without a model has "
         "no q (a deterministic proposal is not a member distribution)"),
    Rule(("gbv.*",), "no_draft_model",
         "with a deterministic point-mass draft, GBV's value Σ_i min(P(x^i), Q(x^i)) = Σ_i Π_(j≤i) p_j(x_j) is "
         "token-level SD's E[τ]: block verification has nothing to gain, and the sd.* tests are its test"),
    Rule(("sb.hrad", "sb.rollback", "sb.speedup"), "no_draft_model",
         "H-RAD and its replays read captured traces of a draft model's acceptance along the target's text "
         "(β_t, hidden states); a drafter without a model has no draft distribution to capture"),
)


def not_applicable(config: dict, claim: str) -> str | None:
    """Why ``claim`` does not apply to the setting of ``config`` (a run.json), or None."""
    s = Setting.of(config)
    for rule in RULES:
        if any(fnmatch.fnmatchcase(claim, pat) for pat in rule.claims) and rule.holds(s):
            return rule.why
    return None


def loop_not_applicable(config: dict, loop: str) -> str | None:
    """Why the family loop ``loop`` (spectheory.validate.loops) does not apply to the setting, or None."""
    fam = LOOP_FAMILY.get(loop.replace("-control", ""), loop)
    for claim in FAMILIES.get(fam, ()):
        why = not_applicable(config, claim)
        if why:
            return why
    return None
