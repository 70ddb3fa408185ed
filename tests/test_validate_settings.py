"""Several real decoding settings (spectheory.validate.settings, spectheory.validate.table): which claims apply to which
setting, the one table of theory against measurement with its regenerating commands, the closed
forms' assumptions against SD records — all on small hand-made records, no model — and the
branches of the planner and the real-pair grading that a seeded bug could hide in (a loop whose
tests need different sample sizes, a control's sizing effect, which test decides a real-pair
verdict, the balance of the cross-validation folds)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from spectheory.judge import verdicts
from spectheory.judge.evidence import Evidence
from spectheory.validate.experiment import RUN_FORMAT, Run
from spectheory.validate.loops import LoopRun
from spectheory.validate.settings import RULES, Setting, loop_not_applicable, not_applicable
from spectheory.validate.specdec import SDRun

LOOKUP = {"drafter": {"kind": "prompt-lookup", "num_output_tokens": 4, "max_matching_ngram_size": 2},
          "temperature": 1.0}
GREEDY = {"temperature": 0.0}
TOPP = {"temperature": 0.7, "top_p": 0.9}


def sd_run(tau, beta, accept=None, n_drafted=None, gamma=None, name="p0", category="code"):
    """An SDRun with the given per-iteration τ and (n, γ) β (r_j = β_j unless ``accept``)."""
    tau = np.asarray(tau, dtype=np.int64)
    beta = np.asarray(beta, dtype=np.float64)
    n, g = beta.shape
    accept = beta if accept is None else np.asarray(accept, dtype=np.float64)
    z = np.zeros(n)
    return SDRun(gamma or g, tau, tau + 1, accept, beta, np.full((n, g), 0.01), z + 0.1, np.full(n, g + 1), z + 1e-3,
                 np.zeros(int((tau + 1).sum()), dtype=np.int64), meta=dict(name=name, category=category),
                 n_out=tau + 1, n_drafted=None if n_drafted is None else np.asarray(n_drafted, dtype=np.int64))


# --- which claims apply -------------------------------------------------------------------------

def test_applicability_per_setting():
    for claim in ("spectr_gbv.attains", "kseq.rho", "ersd.lemma3_1", "zero_order.underestimates",
                  "ecsv.majority"):
        assert not_applicable(GREEDY, claim) and not_applicable(LOOKUP, claim)
        assert not_applicable(TOPP, claim) is None and not_applicable({}, claim) is None
    for claim in ("se.acceptance", "se.thm3_2", "gbv.optimal", "sb.hrad"):
        assert not_applicable(GREEDY, claim) is None      # greedy still has a draft model
        assert "draft" in not_applicable(LOOKUP, claim)
    for claim in ("sd.acceptance", "sd.expected_tokens", "sd.walltime", "sb.trunc_geom"):
        assert all(not_applicable(c, claim) is None for c in (GREEDY, LOOKUP, TOPP, {}))
    assert loop_not_applicable(GREEDY, "kseq-control") and loop_not_applicable(GREEDY, "se") is None
    assert loop_not_applicable(LOOKUP, "gbv") and loop_not_applicable(TOPP, "ersd") is None
    assert Setting.of(LOOKUP).label() == "prompt-lookup, T = 1"
    assert Setting.of(TOPP).label() == "0.5B draft model, T = 0.7, top-p 0.9"
    assert Setting.of(GREEDY).label() == "0.5B draft model, greedy (T = 0)"
    assert all(r.condition in ("point_mass", "no_draft_model") for r in RULES)


# --- logits evidence on a setting, and the table ------------------------------------------------

def _lookup_run(tmp_path):
    rng = np.random.default_rng(0)
    runs = []
    for i in range(6):
        n = 300
        k = rng.integers(0, 4, n)                              # 0..3 drafts of γ = 3
        beta = np.where(np.arange(3)[None, :] < k[:, None], rng.uniform(0.2, 1.0, (n, 3)), np.nan)
        tau = np.zeros(n, dtype=np.int64)
        for t in range(n):
            while tau[t] < k[t] and rng.random() < beta[t, tau[t]]:
                tau[t] += 1
        runs.append(sd_run(tau, beta, n_drafted=k, name=f"p{i}", category="code" if i % 2 else "chat"))
    cfg = dict(format=RUN_FORMAT, gammas=[3], **LOOKUP)
    return Run(tmp_path, cfg, [], {3: runs}, {}, {})


def test_inapplicable_claims_get_one_row_and_their_replays_do_not_run(tmp_path, monkeypatch):
    from spectheory.validate import evidence as E
    called = []
    real = E.family_modules

    def spy():
        mods = real()
        for m in mods:
            name = m.__name__
            monkeypatch.setattr(m, "logits_evidence", lambda run, alpha, name=name: called.append(name) or {})
        return mods
    monkeypatch.setattr(E, "family_modules", spy)
    run = _lookup_run(tmp_path)
    ev = E.logits_evidence(run, alpha=1e-3)
    assert ev["sd.acceptance"][0].outcome in ("pass", "underpowered")
    for claim in ("se.acceptance", "gbv.optimal", "kseq.rho", "ecsv.majority", "sb.hrad"):
        assert len(ev[claim]) == 1 and ev[claim][0].test.startswith("does not apply: ")
    assert "spectheory.validate.replay_se" not in called and "spectheory.validate.replay_ecsv" not in called
    assert "spectheory.validate.replay_sb" in called          # sb.trunc_geom reads the SD records
    called.clear()
    only = E.logits_evidence(run, alpha=1e-3, claims=["sd.acceptance"])
    assert set(only) == {"sd.acceptance"} and called == []


def test_a_replay_feeding_an_applicable_and_an_inapplicable_claim(tmp_path, monkeypatch):
    """At T = 0 the multi-draft trace replay still runs (gbv.optimal applies) but what it says about
    SpecTr-GBV is replaced by the one 'does not apply' row."""
    from spectheory.validate import evidence as E
    import spectheory.validate.replay_multidraft as MD
    made = Evidence("logits", "γ=1 K=2 bound", 0.9, 0.9, p_value=0.5, n=10, outcome="pass")
    kept = Evidence("logits", "γ=1 K=1 optimum", 0.9, 0.9, n=10, outcome="pass")
    monkeypatch.setattr(MD, "logits_evidence", lambda run, alpha: {"spectr_gbv.attains": [made],
                                                                    "gbv.optimal": [kept]})
    run = Run(tmp_path, dict(format=RUN_FORMAT, gammas=[2], **GREEDY), [], {}, {}, {})
    ev = E.logits_evidence(run, alpha=1e-3)
    assert ev["gbv.optimal"] == [kept]
    assert [e.test.split(":")[0] for e in ev["spectr_gbv.attains"]] == ["does not apply"]


def test_table_rows_commands_and_plot(tmp_path):
    from spectheory.validate.table import format_table, plot_table, rows_from_evidence
    good = Evidence("logits", "real SD: drafting law", 0.80, 0.81, 0.79, 0.83, p_value=0.3, n=5000, detectable=0.015,
                    tolerance=0.02, outcome="pass", note="power: n needed 2100 (power 0.8) / 2800 (power 0.9, x)")
    weak = Evidence("logits", "real loop: E[τ]", 2.0, 1.9, 1.6, 2.2, p_value=0.4, n=100, detectable=0.3,
                    tolerance=0.1, outcome="underpowered")
    ctl = Evidence("logits", "broken (must fail)", 0.8, 0.95, 0.94, 0.96, p_value=1e-9, n=300, outcome="info",
                   control="rejected", test="negative control in logits mode: a broken verifier; p = 1e-09 → fails")
    info = Evidence("logits", "H-RAD on real logits", 0.0, 0.0, test="not replayed: no hidden states")
    na = Evidence("logits", "does not apply: x", None, None, test="does not apply: a reason")
    ev = {"sd.acceptance": [good, ctl], "gbv.optimal": [weak], "sb.hrad": [info], "kseq.rho": [na]}
    rows = rows_from_evidence(ev, TOPP, "data/runs/x")
    by = {(r.claim, r.role): r for r in rows}
    g = by[("sd.acceptance", "test")]
    assert (g.predicted, g.measured, g.n, g.n_needed, g.verdict) == (0.80, 0.81, 5000, 2800, "pass")
    assert g.command == "spectheory validate table data/runs/x --claims sd.acceptance"
    assert by[("gbv.optimal", "test")].n_needed == math.ceil(100 * (0.3 / 0.1) ** 2)
    assert by[("sd.acceptance", "control")].verdict == "control rejected"
    assert by[("kseq.rho", "n/a")].why == "a reason"
    assert by[("sb.hrad", "none")].verdict == "no graded test" and "hidden states" in by[("sb.hrad", "none")].why
    assert by[("ecsv.majority", "none")].verdict == "not run"     # every logits claim has a row
    text = format_table(rows)
    assert "| 5,000 / 2,800 | **pass** |" in text and "does not apply: a reason" in text
    assert "`spectheory validate table data/runs/x --claims kseq.rho`" in text
    only = rows_from_evidence({"sd.acceptance": [good]}, TOPP, "r", claims=["sd.acceptance"])
    assert [r.claim for r in only] == ["sd.acceptance"]
    png = plot_table(rows, tmp_path / "t.png")
    assert png.stat().st_size > 1000


def test_assumption_rows_by_hand():
    from spectheory.validate.table import assumption_rows
    # γ = 2; iterations: (drafted, τ) = (2, 2), (2, 1), (2, 0), (1, 1), (0, 0)
    beta = np.array([[0.9, 0.8], [0.5, 0.6], [0.4, 0.7], [0.7, np.nan], [np.nan, np.nan]])
    run = Run("r", {}, [], {2: [sd_run([2, 1, 0, 1, 0], beta, n_drafted=[2, 2, 2, 1, 0])]}, {}, {})
    (row,) = assumption_rows(run)
    alpha = (0.9 + 0.5 + 0.4 + 0.7) / 4
    assert row["alpha"] == pytest.approx(alpha) and row["drafted"] == pytest.approx(0.8)
    closed = lambda a, k: (1 - a ** (k + 1)) / (1 - a)  # noqa: E731
    want = (3 * closed(alpha, 2) + closed(alpha, 1) + 1.0) / 5
    assert row["closed_form_drafted"] == pytest.approx(want)
    assert row["measured"] == pytest.approx((3 + 2 + 1 + 2 + 1) / 5)
    d1, d2 = row["depth"]
    assert (d1["n"], d1["rate"]) == (4, 0.75)                  # four iterations drafted a first token
    assert (d2["n"], d2["rate"]) == (2, 0.5)                   # two reached a drafted second token
    cond = 1 + np.array([0.9 + 0.9 * 0.8, 0.5 + 0.3, 0.4 + 0.28, 0.7, 0.0])
    assert row["given_drafts"] == pytest.approx(cond.mean())


def test_point_mass_records_verify_only_drafted_positions():
    beta = np.array([[0.9, np.nan], [np.nan, np.nan], [0.3, 0.2]])
    r = sd_run([1, 0, 0], beta, n_drafted=[1, 0, 2])
    acc, rj, bj = r.verified()
    np.testing.assert_array_equal(acc, [1.0, 0.0])
    np.testing.assert_array_equal(bj, [0.9, 0.3])
    with pytest.raises(ValueError, match="n_drafted"):
        sd_run([0], [[0.5]], n_drafted=[2]).check()


# --- the planner: rows of different need, controls' effect sizes ----------------------------------

class _PR:
    def __init__(self, claim, test, n, v, tol=0.02):
        self.claim, self.test, self.n_had, self.var_per_trial, self.tolerance = claim, test, n, v, tol


def _loop_runs(k, family="gbv", cats=("chat", "code")):
    return [LoopRun(family, {}, [], meta=dict(name=f"p{i}", category=cats[i % 2])) for i in range(k)]


@pytest.mark.parametrize("order", [(0.05, 0.6), (0.6, 0.05)])
def test_plan_takes_each_loops_largest_need_whatever_the_row_order(monkeypatch, order):
    """A loop's tests yield different trials per prompt and variances: the loop gets the prompts of its
    most demanding test, whichever row comes first."""
    import spectheory.validate.replay_loops as RL
    from spectheory.validate.plan import plan_run
    from spectheory.validate.power import n_needed
    prs = [_PR("gbv.optimal", f"t{i}", 400, v) for i, v in enumerate(order)]
    monkeypatch.setattr(RL, "loop_tests", lambda name, runs, *a, **k: ({}, prs))
    run = Run("pilot", {}, [], {}, {"gbv": _loop_runs(4)}, {})
    plan = plan_run(run, 1e-3, margin=1.25)
    need = [math.ceil(math.ceil(1.25 * n_needed(v, 1e-3, 0.02, 0.9) / 100) / 2) for v in order]
    assert [r.per_set for r in plan.rows] == need
    assert plan.family_n == {"gbv": max(need)}


def test_control_sizing_effect():
    """A control not yet rejected is sized for max(tolerance, |d̂| − 2·se): its pilot deviation less
    two standard errors, never below the subject's tolerance."""
    from spectheory.validate.plan import _control_effect
    z = 1.959963984540054
    big = Evidence("logits", "c", 0.5, 0.6, 0.6 - z * 0.01, 0.6 + z * 0.01, outcome="pass")
    eff, why = _control_effect(big, 0.02)
    assert eff == pytest.approx(0.1 - 2 * 0.01) and "0.0800" in why
    small = Evidence("logits", "c", 0.5, 0.53, 0.53 - z * 0.01, 0.53 + z * 0.01, outcome="pass")
    assert _control_effect(small, 0.02)[0] == pytest.approx(0.02)
    nose = Evidence("logits", "c", 0.5, 0.46, outcome="pass")          # no interval: the tolerance
    assert _control_effect(nose, 0.02)[0] == pytest.approx(0.02)


