"""Every printed number is recomputed by the call printed beside it (issue 24, item 5).

A report prints, beside each counterexample, least-slack record (a part's, and a hold's least slack over
its open choices) and out-of-scope finding, one line
of Python (``call``) that recomputes its numbers. :func:`mismatches` runs every such call of a
report with :func:`spectheory.sims.shrink.recompute` and compares what it returns with the printed numbers at
the precision the report prints them (a counterexample's claimed and measured: 6 significant
digits, :func:`spectheory.judge.format.fmt`; a least slack: 4, :func:`spectheory.sims.report.short_fmt`). A
counterexample's call returns both numbers, ``(claimed, measured, ...)``, as the report's "Recompute
both numbers" says (a call returning the measured value alone does not reproduce it)::

    python -m spectheory.sims.reproduce reports/verify.json     # exit 1 and list the calls that do not reproduce
"""
from __future__ import annotations

import argparse
import json
import sys

from spectheory.judge.format import fmt

from .report import short_fmt
from .shrink import recompute


def printed_calls(report: dict, controls: bool = True) -> list[dict]:
    """Every (claim, where, call, printed numbers) of a report: the counterexamples of the claim, its
    parts and (``controls``) its controls, the least-slack records of its parts and controls, its
    scope findings."""
    out = []

    def cex(cid, where, x):
        if x and x.get("call"):
            out.append({"claim": cid, "where": where, "kind": "counterexample", "call": x["call"],
                        "printed": {"claimed": x.get("claimed"), "measured": x.get("measured")}})

    def slack(cid, where, rec):
        if rec and rec.get("call") and rec.get("value") is not None:
            out.append({"claim": cid, "where": where, "kind": "least slack", "call": rec["call"],
                        "printed": {"value": rec["value"]}})
    for c in report["claims"]:
        seen = set()
        for p in c.get("parts") or []:
            x = p.get("counterexample")
            if x and x.get("call"):
                seen.add(x["call"])
            cex(c["id"], f"part {p['id']}", x)
            slack(c["id"], f"part {p['id']}", p.get("least_slack"))
        top = c.get("counterexample")
        if top and top.get("call") not in seen:
            cex(c["id"], "claim", top)
        for k in (c.get("controls") or []) if controls else []:
            cex(c["id"], f"control {k['name']}", k.get("counterexample"))
            for pid, rec in (k.get("least_slack") or {}).items():
                slack(c["id"], f"control {k['name']} part {pid}", rec)
        for pid, rec in (c.get("least_slack_over_choices") or {}).items():
            slack(c["id"], f"part {pid} over the choices", rec)
        for f in (c.get("scope") or {}).get("out_of_scope") or []:
            if f.get("call"):
                out.append({"claim": c["id"], "where": f"outside the scope ({f.get('part')})",
                            "kind": "counterexample", "call": f["call"],
                            "printed": {"claimed": f.get("claimed"), "measured": f.get("measured")}})
    return out


def _same(printed, got, digits) -> bool:
    show = fmt if digits == 6 else short_fmt
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    return show(printed if not isinstance(printed, (int, float)) else float(printed)) == show(got)


def check_call(item: dict) -> dict | None:
    """Run one printed call; None if it reproduces the printed numbers, else what differs."""
    try:
        out = recompute(item["call"])
    except Exception as err:  # noqa: BLE001 - a call that raises does not reproduce, said so
        return {**item, "got": f"raised {type(err).__name__}: {err}"}
    if item["kind"] == "least slack":
        got = {"value": out if not isinstance(out, (tuple, list)) else out[0]}
        ok = _same(item["printed"]["value"], got["value"], 4)
    else:
        if not isinstance(out, (tuple, list)) or len(out) < 2:
            return {**item, "got": f"not a (claimed, measured, ...) tuple: {out!r}"[:300]}
        got = {"claimed": out[0], "measured": out[1]}
        ok = all(_same(item["printed"][k], got[k], 6) for k in ("claimed", "measured"))
    if ok:
        return None
    return {**item, "got": {k: (float(v) if isinstance(v, (int, float)) else str(v)) for k, v in got.items()}}


def mismatches(report: dict, controls: bool = True) -> list[dict]:
    """The printed calls of ``report`` (``controls``: the negative controls' too) that do not
    reproduce their printed numbers."""
    return [m for item in printed_calls(report, controls) if (m := check_call(item)) is not None]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m spectheory.sims.reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="a report JSON (spectheory verify --json)")
    ap.add_argument("--no-controls", action="store_true", help="only the claims' own calls (not the controls')")
    args = ap.parse_args(argv)
    report = json.loads(open(args.report).read())
    calls = printed_calls(report, not args.no_controls)
    bad = mismatches(report, not args.no_controls)
    for m in bad:
        print(f"{m['claim']} ({m['where']}, {m['kind']}): printed {m['printed']}, the call gives {m['got']}\n"
              f"    {m['call']}")
    print(f"{len(calls) - len(bad)} of {len(calls)} printed calls reproduce their numbers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
