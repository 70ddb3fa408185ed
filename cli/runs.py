"""What a verify run is, shared by the command line (:mod:`.cmd_verify`) and the Python API
(:mod:`.api`): where its report goes by default (:func:`report_base`, named for every option that
changes its numbers; :func:`default_base`, never over the report of another run, compared by
:func:`identity` with every input file by its resolved path), where a conformance report goes
(:func:`conformance_base`, named after its target), and the real-model evidence it adds
(:func:`real_logits_evidence`: only the replays the selected claims need, with progress lines
that name each replay and its ETA). Errors are ``ValueError``; the command line turns them into
usage errors."""
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


#: the family-wise α a run gets unless told otherwise (a report at another α says so in its name)
DEFAULT_ALPHA = 0.01


def _source_tag(spec: str) -> str:
    """A claim module's tag: a file's stem (``x/my_paper.py`` → ``my_paper``), a module's name."""
    return _tag(Path(spec).stem if str(spec).endswith(".py") else str(spec))


def report_base(claims: str = "*", *, instances: Path | None = None, claims_from: tuple = (), quick: bool = False,
                logits: Path | None = None, seed: int = 0, alpha: float = DEFAULT_ALPHA,
                builtin: bool = False) -> Path:
    """The plain file base of a run's report, naming what was run: ``reports/verify`` for the
    default run (every claim, default tier, seed 0, α = 0.01, built-in instances, no logits);
    otherwise ``reports/verify-<tags>`` with, in this order, the claims (``sd.acceptance``), the
    user's claim modules (``from-<module>``, ``+builtin`` when the built-in claims run beside them),
    the user's pairs (``pairs-<file>``), the logits run (``logits-<run>``), ``quick``, ``seed<N>``
    and ``alpha<α>``. Two runs whose inputs share a name (two ``claims.py`` in different folders)
    get the same plain base: :func:`default_base` keeps them apart."""
    tags = []
    if claims.strip() not in ("", "*"):
        tags.append(slug(claims))
    if claims_from:
        tags.append("from-" + "+".join(_source_tag(str(c)) for c in claims_from))
        if builtin:
            tags.append("builtin")
    if instances is not None:
        tags.append(f"pairs-{_tag(Path(str(instances)).stem)}")
    if logits is not None:
        tags.append(f"logits-{_tag(Path(logits).resolve().name)}")
    if quick:
        tags.append("quick")
    if seed:
        tags.append(f"seed{seed}")
    if float(alpha) != DEFAULT_ALPHA:
        tags.append(f"alpha{float(alpha):g}")
    return REPORTS / ("verify" + ("-" + "+".join(tags) if tags else ""))


def _resolved(path) -> str | None:
    """An input file or folder by its resolved path (``x.toml``, ``./x.toml`` and its absolute path
    are one file); None, and a placeholder such as ``<dict ...>``, as given."""
    if path is None or str(path).startswith("<"):
        return None if path is None else str(path)
    return str(Path(path).resolve())


def _claims_source(spec) -> str:
    """A claim module as it identifies a run: a file by its resolved path, a module name (or
    ``entry-points``) as given."""
    text = str(spec)
    return _resolved(text) if text.endswith(".py") or Path(text).is_file() else text


def identity(claims: str = "*", *, instances=None, claims_from: tuple = (), quick: bool = False, logits=None,
             seed: int = 0, alpha: float = DEFAULT_ALPHA, builtin: bool = False) -> dict:
    """Everything that changes a report's numbers, with every input file by its resolved path: two
    runs with the same identity may share a report's name (a rerun replaces its report), two with
    different ones never do (:func:`default_base`)."""
    return {"claims": ",".join(p.strip() for p in claims.split(",")) or "*",
            "claims_from": [_claims_source(c) for c in claims_from], "builtin": bool(builtin and claims_from),
            "pairs": _resolved(instances), "logits": _resolved(logits), "quick": bool(quick), "seed": int(seed),
            "alpha": float(alpha)}


def options_of(run: dict) -> dict:
    """The :func:`report_base` / :func:`identity` options of the run a report's ``run`` record
    describes (its ``inputs``, the resolved paths, where it has them)."""
    inputs = run.get("inputs") or {}
    pairs = inputs.get("instances") or (run.get("instances") or {}).get("source")
    return {"claims": run.get("claims_pattern", "*"),
            "claims_from": tuple(inputs.get("claims_from") or run.get("claims_from") or ()),
            "builtin": bool(run.get("with_builtin")), "instances": pairs,
            "logits": inputs.get("logits") or run.get("logits_run"), "quick": bool(run.get("quick")),
            "seed": int(run.get("seed") or 0), "alpha": float(run.get("alpha_family", DEFAULT_ALPHA))}


