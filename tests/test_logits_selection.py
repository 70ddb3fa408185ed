"""Replays that do only what was asked: ``verify --logits RUN --claims ...`` runs only the logits
replays the selected claims need (spectheory.validate.evidence.REPLAY_CLAIMS: which claims each replay feeds),
and its progress lines name each replay, the claims it feeds and its ETA."""
from __future__ import annotations

from pathlib import Path

import pytest

from spectheory.sims.registry import load_all
from spectheory.cli import runs
from spectheory.validate import evidence as ev
from spectheory.validate.experiment import load_run

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def test_every_replay_is_mapped_to_registered_claims():
    names = ev.replays_for()
    assert names[0] == "sd" and set(names) == set(ev.REPLAY_CLAIMS), set(names) ^ set(ev.REPLAY_CLAIMS)
    known = set(load_all())
    for name, claims in ev.REPLAY_CLAIMS.items():
        assert claims and set(claims) <= known, (name, set(claims) - known)


@pytest.mark.parametrize("run_name, names", [("qwen2.5-coder-T0", None), ("qwen2.5-coder-T1-b32", ["loops"])])
def test_each_replay_gives_evidence_only_to_the_claims_it_is_mapped_to(run_name, names):
    """Run each replay alone on a small shipped run: the claims it gives evidence to are among those
    REPLAY_CLAIMS lists for it (else a selection would skip a replay a claim needs)."""
    run = load_run(RUNS / run_name)
    mods = {ev.replay_name(m): m for m in ev.family_modules()}
    for name in names or ev.replays_for():
        got = ev.sd_evidence(run, 1e-4) if name == "sd" else mods[name].logits_evidence(run, 1e-4)
        assert set(got) <= set(ev.REPLAY_CLAIMS[name]), (name, set(got) - set(ev.REPLAY_CLAIMS[name]))
        if names:
            assert got, name  # the families' loops run on this run: the check is not vacuous


def test_the_selected_claims_choose_the_replays(monkeypatch):
    assert ev.replays_for(["sd.acceptance", "sd.walltime"]) == ["sd"]
    assert ev.replays_for(["sd.lossless"]) == []  # no logits evidence for it: nothing replayed
    assert ev.replays_for(["se.thm3_1"]) == ["se"]
    assert set(ev.replays_for(["gbv.optimal"])) == {"loops", "multidraft"}
    assert set(ev.replays_for(["ersd.lemma3_1"])) == {"ersd", "loops"}
    assert ev.replays_for() == ev.replays_for(list(load_all()))
    import types
    extra = types.ModuleType("validate.replay_newfamily")
    extra.logits_evidence = lambda run, alpha: {}
    monkeypatch.setattr(ev, "family_modules", lambda _orig=ev.family_modules: _orig() + [extra])
    assert ev.replays_for(["sd.acceptance"]) == ["sd", "newfamily"]  # a replay not mapped yet always runs


def test_logits_evidence_runs_only_the_needed_replays_and_reports_each(monkeypatch):
    run = load_run(RUNS / "qwen2.5-coder-T0")
    for m in ev.family_modules():
        monkeypatch.setattr(m, "logits_evidence", lambda *a, _n=m.__name__, **k: pytest.fail(f"{_n} replayed"))
    calls = []
    got = ev.logits_evidence(run, 1e-4, claims=["sd.acceptance"], starting=lambda *a: calls.append(("start", *a)),
                             progress=lambda i, n, name, secs: calls.append(("done", i, n, name)))
    assert set(got) == {"sd.acceptance"}  # the claims asked for, not everything the SD replay feeds
    assert calls == [("start", 1, 1, "sd"), ("done", 1, 1, "sd")]


def test_the_progress_lines_name_each_replay_its_claims_and_its_eta(monkeypatch):
    lines = []
    run_dir = RUNS / "qwen2.5-coder-T0"
    extra = runs.real_logits_evidence(run_dir, 0.01, ["se.thm3_1", "sd.acceptance"], log=lines.append)
    assert {"se.thm3_1", "sd.acceptance"} <= set(extra) and not {"ecsv.majority", "sb.hrad"} & set(extra)
    assert lines[0] == f"loading the logits run {run_dir} …"
    assert lines[1].startswith("logits replays the selected claims need: sd, se (2 of 7; ")
    assert lines[1].endswith(" in all, estimated from the run's size)")
    assert lines[2].startswith("logits replay 1/2: sd (for sd.acceptance, sd.expected_tokens, sd.walltime): ")
    assert "all replays done about " in lines[2]
    assert lines[3].startswith("logits replay 1/2: sd done in ")
    assert lines[4].startswith("logits replay 2/2: se (for se.acceptance, se.thm3_1, se.thm3_2): ")
    assert lines[5].startswith("logits replay 2/2: se done in ") and len(lines) == 6
    assert runs.real_logits_evidence(run_dir, 0.01, ["sd.lossless"]) == {}
    assert [runs._about(s) for s in (0.2, 40, 480)] == ["under a second", "about 40 s", "about 8 min"]


def test_a_replays_estimate_scales_with_the_data_it_reads():
    decisive = runs.replay_estimates(RUNS / "qwen2.5-coder-T1-decisive", list(runs.REPLAY_SECONDS))
    for name, secs in runs.REPLAY_SECONDS.items():
        assert decisive[name] == pytest.approx(secs, rel=1e-9), name  # the run they were measured on
    small = runs.replay_estimates(RUNS / "qwen2.5-coder-T0", ["sd", "ecsv"])
    assert 0 < small["ecsv"] < runs.REPLAY_SECONDS["ecsv"] / 10 and 0 < small["sd"] < runs.REPLAY_SECONDS["sd"]
