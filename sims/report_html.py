"""The HTML report: one self-contained file (inline CSS, plots as inline PNG, no script, no
network), the same summary and sections as the Markdown report (:mod:`spectheory.sims.report`), a plot
for every claim whose evidence is a curve, grid, sweep or set of comparisons, and every
evidence table folded under its claim.

Plots (matplotlib, drawn off screen):

* **sweeps** (evidence with ``points``, :func:`spectheory.sims.shapes.sweep`): the claimed value (dashed
  line) and the measured one (markers) against the sweep's numeric setting (γ, c, k, V, ...),
  one colour per instance, sweeps of one part over the same setting in one panel; a second
  varying setting becomes one line per value; failing points are red crosses;
* **comparisons** (evidence without points): measured against claimed, one marker per
  comparison (with its confidence interval when Monte Carlo), on the diagonal where they agree;
  when every claimed value is the same (a distance that must be 0, a bound) the measured values
  are drawn against the claimed line instead.
"""
from __future__ import annotations

import base64
import html
import io
import math
import os

from spectheory.judge.format import fmt, interval

from .report import (LEGEND, _num, _parts, _summary, anchor, beside, bound_slack, choices_lines, controls_cell,
                     finding, key_evidence, outcome_text, part_finding, part_phrase, part_verdict_text, readings_lines,
                     scope_lines, settings_text, verdict_counts)

#: settings never used as an axis
_META = ("claimed", "measured", "outcome")
#: the most panels one claim's figure gets (the rest stay in the evidence tables)
MAX_PANELS = 4
#: at most this many series (lines) in one panel; more are split over panels
MAX_SERIES = 6
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
_SYMBOL = {"gamma": "γ", "lam": "λ", "mu": "μ", "alpha": "α", "eps": "ε"}

CSS = """
body{font:15px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1d232a;margin:0;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px;background:#fff}
h1{font-size:26px;margin:0 0 6px}h2{font-size:19px;margin:0 0 4px}
.meta{color:#566;font-size:13px}.counts{font-size:16px;margin:10px 0 16px}
table{border-collapse:collapse;margin:8px 0 14px;font-size:13.5px}
th,td{border-bottom:1px solid #e3e6ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}
table.summary{width:100%}table.summary td:nth-child(1){white-space:nowrap}
table.summary td:nth-child(3){max-width:300px}
td{overflow-wrap:anywhere}.scroll{max-width:100%;overflow-x:auto}
code,pre{font-family:SFMono-Regular,Consolas,Menlo,monospace;font-size:12.5px}
pre{background:#f3f4f6;border:1px solid #e1e4e8;padding:8px 10px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;font-size:12.5px;font-weight:600;color:#fff;max-width:100%;box-sizing:border-box}
.holds{background:#2e7d32}.fails{background:#c62828}.inconclusive{background:#b26a00}.not-checkable{background:#78828c}
.depends{background:#7b3fa0}.underpowered{background:#b26a00}.beside{font-size:12.5px;color:#444}
section.claim{border-top:3px solid #e3e6ea;padding:18px 0 8px;margin-top:18px}
section.claim.v-fails{border-top-color:#c62828}section.claim.v-holds{border-top-color:#2e7d32}
section.claim.v-inconclusive{border-top-color:#b26a00}
blockquote{margin:8px 0;padding:6px 12px;border-left:4px solid #c9d1d9;background:#fafbfc}
.cite{color:#444;font-style:italic;font-size:13.5px}.rel{font-family:inherit;font-weight:600}
.finding{margin:6px 0}.cex{background:#fff4f4;border:1px solid #f3c2c2;padding:8px 12px;margin:10px 0}
figure{margin:10px 0}figure img{max-width:100%;height:auto;box-sizing:border-box;border:1px solid #e3e6ea}
figcaption{font-size:12.5px;color:#555}
dl.legend{font-size:13px;display:grid;grid-template-columns:130px 1fr;gap:3px 12px;margin:4px 0 12px}
dl.legend dt{font-weight:600}dl.legend dd{margin:0}
details{margin:8px 0}summary{cursor:pointer;color:#0b5cad}
td.fail{color:#c62828;font-weight:600}td.pass{color:#2e7d32}td.underpowered{color:#b26a00}
.notes{font-size:13px;color:#555}
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _badge(verdict: str, text: str | None = None) -> str:
    return f'<span class="badge {_e(verdict)}">{_e(text or verdict)}</span>'


def _beside(c: dict) -> str:
    """Every other reading's verdict and the real pair's, beside the headline badge."""
    extra = beside(c)
    return (' <span class="beside">· ' + _e(" · ".join(extra)) + "</span>") if extra else ""


def _md_inline(text: str) -> str:
    """The Markdown lines :mod:`spectheory.sims.report` writes, as HTML (bold, code, list items)."""
    import re
    t = _e(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return t


def _md_block(lines: list[str]) -> str:
    out, items = [], []
    for line in lines + [""]:
        if line.startswith("- "):
            items.append(f"<li>{_md_inline(line[2:])}</li>")
            continue
        if items:
            out.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if line.strip():
            out.append(f"<p>{_md_inline(line)}</p>")
    return "".join(out)


# --- plots -----------------------------------------------------------------------------------------

def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _axes_of(points) -> tuple[str | None, list[str]]:
    """(x setting, other varying settings) of a sweep's points: x is the numeric setting with the
    most distinct values; None when no setting is numeric."""
    keys = [k for k in points[0] if k not in _META]
    varying = [k for k in keys if len({repr(p.get(k)) for p in points}) > 1]
    numeric = [k for k in varying if all(_is_number(p.get(k)) for p in points)]
    if not numeric:
        return None, varying
    x = max(numeric, key=lambda k: len({p.get(k) for p in points}))
    return x, [k for k in varying if k != x]


def _sweep_groups(claim, part=None) -> list[tuple[tuple, list[dict]]]:
    """Evidence with ≥ 2 points (of ``part`` when given), grouped by (part, x setting, other
    settings): one panel each, failing groups first, then the largest."""
    groups: dict = {}
    for e in claim["evidence"]:
        pts = e.get("points") or []
        if len(pts) < 2 or e["outcome"] == "info" or (part is not None and e.get("part") != part):
            continue
        x, other = _axes_of(pts)
        groups.setdefault((e.get("part"), x, tuple(other)), []).append(e)
    return sorted(groups.items(), key=lambda kv: (not any(e["outcome"] == "fail" for e in kv[1]),
                                                  -sum(len(e["points"]) for e in kv[1])))


def _short(label: str, n: int = 28) -> str:
    """A legend label: the label itself, wrapped (never cut) at ``n`` characters."""
    import textwrap
    return "\n".join(textwrap.wrap(label, n)) or label


def _wrap(text: str, n: int) -> str:
    import textwrap
    return "\n".join(textwrap.wrap(text, n, break_long_words=False)) or text


_TAILS = (", |Δ| ≤", " ≤ bound (tol", " ≥ bound (tol", ", worst", ", tightest", ", max over", " (margin")


def quantity(e: dict) -> str:
    """What an evidence item measures, for an axis label: its test's quantity without the mode and
    the tolerance (``exact P(accept first draft) vs Σmin(p,q), worst state, |Δ| ≤ 1e-10`` →
    ``P(accept first draft) vs Σmin(p,q)``)."""
    t = (e.get("test") or "").strip()
    for prefix in ("exact ", "Monte Carlo ", "mc ", "one-sided z-test of ", "two-sided z-test of ",
                   "two-sided z-test on ", "z-test of "):
        if t.startswith(prefix):
            t = t[len(prefix):]
    t = t.split("; ")[0]
    cut = min([i for i in (t.find(tail) for tail in _TAILS) if i > 0] or [len(t)])
    t = t[:cut].strip().rstrip(",")
    for tail in (" ≤ 1e-12", " ≤ bound", " ≥ bound"):
        t = t.removesuffix(tail)
    return t or "measured value"


def _what(evs) -> str:
    """What a panel's evidence measures: the quantity most of it shares, and how many others."""
    from collections import Counter
    qs = Counter(quantity(e) for e in evs)
    q, _ = qs.most_common(1)[0]
    more = len(qs) - 1
    return q + (f" (and {more} other quantit{'ies' if more > 1 else 'y'})" if more else "")


