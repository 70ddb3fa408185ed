"""spectheory: exact verifiers, closed forms and Monte Carlo for the theory of speculative decoding."""
__version__ = "0.2.0"