def test_plan_control_rows(monkeypatch):
    import spectheory.validate.replay_loops as RL
    from spectheory.validate.plan import plan_run
    from spectheory.validate.power import n_needed
    z = 1.959963984540054
    ev_fail = Evidence("logits", "c", 0.5, 0.7, 0.69, 0.71, p_value=1e-12, outcome="fail")
    ev_pass = Evidence("logits", "c", 0.5, 0.56, 0.56 - z * 0.01, 0.56 + z * 0.01, p_value=0.1, outcome="pass")
    for ev, rejected in ((ev_fail, True), (ev_pass, False)):
        pr = _PR("kseq.rho", "t", 300, 0.2)
        monkeypatch.setattr(RL, "loop_tests", lambda name, runs, *a, ev=ev, pr=pr, **k: ({"kseq.rho": [ev]}, [pr]))
        run = Run("pilot", {}, [], {}, {"kseq-control": _loop_runs(6, "kseq")}, {})
        (row,) = plan_run(run, 1e-3).rows
        assert row.role == "control" and row.loop == "kseq-control"
        if rejected:
            assert row.prompts_needed == 6 and row.per_set == 3 and "nothing more" in row.note
        else:
            assert row.effect == pytest.approx(0.04)
            assert row.n_needed == n_needed(0.2, 1e-3, 0.04, 0.9)
            assert row.prompts_needed == math.ceil(1.25 * row.n_needed / 50)


