"""The Python API: run claims from a notebook or a script and get a result object.

    >>> from spectheory.cli import verify
    >>> report = verify("sd.*", quick=True)              # doctest: +SKIP
    >>> report["sd.acceptance"].verdict                   # doctest: +SKIP
    'holds'
    >>> report.plot("sd.acceptance")                      # doctest: +SKIP  (a matplotlib Figure)
    >>> report.write()                                    # doctest: +SKIP  (reports/verify-sd+quick.{md,html,json})

:func:`verify` takes what ``spectheory verify`` takes (claims, tier, seed, the family-wise error
rate, your pairs, a ``spectheory validate`` run's logits, your own claim modules) and returns a
:class:`Report`; :func:`load_report` reads a report JSON back. The command line is built on the same
call (``spectheory.cli.cmd_verify``; both use :mod:`.runs`). Why it lives here, on the top floor: a run with real-model
evidence needs ``validate`` (floor 2), which ``sims`` (floor 1) never imports (docs/architecture.md).

A :class:`Report` holds one :class:`ClaimResult` per claim: id, statement, citation, headline
verdict, readings, parts, evidence (an :class:`EvidenceTable` of records), counterexample with the
call that recomputes it, and controls, as attributes; it renders as a table in Jupyter
(``_repr_html_``), writes JSON, Markdown and HTML, and draws a claim's plot.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator


def _need_pandas(what: str):
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{what}.to_frame() needs pandas (pip install pandas); {what}.records() gives the same "
                          "rows as dicts, no pandas needed") from None
    return pandas


def _check_bool(value, name: str) -> bool:
    """True or False (NumPy's bool too); a string such as "yes" is a TypeError, not a silent True."""
    import numpy as np
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def _check_path(value, name: str, *, none: bool = True):
    if value is None and none:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path){' or None' if none else ''}, got "
                        f"{type(value).__name__} {value!r:.60}")
    return value


class EvidenceTable:
    """A claim's evidence as records (dicts with ``mode``, ``part``, ``instance``, ``claimed``,
    ``measured``, ``ci_low``, ``ci_high``, ``p_value``, ``n``, ``test``, ``alpha``, ``power``,
    ``detectable``, ``tolerance``, ``outcome``, ``note``): iterate it, index it, filter it, take a
    column, or :meth:`to_frame` (``pandas.DataFrame(table.records)`` is the same without the
    method). pandas is not a dependency."""

    COLUMNS = ("part", "mode", "instance", "claimed", "measured", "ci_low", "ci_high", "p_value", "n",
               "outcome", "test", "note")

    def __init__(self, records: Iterable[dict]):
        self.records = [dict(r) for r in records]

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.records)

    def __getitem__(self, i):
        return self.records[i]

    def column(self, name: str) -> list:
        """Every record's value of ``name`` (None where absent)."""
        if not isinstance(name, str):
            raise TypeError(f"a column name is a string (one of {', '.join(self.COLUMNS)}), got {name!r}")
        return [r.get(name) for r in self.records]

    def where(self, **match) -> "EvidenceTable":
        """The records whose fields equal every ``match`` (``table.where(mode="mc", outcome="fail")``)."""
        return EvidenceTable(r for r in self.records if all(r.get(k) == v for k, v in match.items()))

    def to_frame(self):
        """The records as a pandas DataFrame (one row per evidence item; needs pandas)."""
        pd = _need_pandas("EvidenceTable")
        cols = list(self.COLUMNS) + sorted({k for r in self.records for k in r} - set(self.COLUMNS))
        return pd.DataFrame(self.records, columns=cols)

    def __repr__(self) -> str:
        return f"EvidenceTable({len(self)} records)"

    def _repr_html_(self) -> str:
        from spectheory.sims.report import fmt
        import html
        head = "".join(f"<th>{c}</th>" for c in self.COLUMNS)
        rows = "".join("<tr>" + "".join(
            f"<td>{html.escape(fmt(r.get(c)) if isinstance(r.get(c), (int, float)) else str(r.get(c) or ''))}</td>"
            for c in self.COLUMNS) + "</tr>" for r in self.records)
        return f"<table><tr>{head}</tr>{rows}</table>"


