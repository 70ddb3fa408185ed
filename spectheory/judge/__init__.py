"""The judge: how evidence becomes a verdict, written once for every user of it.

Ground floor (it imports numpy and scipy, nothing of ours above ``spectheory``), so that the
claim registry (``sims``), the conformance checks (:mod:`spectheory.conformance`), the real-model
replays (``validate``) and the command line all reach the same verdict the same way:

* :mod:`.evidence`: the :class:`Evidence` record (one comparison of a claimed with a measured
  value), its outcomes and :func:`combine`;
* :mod:`.stats`: the statistical tests that produce evidence (exact comparisons, chi-square,
  z-tests, per-state binomial, bounds, scaling exponents), each stating its power;
* :mod:`.verdicts`: aggregation per mode, per part of a claim, and of negative controls;
* :mod:`.format`: number formatting, JSON writing and the run's provenance (versions).

Importing this package loads no kernels (no Numba) and no torch.
"""
from .evidence import MODES, OUTCOMES, VERDICTS, Evidence, combine

__all__ = ["Evidence", "combine", "MODES", "OUTCOMES", "VERDICTS"]