def _hashable(v):
    """A point's setting as a dict key (a report read back from JSON has lists where tuples were)."""
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def focus_parts(claim: dict) -> list[str]:
    """The parts behind a ``fails`` or ``depends`` headline: the principal reading's failing parts,
    in the order the summary names them (its first is the part :func:`spectheory.sims.report.finding` shows);
    their evidence is drawn first, in panels that name them."""
    if claim.get("verdict") not in ("fails", "depends"):
        return []
    principal = next((r for r in claim.get("readings") or [] if r.get("role") == "principal"), None)
    mine = set(principal["parts"]) if principal else None
    return [p["id"] for p in _parts(claim) if p.get("verdict") == "fails" and (mine is None or p["id"] in mine)]


def _part_prefix(claim: dict, parts) -> str:
    """``part batch-moderate (fails): `` when a panel shows one part of a multi-part claim."""
    known = {p["id"]: p for p in _parts(claim)}
    parts = {p for p in parts if p is not None}
    if len(known) <= 1 or len(parts) != 1:
        return ""
    (pid,) = parts
    return f"part {pid} ({known[pid]['verdict']}): " if pid in known else f"part {pid}: "


def _title(ax, text: str, width: int = 56) -> None:
    ax.set_title(_wrap(text, width), fontsize=8.5)