@dataclass
class ClaimResult:
    """One claim of a report (the JSON entry, ``raw``, with its fields as attributes); ``run``: the
    report's run record (where a user's claim file came from, for :meth:`recompute`)."""

    raw: dict
    run: dict | None = field(default=None, repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        raw = self.__dict__.get("raw", {})
        if name in raw:
            return raw[name]
        raise AttributeError(f"claim {raw.get('id')!r} has no field {name!r} (fields: {', '.join(raw)})")

    @property
    def id(self) -> str:
        return self.raw["id"]

    @property
    def verdict(self) -> str:
        """The headline verdict (the paper's principal reading)."""
        return self.raw["verdict"]

    @property
    def statement(self) -> str:
        return self.raw.get("statement", "")

    @property
    def paper(self) -> str:
        """The citation(s): authors, title, venue and year."""
        cit = self.raw.get("citation") or self.raw.get("paper")
        if isinstance(cit, list):
            return "; ".join(p.get("citation", str(p)) if isinstance(p, dict) else str(p) for p in cit)
        return cit.get("citation", str(cit)) if isinstance(cit, dict) else str(cit)

    @property
    def parts(self) -> list[dict]:
        return list(self.raw.get("parts", []))

    @property
    def readings(self) -> list[dict]:
        """The claim's readings (principal first) with their verdicts, where the report has them."""
        return list(self.raw.get("readings", []))

    @property
    def evidence(self) -> EvidenceTable:
        return EvidenceTable(self.raw.get("evidence", []))

    @property
    def controls(self) -> list[dict]:
        return list(self.raw.get("controls", []))

    @property
    def counterexample(self) -> dict | None:
        """The smallest failing instance (or one per failing part: the first), with ``call``."""
        cex = self.raw.get("counterexample")
        if isinstance(cex, list):
            return cex[0] if cex else None
        return cex

    @property
    def counterexamples(self) -> list[dict]:
        """Every counterexample of the claim: one per failing part that has one (each naming its
        ``part``), else the claim's own."""
        cex = self.raw.get("counterexample")
        out = [] if cex is None else (list(cex) if isinstance(cex, list) else [cex])
        for p in self.parts:  # the other failing parts' (the claim's own is the first)
            x = p.get("counterexample")
            if x and x not in out:
                out.append(x)
        return out

    def records(self) -> list[dict]:
        """The claim's evidence, one dict per item with the claim's id (what ``pandas.DataFrame``
        takes); :meth:`to_frame` is the same as a DataFrame."""
        return [{"claim": self.id, **r} for r in self.evidence.records]

    def to_frame(self):
        """The claim's evidence as a pandas DataFrame, one row per item (needs pandas)."""
        pd = _need_pandas("ClaimResult")
        cols = ["claim", *EvidenceTable.COLUMNS]
        rows = self.records()
        return pd.DataFrame(rows, columns=cols + sorted({k for r in rows for k in r} - set(cols)))

    def _load_user_module(self, claims_from=None) -> None:
        """Make a user claim's module importable for its calls: the file the report says it came
        from (``run.claims_files``, resolved paths), or ``claims_from`` (its new place)."""
        from spectheory.sims import user_claims
        from spectheory.sims.registry import load_all
        run = self.run or {}
        builtin = load_all().get(self.id)
        if builtin is not None and builtin.check.__module__.startswith("spectheory.sims.claims.") and not user_claims.is_user_claim(
                self.id):
            return
        if claims_from is not None:
            _check_path(claims_from, "claims_from", none=False)
            try:
                user_claims.load(os.fspath(claims_from))
            except user_claims.UserClaimsError as err:
                raise ValueError(str(err)) from None
            return
        files = run.get("claims_files") or [{"spec": s, "module": None, "path": None, "claims": None}
                                            for s in run.get("claims_from") or ()]
        for src in files:
            if src.get("claims") is not None and self.id not in src["claims"]:
                continue
            path, spec = src.get("path"), src.get("spec")
            if path and not Path(path).is_file():
                raise FileNotFoundError(
                    f"{self.id} was checked from {path}, which is no longer there (moved, renamed or "
                    f"deleted): give its new place, recompute(claims_from='NEW/PATH/{Path(path).name}')")
            module = src.get("module")
            if path and module and not str(spec).endswith(".py") and spec != user_claims.ENTRY_POINTS:
                # a module name (``pkg.sub.claims``): importable from the folder above its top package
                root = Path(path).parents[module.count(".") + (Path(path).stem == "__init__")]
                if str(root) not in sys.path:
                    sys.path.insert(0, str(root))
            elif path:
                spec = path
            try:
                user_claims.load(spec)
            except user_claims.UserClaimsError as err:
                raise ValueError(f"{self.id}: its claim module {spec} cannot be loaded here: {err}") from None

    def recompute(self, which: int = 0, *, claims_from=None):
        """Run the ``which``-th counterexample's one-line call: ``(claimed, measured, ...)`` as the
        report printed them. A claim of your own is recomputed from the file the report stored
        (also in a fresh process, from any folder); ``claims_from``: the file's new place if it
        moved."""
        from spectheory.checks import check_int

        from spectheory.sims.shrink import recompute
        cexs = self.counterexamples
        if not cexs:
            raise ValueError(f"{self.id} has no counterexample (verdict {self.verdict})")
        which = check_int(which, "which (the counterexample's index)", min=-len(cexs), max=len(cexs) - 1)
        if (self.run or {}).get("claims_from") or claims_from is not None:
            self._load_user_module(claims_from)
        return recompute(cexs[which]["call"])

    def plot(self):
        """The claim's plot as a matplotlib Figure (what the HTML report shows); ValueError when
        its evidence has nothing to draw."""
        from spectheory.sims.report_html import claim_plot
        drawn = claim_plot(self.raw, backend=None)
        if drawn is None:
            raise ValueError(f"{self.id}: its evidence has no curve and fewer than two comparisons to draw")
        fig, caption = drawn
        fig.suptitle(self.id, fontsize=10)
        fig.caption = caption
        return fig

    def markdown(self) -> str:
        """The claim's section of the Markdown report."""
        from spectheory.sims.report import claim_section
        return "\n".join(claim_section(self.raw, anchor_tag=False))

    def __repr__(self) -> str:
        from spectheory.sims.report import claim_text
        return claim_text(self.raw)

    def _repr_html_(self) -> str:
        from spectheory.sims.report_html import claim_html
        return claim_html(self.raw)


class Report(Mapping):
    """What :func:`verify` returns: the report (``data``, schema in docs/report_schema.md) as a
    mapping from claim id to :class:`ClaimResult`, in report order, like a dict: ``report[id]``,
    ``id in report``, ``report.get(id)``, ``keys()``, ``items()``, ``values()``, ``len(report)``,
    and iteration over the ids. ``report.claims`` is the list of claims; :meth:`to_frame` one row
    per claim."""

    def __init__(self, data: dict):
        if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
            raise ValueError("a report is a dict with 'claims' and 'run' (a spectheory verify JSON report)")
        self.data = data
        self.claims = [ClaimResult(c, data.get("run") or {}) for c in data["claims"]]
        self._by_id = {c.id: c for c in self.claims}

    @property
    def run(self) -> dict:
        """How the report was made: claims, tier, seed, error rates, versions, timings."""
        return self.data.get("run", {})

    @property
    def verdicts(self) -> dict[str, str]:
        """``{claim id: headline verdict}`` in report order."""
        return {c.id: c.verdict for c in self.claims}

    def __getitem__(self, claim_id: str) -> ClaimResult:
        if not isinstance(claim_id, str):
            raise KeyError(f"claim ids are strings ({', '.join(list(self._by_id)[:3])}, ...), got {claim_id!r}; "
                           "report.claims is the list, report.claims[i] the i-th")
        try:
            return self._by_id[claim_id]
        except KeyError:
            import difflib
            close = difflib.get_close_matches(claim_id, list(self._by_id), n=1)
            raise KeyError(f"no claim {claim_id!r} in this report" + (f" (did you mean {close[0]!r}?)" if close else "")
                           + f"; it has {', '.join(self._by_id)}") from None

    def __contains__(self, claim_id) -> bool:
        return isinstance(claim_id, str) and claim_id in self._by_id

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self.claims)

    def records(self) -> list[dict]:
        """One dict per claim (what ``pandas.DataFrame`` takes): id, relation, verdict, headline,
        what was found, controls rejected of total, the counterexample's numbers and call, the
        real pair's verdict, paper and reference, seconds."""
        from spectheory.sims.report import finding, real_pair_text
        out = []
        for c in self.claims:
            raw, cex = c.raw, c.counterexample or {}
            ctl = raw.get("controls") or []
            out.append({"claim": c.id, "relation": raw.get("relation"), "verdict": c.verdict,
                        "headline": raw.get("summary") or c.verdict, "finding": finding(raw),
                        "controls_rejected": sum(k.get("verdict") == "fails" for k in ctl), "controls": len(ctl),
                        "claimed": cex.get("claimed"), "measured": cex.get("measured"), "call": cex.get("call"),
                        "real_pair": real_pair_text(raw) or None, "paper": c.paper, "reference": raw.get("reference"),
                        "seconds": raw.get("seconds")})
        return out

    def to_frame(self):
        """One row per claim (:meth:`records`), indexed by claim id (needs pandas); a claim's
        evidence is ``report[id].to_frame()``."""
        pd = _need_pandas("Report")
        return pd.DataFrame(self.records()).set_index("claim")

    def summary(self) -> str:
        """``46 claims: 27 hold, 19 fail; negative controls rejected: 85 of 85``."""
        from spectheory.sims.report import verdict_counts
        return verdict_counts(self.data)

    def __repr__(self) -> str:
        return f"<Report: {self.summary()}>"

    def print(self) -> None:
        """The terminal table ``spectheory verify`` prints."""
        from spectheory.sims.report import print_table
        print_table(self.data)

    def _repr_html_(self) -> str:
        from spectheory.sims.report_html import summary_html
        return summary_html(self.data)

    def plot(self, claim_id: str):
        """A claim's plot as a matplotlib Figure (what the HTML report shows), or ValueError when its
        evidence has nothing to draw."""
        return self[claim_id].plot()

    # --- writing --------------------------------------------------------------------------------

    def to_json(self, path) -> Path:
        from spectheory.judge.format import write_json
        path = Path(_check_path(path, "path", none=False))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(self.data, path)
        return path

    def to_markdown(self, path) -> tuple[Path, Path]:
        """The Markdown report and its evidence file (``<name>-evidence.md`` beside it)."""
        from spectheory.sims.report import evidence_markdown, to_markdown

        from .runs import output_paths
        path = Path(_check_path(path, "path", none=False))
        evidence = output_paths(md_path=path)["evidence"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_markdown(self.data, evidence_name=evidence.name))
        evidence.write_text(evidence_markdown(self.data, report_name=path.name))
        return path, evidence

    def to_html(self, path, jobs: int = 1) -> Path:
        from spectheory.sims.report_html import write_html
        from spectheory.checks import check_int
        path = Path(_check_path(path, "path", none=False))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_html(self.data, path, jobs=check_int(jobs, "jobs", min=0))
        return path

    def write(self, base=None, *, html: bool = True) -> dict[str, Path]:
        """Every format at ``base`` (``base.json``, ``base.md``, ``base-evidence.md``, ``base.html``);
        default: the name ``spectheory verify`` gives this run under ``reports/`` (named for what was
        run; never over a report of another run). Without ``html`` a stale page of the same name is
        removed; a report under ``reports/`` rewrites ``reports/index.html`` (its path is returned as
        ``index``)."""
        from .runs import NameTaken, output_paths, run_paths
        _check_path(base, "base")
        html = _check_bool(html, "html")
        try:
            paths = run_paths(self.run) if base is None else output_paths(json_path=Path(f"{base}.json"))
        except NameTaken as err:
            raise FileExistsError(str(err)) from None
        stale = None if html else paths.pop("html")
        return write_report(self.data, paths, stale=stale)


