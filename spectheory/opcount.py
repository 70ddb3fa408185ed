"""Counted operations: a deterministic measure of the work a piece of Python does.

Complexity claims ("one step costs O(V)") are decided from what an implementation *does*, not from
how long it took on a shared machine: :func:`count_opcodes` runs a function under a tracer and
counts every bytecode instruction it executes, in it and in every Python function it calls (a call
into C — a builtin, a NumPy routine — counts as the one instruction that makes it, so the counted
implementations are plain Python loops). The count depends on the code and its inputs only: the
same call gives the same count on a loaded machine and an idle one (for one interpreter version;
CPython 3.11 here). Wall-clock times are reported beside it as information.

    >>> from spectheory.opcount import count_opcodes
    >>> value, n = count_opcodes(sum, [1, 2, 3])     # a builtin: no Python bytecode inside
    >>> value, n
    (6, 0)
"""
from __future__ import annotations

import gc
import sys
from typing import Any, Callable


def count_opcodes(fn: Callable, *args, **kwargs) -> tuple[Any, int]:
    """``(fn(*args, **kwargs), number of bytecode instructions executed in Python frames)``.

    Frames entered during the call (``fn`` itself when it is Python code, and everything it calls
    in Python) are traced opcode by opcode (``frame.f_trace_opcodes``); any tracer already
    installed (a debugger, coverage) is put back afterwards. The garbage collector is paused
    meanwhile: a collection would run other objects' finalizers inside the traced call, and their
    bytecodes would be counted, differently from one call to the next."""
    if not callable(fn):
        raise TypeError(f"count_opcodes needs a callable, got {type(fn).__name__}")
    n = 0

    def tracer(frame, event, arg):
        nonlocal n
        if event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
        elif event == "opcode":
            n += 1
        return tracer

    old, collecting = sys.gettrace(), gc.isenabled()
    gc.disable()
    sys.settrace(tracer)
    try:
        out = fn(*args, **kwargs)
    finally:
        sys.settrace(old)
        if collecting:
            gc.enable()
    return out, n