# --- the real-pair verdict and H-RAD's folds ---------------------------------------------------------

def _t(name, outcome, n, need):
    return Evidence("logits", name, 0.5, 0.5, p_value=0.5, n=n, outcome=outcome, tolerance=0.02,
                    note=f"power: n needed 1 (power 0.8) / {need} (power 0.9, the report's grading)")


def test_real_pair_verdict_is_decided_by_its_least_powered_test():
    """Among the tests of the verdict's kind, the one with the least n / n needed decides (and is named),
    whatever the order; a passing test never decides an underpowered verdict."""
    a, b = _t("A", "pass", 1000, 500), _t("B", "pass", 1000, 900)
    for evs in ([a, b], [b, a]):
        v = verdicts.real_pair_verdict(evs)
        assert (v["verdict"], v["instance"], v["n"], v["n_needed"]) == ("holds", "B", 1000, 900)
    u = _t("U", "underpowered", 300, 400)
    sig = _t("S", "pass", 100, 1000)       # passed on significance far below its power statement's size
    for evs in ([a, u, b, sig], [sig, u, b, a]):
        v = verdicts.real_pair_verdict(evs)
        assert (v["verdict"], v["instance"], v["n_needed"]) == ("underpowered", "U", 400)
    f = _t("F", "fail", 5000, 100)
    assert verdicts.real_pair_verdict([u, f, b])["instance"] == "F"


