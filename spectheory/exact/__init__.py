"""Exact engines: the output distribution of a verification algorithm computed by
enumerating every draw on a small instance (float64). One module per algorithm family."""
