"""Compiled Monte Carlo kernels (Numba, ``nopython``). Pure: arrays in, arrays out, the
randomness passed in as pre-drawn uniforms, the output preallocated by the caller. The
public API that validates input and owns the random state lives in
:mod:`spectheory.montecarlo`."""