def load_report(path) -> Report:
    """A report JSON written by ``spectheory verify`` (or :meth:`Report.to_json`) as a :class:`Report`.
    A claim of your own recomputes from the claim file the report names, in any process."""
    import json
    path = Path(_check_path(path, "path", none=False))
    try:
        return Report(json.loads(path.read_text()))
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read a report from {path}: {err}") from None


def write_report(data: dict, paths: dict, *, jobs: int = 1, stale: Path | None = None) -> dict[str, Path]:
    """Write a report in every format ``paths`` names (``json``, ``md``, ``evidence``, and ``html``
    when present; :func:`spectheory.cli.runs.output_paths`), remove ``stale`` (a page the run chose
    not to write) and, for a report under ``reports/``, rewrite ``reports/index.html``. What
    ``spectheory verify`` and :meth:`Report.write` both write with; returns the paths written."""
    from spectheory.sims.report import evidence_markdown, to_markdown
    from spectheory.judge.format import write_json

    from .report_index import write_index
    from .runs import REPORTS
    for p in paths.values():
        p.parent.mkdir(parents=True, exist_ok=True)
    write_json(data, paths["json"])
    paths["md"].write_text(to_markdown(data, evidence_name=paths["evidence"].name))
    paths["evidence"].write_text(evidence_markdown(data, report_name=paths["md"].name))
    if "html" in paths:
        from spectheory.sims.report_html import write_html
        write_html(data, paths["html"], jobs=jobs)
    if stale is not None and stale.is_file():
        stale.unlink()
    out = dict(paths)
    if paths["json"].parent.resolve() == REPORTS.resolve():
        out["index"] = write_index(REPORTS)
    return out