def _draw_sweep(ax, key, evs, relation, prefix: str = ""):
    part, x, other = key
    distance = all(_num(p["claimed"]) == 0 for e in evs for p in e["points"])
    series = []
    for e in evs:
        pts = e["points"]
        if other:
            combos = sorted({tuple(repr(p.get(k)) for k in other) for p in pts})
            if len(combos) > MAX_SERIES:
                other_use = ()
            else:
                other_use = other
        else:
            other_use = ()
        by: dict = {}
        for i, p in enumerate(pts):
            by.setdefault(tuple(_hashable(p.get(k)) for k in other_use), []).append((i, p))
        name = e["instance"].split(" ")[0]
        for combo, rows in by.items():
            tag = name + "".join(f", {_SYMBOL.get(k, k)}={v}" for k, v in zip(other_use, combo))
            series.append((tag, rows))
    many = len(series) > len(_COLOURS)
    for j, (tag, rows) in enumerate(series):
        col = _COLOURS[j % len(_COLOURS)]
        xs = [(p[x] if x else i) for i, p in rows]
        order = sorted(range(len(rows)), key=lambda k: xs[k])
        xs = [xs[k] for k in order]
        cl = [_num(rows[k][1]["claimed"]) for k in order]
        me = [_num(rows[k][1]["measured"]) for k in order]
        if not distance:
            ax.plot(xs, cl, "--", color=col, lw=1.2, alpha=0.9)
        ax.plot(xs, me, "o-", color=col, lw=0.8, ms=4, label=None if many else _short(tag))
        bad = [(xs[k], me[k]) for k, i in enumerate(order) if rows[i][1].get("outcome") == "fail"]
        if bad:
            ax.plot(*zip(*bad), "x", color="#c62828", ms=9, mew=2.2, zorder=5)
    if distance:
        ax.axhline(0, color="#444", ls="--", lw=1.0)
        ymax = max((abs(_num(p["measured"]) or 0) for e in evs for p in e["points"]), default=0)
        if ymax < 1e-9:
            ax.set_ylim(-1e-9, 1e-9)
            ax.text(0.5, 0.88, f"all ≤ {ymax:.1e}: zero to rounding", transform=ax.transAxes, ha="center",
                    fontsize=8, color="#333")
    ax.set_xlabel(_SYMBOL.get(x, x) if x else "point")
    if x and all(float(p[x]).is_integer() for e in evs for p in e["points"]):
        from matplotlib.ticker import MaxNLocator
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    what = _what(evs)
    ax.set_ylabel(_wrap(quantity(evs[0]), 38), fontsize=7.5)
    against = f" against {_SYMBOL.get(x, x)}" if x else ""
    on = (f", {len(series)} series" if many else f", {len(evs)} instances") if len(evs) > 1 else \
        f" ({evs[0]['instance']})"
    _title(ax, f"{prefix}{what}{against}{on}")
    if many:
        ax.text(0.02, 0.02, f"{len(series)} series", transform=ax.transAxes, fontsize=7, color="#555")


def _marker(e) -> str:
    """▲ for an exact lower bound (measured must lie on or above claimed), ▼ for an upper bound, ● else."""
    test = e.get("test") or ""
    return "^" if "≥ bound" in test else ("v" if "≤ bound" in test else "o")


def _draw_comparisons(ax, evs, relation, prefix: str = ""):
    cl = [_num(e["claimed"]) for e in evs]
    me = [_num(e["measured"]) for e in evs]
    bad = [e["outcome"] == "fail" for e in evs]
    cols = ["#c62828" if b else ("#1f77b4" if e["mode"] == "exact" else "#ff7f0e") for b, e in zip(bad, evs)]
    marks = [_marker(e) for e in evs]
    same = max(cl) - min(cl) <= 1e-12 * max(1.0, abs(max(cl)))
    xs = list(range(len(evs))) if same else cl
    for i, e in enumerate(evs):
        lo, hi = _num(e.get("ci_low")), _num(e.get("ci_high"))
        if lo is not None and hi is not None:
            ax.plot([xs[i], xs[i]], [lo, hi], color=cols[i], lw=1.0)
    for m in set(marks):
        idx = [i for i, k in enumerate(marks) if k == m]
        ax.scatter([xs[i] for i in idx], [me[i] for i in idx], c=[cols[i] for i in idx], s=18, marker=m, zorder=3)
    what = _what(evs)
    n = f"{len(evs)} comparison{'s' * (len(evs) != 1)}"
    if same:  # a distance that must be 0, a constant bound: measured against the claimed line
        ax.axhline(cl[0], color="#444", ls="--", lw=1.0)
        line = f"claimed {fmt(cl[0])}"
        ax.set_xlabel("instance")
        _instance_ticks(ax, xs, evs)
        _title(ax, f"{prefix}measured {what} on {n}, against the claimed {fmt(cl[0])}")
    else:
        lo_v, hi_v = min(cl + me), max(cl + me)
        pad = 0.05 * (hi_v - lo_v or 1.0)
        ax.plot([lo_v - pad, hi_v + pad], [lo_v - pad, hi_v + pad], "--", color="#444", lw=1.0)
        line = "measured = claimed"
        ax.set_xlabel("claimed")
        _title(ax, f"{prefix}measured against claimed {what}, {n}")
    ax.set_ylabel(_wrap("measured " + quantity(evs[0]) if len({quantity(e) for e in evs}) == 1
                        else "measured value (each comparison's quantity)", 38), fontsize=7.5)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], ls="--", color="#444", label=line)]
    handles += [Line2D([], [], marker="o", ls="", color=c, label=t) for c, t in
                (("#1f77b4", "exact"), ("#ff7f0e", "Monte Carlo (CI)"), ("#c62828", "fails")) if c in cols]
    handles += [Line2D([], [], marker=m, ls="", color="#555", label=t) for m, t in
                (("^", "lower bound: on or above"), ("v", "upper bound: on or below")) if m in marks]
    ax.legend(handles=handles, fontsize=6.5, loc="best", framealpha=0.7)


def _instance_ticks(ax, xs, evs) -> None:
    """Instance names under a panel's points, thinned so that at most 12 show (never overlapping)."""
    step = max(1, math.ceil(len(evs) / 12))
    ax.set_xticks(xs[::step])
    ax.set_xticklabels([_wrap(e["instance"].split(" ")[0], 18) for e in evs][::step], rotation=50, ha="right",
                       rotation_mode="anchor", fontsize=6)


