"""``reports/index.html``: every report in the folder, named for what it holds (issue 28, item 2).

Each `spectheory verify` run that writes under ``reports/`` rewrites the index from the JSON reports
present: one row per report with its files (HTML, Markdown, JSON), what was run (claims, tier, seed,
the user's pairs, the logits run, the user's claim modules), when, how long, and its verdict counts.
A self-contained page: no scripts, no external assets."""
from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path


def runs(folder: Path) -> list[dict]:
    """The reports in ``folder`` (``verify*.json``), newest first, each summarised from its ``run``."""
    out = []
    for path in Path(folder).glob("verify*.json"):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "claims" not in data:
            continue
        run = data.get("run", {})
        base = path.with_name(path.name[:-len(".json")])  # not with_suffix: "verify-sd.acceptance" has a dot
        verdicts = Counter(c.get("verdict", "?") for c in data.get("claims", []))
        out.append({
            "name": base.name,
            "files": {k: f"{base.name}.{k}" for k in ("html", "md", "json")
                      if base.with_name(f"{base.name}.{k}").is_file()},
            "claims": run.get("claims_pattern", "*"),
            "n_claims": len(data.get("claims", [])),
            "tier": "quick" if run.get("quick") else "default",
            "seed": run.get("seed"),
            "pairs": (run.get("instances") or {}).get("source"),
            "logits": run.get("logits_run"),
            "claims_from": ", ".join(run.get("claims_from") or []) or None,
            "started": run.get("started_at", ""),
            "seconds": run.get("duration_s"),
            "verdicts": ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())),
        })
    return sorted(out, key=lambda r: r["started"], reverse=True)


def write_index(folder: Path) -> Path:
    """Write ``folder/index.html`` listing every report present; returns its path."""
    folder = Path(folder)
    rows = []
    for r in runs(folder):
        links = " · ".join(f'<a href="{html.escape(f)}">{k}</a>' for k, f in r["files"].items())
        what = [f"claims <code>{html.escape(str(r['claims']))}</code> ({r['n_claims']})",
                f"{r['tier']} tier", f"seed {r['seed']}"]
        what += [f"{k} <code>{html.escape(str(r[k]))}</code>" for k in ("pairs", "logits", "claims_from") if r[k]]
        rows.append(f"<tr><td><b>{html.escape(r['name'])}</b><br>{links}</td><td>{'; '.join(what)}</td>"
                    f"<td>{html.escape(str(r['started']))}<br>{r['seconds']} s</td>"
                    f"<td>{html.escape(r['verdicts'])}</td></tr>")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>spectheory reports</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.4em .6em;vertical-align:top;text-align:left}}code{{font-size:90%}}</style>
</head><body>
<h1>spectheory reports</h1>
<p>Every <code>spectheory verify</code> report in this folder, newest first. A report's name says what was run,
so no two kinds of run overwrite each other.</p>
<table><thead><tr><th>report</th><th>what was run</th><th>started, duration</th><th>verdicts</th></tr></thead>
<tbody>
{chr(10).join(rows) or '<tr><td colspan="4">no report yet</td></tr>'}
</tbody></table></body></html>
"""
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