def test_cross_validation_folds_are_balanced():
    """Every prompt in one fold; within each category the folds' shares differ by at most one, and so
    do the folds' sizes overall (the deal continues across categories)."""
    from spectheory.validate.replay_sb import cv_folds
    cats = ["code"] * 7 + ["chat"] * 3 + ["poetry"] * 5 + ["chat"] * 4
    for seed in range(5):
        fold = cv_folds(cats, 5, np.random.default_rng(seed))
        assert fold.shape == (len(cats),) and set(fold) <= set(range(5))
        sizes = np.bincount(fold, minlength=5)
        assert sizes.max() - sizes.min() <= 1, sizes
        for c in set(cats):
            share = np.bincount(fold[[i for i, x in enumerate(cats) if x == c]], minlength=5)
            assert share.max() - share.min() <= 1, (c, share)
    periodic = ["x" if i % 5 == 0 else "y" for i in range(20)]   # a category on every fifth prompt
    fold = cv_folds(periodic, 5, np.random.default_rng(1))
    assert np.bincount(fold[::5], minlength=5).max() == 1
    again = cv_folds(cats, 5, np.random.default_rng(0))
    np.testing.assert_array_equal(again, cv_folds(cats, 5, np.random.default_rng(0)))


# --- the command line ------------------------------------------------------------------------------