def _plain(claim, part=None, least: int = 1) -> list[dict]:
    """Graded comparisons that are not sweeps (of ``part`` when given), with finite numbers; a
    Monte Carlo one only with its confidence interval or when it fails (a law test's empirical
    distance is sampling noise around 0, its p-value is the evidence)."""
    out = [e for e in claim["evidence"] if e["outcome"] != "info" and len(e.get("points") or []) < 2
           and (part is None or e.get("part") == part)
           and _num(e.get("claimed")) is not None and _num(e.get("measured")) is not None
           and all(math.isfinite(_num(e[k])) for k in ("claimed", "measured"))
           and (e["mode"] == "exact" or e.get("ci_low") is not None or e["outcome"] == "fail")]
    return out if len(out) >= least else []


def _tests(claim, part=None) -> list[dict]:
    """Graded Monte Carlo and real-logits tests with a p-value (of ``part`` when given)."""
    return [e for e in claim["evidence"] if e["mode"] in ("mc", "logits") and e["outcome"] != "info"
            and _num(e.get("p_value")) is not None and (part is None or e.get("part") == part)]


def _series_count(key, evs) -> int:
    other = key[2]
    if not other:
        return len(evs)
    return sum(min(len({tuple(repr(p.get(k)) for k in other) for p in e["points"]}), MAX_SERIES + 1) for e in evs)


def _chunks(key, evs) -> list[list[dict]]:
    """A sweep group split so that a panel has at most :data:`MAX_SERIES` lines."""
    chunks, cur = [], []
    for e in evs:
        if cur and _series_count(key, cur + [e]) > MAX_SERIES:
            chunks.append(cur)
            cur = []
        cur.append(e)
    return chunks + [cur]


def _panels(claim) -> tuple[list, int]:
    """The panels of a claim's figure (at most :data:`MAX_PANELS`), each ``(kind, data, focus)``,
    and how many did not get one. The parts behind a ``fails`` or ``depends`` headline
    (:func:`focus_parts`) come first, each in a panel of its own (its failing sweep, else its
    comparisons, else its tests); then the other sweeps, the remaining comparisons and the
    statistical tests, each mode in at least one panel."""
    panels: list = []
    skipped = 0
    drawn: set = set()

    def add(kind, data, focus=False, replace=False):
        nonlocal skipped
        if len(panels) < MAX_PANELS:
            panels.append((kind, data, focus))
        elif replace and any(not f for _, _, f in panels):
            skipped += 1
            i = max(i for i, (_, _, f) in enumerate(panels) if not f)
            panels[i] = (kind, data, focus)
        else:
            skipped += 1
            return
        drawn.update(id(e) for e in (data[1] if kind == "sweep" else data))

    for part in focus_parts(claim)[:2]:
        groups = _sweep_groups(claim, part)
        failing = [e for e in claim["evidence"] if e.get("part") == part and e["outcome"] == "fail"]
        statistical = bool(failing) and all(e["mode"] in ("mc", "logits") and _num(e.get("p_value")) is not None
                                            for e in failing)
        if groups:
            key, evs = groups[0]
            add("sweep", (key, _chunks(key, evs)[0]), True)
        elif _tests(claim, part) and (statistical or not _plain(claim, part)):  # a failing test: its p-value
            add("tests", _tests(claim, part), True)
        elif _plain(claim, part):
            add("plain", _plain(claim, part), True)
    for key, evs in _sweep_groups(claim):
        for ch in _chunks(key, [e for e in evs if id(e) not in drawn]) if any(id(e) not in drawn for e in evs) else []:
            add("sweep", (key, ch))
    plain = [e for e in _plain(claim, least=2) if id(e) not in drawn]
    if len(plain) >= 2:
        add("plain", plain, replace=True)
    tests = [e for e in _tests(claim) if id(e) not in drawn]
    if tests:  # every statistical mode used gets drawn: its tests' p-values
        add("tests", tests, replace=True)
    return panels, skipped


def _draw_tests(ax, evs, prefix: str = ""):
    """Monte Carlo (and real-logits) tests whose evidence is a p-value: each test's p-value against
    its per-test level α (log scale, dotted); a point below the line rejects the claim."""
    ps = [max(_num(e["p_value"]), 1e-300) for e in evs]
    cols = ["#c62828" if e["outcome"] == "fail" else ("#ff7f0e" if e["mode"] == "mc" else "#2ca02c") for e in evs]
    xs = list(range(len(evs)))
    ax.scatter(xs, ps, c=cols, s=22, zorder=3)
    alphas = {_num(e.get("alpha")) for e in evs if _num(e.get("alpha"))}
    for a in alphas:
        ax.axhline(a, color="#444", ls=":", lw=1.2)
    ax.set_yscale("log")
    ax.set_ylim(min(min(ps), min(alphas, default=1.0)) / 10, 1.5)
    _instance_ticks(ax, xs, evs)
    ax.set_xlim(-0.7, len(evs) - 0.3)
    ax.set_xlabel("instance")
    ax.set_ylabel("p-value of the test (log scale)", fontsize=7.5)
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], ls=":", color="#444", label="per-test level α: below rejects")]
    handles += [Line2D([], [], marker="o", ls="", color=c, label=t) for c, t in
                (("#ff7f0e", "Monte Carlo"), ("#2ca02c", "real logits"), ("#c62828", "fails")) if c in cols]
    ax.legend(handles=handles, fontsize=6.5, loc="best", framealpha=0.7)
    kinds = " and ".join(k for k, m in (("Monte Carlo", "mc"), ("real-logits", "logits")) if any(e["mode"] == m for e in evs))
    _title(ax, f"{prefix}p-values of {len(evs)} {kinds} test{'s' * (len(evs) != 1)}")


