"""Closed forms of the papers' acceptance and speedup claims, one module per family, plus
the exact dynamic programs over Markov chains that the closed forms approximate."""
