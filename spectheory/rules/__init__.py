"""Verification rules: what a verifier does with a drafted token, one module per algorithm
family. A rule is plain data that both the exact engine (:mod:`spectheory.exact`) and the
Monte Carlo kernels (:mod:`spectheory._kernels`) interpret, so a deliberately broken rule
(a negative control) runs through exactly the same machinery as the correct one."""
