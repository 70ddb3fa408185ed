"""Shared small instances of the SpecBranch (sb) family's tests."""
from __future__ import annotations

import numpy as np

from spectheory.pairs import bimodal_pair, pair_from_tables
from spectheory.rules import sb as R

#: i.i.d. pair with α = Σ min(p, q) = 0.8
IID = pair_from_tables(np.array([0.5, 0.3, 0.2]), np.array([0.3, 0.3, 0.4]))
ALPHA_IID = 0.8
#: order-1 pair, V = 4: easy and hard contexts, branch counts k = (3, 2, 3, 1) at k_max = 6
M4 = bimodal_pair(4, 1, hard_fraction=0.5, hard_strength=0.9, concentration=1.0, seed=4)
#: an H-RAD-like policy table (every signal possible in every state)
POLICY = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3]])
PIPE = R.Pipeline(3, c=2.5, k_max=6, eps=0.45, policy_table=POLICY)


def with_rule(rule: R.BranchRule) -> R.Method:
    """SpecBranch with another branch rule."""
    return R.Method(f"specbranch[{rule.name}]", "pipeline", branching=True, policy="hrad", branch_rule=rule)


CORRECT = (R.AR, R.SPS, R.PSD, R.PEARL, R.SPECBRANCH, R.SB_NO_BRANCH, R.SB_NO_HRAD)
#: controls that change the law of the emitted tokens on a Markov source (the rest change only rates)
LAW_CONTROLS = (R.BROKEN_PEARL_KEEPS_OVERLAP, R.BROKEN_PSD_KEEPS_OVERLAP, R.BROKEN_SPS_SWAPPED, R.BROKEN_SB_FIRST_BRANCH)
ALL_METHODS = CORRECT + R.CONTROLS + tuple(with_rule(r) for r in R.BRANCH_RULES)


def iid_pair(alpha: float):
    """A two-token i.i.d. pair with Σ min(p, q) = alpha."""
    d = (1.0 - alpha) / 2
    return pair_from_tables(np.array([0.5 + d, 0.5 - d]), np.array([0.5 - d, 0.5 + d]))
