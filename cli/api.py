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

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator


class EvidenceTable:
    """A claim's evidence as records (dicts with ``mode``, ``part``, ``instance``, ``claimed``,
    ``measured``, ``ci_low``, ``ci_high``, ``p_value``, ``n``, ``test``, ``alpha``, ``power``,
    ``detectable``, ``tolerance``, ``outcome``, ``note``): iterate it, index it, filter it, or take a
    column. No pandas needed (``pandas.DataFrame(table.records)`` if you have it)."""

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
        return [r.get(name) for r in self.records]

    def where(self, **match) -> "EvidenceTable":
        """The records whose fields equal every ``match`` (``table.where(mode="mc", outcome="fail")``)."""
        return EvidenceTable(r for r in self.records if all(r.get(k) == v for k, v in match.items()))

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
    """One claim of a report (the JSON entry, ``raw``, with its fields as attributes)."""

    raw: dict

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
        cex = self.raw.get("counterexample")
        return [] if cex is None else (list(cex) if isinstance(cex, list) else [cex])

    def recompute(self, which: int = 0):
        """Run the counterexample's one-line call: ``(claimed, measured)`` as the report printed."""
        from spectheory.sims.shrink import recompute
        cexs = self.counterexamples
        if not cexs:
            raise ValueError(f"{self.id} has no counterexample (verdict {self.verdict})")
        return recompute(cexs[which]["call"])

    def markdown(self) -> str:
        """The claim's section of the Markdown report."""
        from spectheory.sims.report import claim_section
        return "\n".join(claim_section(self.raw, anchor_tag=False))

    def __repr__(self) -> str:
        return f"<ClaimResult {self.id}: {self.verdict}>"

    def _repr_html_(self) -> str:
        import html
        return (f"<h4>{html.escape(self.id)}: {html.escape(self.verdict)}</h4><p>{html.escape(self.statement)}</p>"
                + self.evidence._repr_html_())


