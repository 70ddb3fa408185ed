"""A toy claim file the own-claims tests write variants of: ``HEADER`` (imports, a subject, a
broken control, a check) and ``TOY`` (one claim, ``toy.zero``, that holds)."""

HEADER = '''
import numpy as np
from spectheory.sims.registry import Control, Part, register
from spectheory.judge.evidence import Evidence


def good(x):
    return x


def bad(x):
    return x + 1


def check(ctx, subject):
    return [Evidence("exact", "toy", 0.0, float(subject(0)), outcome="pass" if subject(0) == 0 else "fail")]
'''


TOY = '''
register(id="toy.zero", relation="=", paper="leviathan2023", reference="toy", statement="f(0) = 0.",
         check=check, subject=good, modes=("exact",), controls=(Control("plus one", bad, "f(0) = 1"),))
'''
