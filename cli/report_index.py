"""``reports/index.html``: every report in the folder, named for what it holds.

Each ``spectheory verify`` or ``spectheory conformance`` run that writes under ``reports/`` rewrites
the index from the JSON reports present: one row per report with its files (HTML, Markdown, JSON),
what was run (claims, tier, seed, α, the user's pairs, the logits run, the user's claim modules; for
a conformance report the sampler tested), when, how long, and its verdicts. A self-contained page:
no scripts, no external assets."""
from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path


def _conformance_row(data: dict) -> dict | None:
    """A ``spectheory conformance`` report's row: the sampler it tested and its verdicts."""
    if not isinstance(data.get("verdicts"), dict) or not isinstance(data.get("run"), dict):
        return None
    run = data["run"]
    return {"target": run.get("subject"), "kind_of": run.get("kind"),
            "verdicts": ", ".join(f"{k}: {v.get('verdict')}" for k, v in data["verdicts"].items()
                                  if isinstance(v, dict))}


def runs(folder: Path) -> list[dict]:
    """The reports in ``folder`` (``verify*.json`` and ``conformance*.json``), newest first, each
    summarised from its ``run``."""
    out = []
    for path in sorted(Path(folder).glob("verify*.json")) + sorted(Path(folder).glob("conformance*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        run = data.get("run") or {}
        base = path.with_name(path.name[:-len(".json")])  # not with_suffix: "verify-sd.acceptance" has a dot
        row = {"name": base.name,
               "files": {k: f"{base.name}.{k}" for k in ("html", "md", "json")
                         if base.with_name(f"{base.name}.{k}").is_file()},
               "seed": run.get("seed"), "alpha": run.get("alpha_family"),
               "started": run.get("started_at", ""), "seconds": run.get("duration_s")}
        if path.name.startswith("conformance"):
            conf = _conformance_row(data)
            if conf is None:
                continue
            out.append({**row, "kind": "conformance", **conf})
            continue
        if "claims" not in data:
            continue
        verdicts = Counter(c.get("verdict", "?") for c in data.get("claims", []))
        out.append({**row,
                    "kind": "verify",
                    "claims": run.get("claims_pattern", "*"),
                    "n_claims": len(data.get("claims", [])),
                    "tier": "quick" if run.get("quick") else "default",
                    "pairs": (run.get("instances") or {}).get("source"),
                    "logits": run.get("logits_run"),
                    "claims_from": ", ".join((run.get("inputs") or {}).get("claims_from")
                                             or run.get("claims_from") or []) or None,
                    "with_builtin": bool(run.get("with_builtin")),
                    "verdicts": ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))})
    return sorted(out, key=lambda r: str(r["started"]), reverse=True)


def write_index(folder: Path) -> Path:
    """Write ``folder/index.html`` listing every report present; returns its path."""
    folder = Path(folder)
    rows = []
    for r in runs(folder):
        links = " · ".join(f'<a href="{html.escape(f)}">{k}</a>' for k, f in r["files"].items())
        if r["kind"] == "conformance":
            what = [f"conformance of <code>{html.escape(str(r['target']))}</code> ({html.escape(str(r['kind_of']))})"
                    if r.get("kind_of") else f"conformance of <code>{html.escape(str(r['target']))}</code>",
                    f"seed {r['seed']}", f"α {r['alpha']}"]
        else:
            what = [f"claims <code>{html.escape(str(r['claims']))}</code> ({r['n_claims']})",
                    f"{r['tier']} tier", f"seed {r['seed']}", f"α {r['alpha']}"]
            what += [f"{k.replace('_', ' ')} <code>{html.escape(str(r[k]))}</code>"
                     for k in ("pairs", "logits", "claims_from") if r[k]]
            if r["with_builtin"]:
                what.append("with the built-in claims")
        rows.append(f"<tr><td><b>{html.escape(r['name'])}</b><br>{links}</td><td>{'; '.join(what)}</td>"
                    f"<td>{html.escape(str(r['started']))}<br>{r['seconds']} s</td>"
                    f"<td>{html.escape(r['verdicts'])}</td></tr>")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>spectheory reports</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.4em .6em;vertical-align:top;text-align:left}}code{{font-size:90%}}</style>
</head><body>
<h1>spectheory reports</h1>
<p>Every <code>spectheory verify</code> and <code>spectheory conformance</code> report in this folder, newest
first. A report's name says what was run, and a run never overwrites the report of another run.</p>
<table><thead><tr><th>report</th><th>what was run</th><th>started, duration</th><th>verdicts</th></tr></thead>
<tbody>
{chr(10).join(rows) or '<tr><td colspan="4">no report yet</td></tr>'}
</tbody></table></body></html>
"""
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
