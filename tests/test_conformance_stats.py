"""spectheory.judge.stats.chisquare_gof's degenerate case (issue 10 item 6), on which the conformance
checks of point-mass laws (p = q point masses, disjoint supports, one-token vocabularies) rely."""
import numpy as np
import pytest

from spectheory.judge import stats


def test_single_outcome_law_is_an_exact_check():
    """A point-mass law passes when every draw lands in its cell and fails on one draw
    outside, instead of `underpowered`."""
    ev = stats.chisquare_gof("t", np.array([0, 500, 0]), np.array([0.0, 1.0, 0.0]), alpha=1e-3, tolerance_w=0.1)
    assert ev.outcome == "pass" and ev.n == 500 and ev.detectable == pytest.approx(1 - 0.1 ** (1 / 500))
    ev = stats.chisquare_gof("t", np.array([1, 499, 0]), np.array([0.0, 1.0, 0.0]), alpha=1e-3, tolerance_w=0.1)
    assert ev.outcome == "fail" and ev.p_value == 0.0
    # pooled to one cell with a support of two outcomes: still underpowered, not an exact check
    ev = stats.chisquare_gof("t", np.array([3, 0]), np.array([0.999, 0.001]), alpha=1e-3, tolerance_w=0.1)
    assert ev.outcome == "underpowered"