class Report:
    """What :func:`verify` returns: the report (``data``, schema in docs/report_schema.md) and one
    :class:`ClaimResult` per claim."""

    def __init__(self, data: dict):
        if not isinstance(data, dict) or "claims" not in data:
            raise ValueError("a report is a dict with 'claims' and 'run' (a spectheory verify JSON report)")
        self.data = data
        self.claims = [ClaimResult(c) for c in data["claims"]]
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
        try:
            return self._by_id[claim_id]
        except KeyError:
            import difflib
            close = difflib.get_close_matches(claim_id, list(self._by_id), n=1)
            raise KeyError(f"no claim {claim_id!r} in this report" + (f" (did you mean {close[0]!r}?)" if close else "")
                           + f"; it has {', '.join(self._by_id)}") from None

    def __iter__(self) -> Iterator[ClaimResult]:
        return iter(self.claims)

    def __len__(self) -> int:
        return len(self.claims)

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
        import html

        from spectheory.sims.report import controls_cell, finding
        rows = "".join(
            f"<tr><td><code>{html.escape(c.id)}</code></td><td>{html.escape(c.raw.get('relation', ''))}</td>"
            f"<td><b>{html.escape(c.verdict)}</b></td><td>{html.escape(finding(c.raw))}</td>"
            f"<td>{html.escape(controls_cell(c.raw))}</td></tr>" for c in self.claims)
        return (f"<p>{html.escape(self.summary())}</p><table><tr><th>claim</th><th>relation</th><th>verdict</th>"
                f"<th>what was found</th><th>controls</th></tr>{rows}</table>")

    def plot(self, claim_id: str):
        """A claim's plot as a matplotlib Figure (what the HTML report shows), or ValueError when its
        evidence has nothing to draw."""
        from spectheory.sims.report_html import claim_plot
        drawn = claim_plot(self[claim_id].raw, backend=None)
        if drawn is None:
            raise ValueError(f"{claim_id}: its evidence has no curve and fewer than two comparisons to draw")
        fig, caption = drawn
        fig.suptitle(claim_id, fontsize=10)
        fig.caption = caption
        return fig

    # --- writing --------------------------------------------------------------------------------

    def to_json(self, path) -> Path:
        from spectheory.judge.format import write_json
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(self.data, path)
        return path

    def to_markdown(self, path) -> tuple[Path, Path]:
        """The Markdown report and its evidence file (``<name>-evidence.md`` beside it)."""
        from spectheory.sims.report import evidence_markdown, to_markdown

        from .runs import output_paths
        path = Path(path)
        evidence = output_paths(md_path=path)["evidence"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(to_markdown(self.data, evidence_name=evidence.name))
        evidence.write_text(evidence_markdown(self.data, report_name=path.name))
        return path, evidence

    def to_html(self, path, jobs: int = 1) -> Path:
        from spectheory.sims.report_html import write_html
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_html(self.data, path, jobs=jobs)
        return path

    def write(self, base=None, *, html: bool = True) -> dict[str, Path]:
        """Every format at ``base`` (``base.json``, ``base.md``, ``base-evidence.md``, ``base.html``);
        default: the name ``spectheory verify`` gives this run under ``reports/`` (named for what was
        run). Without ``html`` a stale page of the same name is removed; a report under ``reports/``
        rewrites ``reports/index.html`` (its path is returned as ``index``)."""
        from .runs import output_paths, run_paths
        paths = run_paths(self.run) if base is None else output_paths(json_path=Path(f"{base}.json"))
        stale = None if html else paths.pop("html")
        return write_report(self.data, paths, stale=stale)

def load_report(path) -> Report:
    """A report JSON written by ``spectheory verify`` (or :meth:`Report.to_json`) as a :class:`Report`."""
    import json
    path = Path(path)
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
    sources = (claims_from,) if isinstance(claims_from, str) else tuple(claims_from or ())
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
        if isinstance(instances, dict):
            sel.pairs, sel.pairs_source = dict(instances), "<dict>"
        else:
            from spectheory.sims.instances_file import InstancesFileError, load
            try:
                sel.pairs, sel.pairs_source = load(instances), str(instances)
            except InstancesFileError as err:
                raise SelectionError(str(err), "--instances") from None
        sel.chosen = [cid for cid in chosen if select(cid)[0].user_pairs is not None]
        if not sel.chosen:
            raise SelectionError(f"no claim matching {claims!r} takes pairs; claims that do: "
                                 + ", ".join(c.id for c in runner.takes_pairs()), "--claims")
    if logits is not None and not (Path(logits) / "run.json").is_file():
        raise SelectionError(f"{logits} is not a `spectheory validate` run directory (no run.json)", "--logits")
    from .runs import TRACE_ENV, check_trace_env
    try:
        check_trace_env(sel.chosen)
    except ValueError as err:
        raise SelectionError(str(err), TRACE_ENV) from None
    return sel


def run_selection(sel: Selection, *, quick: bool = False, seed: int = 0, alpha: float = 0.01, logits=None,
                  jobs: int = 1, progress: bool = False, log=None) -> dict:
    """Run a :func:`select_run` selection (its real-logits evidence first) and return the report dict."""
    from spectheory.sims import runner

    from .runs import real_logits_evidence
    extra = real_logits_evidence(None if logits is None else Path(logits), alpha, sel.chosen,
                                 log=log if log is not None else (print if progress else None))
    data = runner.run_claims(",".join(sel.chosen) if sel.pairs is not None else sel.claims, quick=quick, seed=seed,
                             alpha=alpha, progress=progress, jobs=jobs, extra_evidence=extra,
                             extra_source=None if logits is None else str(logits), log=log, pairs=sel.pairs,
                             pairs_source=sel.pairs_source, claims_from=sel.sources, builtin=sel.builtin)
    if sel.pairs is not None:
        data["run"]["claims_pattern"] = sel.claims
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
    seed = check_int(seed, "seed", min=0)
    alpha = check_real(alpha, "alpha (family-wise error rate)", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    sel = select_run(claims, claims_from=claims_from, with_builtin=with_builtin, instances=instances, logits=logits)
    return Report(run_selection(sel, quick=quick, seed=seed, alpha=alpha, logits=logits, jobs=jobs,
                                progress=progress, log=log))