def _figure_legend(fig, kinds: set, fails: bool) -> None:
    """One legend for the whole figure, above the panels: what dashed, dots and crosses mean."""
    from matplotlib.lines import Line2D
    handles = []
    if kinds & {"sweep", "plain"}:
        handles += [Line2D([], [], ls="--", color="#444", label="claimed (dashed)"),
                    Line2D([], [], ls="-", marker="o", ms=4, lw=0.8, color="#444", label="measured (dots)")]
        if fails:
            handles.append(Line2D([], [], ls="", marker="x", ms=7, mew=2, color="#c62828", label="fails there (red)"))
    if "tests" in kinds:
        handles.append(Line2D([], [], ls=":", lw=1.2, color="#444", label="per-test α (dotted): a p-value below rejects"))
    fig.legend(handles=handles, loc="outside upper center", ncol=len(handles), fontsize=7.5, frameon=False)


def claim_plot(claim: dict, *, backend: str | None = "Agg"):
    """``(figure, caption)``: a claim's plot as a matplotlib Figure (the caller closes it), or
    None when its evidence has no curve and no comparison. Each panel's title says what it draws
    (the quantity, against what, on which instances); the part behind a ``fails`` or ``depends``
    headline comes first and is named; one legend above the panels says what dashed (claimed) and
    dots (measured) mean. ``backend``: the matplotlib backend to select first (None keeps the
    current one, e.g. a notebook's)."""
    panels, skipped = _panels(claim)
    if not panels:
        return None
    import matplotlib
    if backend is not None:
        matplotlib.use(backend, force=False)
    import matplotlib.pyplot as plt
    parts = {p["id"]: p["relation"] for p in _parts(claim)}
    n = len(panels)
    cols = min(n, 2 if n == 4 else 3)
    rows = math.ceil(n / cols)
    w = {1: 6.4, 2: 5.4}.get(cols, 4.4)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, 4.0 * rows + 0.4), squeeze=False, layout="constrained")
    for ax, (kind, data, _focus) in zip(axes.flat, panels):
        if kind == "sweep":
            key, evs = data
            _draw_sweep(ax, key, evs, parts.get(key[0], claim.get("relation")), _part_prefix(claim, [key[0]]))
            handles = ax.get_legend_handles_labels()[0]
            if handles:
                ax.legend(fontsize=6.5, loc="best", ncol=2 if len(handles) > 4 else 1, framealpha=0.7)
        elif kind == "tests":
            _draw_tests(ax, data, _part_prefix(claim, [e.get("part") for e in data]))
        else:
            _draw_comparisons(ax, data, claim.get("relation"), _part_prefix(claim, [e.get("part") for e in data]))
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.25)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    drawn = [e for kind, data, _ in panels for e in (data[1] if kind == "sweep" else data)]
    _figure_legend(fig, {k for k, _, _ in panels}, any(e["outcome"] == "fail" for e in drawn))
    cap = []
    focus = focus_parts(claim)
    if focus and any(f for _, _, f in panels):
        cap.append(f"First: the part{'s' * (len(focus) > 1)} behind the headline ({', '.join(focus[:2])})")
    if any(k == "sweep" for k, _, _ in panels):
        cap.append("sweeps: claimed (dashed) and measured (dots) against the setting that varies, one colour per "
                   "instance; red crosses mark failing points")
    if any(k == "tests" for k, _, _ in panels):
        cap.append("tests: each Monte Carlo (or real-logits) test's p-value against the per-test level (dotted)")
    if any(k == "plain" for k, _, _ in panels):
        cap.append("comparisons: measured against claimed (exact in blue, Monte Carlo in orange with its "
                   "confidence interval, failures in red)")
    if skipped > 0:
        cap.append(f"{skipped} more panel(s) not drawn: every number is in the evidence table")
    return fig, "; ".join(cap) + "."


def _text_box(t, renderer):
    """A text's four corners on the canvas: its box, rotated about its anchor when it is turned
    (rotation_mode ``anchor``; a quarter turn's box is its extent)."""
    import numpy as np
    rot = t.get_rotation() % 360
    if rot % 90 == 0 or t.get_rotation_mode() != "anchor":
        b = t.get_window_extent(renderer)
        return np.array([[b.x0, b.y0], [b.x1, b.y0], [b.x1, b.y1], [b.x0, b.y1]])
    t.set_rotation(0)
    b = t.get_window_extent(renderer)
    t.set_rotation(rot)
    cx, cy = t.get_transform().transform(t.get_position())
    c, s_ = np.cos(np.radians(rot)), np.sin(np.radians(rot))
    pts = np.array([[b.x0, b.y0], [b.x1, b.y0], [b.x1, b.y1], [b.x0, b.y1]]) - [cx, cy]
    return pts @ np.array([[c, s_], [-s_, c]]) + [cx, cy]


