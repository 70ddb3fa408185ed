"""CLAIMS §3 registration and a quick run of three of its checks through the runner (the rest run
in `spectheory verify`): every id registered with controls covering its modes, Alg. 3 holds against
exhaustive search with the breadth-first builder rejected, and the reconstructed eq. 6 fails with
the smallest counterexample (V = 2)."""
from __future__ import annotations

from sims.registry import load_all
from sims.runner import run_claims

IDS = ("ersd.lossless", "ersd.lemma3_1", "ersd.batch_crossover", "opt_tree.greedy", "tunstall.thm4_1",
       "tunstall.lemma4_2", "entropy.kl_lower", "entropy.upper", "zero_order.underestimates",
       "opt_tree.log_growth")


def test_all_section3_ids_registered():
    reg = load_all()
    for cid in IDS:
        c = reg[cid]
        assert c.controls, cid
        covered = {m for ctl in c.controls for m in c.control_modes(ctl)}
        assert set(c.modes) - {"logits"} <= covered


def test_quick_run_verdicts():
    rep = run_claims("opt_tree.greedy,entropy.kl_lower,tunstall.thm4_1", quick=True, progress=False)
    by = {c["id"]: c for c in rep["claims"]}
    assert by["opt_tree.greedy"]["verdict"] == "holds"
    assert by["tunstall.thm4_1"]["verdict"] == "holds"
    kl = by["entropy.kl_lower"]
    assert kl["verdict"] == "fails"
    assert kl["counterexample"]["V"] == 2 and kl["counterexample"]["order"] == 0
    for c in by.values():
        assert all(ctl["verdict"] == "fails" for ctl in c["controls"]), c["id"]