class SelectionError(ValueError):
    """What a run was asked for cannot run; ``option`` names the setting at fault (the command
    line's option: ``--claims``, ``--claims-from``, ``--instances``, ``--with-builtin``, ``--logits``)."""

    def __init__(self, message: str, option: str):
        super().__init__(message)
        self.option = option


@dataclass
class Selection:
    """The claims a run will check, decided before anything runs (:func:`select_run`)."""

    claims: str
    chosen: list
    sources: tuple
    builtin: bool
    pairs: dict | None = None
    pairs_source: str | None = None


def _sources(claims_from) -> tuple[str, ...]:
    """``claims_from`` as a tuple of specs: one path or module name, or several (str or Path)."""
    if claims_from is None:
        return ()
    items = (claims_from,) if isinstance(claims_from, (str, os.PathLike)) else claims_from
    try:
        items = tuple(items)
    except TypeError:
        raise TypeError(f"claims_from must be a path, a module name or a list of them, got "
                        f"{type(claims_from).__name__} {claims_from!r:.60}") from None
    for x in items:
        _check_path(x, "each claims_from entry (a .py path or a module name)", none=False)
    return tuple(os.fspath(x) for x in items)


def _pairs_dict(instances) -> dict:
    """A ``{name: MarkovPair}`` mapping, checked."""
    from spectheory.markov import MarkovPair
    if not instances:
        raise SelectionError("instances is an empty dict: give at least one {name: MarkovPair}", "--instances")
    for name, pair in instances.items():
        if not isinstance(name, str) or not isinstance(pair, MarkovPair):
            raise TypeError(f"instances must map names (str) to MarkovPair, got {name!r}: {type(pair).__name__}")
    return dict(instances)