def test_table_command_on_a_run_directory(tmp_path):
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    run = _lookup_run(tmp_path)
    d = tmp_path / "lookup"
    for r in run.sd[3]:
        f = d / "sd" / "g3" / r.meta["category"] / f"{r.meta['name']}.npz"
        f.parent.mkdir(parents=True, exist_ok=True)
        r.save(f)
    (d / "run.json").write_text(json.dumps(run.config))
    res = CliRunner().invoke(app, ["validate", "table", str(d), "--claims", "sd.acceptance,kseq.*",
                                   "--json", str(tmp_path / "t.json"), "--plot", str(tmp_path / "t.png")])
    assert res.exit_code == 0, res.output
    assert f"spectheory validate table {d} --claims sd.acceptance" in res.output
    assert "does not apply: K i.i.d. drafts" in res.output
    assert "acceptance at depth" in res.output
    data = json.loads((tmp_path / "t.json").read_text())
    assert {r["claim"] for r in data["rows"]} == {"sd.acceptance", "kseq.rho"}
    bad = CliRunner().invoke(app, ["validate", "table", str(d), "--claims", "nope.*"])
    assert bad.exit_code == 2 and "no logits claim" in bad.output


def test_html_report_carries_the_table():
    """verify --logits puts the run's table in its HTML report (rows as spectheory.validate.table writes them)."""
    from spectheory.sims.report_html import _logits_table
    from spectheory.validate.table import rows_from_evidence
    e = Evidence("logits", "real SD: drafting law", 0.8, 0.81, 0.79, 0.83, p_value=0.3, n=5000, detectable=0.015,
                 tolerance=0.02, outcome="pass")
    rows = rows_from_evidence({"sd.acceptance": [e]}, GREEDY, "data/runs/g", claims=["sd.acceptance", "kseq.rho"])
    html = _logits_table({"logits_table": {"run": "data/runs/g", "rows": [r.to_json() for r in rows]}})
    assert "greedy (T = 0)" in html and "spectheory validate table data/runs/g --claims sd.acceptance" in html
    assert "not run: this run holds no records" in html and "5,000 / 5,000" not in html
    assert _logits_table({}) == ""


