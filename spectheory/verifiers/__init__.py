"""Single-call verifiers: given the target's and draft's distributions along one drafted block
(from real logits or anywhere else) and the drafted tokens, run the verification once.
One module per algorithm family."""
