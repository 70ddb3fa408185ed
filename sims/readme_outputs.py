"""Regenerate the outputs the README quotes, so they cannot drift from what the commands print.

    python -m spectheory.sims.readme_outputs            # run the commands, store their outputs, rewrite README.md
    python -m spectheory.sims.readme_outputs --check    # exit 1 if README.md differs from the stored outputs
    python -m spectheory.sims.readme_outputs --only library-example

Each quoted output sits in README.md as a ``text`` block right after a marker
``<!-- output: NAME -->``:

* ``verify-table``: the summary table of ``spectheory verify`` (default tier, seed 0, every
  claim). Running it takes the full default run (a minute or so), so its summary rows are stored
  in ``docs/outputs/verify-default.json`` and the table is rendered from them; the fast tests
  check that README.md matches that file and that it lists the registry's claims; the slow tier
  reruns the verify and compares the rows.
  Rerunning also rewrites ``docs/readings.md`` (:mod:`spectheory.sims.readings`), whose reading verdicts
  come from the stored rows.
* ``library-example``: what the README's library example (the ``python`` block before the
  marker) prints; the fast tests run it and compare.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
STORED = ROOT / "docs" / "outputs" / "verify-default.json"
COMMAND = "python -m spectheory.sims.readme_outputs"
#: terminal width the quoted table is rendered at
WIDTH = 132
_BLOCK = re.compile(r"(<!-- output: (?P<name>[\w-]+) -->\n```text\n)(?P<body>.*?)(\n```)", re.S)


# --- verify-table ----------------------------------------------------------------------------------

def summary_rows(report: dict) -> dict:
    """What the README's table shows of a report (and what the slow tier compares), with every
    reading's verdict (what docs/readings.md quotes, :mod:`spectheory.sims.readings`) and the real pair's."""
    from .report import (claim_class, controls_cell, degenerate_text, finding, readings_differ, real_pair_text,
                         slack_over_choices_text)
    run = report["run"]
    from .report import verdict_counts
    return {"run": {"seed": run["seed"], "quick": run["quick"], "duration_s": run["duration_s"],
                    "versions": run.get("versions", {}), "started_at": run.get("started_at"),
                    "schema": report.get("schema")},
            "caption": verdict_counts(report),
            "claims": [{"id": c["id"], "relation": c.get("relation"), "verdict": c["verdict"],
                        "summary": c.get("summary") or c["verdict"], "class": claim_class(c), "finding": finding(c),
                        "controls": controls_cell(c),
                        "readings": [{"id": r["id"], "role": r["role"], "verdict": r["verdict"],
                                      "summary": r.get("summary") or r["verdict"]} for r in c.get("readings") or []],
                        "choices": [{"name": ch["name"], "default": ch["default"], "verdicts": ch.get("verdicts") or {}}
                                    for ch in c.get("choices") or []],
                        "least_slack_over_choices": slack_over_choices_text(c), "degenerate": degenerate_text(c),
                        "differ": readings_differ(c), "real": real_pair_text(c)} for c in report["claims"]]}


def differ_cell(row: dict) -> str:
    """``1 of 2 differ``: how many of a claim's other readings have a verdict other than the
    principal one's; ``–`` for a claim with one reading."""
    others = [r for r in row.get("readings") or [] if r["role"] != "principal"]
    return f"{row.get('differ', 0)} of {len(others)} differ" if others else "–"


def run_verify() -> dict:
    """The full default run the README's table quotes (seed 0, one worker per CPU)."""
    from .runner import run_claims
    return summary_rows(run_claims("*", quick=False, seed=0, jobs=0, progress=False, log=print))


def verify_table(rows: dict) -> str:
    """The table exactly as `spectheory verify` prints it (:func:`spectheory.sims.report.summary_table`: the
    same columns, title and caption; without colour, at :data:`WIDTH` columns; the legend lines it
    prints below are left out)."""
    from rich.console import Console

    from .report import _title, summary_table, verdict_cell
    console = Console(width=WIDTH, record=True, color_system=None, file=io.StringIO())
    table = []
    for c in rows["claims"]:
        others = [f"{r['id']}: {r.get('summary') or r['verdict']}" for r in c.get("readings") or []
                  if r["role"] != "principal"] + ([c["real"]] if c.get("real") else [])
        table.append((c["id"], c["relation"] or "–", verdict_cell(c["verdict"], c["summary"], others), c["finding"],
                      c["controls"]))
    console.print(summary_table(table, _title({"run": rows["run"]}), rows.get("caption", "")))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()).strip("\n")


# --- library-example -------------------------------------------------------------------------------

def code_before(name: str, text: str | None = None) -> str:
    """The ``python`` block that comes before the output marker ``name`` in README.md."""
    text = README.read_text() if text is None else text
    at = text.index(f"<!-- output: {name} -->")
    blocks = list(re.finditer(r"```python\n(.*?)```", text[:at], re.S))
    return blocks[-1].group(1)


def library_example() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code_before("library-example"), "README.md (library example)", "exec"), {"__name__": "__readme__"})
    return out.getvalue().rstrip("\n")


# --- README ----------------------------------------------------------------------------------------

def outputs(rerun: bool = False, only: str | None = None) -> dict[str, str]:
    """The quoted outputs by name (``rerun``: run the full verify again, else use the stored rows)."""
    out = {}
    if only in (None, "verify-table"):
        rows = run_verify() if rerun else json.loads(STORED.read_text())
        if rerun:
            STORED.parent.mkdir(parents=True, exist_ok=True)
            STORED.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
            from . import readings  # docs/readings.md quotes the stored run's reading verdicts
            readings.main([])
        out["verify-table"] = verify_table(rows)
    if only in (None, "library-example"):
        out["library-example"] = library_example()
    return out


def quoted(text: str | None = None) -> dict[str, str]:
    """The outputs README.md quotes now, by name."""
    text = README.read_text() if text is None else text
    return {m.group("name"): m.group("body") for m in _BLOCK.finditer(text)}


def rewrite(text: str, new: dict[str, str]) -> str:
    return _BLOCK.sub(lambda m: m.group(1) + new.get(m.group("name"), m.group("body")) + m.group(4), text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare README.md with the outputs; exit 1 if stale")
    ap.add_argument("--stored", action="store_true", help="render the verify table from docs/outputs (no rerun)")
    ap.add_argument("--only", choices=("verify-table", "library-example"))
    args = ap.parse_args(argv)
    new = outputs(rerun=not (args.stored or args.check), only=args.only)
    text = README.read_text()
    if args.check:
        have = quoted(text)
        stale = [k for k, v in new.items() if have.get(k) != v]
        if stale:
            print(f"README.md is stale in {', '.join(stale)}: regenerate with `{COMMAND}`", file=sys.stderr)
            return 1
        print("README.md quotes the current outputs")
        return 0
    README.write_text(rewrite(text, new))
    print(f"rewrote {', '.join(new)} in {README}" + (f" (rows stored in {STORED})" if "verify-table" in new
                                                       and not args.stored else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
