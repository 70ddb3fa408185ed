"""Sample sizes of a real-model run chosen from the power statements of a pilot run.

A pilot run (any ``spectheory validate`` run directory) gives, for every graded logits test, the
trials one prompt yields (n had / prompts) and the per-trial variance of its own trials; the power
statement of :mod:`spectheory.validate.power` then says how many trials the test needs to see a deviation of
its tolerance with probability ``power`` at the per-test level ``alpha``:

    n needed = ⌈((z_{1−α/2} + z_π)/δ)² · v⌉,   prompts needed = ⌈margin · n needed / (trials per prompt)⌉.

Negative controls are sized the same way, with δ the effect the control must show: a control the
pilot already rejects needs nothing more; otherwise δ = max(tolerance, |d̂| − 2·se), d̂ the pilot's
deviation of the broken loop and se its standard error (read from the pilot's interval, two-sided at
its per-test level 1 − α; a control is sized to be seen at least as well as the subject's
tolerance; a broken rule whose true effect is below the tolerance is a bug the test is not designed
to see, and the report says so when it is not rejected).

The prompt sets split the count evenly (``sets``), because the loops take the first k prompts of
every set. ``margin`` (default 1.25, a choice of this project) covers the pilot's error in trials per
prompt and variance. :func:`plan_run` → :class:`Plan`; ``spectheory validate plan PILOT`` prints it
with the command that runs it (resumable: point ``--out`` at a copy of the pilot to keep its records).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats as sst

from spectheory.checks import check_level, check_real
from spectheory.judge.stats import POWER  # the report's grading power

from .power import TOLERANCE, TOLERANCE_TAU, n_needed

#: Safety factor on the pilot's trials per prompt and variance (this project's choice).
MARGIN = 1.25


@dataclass(frozen=True)
class PlanRow:
    """One graded test or negative control: what the pilot had and what the run needs."""

    loop: str              # loop name (``sd`` for real SD; ``<loop>-control`` for a control)
    claim: str
    test: str
    role: str              # "test", "control" or "capture" (a trace harness's need for captured texts)
    prompts_had: int
    n_had: int
    trials_per_prompt: float
    var_per_trial: float
    effect: float          # deviation to see: the tolerance (tests) or the control's sizing effect
    n_needed: int
    prompts_needed: int    # total over the prompt sets, margin included
    per_set: int           # prompts per set for this loop
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Plan:
    """Per loop the prompts per set the run needs (the maximum over that loop's rows)."""

    pilot: str
    alpha: float
    power: float
    margin: float
    sets: int
    rows: list = field(default_factory=list)
    #: the pilot's setup the command must repeat to resume it (sampling, drafter, γs, prompt sets,
    #: prompts per set it already holds per kind: ``have`` {"sd": n, "capture": n, loop: n, ...})
    setup: dict = field(default_factory=dict)

    @property
    def family_n(self) -> dict:
        return self._need("test")

    @property
    def controls_n(self) -> dict:
        return self._need("control")

    def _need(self, role) -> dict:
        out: dict = {}
        for r in self.rows:
            if r.role == role:
                name = r.loop.replace("-control", "")
                out[name] = max(out.get(name, 0), r.per_set)
        return out

    def command(self, out: str, extra: str = "") -> str:
        """The ``spectheory validate`` invocation that runs this plan on a copy of the pilot: the
        pilot's setup (sampling, drafter, γs, prompt sets, hidden states), and per kind of record the
        larger of what the pilot holds and what the plan needs (prompts per set)."""
        st, have = self.setup, self.setup.get("have", {})
        need = lambda key, n: max(int(n or 0), int(have.get(key, 0)))  # noqa: E731
        loops = sorted(set(self.family_n) - {"sd"} | {k for k in have if k not in ("sd", "capture")
                                                      and not k.endswith("-control")})
        fam = ",".join(f"{k}={need(k, self.family_n.get(k))}" for k in loops)
        ctl_keys = sorted(set(self.controls_n) | {k[:-8] for k in have if k.endswith("-control")})
        ctl = ",".join(f"{k}={need(k + '-control', self.controls_n.get(k))}" for k in ctl_keys)
        parts = [f"spectheory validate --out {out}"] + list(st.get("options", []))
        n_sd = need("sd", self.family_n.get("sd"))
        if n_sd:
            parts.append(f"-n {n_sd}")
        cap = int(have.get("capture", 0))
        if not self._capture_only_sets:     # no capture-only stage: the harness's captures ride along
            cap = max(cap, self.capture_n)
        parts.append(f"--capture-n {cap}")
        parts.append(f"--family-n {fam}" if fam else "--families ''")
        parts.append(f"--controls-n {ctl or 0}")
        return " ".join(parts) + (f" {extra}" if extra else "")

    @property
    def capture_n(self) -> int:
        """Captured prompts per capture set that the trace harnesses' power statements ask for
        (ECSV's rule 1: :func:`capture_rows`); 0 when none asks."""
        return max((r.per_set for r in self.rows if r.role == "capture"), default=0)

    def capture_command(self, out: str) -> str | None:
        """The capture-only stage (``--families '' --no-sd``) a resumed run needs when the pilot
        captured prompt sets its tests did not run on (the sonnets beside code and chat): every
        captured set, at the larger of what the pilot holds per set and what a trace harness asks
        for. None when the pilot captured only the tested sets (the tests' command asks for the
        captures)."""
        st = self.setup
        if not self._capture_only_sets:     # the captures ride along with the tests' command
            return None
        k = max(int(st.get("capture_have", 0)), self.capture_n)
        opt = _prompts_option(st["capture_sets"])
        parts = [f"spectheory validate --out {out}"] + [o for o in st.get("options", []) if not o.startswith("--prompts ")]
        parts += ([opt] if opt else []) + [f"--capture-n {k}", "--families ''", "--no-sd"]
        return " ".join(parts)

    @property
    def _capture_only_sets(self) -> list:
        """Prompt sets the pilot captured but its tests did not run on."""
        return [s for s in self.setup.get("capture_sets") or [] if s not in self.setup.get("sets", [])]

    def commands(self, out: str) -> list[str]:
        """The stages that run this plan: the tests' command, then the capture-only stage if any."""
        cap = self.capture_command(out)
        return [self.command(out)] + ([cap] if cap else [])

    def to_json(self) -> dict:
        return dict(pilot=self.pilot, alpha=self.alpha, power=self.power, margin=self.margin, sets=self.sets,
                    family_n=self.family_n, controls_n=self.controls_n, capture_n=self.capture_n,
                    setup=self.setup, commands=self.commands("RUN_DIR"), rows=[r.to_json() for r in self.rows])


def _prompts(runs) -> int:
    return len({(r.meta.get("category"), r.meta.get("name")) for r in runs})


def _row(loop, claim, test, role, runs_prompts, n, v, effect, alpha, power, margin, sets, note="") -> PlanRow:
    tpp = n / runs_prompts if runs_prompts else float("nan")
    need = n_needed(v, alpha, effect, power)
    total = int(math.ceil(margin * need / tpp)) if tpp > 0 else 0
    return PlanRow(loop, claim, test, role, int(runs_prompts), int(n), float(tpp), float(v), float(effect),
                   int(need), total, int(math.ceil(total / sets)) if total else 0, note)


def _control_effect(ev, tolerance) -> tuple[float, str]:
    """(effect to size for, why) of a control's pilot evidence."""
    d = abs(float(ev.measured) - float(ev.claimed))
    # the interval is two-sided at 1 − α (stats.z_test_mean: d̂ ± z_(1−α/2)·se), 95% where no α is stated
    z = float(sst.norm.ppf(1 - ev.alpha / 2)) if ev.alpha else 1.959963984540054
    se = (ev.ci_high - ev.ci_low) / (2 * z) if ev.ci_low is not None and ev.ci_high is not None else float("nan")
    lo = d - 2 * se if np.isfinite(se) else 0.0
    eff = max(tolerance, lo)
    return eff, (f"pilot deviation {d:.4f} (se {se:.4f}); sized for max(tolerance {tolerance:g}, "
                 f"|d̂| − 2·se = {lo:.4f}) = {eff:.4f}")


def plan_run(run, alpha: float, power: float = POWER, margin: float = MARGIN, sets: int | None = None,
             tolerance: float = TOLERANCE, tolerance_tau: float = TOLERANCE_TAU, harnesses: bool = True,
             starting=None) -> Plan:
    """Prompts per set for every family loop and negative control of ``run`` (a pilot,
    :func:`spectheory.validate.experiment.load_run`) so that each graded test reaches ``power`` at its
    tolerance and per-test level ``alpha`` (module docstring); with ``harnesses``, also the captured
    texts the trace harnesses need (:func:`capture_rows`: it replays ECSV on the pilot's traces, after
    calling ``starting()``)."""
    from .evidence import sd_tests
    from .experiment import check_run
    from .replay_loops import loop_tests
    check_run(run)
    check_level(alpha)
    check_level(power, "power")
    check_real(margin, "margin", lo=1.0)
    cats = sorted({r.meta.get("category", "") for rs in run.families.values() for r in rs}
                  | {r.meta.get("category", "") for rs in run.sd.values() for r in rs})
    sets = int(sets or max(1, len(cats)))
    plan = Plan(str(run.path), float(alpha), float(power), float(margin), sets, setup=pilot_setup(run, sets))
    if run.sd:
        prompts = _prompts(run.sd[max(run.sd)])
        for pr in sd_tests(run.sd, alpha, tolerance, "real SD")[2]:
            plan.rows.append(_row("sd", pr.claim, pr.test, "test", prompts, pr.n_had, pr.var_per_trial, pr.tolerance,
                                  alpha, power, margin, sets))
    for g, runs in sorted(run.controls.items()):
        acc, _, prs = sd_tests({g: runs}, alpha, tolerance, "control")
        for ev, pr in zip(acc, prs[:1]):
            plan.rows.append(_control_row("sd", pr.claim, ev, pr, runs, tolerance, alpha, power, margin, sets))
    for name, runs in sorted(run.families.items()):
        base = name.replace("-control", "")
        evs, prs = loop_tests(base, runs, alpha, tolerance, tolerance_tau)
        if base == name:
            for pr in prs:
                plan.rows.append(_row(name, pr.claim, pr.test, "test", _prompts(runs), pr.n_had, pr.var_per_trial,
                                      pr.tolerance, alpha, power, margin, sets))
            continue
        graded = [e for es in evs.values() for e in es if e.p_value is not None and e.outcome != "info"]
        for ev, pr in zip(graded, prs):
            plan.rows.append(_control_row(name, pr.claim, ev, pr, runs, pr.tolerance, alpha, power, margin, sets))
    if run.traces and harnesses:
        plan.rows += capture_rows(run, alpha, margin, tolerance_tau, starting)
    return plan


def capture_rows(run, alpha: float, margin: float = MARGIN, tolerance: float = TOLERANCE_TAU,
                 starting=None) -> list[PlanRow]:
    """The captured texts ECSV's trace harness needs (``ecsv.falsification``, rule 1 on the
    acceptance length, :func:`spectheory.validate.replay_ecsv.rule1_evidence`): its power statement
    gives n needed windows (positions) at the tolerance; the captures needed are ⌈margin · n needed /
    (positions per text)⌉, split over the captured prompt sets (the rule's datasets). A decided row
    needs nothing more; a setting where ECSV does not apply (:mod:`spectheory.validate.settings`) has
    no row. The note says when a set holds fewer prompts than the plan asks for. ``starting()`` is
    called before the replay (minutes on a large run)."""
    from spectheory.judge.verdicts import n_needed as needed_of

    from .prompts import SET_SIZE
    from .replay_ecsv import logits_evidence as ecsv_evidence
    from .settings import not_applicable
    if not_applicable(run.config, "ecsv.falsification"):
        return []
    if starting is not None:
        starting()
    evs = [e for e in ecsv_evidence(run, alpha, tolerance=tolerance).get("ecsv.falsification", [])
           if e.part == "rule1" and e.outcome != "info" and not getattr(e, "control", "")]
    traces = [_Named(t.meta) for t in run.traces]
    sets = _sets_of(traces)
    out = []
    for e in evs:
        tpp = e.n / len(traces) if traces else float("nan")
        if e.outcome in ("pass", "fail"):
            need, total, per_set = int(e.n), len(traces), _per_set(traces)
            note = f"decided ({e.outcome}) in the pilot: nothing more needed"
        else:
            need = needed_of(e)
            total = int(math.ceil(margin * need / tpp)) if need and tpp > 0 else 0
            per_set = int(math.ceil(total / max(1, len(sets)))) if total else 0
            short = [f"{s} holds {SET_SIZE[s]}" for s in sets if s in SET_SIZE and SET_SIZE[s] < per_set]
            note = (f"undecided in the pilot (n needed {need:,} windows at tolerance {e.tolerance:g})"
                    if need else "undecided in the pilot; its power statement gives no sample size")
            if short:
                note += f"; {', '.join(short)}: add a prompt set (--prompts) to reach {total} texts"
        out.append(PlanRow("capture", "ecsv.falsification", "rule 1, acceptance length (ECSV harness)", "capture",
                           len(traces), int(e.n), float(tpp), float("nan"), float(e.tolerance), int(need or 0),
                           total, per_set, note))
    return out


#: prompt category → the prompt set that yields it (spectheory.validate.prompts)
SET_OF_CATEGORY = {"code": "human-eval", "chat": "mt-bench", "poetry": "sonnets", "prose": "shakespeare"}


def pilot_setup(run, sets: int) -> dict:
    """What a command resuming the pilot ``run`` must repeat: its sampling options (the run refuses
    others), drafter, γs, prompt sets and hidden-state capture, and the prompts per set it holds of
    each kind of record."""
    c = run.config
    opts = []
    if float(c.get("temperature", 1.0)) != 1.0:
        opts.append(f"-t {float(c['temperature']):g}")
    for key, flag in (("top_k", "--top-k"), ("top_p", "--top-p")):
        if c.get(key) is not None:
            opts.append(f"{flag} {c[key]:g}")
    if (c.get("drafter") or {}).get("kind", "model") != "model":
        opts.append(f"--drafter {c['drafter']['kind']}")
    if c.get("gammas"):
        opts.append("--gammas " + ",".join(str(g) for g in c["gammas"]))
    if c.get("max_new_tokens"):
        opts.append(f"--max-new-tokens {int(c['max_new_tokens'])}")
    tested = [r for rs in (*run.sd.values(), *run.controls.values(), *run.families.values()) for r in rs]
    traces = [_Named(t.meta) for t in run.traces]
    test_sets = _sets_of(tested or traces)
    prompts_opt = _prompts_option(test_sets)
    if prompts_opt:                    # the sets the tests ran on, not every set the run.json names
        opts.append(prompts_opt)
    if run.traces and all(t.hidden_proj is None for t in run.traces):
        opts.append("--hidden-layers 0")
    # captures in the tested sets ride along with the tests' command; a set only captured (the
    # sonnets of a run whose loops ran on code and chat) gets a capture-only stage of its own
    have = {"capture": _per_set([t for t in traces if _set_of(t) in test_sets])}
    if run.sd:
        have["sd"] = _per_set(run.sd[max(run.sd)])
    for g, runs in run.controls.items():
        have["sd-control"] = max(have.get("sd-control", 0), _per_set(runs))
    for name, runs in run.families.items():
        have[name] = _per_set(runs)
    return dict(options=opts, have=have, sets=test_sets, capture_sets=_sets_of(traces),
                capture_have=_per_set(traces))


def _prompts_option(sets: list) -> str:
    """``--prompts A,B`` for prompt sets other than the CLI's default (human-eval, mt-bench); "" for
    the default; None when a set is not one of the named sets (a prompt file: the user names it)."""
    if not sets or not all(s in SET_OF_CATEGORY.values() for s in sets):
        return None if sets else ""
    return "" if sorted(sets) == ["human-eval", "mt-bench"] else "--prompts " + ",".join(sets)


def _per_set(runs) -> int:
    """Prompts per set a kind of record holds: the most any one prompt set holds (every stage takes
    the first k prompts of each set, so k = this count re-asks for nothing and drops nothing)."""
    by: dict = {}
    for r in runs:
        by.setdefault(r.meta.get("category"), set()).add(r.meta.get("name"))
    return max((len(v) for v in by.values()), default=0)


def _set_of(record) -> str:
    """The prompt set (``--prompts`` name) of a record; its category where no named set yields it."""
    cat = record.meta.get("category", "")
    return SET_OF_CATEGORY.get(cat, cat)


def _sets_of(runs) -> list[str]:
    """The prompt sets of records, in the CLI's default order (code, chat, …)."""
    order = ["human-eval", "mt-bench", "sonnets", "shakespeare"]
    return sorted({_set_of(r) for r in runs}, key=lambda n: (order.index(n) if n in order else len(order), n))


class _Named:
    def __init__(self, meta):
        self.meta = meta


def _control_row(loop, claim, ev, pr, runs, tolerance, alpha, power, margin, sets) -> PlanRow:
    name, had = loop + ("-control" if loop == "sd" else ""), _prompts(runs)
    if ev.outcome == "fail":
        return PlanRow(name, claim, pr.test, "control", had, pr.n_had, pr.n_had / max(1, had), pr.var_per_trial,
                       abs(ev.measured - ev.claimed), pr.n_had, had, _per_set(runs),
                       f"rejected in the pilot (p = {ev.p_value:.3g}): nothing more needed")
    eff, why = _control_effect(ev, tolerance)
    return _row(name, claim, pr.test, "control", had, pr.n_had, pr.var_per_trial, eff, alpha, power, margin, sets,
                note=why)


def format_plan(plan: Plan) -> str:
    """Markdown table of a plan."""
    lines = [f"Plan from the pilot `{plan.pilot}`: per-test α = {plan.alpha:.3g}, power {plan.power}, margin "
             f"{plan.margin:g}, {plan.sets} prompt sets.", "",
             "| loop | claim | test | role | prompts had | n had | trials/prompt | effect | n needed | prompts needed "
             "| per set | note |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in plan.rows:
        lines.append(f"| {r.loop} | {r.claim} | {r.test} | {r.role} | {r.prompts_had} | {r.n_had:,} | "
                     f"{r.trials_per_prompt:.1f} | {r.effect:.4g} | {r.n_needed:,} | {r.prompts_needed} | {r.per_set} "
                     f"| {r.note} |")
    return "\n".join(lines)