def _pairs_id(pairs: dict) -> str:
    """A dict of pairs as an input of the run (:func:`spectheory.cli.runs.identity`): its names
    and a hash of its tables."""
    import hashlib

    import numpy as np
    h = hashlib.sha1()
    for name, pair in pairs.items():
        h.update(name.encode())
        for chain in (pair.target, pair.draft):
            h.update(np.ascontiguousarray(chain.rows, dtype=np.float64).tobytes())
            h.update(np.ascontiguousarray(chain.row_of_state, dtype=np.int64).tobytes())
    return f"<dict {','.join(pairs)} sha1:{h.hexdigest()[:10]}>"


def select_run(claims: str = "*", *, claims_from: Iterable[str] | str = (), with_builtin: bool = False,
               instances=None, logits=None) -> Selection:
    """Load the user's claim modules, match ``claims`` (every glob must match), keep the user's
    claims alone unless ``with_builtin``, and on a pairs run (``instances``: a file or a ``{name:
    MarkovPair}`` dict) the claims that take pairs; check the logits run directory. Raises
    :class:`SelectionError` naming the setting at fault (a user module's problem included)."""
    from spectheory.sims import runner, user_claims
    from spectheory.sims.registry import UnknownClaimError, select
    if not isinstance(claims, str):
        raise TypeError(f"claims must be a string of ids or globs, got {type(claims).__name__}")
    sources = _sources(claims_from)
    with_builtin = _check_bool(with_builtin, "with_builtin")
    if with_builtin and not sources:
        raise SelectionError("with_builtin goes with claims_from (--with-builtin goes with --claims-from)",
                             "--with-builtin")
    try:
        mine = user_claims.load_many(sources)  # before the patterns are matched, so they can name user claims
    except user_claims.UserClaimsError as err:
        raise SelectionError(str(err), "--claims-from") from None
    try:
        chosen = [c.id for c in select(claims)]  # every pattern must match before anything runs
    except UnknownClaimError as err:
        raise SelectionError(str(err), "--claims") from None
    if sources and not with_builtin:
        chosen = [cid for cid in chosen if cid in mine]
        if not chosen:
            raise SelectionError(f"no claim of {', '.join(sources)} matches {claims!r}; theirs: {', '.join(mine)}",
                                 "--claims")
    sel = Selection(claims, chosen, sources, with_builtin or not sources)
    if instances is not None:
        if isinstance(instances, Mapping):
            sel.pairs, sel.pairs_source = _pairs_dict(instances), "<dict>"
        else:
            _check_path(instances, "instances (a pairs file, or a {name: MarkovPair} dict)")
            from spectheory.sims.instances_file import InstancesFileError, load
            try:
                sel.pairs, sel.pairs_source = load(instances), str(instances)
            except InstancesFileError as err:
                raise SelectionError(str(err), "--instances") from None
        sel.chosen = [cid for cid in chosen if select(cid)[0].user_pairs is not None]
        if not sel.chosen:
            raise SelectionError(f"no claim matching {claims!r} takes pairs; claims that do: "
                                 + ", ".join(c.id for c in runner.takes_pairs()), "--claims")
    _check_path(logits, "logits (a `spectheory validate` run directory)")
    if logits is not None and not (Path(logits) / "run.json").is_file():
        raise SelectionError(f"{logits} is not a `spectheory validate` run directory (no run.json)", "--logits")
    from .runs import TRACE_ENV, check_trace_env
    try:
        check_trace_env(sel.chosen)
    except ValueError as err:
        raise SelectionError(str(err), TRACE_ENV) from None
    return sel


