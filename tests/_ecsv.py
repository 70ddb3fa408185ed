"""Test helpers shared by the ECSV tests (one copy: tests/test_ecsv_kernel.py,
tests/test_kernel_exact_instances.py and tests/test_shared_references.py use it)."""
from __future__ import annotations

import numpy as np


def kernel_fuse_all(setup, s0):
    """``(branch tuples, the kernel's fusion, the exact engine's)`` on every enumerated branch tuple
    of ``setup`` from state ``s0``: the kernel's ``_fuse`` row by row, the exact engine's ``fuse``."""
    from spectheory._kernels import ecsv as K
    from spectheory.exact import ecsv as ex
    from spectheory.montecarlo import ecsv as mc
    T = mc.tables(setup)
    W = K._make_work(T.B, T.d, T.V)
    tok, st, _ = ex._enumerate(setup, s0)
    out = np.empty((tok.shape[0], setup.d), dtype=np.int64)
    for i in range(tok.shape[0]):
        W.tok[:] = tok[i]
        W.bst[:] = st[i]
        K._fuse(T, W, s0)
        out[i] = W.fused
    return tok, out, ex.fuse(setup, tok, st, s0)[0]