def _overlap(a, b, tolerance: float) -> bool:
    """Whether two convex quadrilaterals overlap by more than ``tolerance`` pixels along every
    separating direction (their edges' normals)."""
    import numpy as np
    for poly in (a, b):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            n = np.array([-edge[1], edge[0]])
            norm = np.hypot(*n)
            if norm == 0:
                continue
            pa, pb = a @ n / norm, b @ n / norm
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= tolerance:
                return False
    return True


def label_overlaps(fig, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """The pairs of texts of a figure that overlap on the canvas by more than ``tolerance``
    pixels (titles, axis labels, tick labels within the view, legends, annotations; turned tick
    labels by their turned boxes), and any text cut off by the figure's edge (paired with
    ``"<edge>"``): what a reader cannot read. Draws the figure."""
    from matplotlib.text import Text
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            span = (hi - lo) or 1.0
            texts += [t.label1 for t in axis.get_major_ticks()
                      if lo - 1e-9 * span <= t.get_loc() <= hi + 1e-9 * span and t.label1.get_visible()]
            texts.append(axis.label)
        texts += [ax.title, *ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            texts += leg.get_texts()
    for leg in fig.legends:
        texts += leg.get_texts()
    texts += [t for t in fig.texts if isinstance(t, Text)]
    if getattr(fig, "_suptitle", None) is not None:
        texts.append(fig._suptitle)
    boxes = [(t.get_text(), _text_box(t, r)) for t in texts if t.get_visible() and t.get_text().strip()]
    out = []
    W, H = fig.bbox.width, fig.bbox.height
    for i, (a, ba) in enumerate(boxes):
        if ba[:, 0].min() < -tolerance or ba[:, 1].min() < -tolerance or ba[:, 0].max() > W + tolerance \
                or ba[:, 1].max() > H + tolerance:
            out.append((a, "<edge>"))
        for b, bb in boxes[i + 1:]:
            if _overlap(ba, bb, tolerance):
                out.append((a, b))
    return out


def claim_figure(claim: dict) -> tuple[str, str] | None:
    """(PNG as base64, caption) of a claim's plot (:func:`claim_plot`), or None when there is
    none."""
    drawn = claim_plot(claim)
    if drawn is None:
        return None
    fig, caption = drawn
    return base64.b64encode(compressed_png(fig)).decode("ascii"), caption


def compressed_png(fig, dpi: int = 72) -> bytes:
    """The figure as a palette PNG (at most 48 colours, optimised): a plot's flat colours survive,
    and the page stays small (about a fifth of the RGBA PNG's size)."""
    import matplotlib.pyplot as plt
    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    buf.seek(0)
    img = Image.open(buf).convert("RGB").quantize(colors=48, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    out = io.BytesIO()
    img.save(out, format="PNG", optimize=True)
    return out.getvalue()


# --- page --------------------------------------------------------------------------------------------

#: evidence rows an HTML table shows at most (failing and underpowered rows always; the rest in
#: report order): every row is in the Markdown evidence file and the JSON
MAX_ROWS = 20


def _evidence_rows(evidence, parts: bool, limit: int | None = None) -> str:
    head = ("<th>part</th>" if parts else "") + "".join(
        f"<th>{h}</th>" for h in ("mode", "instance", "claimed", "measured", "interval", "p", "n", "outcome", "test"))
    rows = []
    evidence = list(evidence)
    left = 0
    if limit is not None and len(evidence) > limit:
        keep = {i for i, e in enumerate(evidence) if e["outcome"] in ("fail", "underpowered")}
        for i in range(len(evidence)):
            if len(keep) >= max(limit, len(keep)):
                break
            keep.add(i)
        left = len(evidence) - len(keep)
        evidence = [e for i, e in enumerate(evidence) if i in keep]
    for e in evidence:
        rows.append("<tr>" + (f"<td>{_e(e.get('part') or '–')}</td>" if parts else "") + "".join(
            f"<td>{_e(v)}</td>" for v in (e["mode"], e["instance"], fmt(e["claimed"]), fmt(e["measured"]),
                                          interval(e), fmt(e["p_value"], 3), fmt(e["n"])))
            + f'<td class="{_e(e["outcome"])}">{_e(outcome_text(e))}</td>'
            + f"<td>{_e(e['test'] + ('; ' + e['note'] if e['note'] else ''))}</td></tr>")
    more = (f"<p class=\"more\">{left} more passing or info rows: every row is in the Markdown evidence file "
            "(<code>*-evidence.md</code>) and the JSON report.</p>") if left else ""
    return f"<div class=scroll><table><tr>{head}</tr>{''.join(rows)}</table></div>{more}"


def _figure_of(claim: dict):
    return claim["id"], claim_figure(claim)


def figures(report: dict, jobs: int = 1) -> dict:
    """Every claim's figure (:func:`claim_figure`) by claim id, drawn by ``jobs`` worker
    processes (0: one per CPU); the figures do not depend on how many draw them."""
    claims = report["claims"]
    jobs = (os.cpu_count() or 1) if jobs == 0 else jobs
    if jobs <= 1 or len(claims) < 4:
        return dict(map(_figure_of, claims))
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(max_workers=min(jobs, len(claims)), mp_context=ctx) as pool:
        return dict(pool.map(_figure_of, claims, chunksize=max(1, len(claims) // (4 * jobs))))


def _section(c: dict, plots: bool, figs: dict | None = None) -> str:
    parts = _parts(c)
    multi = len(parts) > 1
    out = [f'<section class="claim v-{_e(c["verdict"])}" id="{anchor(c["id"])}">',
           f"<h2><code>{_e(c['id'])}</code> {_badge(c['verdict'], _summary(c))}{_beside(c)}</h2>",
           f'<p class="cite">{_e(c.get("paper") or "")}{" · " + _e(c["reference"]) if c.get("reference") else ""}</p>',
           f"<blockquote>{_e(c['statement'])}</blockquote>"]
    if c.get("instances_used"):
        out.append(f"<p><b>Instances.</b> {_e(c['instances_used'])}</p>")
    if c.get("interpretation"):
        out.append(f"<p><b>Reading.</b> {_e(c['interpretation'])}</p>")
    out.append(_md_block(readings_lines(c)))
    if multi:
        out.append("<div class=scroll><table><tr><th>part</th><th>relation</th><th>verdict</th><th>what it says</th>"
                   "<th>what was found</th></tr>" + "".join(
                       f"<tr><td><code>{_e(p['id'])}</code></td><td class=rel>{_e(p['relation'])}</td>"
                       f"<td>{_badge(p['verdict'], part_verdict_text(p))}</td><td>{_e(p['statement'])}</td>"
                       f"<td>{_e(part_finding(c, p))}</td></tr>" for p in parts) + "</table></div>")
    else:
        ident = part_verdict_text(parts[0]) + " · " if parts[0].get("identity") else ""
        out.append(f'<p class="finding"><b>Verdict.</b> {_e(ident + part_phrase(c, parts[0]))}.</p>')
    out.append(_md_block(scope_lines(c) + choices_lines(c)))
    for p in parts:
        rec = p.get("least_slack")
        if rec and rec.get("call"):
            out.append(f"<p>Least slack{' of <code>' + _e(p['id']) + '</code>' if multi else ''}: "
                       f"{_e(fmt(rec.get('value')))} ({_e(rec.get('search', ''))}); recompute:</p>"
                       f"<pre><code>{_e(rec['call'])}</code></pre>")
    cex = c.get("counterexample")
    if cex:
        where = next((p["id"] for p in parts if p.get("counterexample")), None)
        out.append('<div class="cex"><b>Counterexample</b>'
                   + (f" (part <code>{_e(where)}</code>)" if multi and where else "")
                   + f": {_e(settings_text(cex) or 'the instance')}"
                   + (f", pair <code>{_e(cex['source'])}</code>" if cex.get("source") else "")
                   + f": claimed <b>{_e(fmt(cex.get('claimed')))}</b>, measured <b>{_e(fmt(cex.get('measured')))}</b>"
                   + (f" ({_e(cex['what'])})" if cex.get("what") else "") + "."
                   + (f"<br>Recompute both numbers:<pre><code>{_e(cex['call'])}</code></pre>" if cex.get("call") else "")
                   + "</div>")
    if plots:
        fig = figs[c["id"]] if figs is not None else claim_figure(c)
        if fig:
            png, cap = fig
            out.append(f'<figure><img alt="plot of the evidence of {_e(c["id"])}" '
                       f'src="data:image/png;base64,{png}"><figcaption>{_e(cap)}</figcaption></figure>')
    key = key_evidence(c)
    if key:
        out.append(f"<p><b>Key evidence</b> ({len(key)} of {len(c['evidence'])}):</p>" + _evidence_rows(key, multi))
    if c.get("controls"):
        out.append("<p><b>Negative controls</b>:</p><ul>" + "".join(
            f"<li><code>{_e(k['name'])}</code> "
            f"{_badge('holds' if k['verdict'] == 'fails' else 'fails', 'rejected' if k['verdict'] == 'fails' else 'not rejected: ' + k['verdict'])}"
            f" {_e(', '.join(f'{m} {v}' for m, v in (k.get('modes') or {}).items()))}: {_e(k['description'])}</li>"
            for k in c["controls"]) + "</ul>")
    if c.get("notes"):
        out.append('<ul class="notes">' + "".join(f"<li>{_e(n)}</li>" for n in c["notes"]) + "</ul>")
    out.append(f"<details><summary>All {len(c['evidence'])} evidence items of the claim, and its controls'"
               f"</summary>{_evidence_rows(c['evidence'], multi, MAX_ROWS)}"
               + "".join(f"<p>Control <code>{_e(k['name'])}</code>: {_e(k['verdict'])}</p>"
                         + _evidence_rows(k["evidence"], multi, MAX_ROWS // 4) for k in c.get("controls") or [])
               + "</details>")
    out.append("</section>")
    return "\n".join(out)


def _summary_table(report: dict, links: bool = True) -> str:
    rows = "".join(
        "<tr><td>" + (f'<a href="#{anchor(c["id"])}"><code>{_e(c["id"])}</code></a>' if links
                      else f"<code>{_e(c['id'])}</code>")
        + f"</td><td class=rel>{_e(c.get('relation') or '–')}</td><td>{_badge(c['verdict'], _summary(c))}{_beside(c)}</td>"
        f"<td>{_e(finding(c))}</td><td>{_e(controls_cell(c))}</td></tr>" for c in report["claims"])
    return ('<div class=scroll><table class="summary"><tr><th>claim</th><th>relation</th><th>verdict</th>'
            f"<th>what was found</th><th>controls</th></tr>{rows}</table></div>")


def _scoped(css: str, scope: str) -> str:
    """The page's CSS with every selector inside ``scope`` (a notebook's output must not restyle
    the notebook); the page-level rules (body, main) are left out."""
    import re
    out = []
    for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        sels = [x.strip() for x in sel.split(",") if x.strip() and x.strip() not in ("body", "main")]
        if sels:
            out.append(",".join(f"{scope} {x}" for x in sels) + "{" + body + "}")
    return "".join(out)


def summary_html(report: dict) -> str:
    """The report's verdict counts and summary table as an HTML fragment with its own scoped
    style (a notebook's display of a :class:`spectheory.cli.Report`)."""
    return (f"<div class=spectheory><style>{_scoped(CSS, '.spectheory')}</style>"
            f"<p><b>{_e(verdict_counts(report))}.</b></p>{_summary_table(report, links=False)}</div>")


def claim_html(claim: dict, *, plot: bool = True) -> str:
    """One claim as an HTML fragment with its own scoped style: headline and every reading's
    verdict, statement, parts, counterexample with the call that recomputes both numbers, the
    plot, key evidence, controls (a notebook's display of a :class:`spectheory.cli.ClaimResult`)."""
    return (f"<div class=spectheory><style>{_scoped(CSS, '.spectheory')}</style>"
            f"{_section(claim, plot)}</div>")


def to_html(report: dict, *, plots: bool = True, title: str = "spectheory verification report",
            jobs: int = 1) -> str:
    """The whole report as one self-contained HTML page (``jobs``: processes drawing the plots,
    0 = one per CPU)."""
    run = report["run"]
    meta = (f"Seed {run['seed']} · {'quick' if run.get('quick') else 'default'} tier · {run['duration_s']} s · "
            f"{run.get('started_at', '')} · schema {report['schema']} · family-wise α = {run['alpha_family']} "
            f"(Bonferroni over {run.get('mc_tests_in_registry', '–')} Monte Carlo tests, α per test "
            f"{run.get('alpha_per_test', 0):.3g}, power {run.get('power', '–')})")
    extra = ""
    if isinstance(run.get("instances"), dict):
        inst = run["instances"]
        extra = ("<p class=meta>On the user's pairs from " + _e(inst.get("source") or "the given pairs") + ": "
                 + _e(", ".join(f"{p['name']} (V={p['V']}, order {p['order']})" for p in inst["pairs"])) + "</p>")
    legend = "".join(f"<dt>{_e(k)}</dt><dd>{_e(t)}</dd>" for k, t in LEGEND)
    figs = figures(report, jobs) if plots else None
    body = "\n".join(_section(c, plots, figs) for c in report["claims"])
    errors = run.get("implementation_errors") or []
    if errors:
        extra += "".join(f'<p class="cex"><b>{_e(e)}</b></p>' for e in errors)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>"
            f"<h1>{_e(title)}</h1><p class=meta>{_e(meta)}</p>{extra}"
            f'<p class="counts"><b>{_e(verdict_counts(report))}.</b></p>'
            f"{_summary_table(report)}<dl class=legend>{legend}</dl>\n{_logits_table(report)}{body}\n"
            f"</main></body></html>\n")


def _logits_table(report: dict) -> str:
    """The one table of theory against measurement of a ``verify --logits`` run (rows written by
    spectheory.validate.table: every graded logits test, control and inapplicable claim, with the command that
    regenerates it)."""
    t = report.get("logits_table")
    if not t or not t.get("rows"):
        return ""
    num = lambda x: "–" if x is None else f"{x:.4g}"  # noqa: E731
    body = []
    for r in t["rows"]:
        ci = f"[{num(r['ci_low'])}, {num(r['ci_high'])}]" if r.get("ci_low") is not None else "–"
        n = "–" if r.get("n") is None else f"{r['n']:,}" + (
            " (exact)" if r.get("n_needed") == 0 else f" / {r['n_needed']:,}" if r.get("n_needed") else "")
        verdict = r["verdict"] + (f": {r['why']}" if r["role"] in ("n/a", "none") else "")
        body.append(f"<tr><td>{_e(r['family'])}</td><td><code>{_e(r['claim'])}</code></td><td>{_e(r['test'])}</td>"
                    f"<td>{num(r['predicted'])}</td><td>{num(r['measured'])}</td><td>{ci}</td><td>{_e(n)}</td>"
                    f"<td>{_e(verdict)}</td><td><code>{_e(r['command'])}</code></td></tr>")
    setting = _e(t["rows"][0]["setting"])
    return (f'<section class="claim" id="logits-table"><h2>Theory against measurement: {setting} '
            f"(<code>{_e(t['run'])}</code>)</h2><table><tr><th>family</th><th>claim</th><th>test</th>"
            "<th>predicted</th><th>measured</th><th>interval</th><th>n / n needed</th><th>verdict</th>"
            f"<th>regenerate</th></tr>{''.join(body)}</table></section>")


def write_html(report: dict, path, **kw):
    from pathlib import Path
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_html(report, **kw), encoding="utf-8")
    return path


__all__ = ["to_html", "write_html", "claim_figure", "bound_slack"]