def checks_line(claim_ids, jobs: int) -> str:
    """The line a run starts with: how many claims, controls and families, on how many workers."""
    from spectheory.sims.registry import load_all
    from spectheory.sims.runner import family_of
    reg = load_all()
    claims = [reg[c] for c in claim_ids]
    fams = len({c.check.__module__ for c in claims})
    n_ctl = sum(len(c.controls) for c in claims)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = min(jobs or cpus, fams)
    names = ", ".join(dict.fromkeys(family_of(c) for c in claims))
    return (f"checking {len(claims)} claim{'s' * (len(claims) != 1)} and {n_ctl} negative control"
            f"{'s' * (n_ctl != 1)} ({len(claims) + n_ctl} checks; famil{'ies' if fams != 1 else 'y'} {names}) on "
            f"{workers} worker{'s' * (workers != 1)}: a line as each family finishes")


def run_selection(sel: Selection, *, quick: bool = False, seed: int = 0, alpha: float = 0.01, logits=None,
                  jobs: int = 1, progress: bool = False, log=None) -> dict:
    """Run a :func:`select_run` selection (its real-logits evidence first) and return the report dict."""
    from spectheory.sims import runner

    from .runs import real_logits_evidence
    say = log if log is not None else (print if progress else None)
    extra = real_logits_evidence(None if logits is None else Path(logits), alpha, sel.chosen, log=say)
    if say is not None:
        say(checks_line(sel.chosen, jobs))
    data = runner.run_claims(",".join(sel.chosen) if sel.pairs is not None else sel.claims, quick=quick, seed=seed,
                             alpha=alpha, progress=progress, jobs=jobs, extra_evidence=extra,
                             extra_source=None if logits is None else str(logits), log=log, pairs=sel.pairs,
                             pairs_source=sel.pairs_source, claims_from=sel.sources, builtin=sel.builtin)
    from spectheory.sims import user_claims

    from .runs import _claims_source, _resolved
    run = data["run"]
    if sel.pairs is not None:
        run["claims_pattern"] = sel.claims
    # what the report's name and a later recompute need: the inputs by resolved path
    run["with_builtin"] = bool(sel.sources) and sel.builtin
    run["claims_files"] = [user_claims.describe(s) for s in sel.sources]
    run["inputs"] = {"claims_from": [_claims_source(s) for s in sel.sources],
                     "instances": None if sel.pairs is None else (
                         _pairs_id(sel.pairs) if sel.pairs_source == "<dict>" else _resolved(sel.pairs_source)),
                     "logits": _resolved(logits)}
    if logits is not None:   # the one table of theory against measurement for this run (spectheory.validate.table)
        from spectheory.validate.experiment import load_run_config
        from spectheory.validate.settings import FAMILIES
        from spectheory.validate.table import rows_from_evidence
        known = {c for cs in FAMILIES.values() for c in cs}
        rows = rows_from_evidence(extra, load_run_config(logits), logits, claims=[c for c in sel.chosen if c in known])
        data["logits_table"] = dict(run=str(logits), rows=[r.to_json() for r in rows])
    return data


