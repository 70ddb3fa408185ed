"""Public Monte Carlo API: validate input, own the random state, call the compiled kernels."""
