"""What a verify run is, shared by the command line (:mod:`.cmd_verify`) and the Python API
(:mod:`.api`): where its report goes by default (:func:`report_base`, named for what was run) and
the real-model evidence it adds (:func:`real_logits_evidence`). Errors are ``ValueError``; the
command line turns them into usage errors."""
from __future__ import annotations

import re
from pathlib import Path

REPORTS = Path("reports")


def slug(pattern: str) -> str:
    """The file-name slug of a ``--claims`` pattern: ``sd.*`` → ``sd``; ``sd.walltime, sd.accept*``
    → ``sd.walltime+sd.accept``."""
    pats = [re.sub(r"[^A-Za-z0-9._-]+", "-", p.strip().replace("*", "").replace("?", "")).strip("-.")
            for p in pattern.split(",") if p.strip()]
    return "+".join(p for p in pats if p)[:80] or "subset"


def _tag(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "x"


def report_base(claims: str = "*", *, instances: Path | None = None, claims_from: tuple = (), quick: bool = False,
                logits: Path | None = None, seed: int = 0) -> Path:
    """The default file base of a run's report, naming what was run, so that no two kinds of run
    overwrite each other: ``reports/verify`` for the default run (every claim, default tier, seed
    0, built-in instances, no logits); otherwise ``reports/verify-<tags>`` with, in this order, the
    claims (``sd.acceptance``), the user's claim modules (``from-<module>``), the user's pairs
    (``pairs-<file>``), the logits run (``logits-<run>``), ``quick`` and ``seed<N>``."""
    tags = []
    if claims.strip() not in ("", "*"):
        tags.append(slug(claims))
    if claims_from:
        tags.append("from-" + "+".join(_tag(Path(c).stem if c.endswith(".py") else c) for c in claims_from))
    if instances is not None:
        tags.append(f"pairs-{_tag(Path(instances).stem)}")
    if logits is not None:
        tags.append(f"logits-{_tag(Path(logits).resolve().name)}")
    if quick:
        tags.append("quick")
    if seed:
        tags.append(f"seed{seed}")
    return REPORTS / ("verify" + ("-" + "+".join(tags) if tags else ""))



def output_paths(claims: str = "*", instances: Path | None = None, json_path=None, md_path=None, html_path=None,
                 claims_from: tuple = (), *, quick: bool = False, logits: Path | None = None,
                 seed: int = 0) -> dict[str, Path]:
    """The report's files (``json``, ``md``, ``html``, ``evidence``): the ones given, the others
    beside the first given, else at the default base :func:`report_base` (named for what was run);
    the evidence file is ``<md name>-evidence.md`` beside the Markdown."""
    given = {"json": json_path, "md": md_path, "html": html_path}
    first = next((p for p in given.values() if p is not None), None)
    if first is not None:
        base = str(Path(first).with_suffix(""))
    else:
        base = str(report_base(claims, instances=instances, claims_from=claims_from, quick=quick, logits=logits,
                               seed=seed))
    out = {k: (Path(v) if v is not None else Path(f"{base}.{k}")) for k, v in given.items()}
    md = out["md"]
    out["evidence"] = md.with_name((md.name[:-3] if md.name.endswith(".md") else md.name) + "-evidence.md")
    return out


def run_paths(run: dict) -> dict[str, Path]:
    """:func:`output_paths` at the default name of the run a report's ``run`` record describes."""
    pairs = (run.get("instances") or {}).get("source")
    return output_paths(run.get("claims_pattern", "*"), Path(pairs) if pairs else None,
                        claims_from=tuple(run.get("claims_from") or ()), quick=bool(run.get("quick")),
                        logits=Path(run["logits_run"]) if run.get("logits_run") else None,
                        seed=int(run.get("seed") or 0))

#: environment variable naming a captured ERSD LogitTrace (.npz) whose replay adds ``logits``
#: evidence to ``ersd.lemma3_1`` and ``zero_order.underestimates`` (docs/ersd.md)
TRACE_ENV = "SPECTHEORY_TRACE"
TRACE_CLAIMS = ("ersd.lemma3_1", "zero_order.underestimates")


def check_trace_env(claim_ids) -> None:
    """Refuse an unusable $SPECTHEORY_TRACE before the run (a one-line error naming what it
    must be), when one of the claims it feeds is selected."""
    import os
    trace = os.environ.get(TRACE_ENV)
    if not trace or not set(TRACE_CLAIMS) & set(claim_ids):
        return
    from spectheory.validate import LogitTrace
    try:
        LogitTrace.load(trace)
    except (OSError, ValueError, KeyError) as err:
        hint = ""
        try:
            from spectheory.validate.trace import CompactTrace
            CompactTrace.load(trace)
            hint = (" It is a compact trace that `spectheory validate` wrote: give its run directory with "
                    "`spectheory verify --logits RUN_DIR` instead.")
        except Exception:  # noqa: BLE001 - only for the hint
            pass
        raise ValueError(f"${TRACE_ENV}={trace} is not a full logit trace (validate.LogitTrace .npz, e.g. "
                         f"data/traces/regimes.npz): {err}.{hint}") from None


def real_logits_evidence(logits: Path | None, alpha: float, claim_ids=TRACE_CLAIMS, log=None) -> dict:
    """Real-model evidence for the runner (``sims`` never imports ``validate``): the ``logits``
    evidence of a `spectheory validate` run directory (tested at the report's per-test level),
    plus the replay of the ERSD trace named by $SPECTHEORY_TRACE (at the family-wise level, as
    that replay states) when one of those claims is among ``claim_ids``. ``log``: gets one line
    per finished replay (SD, then each family: ``logits replay 3/7: se (4.2 s)``). Returns
    ``{claim_id: [Evidence, ...]}``."""
    import os

    from spectheory.sims.registry import total_mc_tests
    extra: dict = {}
    if logits is not None:
        from spectheory.validate.evidence import logits_evidence
        report = None if log is None else (
            lambda done, total, name, secs: log(f"logits replay {done}/{total}: {name} ({secs:.1f} s)"))
        for cid, evs in logits_evidence(logits, alpha=alpha / max(1, total_mc_tests()), progress=report).items():
            extra.setdefault(cid, []).extend(evs)
    trace = os.environ.get(TRACE_ENV)
    if trace and set(TRACE_CLAIMS) & set(claim_ids):
        from spectheory.validate import LogitTrace
        from spectheory.validate.replay_ersd import evidence_ersd, replay_ersd
        rep = evidence_ersd(replay_ersd(LogitTrace.load(trace), k=16, m=16, n_mc=400, seed=0), alpha=alpha)
        for cid in TRACE_CLAIMS:
            extra.setdefault(cid, []).extend(rep[cid])
    return extra