def test_plan_sizes_real_sd_and_says_so_in_the_command(tmp_path):
    """Real SD's pooled tests are sized like a loop's, and the printed command asks for their prompts
    per set with -n."""
    from spectheory.validate.plan import plan_run
    run = _lookup_run(tmp_path)
    plan = plan_run(run, 2.75e-5)
    sd_rows = [r for r in plan.rows if r.loop == "sd"]
    assert {r.claim for r in sd_rows} == {"sd.acceptance", "sd.expected_tokens"}
    assert plan.family_n["sd"] == max(r.per_set for r in sd_rows) >= 1
    cmd = plan.command("OUT")
    assert f" -n {plan.family_n['sd']} " in cmd and "--drafter prompt-lookup --gammas 3" in cmd
    assert "--families ''" in cmd and "--capture-n 0" in cmd


def test_the_plans_command_resumes_its_pilot_as_the_command_line_reads_it(tmp_path, monkeypatch):
    """The printed command repeats the pilot's setup (a resumed run refuses another) and the larger of
    what the pilot holds and what the plan needs; the command line parses it (stopped here at the run
    directory check, before any model loads)."""
    import shlex

    from typer.testing import CliRunner

    import spectheory.validate.replay_loops as RL
    from spectheory.cli.main import app
    from spectheory.validate.plan import plan_run
    prs = [_PR("gbv.optimal", "t", 400, 0.6)]
    monkeypatch.setattr(RL, "loop_tests", lambda name, runs, *a, **k: ({}, prs if name == "gbv" else []))
    cfg = dict(temperature=0.7, top_p=0.9, gammas=[1, 2, 4], max_new_tokens=64,
               prompts=[dict(name=f"p{i}", category=c) for i, c in enumerate(["code", "poetry"] * 3)])
    cats = ("poetry", "code")   # the sets the loops ran on name --prompts
    run = Run("pilot", cfg, [], {}, {"gbv": _loop_runs(4, cats=cats), "kseq": _loop_runs(6, "kseq", cats)}, {})
    plan = plan_run(run, 1e-3)
    cmd = plan.command("NEW")
    assert "-t 0.7 --top-p 0.9 --gammas 1,2,4 --max-new-tokens 64 --prompts human-eval,sonnets" in cmd
    need = plan.family_n["gbv"]
    assert f"--family-n gbv={need},kseq=3" in cmd        # the pilot's kseq prompts are kept, not dropped
    f = tmp_path / "afile"
    f.write_text("")
    argv = shlex.split(cmd)[1:]
    argv[argv.index("--out") + 1] = str(f)
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2 and "is a file, not a run" in " ".join(res.output.replace("│", " ").split()), res.output


def test_assumption_rows_per_category_and_pooled():
    from spectheory.validate.table import assumption_rows
    a = sd_run([1, 0], [[0.9], [0.2]], name="a", category="code")
    b = sd_run([0, 0, 1], [[0.1], [0.3], [0.6]], name="b", category="chat")
    rows = assumption_rows(Run("r", {}, [], {1: [a, b]}, {}, {}))
    by = {r["category"]: r for r in rows}
    assert [r["category"] for r in rows] == ["chat", "code", "all"]
    assert by["code"]["alpha"] == pytest.approx(0.55) and by["chat"]["alpha"] == pytest.approx(1.0 / 3)
    assert by["all"]["alpha"] == pytest.approx(2.1 / 5) and by["all"]["iterations"] == 5
