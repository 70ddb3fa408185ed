"""Plots that show the finding: each panel's title says what it draws (never a bare count), one
legend on the figure says what dashed (claimed) and dots (measured) mean, the part behind a `fails`
or `depends` headline is drawn first in a panel that names it (also when its evidence is only a
comparison or a test, and also when the figure is full), and no two labels overlap
(``label_overlaps``, which a crowded figure must fail)."""
from __future__ import annotations

import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from spectheory.sims.report_html import _panels, claim_plot, focus_parts, label_overlaps  # noqa: E402


def _ev(part, instance, claimed, measured, outcome="pass", mode="exact", test="exact value vs formula, |Δ| ≤ 1e-10",
        points=None, p_value=None, ci=None, alpha=None):
    return {"mode": mode, "part": part, "instance": instance, "claimed": claimed, "measured": measured,
            "ci_low": None if ci is None else ci[0], "ci_high": None if ci is None else ci[1], "p_value": p_value,
            "n": None, "test": test, "alpha": alpha, "power": None, "detectable": None, "tolerance": 1e-10,
            "outcome": outcome, "note": "", "points": points}


def _sweep(part, instance, outcome="pass", test="exact E[tokens] vs closed form, |Δ| ≤ 1e-10", shift=0.0, x="gamma"):
    pts = [{x: g, "claimed": 1.0 + g, "measured": 1.0 + g + shift * g, "outcome": outcome if g == 3 else "pass"}
           for g in (1, 2, 3)]
    return _ev(part, f"{instance} γ=1..3", 4.0, 4.0 + 3 * shift, outcome, test=test, points=pts)


def _claim(parts, evidence, verdict, principal=None):
    principal = principal or [p for p, _ in parts]
    return {"id": "toy.claim", "verdict": verdict, "relation": "=",
            "parts": [{"id": p, "relation": "=", "verdict": v, "statement": p, "checkable": True}
                      for p, v in parts],
            "readings": [{"id": "paper", "role": "principal", "parts": principal, "verdict": verdict}],
            "evidence": evidence}


def _titles(fig):
    return [ax.get_title() for ax in fig.axes if ax.get_visible()]


def test_panel_titles_say_what_is_plotted_and_the_figure_has_a_legend():
    claim = _claim([("a", "holds")], [_sweep("a", f"inst{i}") for i in range(3)]
                   + [_ev("a", f"cmp{i}", 0.1 * i, 0.1 * i + 0.01) for i in range(4)]
                   + [_ev("a", f"mc{i}", 0.5, 0.5, mode="mc", p_value=0.3, alpha=1e-3, test="chi-square test")
                      for i in range(2)], "holds")
    fig, caption = claim_plot(claim)
    titles = _titles(fig)
    assert len(titles) == 3
    for t in titles:
        assert not re.fullmatch(r"\d+ (sweeps|comparisons|statistical tests?)", t), t
    assert titles[0].replace("\n", " ").startswith("E[tokens] vs closed form against γ, 3 instances")
    assert "measured against claimed value vs formula, 4 comparisons" in titles[1].replace("\n", " ")
    assert titles[2].replace("\n", " ") == "p-values of 2 Monte Carlo tests"
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert labels[:2] == ["claimed (dashed)", "measured (dots)"] and "fails there (red)" not in labels
    assert any(lab.startswith("per-test α (dotted)") for lab in labels)
    assert label_overlaps(fig) == []
    plt.close(fig)


@pytest.mark.parametrize("kind", ["sweep", "plain", "tests"])
def test_the_failing_part_behind_the_headline_comes_first_and_is_named(kind):
    """The failing part's evidence is whatever it has: a sweep, one comparison, or a test; the other
    part's larger sweeps (which fill the figure) never push it out."""
    bad = {"sweep": [_sweep("bad", "b0", outcome="fail", shift=0.2)],
           "plain": [_ev("bad", "only-one", 0.0, -0.005, "fail", test="exact slack of the bound ≥ bound (tol 1e-10)")],
           "tests": [_ev("bad", "mc0", 0.0, 0.1, "fail", mode="mc", p_value=1e-9, alpha=1e-3,
                         test="one-sided z-test of the gap ≥ bound (CLT)")]}[kind]
    good = [_sweep("good", f"g{i}", test=f"exact quantity{i} vs formula, |Δ| ≤ 1e-10", x=f"k{i}") for i in range(6)]
    claim = _claim([("good", "holds"), ("bad", "fails")], good + bad, "fails")
    assert focus_parts(claim) == ["bad"]
    panels, skipped = _panels(claim)
    assert panels[0][0] == kind and panels[0][2] is True and len(panels) == 4 and skipped >= 1
    fig, caption = claim_plot(claim)
    first = fig.axes[0].get_title().replace("\n", " ")
    assert first.startswith("part bad (fails): "), first
    assert caption.startswith("First: the part behind the headline (bad)")
    assert "fails there (red)" in [t.get_text() for leg in fig.legends for t in leg.get_texts()] or kind == "tests"
    assert label_overlaps(fig) == []
    plt.close(fig)


def test_a_depends_headline_draws_the_part_that_fails_at_the_default_not_the_one_that_holds():
    claim = _claim([("sequence", "holds"), ("batch-moderate", "fails")],
                   [_sweep("sequence", f"s{i}") for i in range(3)]
                   + [_ev("batch-moderate", f"pair{i}", 0.0, -0.01 * (i + 1), "fail",
                          test="exact τ − |gap| ≥ bound (tol 1e-10)") for i in range(3)], "depends")
    fig, _ = claim_plot(claim)
    assert fig.axes[0].get_title().replace("\n", " ").startswith("part batch-moderate (fails): measured τ − |gap|")
    plt.close(fig)
    assert focus_parts({**claim, "verdict": "holds"}) == []
    other_reading = _claim([("a", "holds"), ("b", "fails")], [], "holds", principal=["a"])
    assert focus_parts(other_reading) == []  # a failing alternative reading is not the headline's


def test_label_overlaps_sees_what_a_reader_cannot_read():
    """Not vacuous: two texts on top of each other, crowded turned tick labels and a text off the
    figure's edge are each found; the same labels thinned are not."""
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
    ax.text(0.52, 0.5, "second label", transform=ax.transAxes)
    assert ("first label", "second label") in label_overlaps(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2), layout="constrained")
    ax.set_xticks(range(30))
    ax.set_xticklabels([f"a-long-instance-name-{i}" for i in range(30)], rotation=50, ha="right",
                       rotation_mode="anchor", fontsize=6)
    assert label_overlaps(fig)
    ax.set_xticks(range(0, 30, 10))
    ax.set_xticklabels([f"inst-{i}" for i in range(0, 30, 10)], rotation=50, ha="right", rotation_mode="anchor",
                       fontsize=6)
    assert label_overlaps(fig) == []
    fig.text(0.98, 0.5, "off the edge of the figure")
    assert ("off the edge of the figure", "<edge>") in label_overlaps(fig)
    plt.close(fig)