def verify(claims: str = "*", *, quick: bool = False, seed: int = 0, alpha: float = 0.01, instances=None,
           logits=None, claims_from: Iterable[str] | str = (), with_builtin: bool = False, jobs: int = 1,
           progress: bool = False, log=None) -> Report:
    """Run the claims ``claims`` selects (ids or globs, comma-separated) and their negative controls;
    return a :class:`Report`. Nothing is written (:meth:`Report.write` writes every format).

    ``quick``: the fast tier. ``seed``: the run seed (the report is reproducible from it). ``alpha``:
    the family-wise error rate. ``instances``: a TOML/JSON file of your own Markov pairs
    (docs/instances.md), or a ``{name: MarkovPair}`` dict: the claims that take pairs run on them.
    ``logits``: a ``spectheory validate`` run directory: its real-model evidence joins the report.
    ``claims_from``: your claim modules (docs/your_claims.md); only their claims run unless
    ``with_builtin``. ``jobs``: worker processes (1 = this process, the default here; 0 = one per
    CPU). Bad input raises ``ValueError`` or ``TypeError`` naming it, before anything runs."""
    from spectheory.checks import check_int, check_real
    quick = _check_bool(quick, "quick")
    progress = _check_bool(progress, "progress")
    seed = check_int(seed, "seed", min=0)
    alpha = check_real(alpha, "alpha (family-wise error rate)", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    jobs = check_int(jobs, "jobs", min=0)
    if log is not None and not callable(log):
        raise TypeError(f"log must be a callable that takes one line (print, a logger's info), got {log!r:.60}")
    sel = select_run(claims, claims_from=claims_from, with_builtin=with_builtin, instances=instances, logits=logits)
    return Report(run_selection(sel, quick=quick, seed=seed, alpha=alpha, logits=logits, jobs=jobs,
                                progress=progress, log=log))