def _identity_at(json_path: Path) -> dict | None:
    """The identity of the report stored at ``json_path`` (None when there is none or it is not a
    verify report)."""
    import json
    try:
        data = json.loads(json_path.read_text())
        return identity(**options_of(data["run"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


class NameTaken(ValueError):
    """Both names a run's report may take hold reports of other runs: it refuses to overwrite them."""


def _free(plain: Path, mine: dict, identity_at) -> Path:
    """``plain`` when it is free or holds a report with identity ``mine`` (a rerun replaces it), else
    ``plain`` plus a short hash of ``mine``; :class:`NameTaken` when both hold reports of others."""
    import hashlib
    import json
    theirs = identity_at(Path(f"{plain}.json"))
    if theirs is None or theirs == mine:
        return plain
    digest = hashlib.sha1(json.dumps(mine, sort_keys=True).encode()).hexdigest()[:6]
    other = plain.with_name(f"{plain.name}-{digest}")
    theirs = identity_at(Path(f"{other}.json"))
    if theirs is None or theirs == mine:
        return other
    raise NameTaken(f"{plain}.json and {other}.json hold reports of other runs; name this report's files "
                    "yourself (--json PATH, or Report.write(base))")


def default_base(claims: str = "*", **opts) -> Path:
    """Where a run's report goes unless told: its plain name (:func:`report_base`) when that is
    free or holds a report of the same run (a rerun replaces it); when a report of another run with
    the same plain name is there (``claims.py`` from another folder, another pairs file called
    ``pairs.toml``), the plain name plus a short hash of the run's identity. Never overwrites a
    report of another run: :class:`NameTaken` when both names are taken."""
    return _free(report_base(claims, **opts), identity(claims, **opts), _identity_at)


def output_paths(claims: str = "*", instances: Path | None = None, json_path=None, md_path=None, html_path=None,
                 claims_from: tuple = (), *, quick: bool = False, logits: Path | None = None,
                 seed: int = 0, alpha: float = DEFAULT_ALPHA, builtin: bool = False) -> dict[str, Path]:
    """The report's files (``json``, ``md``, ``html``, ``evidence``): the ones given, the others
    beside the first given, else at the default base :func:`default_base` (named for what was run,
    never a report of another run); the evidence file is ``<md name>-evidence.md`` beside the
    Markdown."""
    given = {"json": json_path, "md": md_path, "html": html_path}
    first = next((p for p in given.values() if p is not None), None)
    if first is not None:
        base = str(Path(first).with_suffix(""))
    else:
        base = str(default_base(claims, instances=instances, claims_from=tuple(claims_from), quick=quick,
                                logits=logits, seed=seed, alpha=alpha, builtin=builtin))
    out = {k: (Path(v) if v is not None else Path(f"{base}.{k}")) for k, v in given.items()}
    md = out["md"]
    out["evidence"] = md.with_name((md.name[:-3] if md.name.endswith(".md") else md.name) + "-evidence.md")
    return out


def run_paths(run: dict) -> dict[str, Path]:
    """:func:`output_paths` at the default name of the run a report's ``run`` record describes."""
    opts = options_of(run)
    return output_paths(opts.pop("claims"), **opts)


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


#: seconds each logits replay takes on the shipped decisive run (data/runs/qwen2.5-coder-T1-decisive),
#: loading the run apart: the CPU-seconds each took on one core of the 2-core development machine
#: (2026-11-29; its wall time under a load of 5-9 was about three times that); with
#: :data:`REPLAY_DATA` it sizes each replay's ETA on another run (info only: a progress line's
#: estimate, never a verdict)
REPLAY_SECONDS = {"sd": 0.1, "se": 21.0, "ersd": 46.0, "multidraft": 15.0, "loops": 0.1, "ecsv": 280.0,
                  "sb": 490.0}
#: the folders of a run each replay reads (a replay's time grows with their size), and their size in
#: bytes in the decisive run; a replay not listed reads ``traces``
REPLAY_DATA = {"sd": ("sd", "controls"), "loops": ("families",)}
DECISIVE_BYTES = {"sd": 1_140_965, "controls": 32_943, "families": 3_491_009, "traces": 75_927_150}


def _bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else 0


def replay_estimates(run_dir: Path, names) -> dict[str, float]:
    """About how long each replay of ``names`` takes on ``run_dir``: its time on the decisive run
    scaled by the size of the folders it reads (a rough guide for the progress lines)."""
    sizes: dict = {}
    out = {}
    for n in names:
        folders = REPLAY_DATA.get(n, ("traces",))
        for f in folders:
            sizes.setdefault(f, _bytes(Path(run_dir) / f))
        ratio = sum(sizes[f] for f in folders) / max(1, sum(DECISIVE_BYTES[f] for f in folders))
        out[n] = REPLAY_SECONDS.get(n, 60.0) * ratio
    return out


def _about(seconds: float) -> str:
    """``about 40 s``, ``about 8 min``, ``under a second``."""
    return "under a second" if seconds < 1 else f"about {seconds:.0f} s" if seconds < 90 else \
        f"about {seconds / 60:.0f} min"


class ReplayProgress:
    """The progress lines of the logits replays: which replays the selected claims need, then each
    replay's name, the claims it feeds and its ETA when it starts (estimated from the run's size,
    corrected by the pace of the replays done so far), and its time when it ends."""

    def __init__(self, run_dir: Path, names: list[str], log, n_all: int):
        import time
        from spectheory.validate.evidence import REPLAY_CLAIMS
        self.log, self.claims = log, REPLAY_CLAIMS
        self.est = replay_estimates(run_dir, names)
        self.spent = self.estimated_done = 0.0
        self.t0 = time.time()
        log(f"logits replays the selected claims need: {', '.join(names)} ({len(names)} of {n_all}; "
            f"{_about(sum(self.est.values()))} in all, estimated from the run's size)")

    def starting(self, i: int, total: int, name: str) -> None:
        import time
        pace = self.spent / self.estimated_done if self.estimated_done > 0 else 1.0
        left = pace * sum(v for k, v in list(self.est.items())[i - 1:])
        eta = time.strftime("%H:%M:%S", time.localtime(time.time() + left))
        feeds = ", ".join(self.claims.get(name, ())) or "its claims"
        self.log(f"logits replay {i}/{total}: {name} (for {feeds}): {_about(pace * self.est[name])}; "
                 f"all replays done about {eta}")

    def done(self, i: int, total: int, name: str, seconds: float) -> None:
        self.spent += seconds
        self.estimated_done += self.est[name]
        self.log(f"logits replay {i}/{total}: {name} done in {seconds:.1f} s")


def real_logits_evidence(logits: Path | None, alpha: float, claim_ids=None, log=None) -> dict:
    """Real-model evidence for the runner (``sims`` never imports ``validate``): the ``logits``
    evidence of a `spectheory validate` run directory (tested at the report's per-test level) from
    the replays ``claim_ids`` need (None: every replay), plus the replay of the ERSD trace named by
    $SPECTHEORY_TRACE (at the family-wise level, as that replay states) when one of those claims is
    among ``claim_ids`` (or ``claim_ids`` is None). ``log``: gets the progress lines
    (:class:`ReplayProgress`). Returns ``{claim_id: [Evidence, ...]}``."""
    import os

    from spectheory.sims.registry import total_mc_tests
    extra: dict = {}
    if logits is not None:
        from spectheory.validate.evidence import logits_evidence, replays_for
        from spectheory.validate.experiment import load_run
        names = replays_for(claim_ids)
        if log is not None:
            log(f"loading the logits run {logits} …")
        run = load_run(logits)
        prog = None if log is None else ReplayProgress(Path(logits), names, log, len(replays_for()))
        for cid, evs in logits_evidence(run, alpha=alpha / max(1, total_mc_tests()), claims=claim_ids,
                                        progress=None if prog is None else prog.done,
                                        starting=None if prog is None else prog.starting).items():
            extra.setdefault(cid, []).extend(evs)
    trace = os.environ.get(TRACE_ENV)
    if trace and (claim_ids is None or set(TRACE_CLAIMS) & set(claim_ids)):
        from spectheory.validate import LogitTrace
        from spectheory.validate.replay_ersd import evidence_ersd, replay_ersd
        rep = evidence_ersd(replay_ersd(LogitTrace.load(trace), k=16, m=16, n_mc=400, seed=0), alpha=alpha)
        for cid in TRACE_CLAIMS:
            extra.setdefault(cid, []).extend(rep[cid])
    return extra


def _target_where(target: str) -> str:
    """A conformance target with its file resolved (``x.py:fn`` from two folders are two targets)."""
    mod, _, attr = target.rpartition(":")
    return f"{_resolved(mod)}:{attr}" if mod.endswith(".py") else target


def _conformance_identity_at(json_path: Path) -> dict | None:
    import json
    try:
        run = json.loads(json_path.read_text())["run"]
        return {"target": run["target"], "kind": run.get("kind_option")}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def conformance_base(target: str, *, kind: str = "block", seed: int = 0, alpha: float = DEFAULT_ALPHA) -> Path:
    """``reports/conformance-<target>``: a conformance report named after the sampler it tests
    (``mypkg.sampling:verify`` → ``conformance-mypkg.sampling-verify``; a file's target by its
    stem, ``path/to/sampler.py:verify`` → ``conformance-sampler-verify``), with ``+<kind>`` for a
    kind other than ``block``, ``seed<N>`` and ``alpha<α>`` when not the defaults; a report of
    another target under that name is never overwritten (the name gets a short hash)."""
    mod, _, attr = target.rpartition(":")
    tags = [_tag((Path(mod).stem if mod.endswith(".py") else mod) + "-" + attr)[:80]]
    if kind != "block":
        tags.append(kind)
    if seed:
        tags.append(f"seed{seed}")
    if float(alpha) != DEFAULT_ALPHA:
        tags.append(f"alpha{float(alpha):g}")
    plain = REPORTS / ("conformance-" + "+".join(tags))
    return _free(plain, {"target": _target_where(target), "kind": kind}, _conformance_identity_at)

