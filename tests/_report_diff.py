"""Compare two `spectheory verify` JSON reports field by field (issue 15's invariant).

Claim by claim and evidence item by evidence item (subject and every control), the verdicts and
every number of every evidence item must be identical: mode, instance, claimed, measured, CI,
p, n, alpha, power, detectable, tolerance, outcome. Timings (``seconds``, ``run``) and fields
that one report has and the other lacks (new fields of a later schema) are not compared.
The ``info`` evidence of claims that report wall-clock timings beside their graded counts
(``TIMING_CLAIMS``) is compared in its outcome only: its numbers are measurements of the machine.
Their graded evidence (counted operations, deterministic) is compared number by number like any
other.

    .venv/bin/python tests/_report_diff.py BASE.json NEW.json     # exit 1 and list differences

Used by tests/test_registry_cli.py on the quick tier of ``sd.*`` against a checked-in fixture.
"""
from __future__ import annotations

import json
import sys

#: claims whose info evidence holds wall-clock measurements (its outcome still compared)
TIMING_CLAIMS = ("spectr_gbv.cost",)
EVIDENCE_FIELDS = ("mode", "instance", "claimed", "measured", "ci_low", "ci_high", "p_value", "n", "alpha",
                   "power", "detectable", "tolerance", "outcome")


def _evidence(where: str, a: list, b: list, timing: bool) -> list[str]:
    out = []
    if len(a) != len(b):
        return [f"{where}: {len(a)} evidence items before, {len(b)} after"]
    for i, (x, y) in enumerate(zip(a, b)):
        wall_clock = timing and "info" in (x.get("outcome"), y.get("outcome"))
        fields = ("mode", "instance", "outcome") if wall_clock else EVIDENCE_FIELDS
        diff = [f"{k}: {x.get(k)!r} → {y.get(k)!r}" for k in fields if x.get(k) != y.get(k)]
        if diff:
            out.append(f"{where} evidence #{i} ({x.get('instance')}): " + "; ".join(diff))
    return out


def diff_reports(base: dict, new: dict, claims=None) -> list[str]:
    """Differences between two reports (empty: identical in verdicts, controls and numbers).
    ``claims``: compare only these ids (default: every claim of ``base``)."""
    old = {c["id"]: c for c in base["claims"]}
    cur = {c["id"]: c for c in new["claims"]}
    ids = list(old) if claims is None else list(claims)
    out = []
    for cid in ids:
        if cid not in cur or cid not in old:
            out.append(f"{cid}: missing from the {'new' if cid not in cur else 'base'} report")
            continue
        a, b = old[cid], cur[cid]
        timing = cid in TIMING_CLAIMS
        if a["verdict"] != b["verdict"]:
            out.append(f"{cid}: verdict {a['verdict']} → {b['verdict']}")
        out += _evidence(cid, a["evidence"], b["evidence"], timing)
        ka = {k["name"]: k for k in a["controls"]}
        kb = {k["name"]: k for k in b["controls"]}
        if list(ka) != list(kb):
            out.append(f"{cid}: controls {list(ka)} → {list(kb)}")
            continue
        for name in ka:
            if ka[name]["verdict"] != kb[name]["verdict"]:
                out.append(f"{cid} [control {name}]: verdict {ka[name]['verdict']} → {kb[name]['verdict']}")
            if ka[name].get("modes") != kb[name].get("modes"):
                out.append(f"{cid} [control {name}]: per mode {ka[name].get('modes')} → {kb[name].get('modes')}")
            out += _evidence(f"{cid} [control {name}]", ka[name]["evidence"], kb[name]["evidence"], timing)
    return out


def summary(base: dict, new: dict) -> str:
    n_claims = len(base["claims"])
    n_ev = sum(len(c["evidence"]) + sum(len(k["evidence"]) for k in c["controls"]) for c in base["claims"])
    n_ctl = sum(len(c["controls"]) for c in base["claims"])
    return f"{n_claims} claims, {n_ctl} controls, {n_ev} evidence items compared"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__)
        return 2
    base, new = (json.loads(open(p, encoding="utf-8").read()) for p in argv)
    diffs = diff_reports(base, new)
    print(summary(base, new) + (": identical" if not diffs else f": {len(diffs)} differences"))
    for d in diffs:
        print("  " + d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
